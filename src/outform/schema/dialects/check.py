"""Check that a schema obeys a dialect's documented rules (the ones a provider enforces with a 400).

This reads only the schema and the dialect's `DialectRules`; it shares no code with the
transformer except the analysis of sub-schemas, cycles and sizes. Use it on any schema: on
outform's translations (the tests do, over a benchmark of real schemas), on another library's,
or on a hand-written one before sending it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from outform.jsontext import dumps
from outform.schema import pointer
from outform.schema.dialects import analysis
from outform.schema.dialects.rules import JSON_TYPES, DialectRules
from outform.schema.types import json_type

_OPENAPI_TYPES = frozenset(kind.upper() for kind in JSON_TYPES)


@dataclass(frozen=True)
class Problem:
    """One broken rule: where (a JSON pointer into the checked schema), which rule, and why."""

    path: str
    rule: str
    message: str
    keyword: str = ""
    """The keyword at fault, when the rule is about one."""

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message} [{self.rule}]"


def check_rules(schema: Any, rules: DialectRules) -> list[Problem]:
    """Every way `schema` breaks the dialect's rules; an empty list when it obeys them all."""
    problems = list(_root(schema, rules))
    if not isinstance(schema, Mapping):
        return problems
    for node in analysis.nodes(schema):
        problems.extend(_node(node, rules, schema))
    problems.extend(_recursion(schema, rules))
    problems.extend(_limits(schema, rules))
    return problems


def _root(schema: Any, rules: DialectRules) -> Iterator[Problem]:
    if not isinstance(schema, Mapping):
        yield Problem("", "root", "the schema must be an object")
        return
    if rules.object_root and not (
        schema.get("type") in ("object", "OBJECT")
        and not {"anyOf", "oneOf", "$ref"} & schema.keys()
    ):
        yield Problem("", "object_root", "the root must be a plain object schema")
    if rules.payload == "string" and not _serialisable(schema):
        yield Problem(
            "", "payload", "the schema must be JSON-serialisable (it travels as a string)"
        )


def _node(node: analysis.Node, rules: DialectRules, root: Mapping[str, Any]) -> Iterator[Problem]:
    path, schema = node.path, node.schema
    if isinstance(schema, bool):
        if not rules.boolean_schemas and not path.endswith("/additionalProperties"):
            yield Problem(path, "boolean_schema", "true/false cannot stand for a sub-schema")
        return
    if not isinstance(schema, Mapping):
        yield Problem(path, "schema", "a sub-schema must be an object")
        return
    allowed = rules.accepted | ({"$defs"} if path == "" and rules.refs else set())
    for keyword in schema:
        if keyword not in allowed:
            yield Problem(path, "keyword", f"{keyword!r} is not accepted", keyword)
    if "$defs" in schema and path != "":
        yield Problem(path, "defs", "$defs must sit at the root")
    yield from _types(path, schema, rules)
    if rules.typed_nodes and not {"type", "anyOf", "$ref"} & schema.keys():
        yield Problem(path, "typed", "the node needs a type (or anyOf / $ref)")
    if analysis.is_object(schema):
        yield from _object(path, schema, rules)
    kind = schema.get("type")
    if kind in ("array", "ARRAY") or (isinstance(kind, list) and "array" in kind):
        items = schema.get("items")
        if isinstance(items, list):
            yield Problem(path, "items", "items must be one schema, not a list")
        elif rules.typed_nodes and not isinstance(items, Mapping) and "prefixItems" not in schema:
            yield Problem(path, "items", "an array must say what its items are")
    yield from _values(path, schema, rules)
    ref = schema.get("$ref")
    if ref is not None:
        yield from _reference(path, schema, ref, rules, root)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema and not schema[keyword]:
            yield Problem(path, "union", f"{keyword} must not be empty")


def _types(path: str, schema: Mapping[str, Any], rules: DialectRules) -> Iterator[Problem]:
    if "type" not in schema:
        return
    kind = schema["type"]
    if rules.render == "openapi":
        if kind not in _OPENAPI_TYPES:
            yield Problem(path, "type", f"type must be one of {sorted(_OPENAPI_TYPES)}")
        return
    kinds = kind if isinstance(kind, list) else [kind]
    if any(k not in JSON_TYPES for k in kinds) or not kinds:
        yield Problem(path, "type", f"unknown type {kind!r}")
    if isinstance(kind, list):
        if rules.type_lists == "none":
            yield Problem(path, "type_list", "type must be a single name (use anyOf)")
        elif rules.type_lists == "nullable" and not (len(kind) == 2 and "null" in kind):
            yield Problem(path, "type_list", 'a type list may only be [T, "null"]')


def _object(path: str, schema: Mapping[str, Any], rules: DialectRules) -> Iterator[Problem]:
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, Mapping) or not isinstance(required, list):
        yield Problem(path, "object", "properties must be an object and required a list")
        return
    more = schema.get("additionalProperties")
    if rules.closed_objects and more is not False:
        yield Problem(path, "closed", "every object must say additionalProperties: false")
    if not rules.schema_maps and more not in (None, False):
        yield Problem(path, "maps", "additionalProperties may only be false")
    if rules.all_required:
        if "properties" not in schema:
            yield Problem(path, "properties", "an object must list its properties")
        if set(required) != set(props):
            missing = sorted(set(props) - set(required))
            yield Problem(path, "all_required", f"every property must be required: {missing}")
    if (rules.closed_objects or not rules.schema_maps) and not set(required) <= set(props):
        yield Problem(path, "required", "a closed object can only require declared properties")
    ordering = schema.get("propertyOrdering")
    if ordering is not None and list(ordering) != list(props):
        yield Problem(path, "ordering", "propertyOrdering must list the properties in order")


def _values(path: str, schema: Mapping[str, Any], rules: DialectRules) -> Iterator[Problem]:
    enum = schema.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not enum:
            yield Problem(path, "enum", "enum must be a non-empty list")
        else:
            bad = [v for v in enum if json_type(v) not in rules.enum_types]
            if bad and not (rules.render == "openapi" and bad == [None]):
                yield Problem(path, "enum", f"enum values of these types are refused: {bad[:3]}")
    fmt = schema.get("format")
    if fmt is not None and rules.formats is not None and fmt not in rules.formats:
        yield Problem(path, "format", f"format {fmt!r} is not accepted")
    pattern = schema.get("pattern")
    if pattern is not None and rules.pattern_ok is not None and not rules.pattern_ok(pattern):
        yield Problem(path, "pattern", "the pattern is outside the accepted regex subset")
    least = schema.get("minItems")
    if least is not None and rules.min_items is not None and least not in rules.min_items:
        yield Problem(path, "min_items", f"minItems may only be {sorted(rules.min_items)}")


def _reference(
    path: str, schema: Mapping[str, Any], ref: Any, rules: DialectRules, root: Mapping[str, Any]
) -> Iterator[Problem]:
    if not rules.refs:
        yield Problem(path, "ref", "references are not accepted (inline them)")
        return
    target = analysis.ref_target(ref) if isinstance(ref, str) else None
    if target is None:
        yield Problem(path, "ref", f"{ref!r} is not a local reference")
    else:
        try:
            pointer.lookup(root, target)
        except KeyError:
            yield Problem(path, "ref", f"{ref!r} points nowhere")
    others = [k for k in schema if k != "$ref"]
    if rules.ref_siblings == "none" and others:
        yield Problem(path, "ref_siblings", f"nothing may stand beside $ref: {others}")
    if rules.ref_siblings == "dollar" and any(not k.startswith("$") for k in others):
        yield Problem(path, "ref_siblings", "only $-keywords may stand beside $ref")


def _recursion(schema: Mapping[str, Any], rules: DialectRules) -> Iterator[Problem]:
    if rules.recursion == "yes":
        return
    if rules.recursion == "no":
        for ref in analysis.cyclic_refs(schema):
            yield Problem(ref.path, "recursion", "recursive references are refused")
        return
    for ref in analysis.closed_loops(schema):
        yield Problem(
            ref.path,
            "recursion",
            "a loop of references must pass through a place a value may leave empty (an "
            "optional property, the items of an array that may be empty, a map's values)",
        )


def _limits(schema: Mapping[str, Any], rules: DialectRules) -> Iterator[Problem]:
    limits = rules.limits
    size = analysis.measure(schema)
    for limit, found, what in (
        (limits.properties, size.properties, "properties"),
        (limits.depth, size.depth, "levels of nesting"),
        (limits.enum_values, size.enum_values, "enum values"),
        (limits.characters, size.characters, "characters"),
        (limits.optional_properties, size.optional_properties, "optional properties"),
        (limits.union_properties, size.union_properties, "union-typed properties"),
    ):
        if limit is not None and found > limit:
            yield Problem("", "limit", f"{found} {what}, over the limit of {limit}")
    if limits.large_enum is not None:
        count, chars = size.largest_enum
        if count > limits.large_enum[0] and chars > limits.large_enum[1]:
            yield Problem("", "limit", f"a {count}-value string enum of {chars} characters")


def _serialisable(schema: Mapping[str, Any]) -> bool:
    try:
        dumps(schema)
    except TypeError:
        return False
    return True


__all__ = ["Problem", "check_rules"]
