"""Keys a typed output ignores.

A Pydantic model (and a dataclass or TypedDict) ignores keys it does not declare unless told
otherwise (`extra="ignore"`, the default): `{"total": 1, "note": "x"}` gives `Invoice(total=1)`,
and "note" is gone. outform records each such key as a change (`ignore_extra_key`, lossy: its
content is discarded), at every level.

The slow path asks a copy of the type's validator in which every object that ignores extra
keys forbids them instead, and reads where it finds them (:func:`ignored_keys`). The fast path
sends a reply there when it has more colons than the root model was given fields and fails a
check against the type's schema with such objects closed (:func:`closed_schema`). Types with
no such object get neither.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import SchemaValidator, ValidationError

from outform.schema import pointer

_OBJECTS = {"model-fields", "typed-dict", "dataclass-args"}
"""Core schemas whose `extra_behavior` says what becomes of undeclared keys."""
_HOLDERS = {"model", "typed-dict", "dataclass"}
"""Core schemas whose `config` gives the objects within them their default behaviour."""
_EXTRA = {"extra_forbidden", "unexpected_keyword_argument"}
"""The errors of an extra key (in a model or TypedDict; in a dataclass)."""
_OPEN = frozenset({"additionalProperties", "patternProperties", "unevaluatedProperties"})
"""Keywords by which a JSON Schema object says what other keys may be."""


def closed_validator(
    adapter: TypeAdapter[Any], before: Callable[[Any], Any] | None = None
) -> SchemaValidator | None:
    """A validator of the adapter's type, as plain data, in which every object that ignores
    extra keys forbids them; None when no object of the type ignores any.

    Models and dataclasses are read as their fields (a class keeps its own prebuilt validator,
    which would ignore the change), so this validator only finds keys, it builds no value.
    `before` rewrites the core schema first (None: it leaves it as it is): what the class's
    config said and the fields alone no longer say (see by_name.py)."""

    def rewrite(schema: Any) -> Any:
        if before is not None:
            schema = before(schema) or schema
        return _close(schema, None)

    return rewritten_validator(adapter, rewrite)


def rewritten_validator(
    adapter: TypeAdapter[Any], rewrite: Callable[[Any], Any]
) -> SchemaValidator | None:
    """A validator of a copy of the adapter's core schema as `rewrite` returns it; None when it
    returns None (nothing to check) or pydantic-core cannot rebuild it (no check, as before)."""
    try:
        schema = copy.deepcopy(adapter.core_schema)
    except (TypeError, AttributeError, copy.Error):
        return None
    rewritten = rewrite(schema)
    if rewritten is None:
        return None
    try:
        return SchemaValidator(rewritten)
    except Exception:
        return None


def _close(node: Any, extra: str | None) -> Any:
    """`node` with extra keys forbidden wherever they are ignored, classes read as their
    fields; None when no object under it ignores extra keys."""
    if isinstance(node, list):
        items = [_close(item, extra) for item in node]
        if all(item is None for item in items):
            return None
        return [new if new is not None else old for new, old in zip(items, node, strict=True)]
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind in _HOLDERS and isinstance(node.get("config"), dict):
        extra = node["config"].get("extra_fields_behavior", extra)
    out = dict(node)
    changed = False
    if kind in _OBJECTS and node.get("extra_behavior", extra) in (None, "ignore"):
        out["extra_behavior"] = "forbid"
        changed = True
    for key, child in node.items():
        if key not in ("config", "metadata", "cls") and isinstance(child, dict | list):
            new = _close(child, extra)
            if new is not None:
                out[key] = new
                changed = True
    if kind in ("model", "dataclass") and isinstance(out.get("schema"), dict):
        inner = dict(out["schema"])  # the fields alone: no class, so no prebuilt validator
        if "ref" in node:
            inner["ref"] = node["ref"]
        return inner if changed else None
    return out if changed else None


def ignored_keys(closed: SchemaValidator, value: Any) -> list[str]:
    """The JSON pointers of the keys of `value` that the type ignores, sorted."""
    try:
        closed.validate_python(value)
    except ValidationError as exc:
        return sorted(
            pointer.from_parts(error["loc"])
            for error in exc.errors(include_url=False, include_input=False)
            if error["type"] in _EXTRA
        )
    return []


def closed_schema(schema: Any) -> Any:
    """`schema` (a type's JSON Schema) with `additionalProperties: false` on every object node
    that declares properties and says nothing of other keys (how Pydantic writes a type that
    ignores them): a cheap first check on the fast path, in one jsonschema-rs call. A reply
    it refuses is asked about precisely (:func:`ignored_keys`), so a node it closes too
    eagerly only costs time."""
    if isinstance(schema, list):
        return [closed_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed_schema(child) for key, child in schema.items() if key != "properties"}
    if isinstance(schema.get("properties"), dict):
        out["properties"] = {name: closed_schema(s) for name, s in schema["properties"].items()}
        if not _OPEN.intersection(schema):
            out["additionalProperties"] = False
    return out
