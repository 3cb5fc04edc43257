"""Stage *coerce*: fix unambiguous type mismatches, guided by the schema.

The walk only enters parts of the value that do not validate, and at each one tries a short,
fixed list of conversions (see docs/pipeline.md). Every conversion is recorded with its JSON
path. Nothing is guessed: when a conversion could mean two things it is not made, and the
validation stage reports the mismatch instead.

Unions (`anyOf` / `oneOf`) are resolved by trying branches in declaration order, first with
lossless conversions only, then allowing lossy ones (dropping unexpected keys, filling a missing
field, lenient extraction); the first branch under which the whole union validates wins and its
index is recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Final

import orjson

from outform.parse.allowlist import Allowlist, conversion, permits
from outform.parse.decode import Decoded, decode
from outform.parse.hint import preview
from outform.parse.result import Change
from outform.parse.scalars import (
    as_integer,
    fold_accents,
    is_null_word,
    normalize_key,
    normalize_token,
    parse_bool,
    parse_number,
)
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema
from outform.schema.types import choices as enum_choices
from outform.schema.types import json_type, own_types

_NO: Final = object()
_VISIT_BUDGET = 200_000
_SEARCH_LIMIT = 10_000


@dataclass(slots=True)
class Coercion:
    """Outcome of coercing one value: the new value, the changes, the union choices."""

    value: Any
    changes: list[Change] = field(default_factory=list)
    branches: list[tuple[str, int]] = field(default_factory=list)
    blocked: list[tuple[str, str]] = field(default_factory=list)
    """(path, conversion) the allowlist refused."""

    def absorb(self, other: Coercion) -> None:
        self.changes.extend(other.changes)
        self.branches.extend(other.branches)
        self.blocked.extend(other.blocked)


@dataclass(frozen=True, slots=True)
class _At:
    """Where the walk is: schema location, instance path, depth, and whether lossy
    conversions (dropping, filling, extracting) are allowed here."""

    loc: str
    path: str = ""
    depth: int = 0
    lossy: bool = True

    def schema(self, loc: str) -> _At:
        """The same value, checked against another part of the schema."""
        return replace(self, loc=loc, depth=self.depth + 1)

    def child(self, loc: str, key: str | int) -> _At:
        return _At(loc, pointer.join(self.path, key), self.depth + 1, self.lossy)


class Coercer:
    """Coerces values against one compiled schema. Holds no state between calls."""

    def __init__(
        self,
        compiled: CompiledSchema,
        *,
        lenient: bool,
        max_depth: int,
        tolerance: int = 0,
        anyof_strategy: str = "first-pass",
        allowlist: Allowlist | None = None,
    ) -> None:
        self.compiled = compiled
        self.lenient = lenient
        self.max_depth = max_depth
        self.tolerance = tolerance
        """Decode tiers used for JSON written inside a string (as for the reply itself)."""
        self.best = anyof_strategy == "best"
        """Union branches: the one needing the fewest changes (ties to the first), rather
        than the first that fits."""
        self.allowlist = allowlist
        """The type conversions allowed, per target type (None: all)."""

    def coerce(self, value: Any) -> Coercion:
        result = Coercion(value)
        result.value = _Walk(self).node(value, _At(""), result)
        return result


class _Walk:
    __slots__ = ("allowlist", "best", "budget", "compiled", "lenient", "max_depth", "tolerance")

    def __init__(self, coercer: Coercer) -> None:
        self.compiled = coercer.compiled
        self.lenient = coercer.lenient
        self.max_depth = coercer.max_depth
        self.tolerance = coercer.tolerance
        self.best = coercer.best
        self.allowlist = coercer.allowlist
        self.budget = _VISIT_BUDGET

    # -- dispatch -------------------------------------------------------------------------

    def node(self, value: Any, at: _At, out: Coercion) -> Any:
        self.budget -= 1
        if self.budget < 0 or at.depth > self.max_depth:
            return value
        loc, schema = self.compiled.resolve(at.loc)
        at = replace(at, loc=loc)
        if not isinstance(schema, dict) or not schema or self.compiled.is_valid_at(loc, value):
            return value
        ref = schema.get("$ref")
        if isinstance(ref, str) and (target := self.compiled.ref_location(ref)) is not None:
            value = self.node(value, at.schema(target), out)
        for index, _ in enumerate(_list(schema.get("allOf"))):
            value = self.node(value, at.schema(f"{loc}/allOf/{index}"), out)
        value = self.own(value, at, schema, out)
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema and not self.compiled.is_valid_at(loc, value):
                value = self.union(value, at, keyword, len(_list(schema[keyword])), out)
        return value

    def union(self, value: Any, at: _At, keyword: str, count: int, out: Coercion) -> Any:
        for lossy in (False, True) if at.lossy else (False,):
            chosen: tuple[int, Coercion, Any] | None = None
            for index in range(count):
                trial = Coercion(value)
                branch = replace(at.schema(f"{at.loc}/{keyword}/{index}"), lossy=lossy)
                candidate = self.node(value, branch, trial)
                # The whole node must validate: for oneOf that also means no other branch does.
                if not self.compiled.is_valid_at(at.loc, candidate):
                    continue
                if chosen is None or len(trial.changes) < len(chosen[1].changes):
                    chosen = (index, trial, candidate)
                if not self.best or not trial.changes:
                    break
            if chosen is not None:
                index, trial, candidate = chosen
                out.absorb(trial)
                out.branches.append((at.path, index))
                return candidate
        return value

    def attempt(self, value: Any, at: _At, out: Coercion) -> Any:
        """Coerce `value` against the node at `at`; keep the changes only if it then fits."""
        trial = Coercion(value)
        result = self.node(value, at.schema(at.loc), trial)
        if not self.compiled.is_valid_at(at.loc, result):
            return _NO
        out.absorb(trial)
        return result

    # -- the node's own keywords ----------------------------------------------------------

    def own(self, value: Any, at: _At, schema: dict[str, Any], out: Coercion) -> Any:
        allowed = own_types(schema)
        choices = enum_choices(schema)
        if choices is not None:
            matched = self.match_choice(value, choices, at.lossy)
            if matched is not _NO:
                _record(out, at.path, "match_enum", value, matched)
                return matched
        kind = json_type(value)
        if allowed is not None and not _fits(kind, allowed):
            inner = Coercion(value)  # kept only if the conversion itself is allowed
            converted, transform = self.convert(value, kind, allowed, at, inner)
            if converted is _NO:
                return value
            target, name = conversion(value, converted, allowed)
            if not permits(self.allowlist, target, name):
                out.blocked.append((at.path, name))
                return value
            out.absorb(inner)
            _record(out, at.path, transform, value, converted)
            value = converted
            kind = json_type(value)
            if choices is not None and not _in(value, choices):
                matched = self.match_choice(value, choices, at.lossy)
                if matched is not _NO:
                    _record(out, at.path, "match_enum", value, matched)
                    return matched
        if kind == "object":
            if _names_no_field(value, schema):
                wrapped = self.wrap_in_object(value, at, out)
                if wrapped is not _NO:
                    _record(out, at.path, "wrap_in_object", value, wrapped)
                    return wrapped
            return self.object(value, at, schema, out)
        if kind == "array":
            return self.array(value, at, schema, out)
        return value

    def object(
        self, value: dict[str, Any], at: _At, schema: dict[str, Any], out: Coercion
    ) -> dict[str, Any]:
        properties = _dict(schema.get("properties"))
        patterns = _dict(schema.get("patternProperties"))
        additional = schema.get("additionalProperties", True)
        result = dict(value)
        if properties:
            self.rename_keys(result, properties, at.path, out)
        for key in list(result):
            if key in properties:
                child_loc = pointer.join(at.loc, "properties", key)
            elif (pattern := next((p for p in patterns if _search(p, key)), None)) is not None:
                child_loc = pointer.join(at.loc, "patternProperties", pattern)
            elif isinstance(additional, dict):
                child_loc = pointer.join(at.loc, "additionalProperties")
            else:
                if additional is False and at.lossy:
                    _record(
                        out, pointer.join(at.path, key), "drop_unexpected_key", result[key], None
                    )
                    del result[key]
                continue
            result[key] = self.node(result[key], at.child(child_loc, key), out)
        if at.lossy:
            for name in _list(schema.get("required")):
                if isinstance(name, str) and name not in result and name in properties:
                    self.fill_missing(result, name, at.child(at.loc, name), out)
        return result

    def rename_keys(
        self, result: dict[str, Any], properties: dict[str, Any], path: str, out: Coercion
    ) -> None:
        """Rename a key that differs from a declared property only in case, accents or
        surrounding spaces ("Name", " name " for name)."""
        wanted: dict[str, list[str]] = {}
        for name in properties:
            if name not in result:
                wanted.setdefault(normalize_key(name), []).append(name)
        if not wanted:
            return
        for key in list(result):
            if key in properties:
                continue
            names = wanted.get(normalize_key(key))
            if names and len(names) == 1 and names[0] not in result:
                result[names[0]] = result.pop(key)
                _record(out, pointer.join(path, names[0]), "rename_key", key, names[0])

    def fill_missing(self, result: dict[str, Any], name: str, at: _At, out: Coercion) -> None:
        """A required field the reply left out, when the schema implies its only sensible
        value: its default, null where null is allowed, or an empty list or map."""
        loc = pointer.join(at.loc, "properties", name)
        _, schema = self.compiled.resolve(loc)
        if isinstance(schema, dict) and "default" in schema:
            fill: Any = schema["default"]
            transform = "fill_default"
        elif self.compiled.is_valid_at(loc, None):
            fill, transform = None, "fill_null"
        elif self.compiled.is_valid_at(loc, []):
            fill, transform = [], "fill_empty"
        elif (
            isinstance(schema, dict)
            and not schema.get("properties")
            and self.compiled.is_valid_at(loc, {})
        ):
            fill, transform = {}, "fill_empty"
        else:
            return
        result[name] = fill
        _record(out, at.path, transform, None, fill)

    def array(self, value: list[Any], at: _At, schema: dict[str, Any], out: Coercion) -> list[Any]:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
            prefix_keyword, rest_keyword = "items", "additionalItems"
        else:
            prefix_keyword, rest_keyword = "prefixItems", "items"
        prefix = _list(prefix)
        result = list(value)
        for index, item in enumerate(result):
            if index < len(prefix):
                child_loc = pointer.join(at.loc, prefix_keyword, index)
            elif isinstance(items, dict):
                child_loc = pointer.join(at.loc, rest_keyword)
            else:
                break
            result[index] = self.node(item, at.child(child_loc, index), out)
        return result

    # -- conversions ----------------------------------------------------------------------

    def convert(
        self, value: Any, kind: str, allowed: frozenset[str], at: _At, out: Coercion
    ) -> tuple[Any, str]:
        """Turn `value` into one of the allowed types, or return (_NO, "")."""
        lenient = self.lenient and at.lossy
        if kind == "string":
            converted = self.from_string(value, allowed, lenient)
            if converted[0] is not _NO:
                return converted
        elif kind in ("integer", "number"):
            if "boolean" in allowed and value in (0, 1):
                return bool(value), "number_to_boolean"
            if "string" in allowed:
                return orjson.dumps(value).decode(), "number_to_string"
        elif kind == "boolean" and "string" in allowed:
            return ("true" if value else "false"), "boolean_to_string"
        elif kind == "array":
            if len(value) == 1 and (inner := self.attempt(value[0], at, out)) is not _NO:
                return inner, "unwrap_single_item"
            if lenient and "string" in allowed:
                return orjson.dumps(value).decode(), "json_to_string"
        elif kind == "object" and lenient:
            if len(value) == 1:
                inner = self.attempt(next(iter(value.values())), at, out)
                if inner is not _NO:
                    return inner, "unwrap_single_key"
            if "string" in allowed:
                return orjson.dumps(value).decode(), "json_to_string"
        if "object" in allowed and (wrapped := self.wrap_in_object(value, at, out)) is not _NO:
            return wrapped, "wrap_in_object"
        if "array" in allowed:
            if kind != "null":
                return [value], "wrap_in_array"
            if at.lossy:
                return [], "null_to_empty_array"
        return _NO, ""

    def wrap_in_object(self, value: Any, at: _At, out: Coercion) -> Any:
        """`{field: value}` when the object wanted has exactly one declared field."""
        _, schema = self.compiled.resolve(at.loc)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict) or len(properties) != 1:
            return _NO
        (name,) = properties
        return self.attempt({name: value}, at, out)

    def from_string(self, text: str, allowed: frozenset[str], lenient: bool) -> tuple[Any, str]:
        if "null" in allowed and is_null_word(text):
            return None, "string_to_null"
        if allowed & {"integer", "number"}:
            number = parse_number(text, lenient=lenient)
            if number is not None:
                integer = as_integer(number.value)
                if "integer" in allowed and integer is not None:
                    return integer, f"string_to_integer({number.how})"
                if "number" in allowed:
                    return number.value, f"string_to_number({number.how})"
        if "boolean" in allowed:
            flag = parse_bool(text, lenient=lenient)
            if flag is not None:
                return flag, "string_to_boolean"
        if allowed & {"array", "object"}:
            stripped = text.strip()
            if stripped[:1] in ("{", "["):
                outcome = decode(stripped, self.tolerance)
                if isinstance(outcome, Decoded) and json_type(outcome.value) in allowed:
                    return outcome.value, "decode_json_string"
        return _NO, ""

    def match_choice(self, value: Any, choices: list[Any], lossy: bool) -> Any:
        """The enum member `value` unambiguously names, or _NO."""
        if _in(value, choices):
            return _NO
        if isinstance(value, str):
            names = [c for c in choices if isinstance(c, str)]
            token = normalize_token(value)
            hits = _unique([c for c in names if normalize_token(c) == token])
            if len(hits) == 1:
                return hits[0]
            number = parse_number(value)
            if number is not None:
                hits = [c for c in choices if _is_number(c) and c == number.value]
                if len(hits) == 1:
                    return hits[0]
            if lossy and self.lenient and len(value) <= _SEARCH_LIMIT:
                mentioned = _mentioned(value, names)
                if mentioned is not None:
                    return mentioned
        elif _is_number(value):
            text = orjson.dumps(value).decode()
            hits = [c for c in choices if isinstance(c, str) and c == text]
            if len(hits) == 1:
                return hits[0]
        elif isinstance(value, list) and len(value) == 1:
            return (
                value[0] if _in(value[0], choices) else self.match_choice(value[0], choices, lossy)
            )
        return _NO


def _mentioned(text: str, names: list[str]) -> str | None:
    """The one member a sentence mentions as a whole word, or None (none, or several).

    Members written exactly as declared are looked for first; only when none is, the search
    ignores case and accents. Where one mention lies inside a longer one ("1040" in "1040-X"),
    the longer counts.
    """
    folded = fold_accents(text).casefold()
    for haystack, fold in ((text, False), (folded, True)):
        spans: list[tuple[int, int, str]] = []
        for name in names:
            needle = fold_accents(name).casefold() if fold else name
            if not needle.strip():
                continue
            pattern = r"(?<![A-Za-z0-9_])" + re.escape(needle) + r"(?![A-Za-z0-9_])"
            spans += [(m.start(), m.end(), name) for m in re.finditer(pattern, haystack)]
        if not spans:
            continue
        spans.sort(key=lambda span: (span[0], -(span[1] - span[0])))
        kept: set[str] = set()
        reach = -1
        for start, end, name in spans:
            if start >= reach:
                kept.add(name)
                reach = end
        return kept.pop() if len(kept) == 1 else None
    return None


# -- helpers ------------------------------------------------------------------------------


def _record(out: Coercion, path: str, transform: str, before: Any, after: Any) -> None:
    """Record a change; a transform written `name(detail)` is split into the two fields."""
    name, _, detail = transform.partition("(")
    out.changes.append(
        Change(path, "semantic", name, _snapshot(before), _snapshot(after), detail.rstrip(")"))
    )


def _snapshot(value: Any) -> Any:
    """Small values as they are; long strings and containers as a short preview."""
    if isinstance(value, str):
        return value if len(value) <= 200 else preview(value, 200)
    if isinstance(value, dict | list):
        text = preview(value, 200)
        return value if len(text) < 200 else text
    return value


def _names_no_field(value: dict[str, Any], schema: dict[str, Any]) -> bool:
    """The object wanted has one declared field and `value` uses none of the declared names."""
    properties = schema.get("properties")
    if not value or not isinstance(properties, dict) or len(properties) != 1:
        return False
    declared = {normalize_key(p) for p in properties}
    return not any(normalize_key(k) in declared for k in value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _fits(kind: str, allowed: frozenset[str]) -> bool:
    return kind in allowed or (kind == "integer" and "number" in allowed)


def _in(value: Any, choices: list[Any]) -> bool:
    return any(_json_equal(value, c) for c in choices)


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unique(values: list[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _search(pattern: str, key: str) -> bool:
    try:
        return re.search(pattern, key) is not None
    except re.error:
        return False


__all__ = ["Coercer", "Coercion"]
