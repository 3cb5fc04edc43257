"""Refuse schemas outform cannot use, before anything else happens.

Three checks: the schema must be valid under its draft's meta-schema; every `$ref` must point
inside the document (outform never fetches a remote schema: a network fetch at parse time would
be slow, non-reproducible and a way to smuggle content into a prompt); and the schema must accept
some value, with no sub-schema whose own keywords contradict each other (the rules are in
`satisfiable.py`: a model cannot write a value that does not exist, and re-asking it costs).
"""

from __future__ import annotations

import sys
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema_rs

from outform.errors import SchemaError, guarded
from outform.schema import patterns, pointer
from outform.schema.satisfiable import find_empty


def too_nested(where: str = "schema") -> SchemaError:
    """A schema whose sub-schemas and `$ref`s nest deeper than outform's analyses can follow
    (they recurse: several hundred levels, or orjson's 254 levels of objects and arrays)."""
    return SchemaError(
        "the schema nests too deeply for outform to read: sub-schemas inside sub-schemas, or "
        "`$ref`s that lead to `$ref`s, hundreds of levels deep",
        where=where,
        fix="point each '$ref' at the schema it means, and describe deep structures "
        "recursively (a '$ref' back to an enclosing definition)",
    )


def boolean_root(schema: Any, where: str = "schema") -> Any:
    """The schema, with a boolean root read as JSON Schema defines it: `true` accepts any JSON
    value, as `{}` does (returned as `{}`); `false` accepts none, so no reply could match it
    (a SchemaError). Any other value is returned as it is."""
    if schema is True:
        return {}
    if schema is False:
        raise SchemaError(
            "the schema is false: it accepts no value, so no reply can match it",
            where=f"{where} at /",
            fix="use true or {} to accept any JSON value, or write the schema the reply must match",
        )
    return schema


@guarded("schema")
def check_schema(schema: Any, *, where: str = "schema") -> None:
    """Raise SchemaError, naming the location and the fix, when the schema cannot be used.
    A boolean root is read by `boolean_root` (`true`: usable; `false`: the error)."""
    schema = boolean_root(schema, where)
    if not isinstance(schema, Mapping):
        raise SchemaError(
            f"a JSON Schema must be an object or a boolean, got {type(schema).__name__}",
            where=where,
            fix="pass a dict such as {'type': 'object', 'properties': {...}}, or True for any "
            "JSON value",
        )
    for location, ref in _remote_refs(schema):
        raise SchemaError(
            f"the schema refers to a remote document ({ref!r}); outform never fetches schemas",
            where=f"{where} at {location or '/'}",
            fix="copy the referenced schema under '$defs' and point to it with '#/$defs/<name>'",
        )
    draft = schema.get("$schema")
    if draft is not None and _known_draft(draft) is None:
        raise SchemaError(
            f"the schema's '$schema' is not a draft outform knows: {draft!r}; "
            "outform never fetches meta-schemas",
            where=f"{where} at /$schema",
            fix="use draft 4, 6, 7, 2019-09 or 2020-12, or remove '$schema' (2020-12 is assumed)",
        )
    try:
        jsonschema_rs.meta.validate(dict(schema))
    except jsonschema_rs.ValidationError as exc:
        location = pointer.from_parts(exc.instance_path)
        raise SchemaError(
            f"not a valid JSON Schema: {exc.message}",
            where=f"{where} at {location or '/'}",
            fix="correct the keyword there (see https://json-schema.org/understanding-json-schema)",
        ) from None
    except jsonschema_rs.ReferencingError as exc:
        raise SchemaError(
            f"the schema's '$schema' is not a draft outform knows: {exc}",
            where=f"{where} at /$schema",
            fix="use draft 4, 6, 7, 2019-09 or 2020-12, or remove '$schema' (2020-12 is assumed)",
        ) from None
    for location, ref, target in _dangling_refs(schema):
        raise SchemaError(
            f"the $ref {ref!r} points at {target or '/'}, which is not in the schema"
            f"{_nearest(schema, target)}",
            where=f"{where} at {location}",
            fix="point the $ref at a location the schema has (a definition is written under "
            "'$defs' and named '#/$defs/<name>'), or add the missing definition",
        )
    for location, regex in _uncompilable_patterns(schema):
        raise SchemaError(
            f"the schema's regular expression {regex!r} cannot be compiled",
            where=f"{where} at {location}",
            fix="write the regular expression there in the ECMA 262 syntax JSON Schema uses "
            "(every group closed, every escape and \\p{...} class known), or remove it",
        )
    try:
        empty = find_empty(schema, _known_draft(draft))
    except RecursionError:
        raise too_nested(where) from None
    if empty is not None:
        whole = empty.location == ""
        raise SchemaError(
            ("the schema accepts no value: " if whole else "a sub-schema accepts no value: ")
            + empty.reason,
            where=f"{where} at {empty.location or '/'}",
            fix="correct the keywords there"
            + ("" if whole else "; to forbid a property or an item on purpose, write false"),
        )


_DRAFTS = {
    "json-schema.org/draft-04/schema": "draft4",
    "json-schema.org/draft-06/schema": "draft6",
    "json-schema.org/draft-07/schema": "draft7",
    "json-schema.org/draft/2019-09/schema": "draft2019-09",
    "json-schema.org/draft/2020-12/schema": "draft2020-12",
}


def _known_draft(uri: Any) -> str | None:
    """The draft a `$schema` URI names, or None for anything else (never fetched)."""
    if not isinstance(uri, str):
        return None
    bare = uri.split("://", 1)[-1].rstrip("#")
    return _DRAFTS.get(bare)


def _remote_refs(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Yield (location, ref) for every `$ref` or `$dynamicRef` that leaves the document."""
    ids = set(_ids(schema))
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        location, node = stack.pop()
        if isinstance(node, Mapping):
            for keyword in _REFERENCES:
                ref = node.get(keyword)
                if isinstance(ref, str) and not _is_local(ref, ids):
                    yield pointer.join(location, keyword), ref
            for key, child in node.items():
                if key not in ("enum", "const", "default", "examples"):
                    stack.append((pointer.join(location, key), child))
        elif isinstance(node, list):
            stack.extend((pointer.join(location, i), child) for i, child in enumerate(node))


_REFERENCES = ("$ref", "$dynamicRef")
"""The keywords that refer to a schema by URI (2019-09's `$recursiveRef` is always `#`)."""
_DATA = ("enum", "const", "default", "examples")
"""Keywords whose values are data, not schemas."""
_NAMED = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")
"""Keywords whose values map names to schemas."""


def _dangling_refs(schema: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """Yield (location of the `$ref` keyword, the reference, the JSON pointer it names) for
    every local `$ref` whose pointer names nothing: neither in the resource it is written in
    (the nearest enclosing schema with an `$id`) nor in the whole document. References by
    anchor or by another document's URI are left to the validator."""
    stack: list[tuple[str, Any, Mapping[str, Any], bool]] = [("", schema, schema, False)]
    while stack:
        location, node, resource, names = stack.pop()
        if isinstance(node, Mapping):
            if not names:  # (a map of names to schemas, as `properties`, holds no keyword)
                own_id = node.get("$id", node.get("id"))
                if isinstance(own_id, str) and own_id.split("#", 1)[0]:
                    resource = node
                ref = node.get("$ref")
                target = _local_pointer(ref) if isinstance(ref, str) else None
                if (
                    target is not None
                    and not _exists(resource, target)
                    and (resource is schema or not _exists(schema, target))
                ):
                    yield pointer.join(location, "$ref"), str(ref), target
            for key, child in reversed(list(node.items())):
                if names or key not in _DATA:
                    inner = not names and key in _NAMED
                    stack.append((pointer.join(location, key), child, resource, inner))
        elif isinstance(node, list):
            stack.extend(
                (pointer.join(location, index), child, resource, False)
                for index, child in reversed(list(enumerate(node)))
            )


def _uncompilable_patterns(schema: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Yield (location, pattern) for every `pattern` and `patternProperties` key the
    validator's engine cannot compile: found before any rule matches names with them."""
    stack: list[tuple[str, Any, bool]] = [("", schema, False)]
    while stack:
        location, node, names = stack.pop()
        if isinstance(node, Mapping):
            if not names:
                found = node.get("pattern")
                regexes = [("pattern", found)] if isinstance(found, str) else []
                keyed = node.get("patternProperties")
                if isinstance(keyed, Mapping):
                    regexes += [("patternProperties", key) for key in keyed]
                for keyword, regex in regexes:
                    try:
                        patterns.search(regex, "")
                    except SchemaError:
                        inner = pointer.join(location, keyword)
                        yield (inner if keyword == "pattern" else pointer.join(inner, regex)), regex
            for key, child in reversed(list(node.items())):
                if names or key not in _DATA:
                    stack.append((pointer.join(location, key), child, not names and key in _NAMED))
        elif isinstance(node, list):
            stack.extend(
                (pointer.join(location, index), child, False)
                for index, child in reversed(list(enumerate(node)))
            )


def _local_pointer(ref: str) -> str | None:
    """The JSON pointer a `$ref` of the same document names (`#/$defs/a%20b` -> `/$defs/a b`),
    or None for an anchor or another document."""
    base, hashed, fragment = ref.partition("#")
    if base or not hashed:
        return None
    fragment = urllib.parse.unquote(fragment)
    if fragment and not fragment.startswith("/"):
        return None
    return fragment


def _exists(document: Any, target: str) -> bool:
    try:
        pointer.lookup(document, target)
    except KeyError:
        return False
    return True


def _nearest(schema: Mapping[str, Any], target: str) -> str:
    """Where a pointer stops resolving, and what is there instead: "; /$defs has no 'Nope',
    only: Item, Order"."""
    tokens = pointer.parts(target)
    for size in range(len(tokens) - 1, -1, -1):
        parent = pointer.from_parts(tokens[:size])
        try:
            node = pointer.lookup(schema, parent)
        except KeyError:
            continue
        if not isinstance(node, Mapping) or not node:
            return f"; {parent or 'the root'} has no {tokens[size]!r}"
        names = sorted(str(name) for name in node)
        shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
        return f"; {parent or 'the root'} has no {tokens[size]!r}, only: {shown}"
    return ""


def huge_integer(schema: Any, where: str = "schema") -> SchemaError | None:
    """The error for an integer too long to write as JSON text, naming where it is (None when
    there is none). Called when the schema's JSON text cannot be written."""
    for location in _huge_integers(schema):
        limit = sys.get_int_max_str_digits()
        return SchemaError(
            f"the schema holds an integer of more than {limit} digits, more than outform "
            "writes as JSON text (Python's limit on integer conversion)",
            where=f"{where} at {location or '/'}",
            fix="write a bound that large as a float, or remove it",
        )
    return None


def _huge_integers(schema: Any) -> Iterator[str]:
    """Yield the location of every integer (in keywords, enums, defaults...) with more digits
    than Python converts to text (`sys.get_int_max_str_digits()`): no JSON text can hold it."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return
    bits = int(limit * 3.3219)  # fewer bits than this: fewer than `limit` digits
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        location, node = stack.pop()
        if type(node) is int:
            if node.bit_length() > bits and abs(node) >= 10**limit:
                yield location
        elif isinstance(node, Mapping):
            stack.extend((pointer.join(location, key), child) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((pointer.join(location, i), child) for i, child in enumerate(node))


def _ids(schema: Mapping[str, Any]) -> Iterator[str]:
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for key in ("$id", "id"):
                value = node.get(key)
                if isinstance(value, str):
                    yield value.split("#", 1)[0]
            stack.extend(v for k, v in node.items() if k not in ("enum", "const", "default"))
        elif isinstance(node, list):
            stack.extend(node)


def _is_local(ref: str, ids: set[str]) -> bool:
    base = ref.split("#", 1)[0]
    return base == "" or base in ids or any(i.endswith("/" + base) for i in ids if i)
