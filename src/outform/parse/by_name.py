"""Fields a typed output reads under more than one key.

Pydantic reads a field under each of its *spellings*: its alias; its Python name too when the
type's config says `populate_by_name=True` (or `validate_by_name=True`, Pydantic 2.11+), for a
model, and for a dataclass or TypedDict whose config Pydantic honours alike; each choice of a
`validation_alias=AliasChoices("x", "ex")`, in order (the name last). The type's JSON Schema
(by alias, as Pydantic writes it) knows one key per field: the fast path (Pydantic's strict
reading of the text) took `{"ex": 5}`, while the slow path refused it for lacking `x`, and the
stream dropped the field.

The schema outform checks such a type against (:class:`ByName`; the published schema, sent to
providers and hashed, is unchanged) takes every spelling: each is a property, with the field's
schema, and a required field is satisfied by any of them (`if: {required: [other]}, else:
{required: [key]}`, nested once per further spelling, in `allOf`: a reply with none is told it
lacks the schema's key, and the stream's checker, which leaves `if` to the final validation,
tracks no more alternatives). A key the schema writes that the type does not read
(`AliasPath("zz")` is published as the field's name) is no property of it.

A path into a nested key or an index (`AliasPath("data", 0)`, alone or as a choice) is no
property of the object: such a field is not required by the checked schema, and the path's
first key is a property that takes any value (unless it is another field's), so that the type
itself reads the field there and checks it (an error then is the type's own). The stream shows
such a field only under its plain spellings, if it has any.

A reply writing two spellings of one field is read by the type from the first (Pydantic's
order), and the other key is one the type ignores: the validator that finds such keys
(:func:`closed_validator`) reads each field under every spelling, and the fast path's first
check of them (:class:`OneSpelling`) refuses two together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import AliasChoices, AliasPath, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from outform.parse import ignored
from outform.parse.core_rewrite import nodes

if TYPE_CHECKING:
    from pydantic._internal._core_utils import CoreSchemaField

_FIELDS = {"model-fields": dict, "typed-dict": dict, "dataclass-args": list}
"""Core schemas holding fields, and how (by name, or as a list of fields that name
themselves)."""
_HOLDERS = {"model", "typed-dict", "dataclass"}
"""Core schemas whose `config` says whether their fields are read by name."""


@dataclass(frozen=True, slots=True)
class Spellings:
    """The keys a type reads one field from."""

    keys: tuple[str, ...]
    """The object's keys, in the order the type tries them."""
    nested: tuple[str, ...] = ()
    """The first keys of the paths into a nested key or an index (`AliasPath("data", 0)`)."""


def spellings(name: str, alias: Any, *, by_alias: bool = True, by_name: bool = False) -> Spellings:
    """The spellings of field `name` whose validation alias is `alias` (as a core schema writes
    it: a key, a path, a list of paths; or an `AliasPath`, an `AliasChoices`; None: no alias),
    for a type that reads fields by alias (`by_alias`) and by name (`by_name`)."""
    paths = _paths(alias) if by_alias else []
    if not paths:
        return Spellings((name,))
    keys = [str(p[0]) for p in paths if len(p) == 1 and isinstance(p[0], str)]
    nested = [str(p[0]) for p in paths if len(p) > 1 and isinstance(p[0], str)]
    if by_name:
        keys.append(name)
    return Spellings(tuple(dict.fromkeys(keys)), tuple(dict.fromkeys(nested)))


def _paths(alias: Any) -> list[list[Any]]:
    """A validation alias as the list of paths Pydantic tries, in order."""
    if isinstance(alias, AliasChoices | AliasPath):
        alias = alias.convert_to_aliases()
    if isinstance(alias, str):
        return [[alias]]
    if not isinstance(alias, list) or not alias:
        return []
    if all(isinstance(path, list) for path in alias):
        return [list(path) for path in alias if path]
    return [list(alias)]


class ByName(GenerateJsonSchema):
    """Pydantic's schema generator, but a field the type reads under several keys is a
    property under each (see the module)."""

    exclusive: ClassVar[bool] = False
    """Whether an object may not write two spellings of one field (:class:`OneSpelling`)."""

    def _named_required_fields_schema(
        self, named_required_fields: Sequence[tuple[str, bool, CoreSchemaField]]
    ) -> JsonSchemaValue:
        generated = super()._named_required_fields_schema(named_required_fields)
        spelled = {
            self._get_alias_name(field, name): found
            for name, _, field in named_required_fields
            if (found := self._spelled(name, field)) is not None
        }
        if not spelled:
            return generated
        return _with_spellings(generated, spelled, exclusive=self.exclusive)

    def _spelled(self, name: str, field: CoreSchemaField) -> Spellings | None:
        """The spellings of field `name` when they are other than the one key the schema
        writes for it; else None."""
        if field["type"] == "computed-field" or self.mode != "validation" or not self.by_alias:
            return None
        by_alias, by_name = reading(getattr(self._config, "config_dict", {}))
        found = spellings(name, field.get("validation_alias"), by_alias=by_alias, by_name=by_name)
        key = self._get_alias_name(field, name)
        return None if found == Spellings((key,)) else found


class OneSpelling(ByName):
    """The same, but an object writing two spellings of one field is refused: the fast
    path's first check for keys the type ignores (the later spelling's)."""

    exclusive = True


def reading(config: Any) -> tuple[bool, bool]:
    """Whether a config (a ConfigDict, or a core schema's config) reads fields by alias, and
    whether by name too."""
    if not isinstance(config, dict):
        return True, False
    by_alias = config.get("validate_by_alias", True) is not False
    by_name = config.get("validate_by_name")
    if by_name is None:
        by_name = config.get("populate_by_name")
    return by_alias, bool(by_name) and by_alias


def reads_by_name(config: Any) -> bool:
    """Whether a config (a ConfigDict, or a core schema's config) reads fields by name as
    well as by alias."""
    return reading(config)[1]


def _with_spellings(
    node: JsonSchemaValue, spelled: dict[str, Spellings], *, exclusive: bool
) -> JsonSchemaValue:
    """An object's schema with each field of `spelled` (by the key the schema writes) a
    property under each spelling, required under any; under one only when `exclusive`."""
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return node
    claimed = set(properties)  # (a key that is another field's property is that field's)
    keys: dict[str, list[str]] = {}
    for key, found in spelled.items():
        if key not in properties:
            continue
        own = [k for k in found.keys if k == key or k not in claimed]
        claimed.update(own)
        keys[key] = own
    nested = [k for found in spelled.values() for k in found.nested if k not in claimed]
    out_properties: dict[str, Any] = {}
    parts: list[JsonSchemaValue] = []
    required: list[str] = []
    for key, schema in properties.items():
        own = keys.get(key, [key])
        out_properties.update(dict.fromkeys(own, schema))
        if exclusive:
            parts.extend({"not": {"required": list(pair)}} for pair in combinations(own, 2))
    out_properties.update({key: {} for key in nested})
    for key in node.get("required", ()):
        own = keys.get(key, [key])
        if (key in keys and spelled[key].nested) or not own:
            continue  # (read through a path: the type checks it)
        if len(own) == 1:
            required.append(own[0])
        else:  # (told as missing under the schema's key, when the type reads it)
            parts.append(_any_of(sorted(own, key=lambda k: k != key)))
    out = {k: v for k, v in node.items() if k != "required"}
    out["properties"] = out_properties
    if required:
        out["required"] = required
    if parts:
        out["allOf"] = [*node.get("allOf", ()), *parts]
    return out


def _any_of(keys: list[str]) -> JsonSchemaValue:
    """Required under any of `keys`: told as missing under the first."""
    condition: JsonSchemaValue = {"required": [keys[0]]}
    for key in reversed(keys[1:]):
        condition = {"if": {"required": [key]}, "else": condition}
    return condition


def applies(adapter: TypeAdapter[Any]) -> bool:
    """Whether the adapter's type reads a field under a key its schema may not write: by its
    name as well as a string alias, or through a list of choices or a path."""
    try:
        core = adapter.core_schema
    except Exception:  # a type without a schema: nothing to read by name
        return False
    return _spelled_all(core, None) is not None or _has_paths(core)


def _has_paths(schema: Any) -> bool:
    """Whether a field of a core schema has a validation alias of choices or a path."""
    return any(isinstance(node.get("validation_alias"), list) for node in nodes(schema))


def closed_validator(adapter: TypeAdapter[Any]) -> ignored.Closed | None:
    """:func:`outform.parse.ignored.closed_validator`, with each field read by name read by
    its name after its aliases (as Pydantic reads it): the validator that finds keys the type
    ignores drops the model's config, so it would say that a field's name is one. (Choices of
    an `AliasChoices` are the field's own: that validator keeps them.)"""
    return ignored.closed_validator(adapter, before=lambda schema: _spelled_all(schema, None))


def _spelled_all(node: Any, by_name: bool | None) -> Any:
    """A core schema with the name of each field read by name the last choice of its
    validation alias (Pydantic's `AliasChoices`); None when no field is read by name."""
    if isinstance(node, list):
        items = [_spelled_all(item, by_name) for item in node]
        if all(item is None for item in items):
            return None
        return [new if new is not None else old for new, old in zip(items, node, strict=True)]
    if not isinstance(node, dict):
        return None
    kind = node.get("type")
    if kind in _HOLDERS and isinstance(node.get("config"), dict):
        by_name = reads_by_name(node["config"])
    out = dict(node)
    changed = False
    if by_name and kind in _FIELDS:
        fields = _named_fields(node.get("fields"))
        if fields is not None:
            out["fields"] = fields
            changed = True
    for key, child in out.items():
        if key not in ("config", "metadata", "cls") and isinstance(child, dict | list):
            new = _spelled_all(child, by_name)
            if new is not None:
                out[key] = new
                changed = True
    return out if changed else None


def _named_fields(fields: Any) -> Any:
    """`fields` (a map of names to fields, or a list of fields that name themselves) with
    each field's name the last choice of its validation alias; None when none has one."""
    if isinstance(fields, dict):
        items = [(name, field) for name, field in fields.items()]
    elif isinstance(fields, list):
        items = [(field.get("name"), field) for field in fields if isinstance(field, dict)]
    else:
        return None
    changed = False
    spelled: list[Any] = []
    for name, field in items:
        paths = _paths(field.get("validation_alias"))
        if isinstance(name, str) and paths and [name] not in paths:
            spelled.append({**field, "validation_alias": [*paths, [name]]})
            changed = True
        else:
            spelled.append(field)
    if not changed:
        return None
    if isinstance(fields, dict):
        return dict(zip(fields, spelled, strict=True))
    return spelled


__all__ = [
    "ByName",
    "OneSpelling",
    "Spellings",
    "applies",
    "closed_validator",
    "reading",
    "reads_by_name",
    "spellings",
]
