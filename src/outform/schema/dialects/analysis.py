"""Facts about a wire schema: its sub-schemas, its reference cycles and its size.

Used twice: by the translator, to refuse before any request a schema the provider would
refuse (recursion, size limits), and by the rule checker, to verify translated schemas.
"""

from __future__ import annotations

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
    """Reached through a property its object does not require, since the definition's start."""


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
    schema = node.schema
    if not isinstance(schema, Mapping):
        return
    for keyword in SINGLE:
        child = schema.get(keyword)
        if isinstance(child, Mapping | bool):
            # A value under additionalProperties sits under a key nobody requires.
            optional = node.optional or keyword == "additionalProperties"
            yield Node(pointer.join(node.path, keyword), child, node.definition, optional)
    items = schema.get("items")
    if isinstance(items, Mapping | bool):
        yield Node(pointer.join(node.path, "items"), items, node.definition, node.optional)
    elif isinstance(items, list):
        for index, child in enumerate(items):
            yield Node(
                pointer.join(node.path, "items", index), child, node.definition, node.optional
            )
    for keyword in LISTS:
        members = schema.get(keyword)
        if isinstance(members, list):
            for index, child in enumerate(members):
                yield Node(
                    pointer.join(node.path, keyword, index), child, node.definition, node.optional
                )
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    for keyword in MAPS:
        members = schema.get(keyword)
        if isinstance(members, Mapping):
            for name, child in members.items():
                optional = node.optional or keyword != "properties" or name not in required_names
                yield Node(pointer.join(node.path, keyword, name), child, node.definition, optional)


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
    refs: list[tuple[Node, str]] = []
    edges: dict[str, set[str]] = {}
    for node in nodes(schema):
        ref = node.schema.get("$ref") if isinstance(node.schema, Mapping) else None
        if isinstance(ref, str):
            target = ref_target(ref)
            if target is not None:
                refs.append((node, target))
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
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    members = schema.get("anyOf") or schema.get("oneOf")
    return (
        (isinstance(kind, list) and len(kind) > 1)
        or (isinstance(members, list) and len(members) > 1)
        or schema.get("nullable") is True
    )


def measure(schema: Any) -> Size:
    properties = enum_values = characters = optional = unions = 0
    largest = (0, 0)
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
            unions += sum(1 for child in props.values() if is_union(child))
        enum = value.get("enum")
        if isinstance(enum, list):
            enum_values += len(enum)
            size = sum(len(str(item)) for item in enum)
            characters += size
            if all(isinstance(item, str) for item in enum) and len(enum) > largest[0]:
                largest = (len(enum), size)
        if "const" in value:
            characters += len(str(value["const"]))
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


__all__ = ["CyclicRef", "Node", "Size", "cyclic_refs", "depth", "measure", "nodes", "ref_target"]
