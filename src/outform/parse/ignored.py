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
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter
from pydantic_core import SchemaValidator, ValidationError

from outform import jsontext
from outform.parse.core_rewrite import nodes
from outform.schema import pointer

_OBJECTS = {"model-fields", "typed-dict", "dataclass-args"}
"""Core schemas whose `extra_behavior` says what becomes of undeclared keys."""
_HOLDERS = {"model", "typed-dict", "dataclass"}
"""Core schemas whose `config` gives the objects within them their default behaviour."""
_EXTRA = {"extra_forbidden", "unexpected_keyword_argument"}
"""The errors of an extra key (in a model or TypedDict; in a dataclass)."""
_UNKNOWN: Final = object()
"""A reading not told (or not followed that far)."""
_OPEN = frozenset({"additionalProperties", "patternProperties", "unevaluatedProperties"})
"""Keywords by which a JSON Schema object says what other keys may be."""


@dataclass(frozen=True, slots=True)
class Closed:
    """The validator that finds ignored keys, and the class each union branch it tagged
    builds (None: a branch that builds no model), by tag: the validator reports a key under
    every branch of a union that refuses it, and only the branch the type chose counts."""

    validator: SchemaValidator
    branches: dict[str, type | None]


_BRANCH = "\x00outform-branch-"
"""How the tags of union branches begin (no key of a reply can be one at that place)."""


def closed_validator(
    adapter: TypeAdapter[Any], before: Callable[[Any], Any] | None = None
) -> Closed | None:
    """A validator of the adapter's type, as plain data, in which every object that ignores
    extra keys forbids them; None when no object of the type ignores any.

    Models and dataclasses are read as their fields (a class keeps its own prebuilt validator,
    which would ignore the change), so this validator only finds keys, it builds no value.
    `before` rewrites the core schema first (None: it leaves it as it is): what the class's
    config said and the fields alone no longer say (see by_name.py)."""

    branches: dict[str, type | None] = {}

    def rewrite(schema: Any) -> Any:
        if before is not None:
            schema = before(schema) or schema
        _tag_unions(schema, _models(schema), branches)
        return _close(schema, None)

    validator = rewritten_validator(adapter, rewrite)
    return None if validator is None else Closed(validator, branches)


def _models(schema: Any) -> dict[str, type]:
    """The model (or dataclass) class of each core schema `ref` (definitions included, the
    validators around a class too): what a union branch that refers to a definition builds."""
    found = {}
    for node in nodes(schema):
        cls = _class_of(node)
        if cls is not None and isinstance(node.get("ref"), str):
            found[node["ref"]] = cls
    return found


_WRAPPERS = frozenset({"function-before", "function-after", "function-wrap"})
"""Core schemas of a validator around another schema (a model's own validators wrap it: the
`ref` is then theirs)."""


def _class_of(node: Any) -> type | None:
    """The model or dataclass `node` builds, through the validators around it (None: none)."""
    while isinstance(node, dict) and node.get("type") in _WRAPPERS:
        node = node.get("schema")
    if isinstance(node, dict) and node.get("type") in ("model", "dataclass"):
        cls = node.get("cls")
        return cls if isinstance(cls, type) else None
    return None


def _tag_unions(schema: Any, models: dict[str, type], branches: dict[str, type | None]) -> None:
    """Give each branch of each plain union in `schema` (in place) a tag of its own, noting in
    `branches` the model class it builds: its errors are then told apart (see `Closed`)."""
    for node in nodes(schema):
        if node.get("type") == "union" and isinstance(node.get("choices"), list):
            tagged = []
            for choice in node["choices"]:
                branch = choice[0] if isinstance(choice, tuple) else choice
                tag = f"{_BRANCH}{len(branches)}"
                branches[tag] = _builds(branch, models)
                tagged.append((branch, tag))
            node["choices"] = tagged


def _builds(branch: Any, models: dict[str, type]) -> type | None:
    """The model (or dataclass) class a union branch builds, or None (none, or not known)."""
    if not isinstance(branch, dict):
        return None
    if branch.get("type") == "definition-ref":
        return models.get(str(branch.get("schema_ref")))
    return _class_of(branch)


def rewritten_validator(
    adapter: TypeAdapter[Any], rewrite: Callable[[Any], Any]
) -> SchemaValidator | None:
    """A validator of a copy of the adapter's core schema as `rewrite` returns it; None when it
    returns None (nothing to check) or pydantic-core cannot rebuild it (no check, as before).
    Such a copy reads a class as its fields (a class keeps its own prebuilt validator, which
    would ignore the rewrite), and builds the class from them (see `_build_classes`), so that
    the type's own validators are given what Pydantic gives them."""
    try:
        schema = copy.deepcopy(adapter.core_schema)
    except (TypeError, AttributeError, copy.Error):
        return None
    _mark_classes(schema)
    rewritten = rewrite(schema)
    if rewritten is None:
        return None
    try:
        return SchemaValidator(_build_classes(rewritten))
    except Exception:
        return None


_BUILDS: Final = "outform-builds"
"""The key, in the `metadata` of a class's inner schema (its fields), of the function that
builds the class from what they read (see `_mark_classes`)."""


def _mark_classes(schema: Any) -> None:
    """Mark the inner schema of each class in `schema` (a copy of a core schema, changed in
    place) with the function that builds the class from what it reads, without the class's
    validator: a rewrite that reads the class as its fields (its own prebuilt validator would
    ignore the rewrite) then builds it all the same (`_build_classes`)."""
    for node in nodes(schema):
        inner = node.get("schema")
        if node.get("type") in ("model", "dataclass") and isinstance(inner, dict):
            build = _builder(node)
            if build is not None:
                metadata = inner.get("metadata")
                metadata = dict(metadata) if isinstance(metadata, dict) else {}
                node["schema"] = {**inner, "metadata": {**metadata, _BUILDS: build}}


def _builder(node: dict[str, Any]) -> Callable[[Any], Any] | None:
    """How to build the class of `node` (a model's or a dataclass's core schema) from what its
    inner schema reads, as Pydantic's own validator builds it, none of its validators run
    again: a model (`model_construct`, which runs `model_post_init`) from its fields, the
    fields set and its extra keys; a root model from its root; a dataclass from its fields
    (`__post_init__` called, with its init-only values, when it has one)."""
    cls: Any = node.get("cls")
    if not isinstance(node.get("cls"), type):
        return None
    if node["type"] == "dataclass":
        post_init = bool(node.get("post_init"))

        def dataclass(read: Any) -> Any:
            fields, init_only = read
            built = cls.__new__(cls)
            for name, value in fields.items():
                object.__setattr__(built, name, value)
            if post_init:
                built.__post_init__(*(init_only or ()))
            return built

        return dataclass
    construct = getattr(cls, "model_construct", None)
    if not callable(construct):
        return None
    if node.get("root_model"):

        def root(read: Any) -> Any:
            return construct(read)

        return root

    def model(read: Any) -> Any:
        fields, extra, given = read
        return construct(given, **fields, **(extra or {}))

    return model


def _build_classes(node: Any, in_class: bool = False) -> Any:
    """`node` (a rewritten core schema) with each class's inner schema that no longer stands
    in its class (the rewrite read the class as its fields) wrapped by the function that
    builds the class (see `_mark_classes`): the type's validators around it, a wrap
    validator's handler, a field validator's `info.data`, are given the class, as Pydantic
    gives it, not a tuple of its fields. `in_class`: `node` is a class's inner schema still."""
    if isinstance(node, list | tuple):  # (a tuple: a union's branch and its tag)
        items = [_build_classes(item) for item in node]
        return items if isinstance(node, list) else tuple(items)
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    out = {
        key: child
        if key in ("config", "metadata", "cls", "serialization")
        else _build_classes(child, kind in ("model", "dataclass") and key == "schema")
        for key, child in node.items()
    }
    metadata = node.get("metadata")
    build = metadata.get(_BUILDS) if isinstance(metadata, dict) else None
    if build is None or in_class:
        return out
    ref = out.pop("ref", None)
    wrapper: dict[str, Any] = {
        "type": "function-after",
        "function": {"type": "no-info", "function": build},
        "schema": out,
    }
    if ref is not None:
        wrapper["ref"] = ref
    return wrapper


def _close(node: Any, extra: str | None) -> Any:
    """`node` with extra keys forbidden wherever they are ignored, classes read as their
    fields; None when no object under it ignores extra keys."""
    if isinstance(node, list | tuple):  # (a tuple: a union's branch and its tag)
        items = [_close(item, extra) for item in node]
        if all(item is None for item in items):
            return None
        closed = [new if new is not None else old for new, old in zip(items, node, strict=True)]
        return closed if isinstance(node, list) else tuple(closed)
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind == "model":
        # A model has its own config, never its container's: a model inside one that forbids
        # extra keys still ignores them unless it says otherwise (a TypedDict or a stdlib
        # dataclass inside it takes its container's).
        config = node.get("config")
        extra = config.get("extra_fields_behavior") if isinstance(config, dict) else None
    elif kind in _HOLDERS and isinstance(node.get("config"), dict):
        extra = node["config"].get("extra_fields_behavior", extra)
    out = dict(node)
    changed = False
    if kind in _OBJECTS and node.get("extra_behavior", extra) in (None, "ignore"):
        out["extra_behavior"] = "forbid"
        changed = True
    for key, child in node.items():
        if key not in ("config", "metadata", "cls") and isinstance(child, dict | list | tuple):
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


def ignored_keys(closed: Closed, value: Any, typed: Any = _UNKNOWN) -> list[str]:
    """The JSON pointers of the keys of `value` that the type ignores, sorted. `typed`, the
    type's reading of `value`, tells which branch of a union the type chose: a key is
    ignored only by that branch (without it, by any). The value is read as the type reads it
    (strictly, as JSON: see typed.py), so that a union's branches take what they take there."""
    try:
        try:
            text = jsontext.dumps(value)
        except (TypeError, ValueError):  # a processor's value that is no JSON: read as it is
            closed.validator.validate_python(value)
        else:
            closed.validator.validate_json(text, strict=True)
    except ValidationError as exc:
        found = set()
        for error in exc.errors(include_url=False, include_input=False):
            if error["type"] in _EXTRA:
                path = value_path(error["loc"], value, typed, closed.branches)
                if path is not None:
                    found.add(path)
        return sorted(found)
    return []


def value_path(
    loc: tuple[str | int, ...],
    value: Any,
    typed: Any = _UNKNOWN,
    branches: dict[str, type | None] | None = None,
) -> str | None:
    """The JSON pointer in `value` of a Pydantic error's location, whose parts that are no key
    or index of the value there (a union's tags, a validator's names) are passed over; None
    when it passes through a branch of `branches` other than the one `typed` (the type's
    reading of `value`) holds there."""
    parts: list[str | int] = []
    for part in loc:
        if branches is not None and isinstance(part, str) and part.startswith(_BRANCH):
            cls = branches.get(part)
            if cls is not None and typed is not _UNKNOWN and not isinstance(typed, cls):
                return None
            continue
        inside = (isinstance(value, dict) and isinstance(part, str) and part in value) or (
            isinstance(value, list) and type(part) is int and 0 <= part < len(value)
        )
        if inside:
            parts.append(part)
            value = value[part]
            typed = _typed_child(typed, part)
    return pointer.from_parts(parts)


def _typed_child(typed: Any, part: str | int) -> Any:
    """What the type's reading holds for a key or index of the value (_UNKNOWN: not told)."""
    if typed is _UNKNOWN:
        return _UNKNOWN
    if isinstance(typed, BaseModel):
        for name, field in type(typed).model_fields.items():
            if part in (name, field.alias, field.validation_alias):
                return getattr(typed, name, _UNKNOWN)
        return _UNKNOWN
    if isinstance(typed, dict):
        return typed.get(part, _UNKNOWN)
    if isinstance(typed, list | tuple) and type(part) is int and 0 <= part < len(typed):
        return typed[part]
    return _UNKNOWN


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
