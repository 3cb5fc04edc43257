"""Fields a typed output reads by their Python name as well as by their alias.

A model whose config says `populate_by_name=True` (or `validate_by_name=True`, Pydantic 2.11+),
and a dataclass or TypedDict whose config Pydantic honours alike, reads the field
`user_name: str = Field(alias="userName")` from `{"userName": ...}` and from
`{"user_name": ...}`. Its JSON Schema (by alias, as Pydantic writes it) knows only `userName`:
the fast path (Pydantic's strict reading of the text) took `{"user_name": "a"}`, while the slow
path refused it for lacking `userName`, and the stream dropped the field.

The schema outform checks such a type against (:class:`ByName`; the published schema, sent to
providers and hashed, is unchanged) accepts either spelling: the name is a property too, with
the alias's schema, and a required field is satisfied by either (`if: {required: [name]},
else: {required: [alias]}`, in `allOf`: a reply with neither is told it lacks the alias, and
the stream's checker, which leaves `if` to the final validation, tracks no more alternatives).
A reply writing both spellings is read by the type from the alias, as Pydantic reads it, and
the name's key is one the type ignores: the validator that finds such keys
(:func:`closed_validator`) reads each field by both spellings, alias first, and the fast path's
first check of them (:class:`OneSpelling`) refuses both together.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from outform.parse import ignored

if TYPE_CHECKING:
    from pydantic._internal._core_utils import CoreSchemaField

_FIELDS = {"model-fields": dict, "typed-dict": dict, "dataclass-args": list}
"""Core schemas holding fields, and how (by name, or as a list of fields that name
themselves)."""
_HOLDERS = {"model", "typed-dict", "dataclass"}
"""Core schemas whose `config` says whether their fields are read by name."""


class ByName(GenerateJsonSchema):
    """Pydantic's schema generator, but a field read by its name as well as its alias is a
    property under both (see the module)."""

    exclusive: ClassVar[bool] = False
    """Whether an object may not write both spellings of one field (:class:`OneSpelling`)."""

    def _named_required_fields_schema(
        self, named_required_fields: Sequence[tuple[str, bool, CoreSchemaField]]
    ) -> JsonSchemaValue:
        generated = super()._named_required_fields_schema(named_required_fields)
        pairs = [
            (alias, name)
            for name, _, field in named_required_fields
            if (alias := self._by_name_alias(name, field)) is not None
        ]
        if not pairs:
            return generated
        return _with_names(generated, pairs, exclusive=self.exclusive)

    def _by_name_alias(self, name: str, field: CoreSchemaField) -> str | None:
        """The key the schema writes for field `name` when the type reads the field by its
        name too and that key is another one; else None."""
        if field["type"] == "computed-field" or self.mode != "validation" or not self.by_alias:
            return None
        if not reads_by_name(getattr(self._config, "config_dict", {})):
            return None
        alias = self._get_alias_name(field, name)
        return alias if alias != name else None


class OneSpelling(ByName):
    """The same, but an object writing both spellings of one field is refused: the fast
    path's first check for keys the type ignores (the name's, beside the alias)."""

    exclusive = True


def reads_by_name(config: Any) -> bool:
    """Whether a config (a ConfigDict, or a core schema's config) reads fields by name."""
    if not isinstance(config, dict):
        return False
    by_name = config.get("validate_by_name")
    if by_name is None:
        by_name = config.get("populate_by_name")
    return bool(by_name) and config.get("validate_by_alias", True) is not False


def _with_names(
    node: JsonSchemaValue, pairs: list[tuple[str, str]], *, exclusive: bool
) -> JsonSchemaValue:
    """An object's schema with each field of `pairs` (alias, name) a property under its name
    too, required under either spelling; under one only when `exclusive`."""
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return node
    required = list(node.get("required", ()))
    out_properties: dict[str, Any] = {}
    parts: list[JsonSchemaValue] = []
    names = dict(pairs)
    for key, schema in properties.items():
        out_properties[key] = schema
        name = names.get(key)
        if name is None or name in properties:
            continue  # (a name that is another field's key is that field's)
        out_properties[name] = schema
        if key in required:
            required.remove(key)
            parts.append({"if": {"required": [name]}, "else": {"required": [key]}})
        if exclusive:
            parts.append({"not": {"required": [key, name]}})
    out = {k: v for k, v in node.items() if k != "required"}
    out["properties"] = out_properties
    if required:
        out["required"] = required
    if parts:
        out["allOf"] = [*node.get("allOf", ()), *parts]
    return out


def applies(adapter: TypeAdapter[Any]) -> bool:
    """Whether the adapter's type reads a field by its name as well as a string alias."""
    try:
        core = adapter.core_schema
    except Exception:  # a type without a schema: nothing to read by name
        return False
    return _spelled_both(core, None) is not None


def closed_validator(adapter: TypeAdapter[Any]) -> ignored.Closed | None:
    """:func:`outform.parse.ignored.closed_validator`, with each field read by name read by
    both spellings (alias first, as Pydantic reads it): the validator that finds keys the type
    ignores drops the model's config, so it would say that a field's name is one."""
    return ignored.closed_validator(adapter, before=lambda schema: _spelled_both(schema, None))


def _spelled_both(node: Any, by_name: bool | None) -> Any:
    """A core schema with each field read by name given both spellings as its validation
    alias (`[[alias], [name]]`, Pydantic's `AliasChoices`); None when no field is."""
    if isinstance(node, list):
        items = [_spelled_both(item, by_name) for item in node]
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
        fields = _aliased_fields(node.get("fields"))
        if fields is not None:
            out["fields"] = fields
            changed = True
    for key, child in out.items():
        if key not in ("config", "metadata", "cls") and isinstance(child, dict | list):
            new = _spelled_both(child, by_name)
            if new is not None:
                out[key] = new
                changed = True
    return out if changed else None


def _aliased_fields(fields: Any) -> Any:
    """`fields` (a map of names to fields, or a list of fields that name themselves) with
    each string alias a choice of it and the name; None when none has one."""
    if isinstance(fields, dict):
        items = [(name, field) for name, field in fields.items()]
    elif isinstance(fields, list):
        items = [(field.get("name"), field) for field in fields if isinstance(field, dict)]
    else:
        return None
    changed = False
    spelled: list[Any] = []
    for name, field in items:
        alias = field.get("validation_alias")
        if isinstance(name, str) and isinstance(alias, str) and alias != name:
            spelled.append({**field, "validation_alias": [[alias], [name]]})
            changed = True
        else:
            spelled.append(field)
    if not changed:
        return None
    if isinstance(fields, dict):
        return dict(zip(fields, spelled, strict=True))
    return spelled


__all__ = ["ByName", "OneSpelling", "applies", "closed_validator", "reads_by_name"]
