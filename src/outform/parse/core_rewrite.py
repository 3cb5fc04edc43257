"""Wrapping the nodes of a Pydantic core schema that a check needs to see (decimals.py,
folded.py): one walk, so each check only says which nodes and which function."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

_CLASSES = {"model", "dataclass"}
_NOT_SCHEMA = ("config", "metadata", "cls")
"""Keys of a core schema node whose values hold no schema."""


def nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every node of a core schema, each before its children (which the caller may change
    first: they are read after it resumes); `config`, `metadata` and `cls` passed over."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, list | tuple):  # (a tuple: a union's branch and its tag)
            stack.extend(node)
        elif isinstance(node, dict):
            yield node
            stack.extend(v for k, v in node.items() if k not in _NOT_SCHEMA)


def wrap_where(node: Any, wants: Callable[[dict[str, Any]], bool], function: dict[str, Any]) -> Any:
    """`node` with every node `wants` wrapped by the validator `function` (a core schema
    function spec), classes read as their fields (a class keeps its own prebuilt validator,
    which would ignore the change); None when no node under it is wanted."""
    if isinstance(node, list):
        items = [wrap_where(item, wants, function) for item in node]
        if all(item is None for item in items):
            return None
        return [new if new is not None else old for new, old in zip(items, node, strict=True)]
    if not isinstance(node, dict):
        return None
    out = dict(node)
    changed = False
    for key, child in node.items():
        if key not in ("config", "metadata", "cls") and isinstance(child, dict | list):
            new = wrap_where(child, wants, function)
            if new is not None:
                out[key] = new
                changed = True
    if node.get("type") in _CLASSES and isinstance(out.get("schema"), dict):
        if not changed:
            return None
        inner = dict(out["schema"])
        if "ref" in node:
            inner["ref"] = node["ref"]
        return inner
    if wants(node):
        ref = out.pop("ref", None)
        wrapper: dict[str, Any] = {"type": "function-wrap", "function": function, "schema": out}
        if ref is not None:
            wrapper["ref"] = ref
        return wrapper
    return out if changed else None
