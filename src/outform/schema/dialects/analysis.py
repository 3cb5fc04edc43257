"""Facts about a wire schema: its sub-schemas, its reference cycles and its size.

Used twice: by the translator, to refuse before any request a schema the provider would
refuse (recursion, size limits), and by the rule checker, to verify translated schemas.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from outform.schema import pointer

SINGLE = (
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)
LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
MAPS = ("properties", "patternProperties", "dependentSchemas")
DEFINITIONS = ("$defs", "definitions")


@dataclass(frozen=True)
class Node:
    """A sub-schema of a wire schema and where it sits."""

    path: str
    schema: Any
    definition: str
    """Pointer of the definition (or "" for the root body) the node belongs to."""
    optional: bool
    """Reached through a place a value may leave empty, since the definition's start (see
    `_children`): a loop of references through such a place can end."""


def nodes(schema: Any) -> Iterator[Node]:
    """Every sub-schema (booleans included), definitions included, in document order."""
    starts: list[tuple[str, Any]] = [("", schema)]
    if isinstance(schema, Mapping):
        for keyword in DEFINITIONS:
            defs = schema.get(keyword)
            if isinstance(defs, Mapping):
                starts += [(pointer.join("", keyword, name), body) for name, body in defs.items()]
    for start, body in starts:
        stack = [Node(start, body, start, False)]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(_children(node))))


def _children(node: Node) -> Iterator[Node]:
    """The sub-schemas of a node; a child is `optional` when a value may leave its place
    empty, so that a loop of references through it can end (Gemini's rule, in its own
    refusal: "ref loops are only supported if they include optional or nullable property
    values, or a potentially-zero-length array items"; nullable alone is not enough, its
    documentation says). Such places: a property its object does not require; an array item
    at a position past the array's `minItems`; a value of a map (`additionalProperties`,
    `patternProperties`) when the object needs no key the map governs (every required name is
    a declared property, and `minProperties` does not exceed their number); a
    `dependentSchemas` member whose property is not required. Not a union branch: `anyOf:
    [{"$ref": ...}, {"type": "null"}]` ends nothing for Gemini."""
    schema = node.schema
    if not isinstance(schema, Mapping):
        return
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    declared = schema.get("properties")
    declared_names = set(declared) if isinstance(declared, Mapping) else set()
    map_may_be_empty = required_names <= declared_names and _count(schema, "minProperties") <= len(
        declared_names
    )
    least_items = _count(schema, "minItems")
    prefix = schema.get("prefixItems")
    tuple_items = schema.get("items")
    before_rest = (
        len(prefix)
        if isinstance(prefix, list)
        else len(tuple_items)
        if isinstance(tuple_items, list)
        else 0
    )

    def child(path: str, value: Any, escape: bool) -> Node:
        return Node(path, value, node.definition, node.optional or escape)

    for keyword in SINGLE:
        value = schema.get(keyword)
        if isinstance(value, Mapping | bool):
            if keyword == "additionalProperties":
                escape = map_may_be_empty
            elif keyword == "additionalItems":
                escape = least_items <= before_rest
            else:
                escape = False
            yield child(pointer.join(node.path, keyword), value, escape)
    if isinstance(tuple_items, Mapping | bool):
        yield child(pointer.join(node.path, "items"), tuple_items, least_items <= before_rest)
    elif isinstance(tuple_items, list):
        for index, value in enumerate(tuple_items):
            yield child(pointer.join(node.path, "items", index), value, least_items <= index)
    for keyword in LISTS:
        members = schema.get(keyword)
        if isinstance(members, list):
            for index, value in enumerate(members):
                escape = keyword == "prefixItems" and least_items <= index
                yield child(pointer.join(node.path, keyword, index), value, escape)
    for keyword in MAPS:
        members = schema.get(keyword)
        if isinstance(members, Mapping):
            for name, value in members.items():
                if keyword == "patternProperties":
                    escape = map_may_be_empty
                else:  # properties, dependentSchemas: applies when the property is present
                    escape = name not in required_names
                yield child(pointer.join(node.path, keyword, name), value, escape)


def _count(schema: Mapping[str, Any], keyword: str) -> int:
    """A count keyword (`minItems`, `minProperties`), 0 when absent."""
    value = schema.get(keyword)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def ref_target(ref: str) -> str | None:
    """The pointer of a local reference (`#/$defs/x` -> `/$defs/x`), None if not local."""
    if not ref.startswith("#"):
        return None
    return pointer.join("", *pointer.parts(ref[1:])) if ref != "#" else ""


def _definition_of(target: str) -> str:
    """The definition a reference target belongs to (`/$defs/a/properties/b` -> `/$defs/a`)."""
    parts = pointer.parts(target)
    if len(parts) >= 2 and parts[0] in DEFINITIONS:
        return pointer.join("", parts[0], parts[1])
    return ""


@dataclass(frozen=True)
class CyclicRef:
    """A `$ref` that takes part in a cycle of definitions."""

    path: str
    target: str
    optional: bool


def cyclic_refs(schema: Any) -> list[CyclicRef]:
    """Every reference lying on a cycle (definitions that reach themselves)."""
    return _on_cycles(_refs(schema))


def closed_loops(schema: Any) -> list[CyclicRef]:
    """Every reference lying on a loop no value can leave: a cycle of definitions in which
    each reference is reached from its definition's start through no place a value may leave
    empty (see `_children`). A value following such a loop never ends; a provider that unrolls
    recursion to a limited depth (Gemini) refuses it."""
    return _on_cycles([(node, target) for node, target in _refs(schema) if not node.optional])


def _refs(schema: Any) -> list[tuple[Node, str]]:
    """Every local reference of the schema and the pointer it names."""
    found: list[tuple[Node, str]] = []
    for node in nodes(schema):
        ref = node.schema.get("$ref") if isinstance(node.schema, Mapping) else None
        if isinstance(ref, str):
            target = ref_target(ref)
            if target is not None:
                found.append((node, target))
    return found


def _on_cycles(refs: list[tuple[Node, str]]) -> list[CyclicRef]:
    """The references of `refs` that lie on a cycle of the graph they draw between
    definitions."""
    edges: dict[str, set[str]] = {}
    for node, target in refs:
        edges.setdefault(node.definition, set()).add(_definition_of(target))
    reach = {start: _reachable(start, edges) for start in edges}
    return [
        CyclicRef(node.path, target, node.optional)
        for node, target in refs
        if node.definition in reach.get(_definition_of(target), set())
    ]


def _reachable(start: str, edges: Mapping[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(edges.get(start, ()))
    while stack:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            stack.extend(edges.get(current, ()))
    return seen


@dataclass(frozen=True)
class Size:
    """The quantities providers limit (see `rules.Limits`)."""

    properties: int = 0
    depth: int = 0
    enum_values: int = 0
    characters: int = 0
    largest_enum: tuple[int, int] = (0, 0)
    """(values, characters) of the biggest string enum."""
    optional_properties: int = 0
    union_properties: int = 0


def is_object(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return "object" in kinds or "OBJECT" in kinds or "properties" in schema


def is_union(schema: Any) -> bool:
    """Union-typed, as Anthropic counts ("parameters with type arrays or anyOf", its error
    says): a list of types, an `anyOf` (or `oneOf`) whatever its number of branches (a
    one-branch `anyOf`, as outform writes a `$ref` with a description beside it, is one),
    or OpenAPI's `nullable`. Read from the schema as written: a `$ref` is not followed."""
    if not isinstance(schema, Mapping):
        return False
    return (
        isinstance(schema.get("type"), list)
        or isinstance(schema.get("anyOf"), list)
        or isinstance(schema.get("oneOf"), list)
        or schema.get("nullable") is True
    )


def measure(schema: Any) -> Size:
    """The quantities providers limit, counted on the schema as it is sent: every node is
    counted once where it is written, and a `$defs` definition once however many `$ref`s
    lead to it (its optional and union-typed properties once; the definition itself once as
    a union-typed property when properties refer to it and it is a union). A definition
    outform had to copy into several places (a dialect without `$defs`) is on the wire, and
    counted, once per copy."""
    properties = enum_values = characters = optional = unions = 0
    largest = (0, 0)
    referred: set[str] = set()  # definitions a property's schema refers to, each counted once
    for node in nodes(schema):
        value = node.schema
        if not isinstance(value, Mapping):
            continue
        props = value.get("properties")
        if isinstance(props, Mapping):
            required = value.get("required")
            required_names = set(required) if isinstance(required, list) else set()
            properties += len(props)
            characters += sum(len(name) for name in props)
            optional += sum(1 for name in props if name not in required_names)
            for child in props.values():
                if is_union(child):
                    unions += 1
                elif isinstance(child, Mapping) and isinstance(child.get("$ref"), str):
                    target = ref_target(child["$ref"])
                    if target is not None:
                        referred.add(target)
        enum = value.get("enum")
        if isinstance(enum, list):
            enum_values += len(enum)
            size = sum(len(str(item)) for item in enum)
            characters += size
            if all(isinstance(item, str) for item in enum) and len(enum) > largest[0]:
                largest = (len(enum), size)
        if "const" in value:
            characters += len(str(value["const"]))
    for target in referred:
        with contextlib.suppress(KeyError):
            unions += is_union(pointer.lookup(schema, target))
    if isinstance(schema, Mapping):
        for keyword in DEFINITIONS:
            defs = schema.get(keyword)
            if isinstance(defs, Mapping):
                characters += sum(len(name) for name in defs)
    return Size(
        properties=properties,
        depth=depth(schema),
        enum_values=enum_values,
        characters=characters,
        largest_enum=largest,
        optional_properties=optional,
        union_properties=unions,
    )


def depth(schema: Any) -> int:
    """Levels of object nesting, following references (a cycle counts once)."""
    memo: dict[str, int] = {}

    def walk(node: Any, visiting: frozenset[str]) -> int:
        if not isinstance(node, Mapping):
            return 0
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = ref_target(ref)
            if target is None or target in visiting:
                return 0
            if target not in memo:
                try:
                    body = pointer.lookup(schema, target)
                except KeyError:
                    return 0
                memo[target] = walk(body, visiting | {target})
            return memo[target]
        below = 0
        for child in _children(Node("", node, "", False)):
            below = max(below, walk(child.schema, visiting))
        return below + (1 if is_object(node) else 0)

    return walk(schema, frozenset({""}))


__all__ = [
    "CyclicRef",
    "Node",
    "Size",
    "closed_loops",
    "cyclic_refs",
    "depth",
    "measure",
    "nodes",
    "ref_target",
]
