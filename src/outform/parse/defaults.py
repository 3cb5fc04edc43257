"""Fill in the `default` a schema declares for a property the reply left out.

JSON Schema treats `default` as an annotation; outform applies it, as Pydantic does for typed
output, so that a dict result and a typed result agree. Only properties that are absent get a
default; a value present in the reply is never replaced. Where the schema branches (`anyOf`,
`oneOf`), the walk follows the first branch the value validates against.
"""

from __future__ import annotations

import copy
from typing import Any

from outform.parse.result import Change
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema


def has_defaults(schema: Any) -> bool:
    """Whether any property of the schema declares a default (so the walk is worth doing)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict) and any(
                isinstance(p, dict) and "default" in p for p in properties.values()
            ):
                return True
            stack.extend(v for k, v in node.items() if k not in ("enum", "const", "default"))
        elif isinstance(node, list):
            stack.extend(node)
    return False


def fill_defaults(
    compiled: CompiledSchema, value: Any, changes: list[Change], max_depth: int
) -> Any:
    """A copy of `value` with declared defaults added where properties are absent."""
    return _Filler(compiled, changes, max_depth).walk(value, "", "", 0)


class _Filler:
    __slots__ = ("changes", "compiled", "max_depth")

    def __init__(self, compiled: CompiledSchema, changes: list[Change], max_depth: int) -> None:
        self.compiled = compiled
        self.changes = changes
        self.max_depth = max_depth

    def walk(self, value: Any, loc: str, path: str, depth: int) -> Any:
        if depth > self.max_depth or not isinstance(value, dict | list):
            return value
        loc, schema = self.compiled.resolve(loc)
        if not isinstance(schema, dict):
            return value
        ref = schema.get("$ref")
        if isinstance(ref, str) and (target := self.compiled.ref_location(ref)) is not None:
            value = self.walk(value, target, path, depth + 1)
        for index, _ in enumerate(schema.get("allOf") or []):
            value = self.walk(value, f"{loc}/allOf/{index}", path, depth + 1)
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list):
                for index in range(len(branches)):
                    branch = f"{loc}/{keyword}/{index}"
                    if self.compiled.is_valid_at(branch, value):
                        value = self.walk(value, branch, path, depth + 1)
                        break
        if isinstance(value, dict):
            return self.object(value, loc, schema, path, depth)
        items = schema.get("items")
        if isinstance(items, dict):
            child = pointer.join(loc, "items")
            return [
                self.walk(item, child, pointer.join(path, i), depth + 1)
                for i, item in enumerate(value)
            ]
        return value

    def object(
        self, value: dict[str, Any], loc: str, schema: dict[str, Any], path: str, depth: int
    ) -> dict[str, Any]:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        additional = schema.get("additionalProperties")
        result = dict(value)
        for key, child in value.items():
            if key in properties:
                child_loc = pointer.join(loc, "properties", key)
            elif isinstance(additional, dict):
                child_loc = pointer.join(loc, "additionalProperties")
            else:
                continue
            result[key] = self.walk(child, child_loc, pointer.join(path, key), depth + 1)
        for name, declared in properties.items():
            if name in result:
                continue
            _, resolved = self.compiled.resolve(pointer.join(loc, "properties", name))
            source = declared if isinstance(declared, dict) and "default" in declared else resolved
            if isinstance(source, dict) and "default" in source:
                result[name] = copy.deepcopy(source["default"])
                self.changes.append(
                    Change(
                        pointer.join(path, name),
                        "semantic",
                        "fill_default",
                        None,
                        source["default"],
                    )
                )
        return result
