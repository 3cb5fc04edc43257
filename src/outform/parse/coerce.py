"""Stage *coerce*: fix unambiguous type mismatches, guided by the schema.

The walk only enters parts of the value that do not validate, and at each one tries a short,
fixed list of conversions (see docs/pipeline.md). Every conversion is recorded with its JSON
path. Nothing is guessed: when a conversion could mean two things it is not made, and the
validation stage reports the mismatch instead.

Unions (`anyOf` / `oneOf`) are resolved by trying branches in declaration order, first with
lossless conversions only, then allowing lossy ones (dropping unexpected keys, filling a missing
field, lenient extraction); the first branch whose coerced value fits that branch and the whole
union wins and its index is recorded.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from outform.parse import loss
from outform.parse.allowlist import Allowlist, conversion, permits
from outform.parse.choices import Choices
from outform.parse.context import Deadline
from outform.parse.decode import MAX_REPAIR_CHARS, MAX_REPAIR_STRING, Decoded, decode
from outform.parse.hint import clip, preview
from outform.parse.literals import Spellings
from outform.parse.result import Change
from outform.parse.scalars import (
    bool_note,
    is_null_word,
    normalize_key,
    number_note,
    parse_bool,
    parse_number,
)
from outform.parse.values import encode
from outform.schema import patterns, pointer
from outform.schema.compiled import CompiledSchema
from outform.schema.types import choices as enum_choices
from outform.schema.types import json_type, own_types

_NO: Final = object()
_Fill = Literal["default", "null", "list", "map"] | None
"""How a required property the reply left out is filled: its default, null, [], {}; or not."""
_BEFORE: Final[Any] = "(the type of before)"
_SEARCH_LIMIT = 10_000
"""Longest string searched for an enum member mentioned in a sentence (a longer text is no
sentence naming one choice)."""


@dataclass(slots=True)
class Coercion:
    """Outcome of coercing one value: the new value, the changes, the union choices."""

    value: Any
    changes: list[Change] = field(default_factory=list)
    branches: list[tuple[str, int]] = field(default_factory=list)
    blocked: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) of conversions refused: by the allowlist, or a number whose reading
    depends on the locale."""
    made: dict[int, tuple[float, str]] = field(default_factory=dict)
    """The floats read out of strings, by identity, with the literal each was read from (see
    literals.py): a decimal field is given those digits."""

    def absorb(self, other: Coercion, branch: int | None = None) -> None:
        """Take `other`'s changes; `branch`: the union branch they were made under (a change
        already made under an inner union keeps that one)."""
        if branch is None:
            self.changes.extend(other.changes)
        else:
            self.changes += [
                c if c.branch_index is not None else replace(c, branch_index=branch)
                for c in other.changes
            ]
        self.branches.extend(other.branches)
        self.blocked.extend(other.blocked)


class _At:
    """Where the walk is: schema location, instance path (built only when a change is
    recorded), depth, and whether lossy conversions (dropping, filling, extracting) are
    allowed here."""

    __slots__ = ("_path", "depth", "key", "loc", "lossy", "parent")

    def __init__(
        self,
        loc: str,
        parent: _At | None = None,
        key: str | int = "",
        depth: int = 0,
        lossy: bool = True,
        *,
        path: str | None = None,
    ) -> None:
        self.loc = loc
        self.parent = parent
        self.key = key
        self.depth = depth
        self.lossy = lossy
        self._path = "" if parent is None and path is None else path

    @property
    def path(self) -> str:
        if self._path is None:
            assert self.parent is not None
            self._path = pointer.join(self.parent.path, self.key)
        return self._path

    def schema(self, loc: str, lossy: bool | None = None) -> _At:
        """The same value, checked against another part of the schema."""
        lossy = self.lossy if lossy is None else lossy
        return _At(loc, self.parent, self.key, self.depth + 1, lossy, path=self._path)

    def moved(self, loc: str) -> _At:
        """The same place, its location resolved through `$ref`s."""
        return _At(loc, self.parent, self.key, self.depth, self.lossy, path=self._path)

    def child(self, loc: str, key: str | int) -> _At:
        return _At(loc, self, key, self.depth + 1, self.lossy)


class Coercer:
    """Coerces values against one compiled schema. Keeps nothing between calls but what it
    worked out about the schema."""

    def __init__(
        self,
        compiled: CompiledSchema,
        *,
        lenient: bool,
        max_depth: int,
        tolerance: int = 0,
        max_repair_chars: int = MAX_REPAIR_CHARS,
        max_repair_string: int = MAX_REPAIR_STRING,
        anyof_strategy: str = "first-pass",
        allowlist: Allowlist | None = None,
    ) -> None:
        self.compiled = compiled
        self.lenient = lenient
        self.max_depth = max_depth
        self.tolerance = tolerance
        """Decode tiers used for JSON written inside a string (as for the reply itself)."""
        self.max_repair_chars = max_repair_chars
        self.max_repair_string = max_repair_string
        self.plans: dict[str, _Node] = {}
        """The plan of each schema location the walks visited (derived from the schema only)."""
        self.fills: dict[str, _Fill] = {}
        """How a required property left out is filled, per its schema location (see
        `_Walk.fill_missing`): asked once per location, not once per object that lacks it."""
        self.best = anyof_strategy == "best"
        """Union branches: the one needing the fewest changes (ties to the first), rather
        than the first that fits."""
        self.allowlist = allowlist
        """The type conversions allowed, per target type (None: all)."""

    def coerce(
        self,
        value: Any,
        deadline: Deadline | None = None,
        text: str | None = None,
        cut: str | None = None,
    ) -> Coercion:
        """Coerce `value`; the work is bounded by the deadline (an InputError naming
        `time_limit` when it passes), not by any count of its own. `text`: what `value` was
        read from, where a number turned into text finds how the reply wrote it (see
        literals.py). `cut`: the path of a string the reply ended inside, which may have
        gone on (`"3` of `"36"`): kept as text, never read as a number, a boolean or a
        member."""
        return self.coerce_at(value, "", deadline, text, cut)

    def cannot_fit(self, value: Any) -> bool:
        """Whether coercion certainly leaves `value` invalid at the root: an object that lacks a
        name the root requires, which no key of it is renamed to and no fill supplies (see
        `rename_keys`, `fill_missing`), or a list where the root takes neither lists nor
        strings, unless it holds one item (unwrapped, and asked the same). Answered only where
        nothing else can add a key (the root has no union, `allOf` or `$ref` beside its own
        keywords, no enum, takes objects, and has more than one property), in the time of the
        value's size, not the schema's."""
        walk = _Walk(self, Deadline.never())
        _, plan = walk.plan("")
        allowed = plan.allowed
        if (
            not plan.usable
            or plan.chained
            or plan.unions
            or plan.choices is not None
            or plan.one_field is not None
            or (allowed is not None and "object" not in allowed)
        ):
            return False
        while isinstance(value, list):
            if allowed is None or allowed & {"array", "string"}:
                return False
            if len(value) != 1:
                return True
            value = value[0]
        if not isinstance(value, dict):
            return False
        unfilled = plan.unfilled(walk)
        if len(unfilled) > len(value):
            return True
        named = plan.by_normalized_name()
        covered = {key for key in value if key in unfilled}
        for key in value:
            covered.update(n for n in named.get(normalize_key(key), ()) if n in unfilled)
        return len(covered) < len(unfilled)

    def coerce_at(
        self,
        value: Any,
        loc: str,
        deadline: Deadline | None = None,
        text: str | None = None,
        cut: str | None = None,
    ) -> Coercion:
        """Coerce `value` against the part of the schema at JSON pointer `loc` (`text`, `cut`:
        see `coerce`)."""
        result = Coercion(value)
        deadline = deadline or Deadline.never()
        walk = _Walk(self, deadline, Spellings(text, deadline))
        walk.cut = cut
        result.value = walk.node(value, _At(loc), result)
        result.made = walk.spellings.made_floats
        return result


class _Node:
    """What the walk needs to know about one schema location, worked out once per location."""

    __slots__ = (
        "additional",
        "additional_loc",
        "allowed",
        "chained",
        "choices",
        "keyed",
        "loc",
        "members_only",
        "named",
        "one_field",
        "orphans",
        "prefix",
        "properties",
        "required",
        "rest",
        "schema",
        "unions",
        "usable",
    )

    def __init__(self, compiled: CompiledSchema, loc: str, schema: Any) -> None:
        self.loc = loc
        self.schema: dict[str, Any] = schema if isinstance(schema, dict) else {}
        schema = self.schema
        self.usable = bool(schema)
        self.chained: list[str] = []
        ref = schema.get("$ref")
        if isinstance(ref, str) and (target := compiled.ref_location(ref)) is not None:
            self.chained.append(target)
        self.chained += [f"{loc}/allOf/{i}" for i in range(len(_list(schema.get("allOf"))))]
        self.unions = [
            (keyword, len(_list(schema[keyword])))
            for keyword in ("anyOf", "oneOf")
            if keyword in schema
        ]
        self.allowed, self.choices = compiled.memo(("coerce.own", loc), lambda: _own(schema))
        self.members_only = self.choices is not None and set(schema) <= _MEMBERS_ONLY
        """Validity here is membership (and the type): answered by the index, without
        compiling a validator for the location (a large enum costs as much as the schema)."""
        properties = _dict(schema.get("properties"))
        self.properties = {name: pointer.join(loc, "properties", name) for name in properties}
        self.keyed = {
            pattern: pointer.join(loc, "patternProperties", pattern)
            for pattern in _dict(schema.get("patternProperties"))
        }
        self.additional = schema.get("additionalProperties", True)
        self.additional_loc = pointer.join(loc, "additionalProperties")
        self.required = [name for name in _list(schema.get("required")) if isinstance(name, str)]
        self.one_field = (
            frozenset(normalize_key(name) for name in properties) if len(properties) == 1 else None
        )
        prefix, items = schema.get("prefixItems"), schema.get("items")
        prefix_keyword, rest_keyword = "prefixItems", "items"
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
            prefix_keyword, rest_keyword = "items", "additionalItems"
        self.prefix = [pointer.join(loc, prefix_keyword, i) for i in range(len(_list(prefix)))]
        self.rest = pointer.join(loc, rest_keyword) if isinstance(items, dict) else None
        self.named: dict[str, tuple[str, ...]] | None = None
        self.orphans: frozenset[str] | None = None

    def unfilled(self, walk: _Walk) -> frozenset[str]:
        """The required names no fill supplies when an object leaves them out (not declared
        as properties, or declared without a default, null, [] or {} to fill in)."""
        if self.orphans is None:
            self.orphans = frozenset(
                name
                for name in self.required
                if name not in self.properties or walk.fill_for(self.properties[name]) is None
            )
        return self.orphans

    def by_normalized_name(self) -> dict[str, tuple[str, ...]]:
        """The declared properties by their normalized name (see `normalize_key`), worked out
        on first use: a key is matched in one look-up, not against every declared name."""
        if self.named is None:
            named: dict[str, list[str]] = {}
            for name in self.properties:
                named.setdefault(normalize_key(name), []).append(name)
            self.named = {key: tuple(names) for key, names in named.items()}
        return self.named


def _one_level_note(value: list[Any]) -> str:
    """Why a list written one level deep, where two are wanted, was not wrapped (see
    `_Walk.array`)."""
    return (
        f"the list holding it, {preview(value, 40)}, is written one level deep where two are "
        f"wanted: it may be one item written without its brackets ([{preview(value, 20)}]) "
        "or items each written without theirs; write the nesting the schema asks for"
    )


_CUT_NOTE = (
    'the reply ended inside this string, which may have gone on ("3" of "36"): its '
    "text is not read as another type"
)


class _Walk:
    """One coercion walk. Two rules keep it polynomial on recursive schemas: a value is never
    coerced against a schema location it is already being coerced against further up (wrapping
    `x` in `[x]` for items of the same schema would otherwise repeat to `max_depth`), and a
    trial that failed (an `attempt`, a union branch) is not tried again for the same value,
    location and lossiness (otherwise each nested level doubles the work)."""

    __slots__ = (
        "active",
        "allowlist",
        "best",
        "compiled",
        "cut",
        "deadline",
        "failed",
        "fills",
        "lenient",
        "max_depth",
        "max_repair_chars",
        "max_repair_string",
        "plans",
        "spellings",
        "tolerance",
    )

    def __init__(
        self, coercer: Coercer, deadline: Deadline, spellings: Spellings | None = None
    ) -> None:
        self.compiled = coercer.compiled
        self.lenient = coercer.lenient
        self.max_depth = coercer.max_depth
        self.tolerance = coercer.tolerance
        self.max_repair_chars = coercer.max_repair_chars
        self.max_repair_string = coercer.max_repair_string
        self.plans = coercer.plans
        self.fills = coercer.fills
        self.deadline = deadline
        self.active: set[tuple[int, str]] = set()
        """(value, location) pairs being coerced on the current path."""
        self.failed: dict[tuple[int, str, bool], Any] = {}
        """Trials that did not validate, keyed by the value's id (the value is kept, so that
        the id stays its own)."""
        self.best = coercer.best
        self.allowlist = coercer.allowlist
        self.cut: str | None = None
        """The path of the string the reply ended inside (see `Coercer.coerce`)."""
        self.spellings = spellings or Spellings()
        """How the reply wrote its numbers: a number turned into text is written so."""

    def valid(self, loc: str, value: Any) -> bool:
        """Whether `value` fits the schema at `loc` (a resolved location)."""
        plan = self.plans.get(loc)
        if plan is not None and plan.members_only and plan.choices is not None:
            return value in plan.choices and (
                plan.allowed is None or _fits(_kind(value), plan.allowed)
            )
        return self.compiled.is_valid_at(loc, value)

    def plan(self, loc: str) -> tuple[str, _Node]:
        """The location `$ref`s lead to from `loc`, and its plan."""
        plan = self.plans.get(loc)
        if plan is None:
            # A location met for the first time: its plan and validator are built, which costs
            # up to the schema's size (a union of 200,000 branches): the clock is read.
            self.deadline.check()
            resolved, schema = self.compiled.resolve(loc)
            plan = self.plans.get(resolved) or _Node(self.compiled, resolved, schema)
            self.plans[loc] = self.plans[resolved] = plan
        return plan.loc, plan

    # -- dispatch -------------------------------------------------------------------------

    def node(self, value: Any, at: _At, out: Coercion) -> Any:
        self.deadline.tick()
        if at.depth > self.max_depth:
            return value
        loc, plan = self.plan(at.loc)
        if loc != at.loc:
            at = at.moved(loc)
        if not plan.usable or self.valid(loc, value):
            return value
        here = (id(value), loc)
        if here in self.active:
            return value  # the same question further up: asking it again cannot help
        self.active.add(here)
        try:
            for target in plan.chained:
                value = self.node(value, at.schema(target), out)
            value = self.own(value, at, plan, out)
            for keyword, count in plan.unions:
                if not self.valid(loc, value):
                    value = self.union(value, at, keyword, count, out)
        finally:
            self.active.discard(here)
        return value

    def union(self, value: Any, at: _At, keyword: str, count: int, out: Coercion) -> Any:
        # Why a branch refused a conversion (`"1e400"` is out of range for a number): told
        # beside the violation when no branch takes the value.
        refused: dict[tuple[str, str], None] = {}
        for lossy in (False, True) if at.lossy else (False,):
            chosen: tuple[int, Coercion, Any] | None = None
            for index in range(count):
                branch = at.schema(f"{at.loc}/{keyword}/{index}", lossy=lossy)
                # The whole node must validate: for oneOf that also means no other branch does.
                candidate, trial = self.trial(value, branch, at.loc)
                if candidate is _NO:
                    refused.update(dict.fromkeys(b for b in trial.blocked if b[0] == at.path))
                    continue
                if chosen is None or len(trial.changes) < len(chosen[1].changes):
                    chosen = (index, trial, candidate)
                if not self.best or not trial.changes:
                    break
            if chosen is not None:
                index, trial, candidate = chosen
                out.absorb(trial, index)
                out.branches.append((at.path, index))
                return candidate
        out.blocked.extend(refused)
        return value

    def attempt(self, value: Any, at: _At, out: Coercion) -> Any:
        """Coerce `value` against the node at `at`; keep the changes only if it then fits."""
        result, trial = self.trial(value, at.schema(at.loc), at.loc)
        if result is not _NO:
            out.absorb(trial)
        return result

    def trial(self, value: Any, at: _At, whole: str) -> tuple[Any, Coercion]:
        """Coerce `value` as `at` says: the outcome and its changes if it then fits the node
        at `at` and the node at `whole`, else _NO (a union's branch whose repairs give a value
        only another branch takes licensed nothing: `{"a": "x"}` for anyOf [closed object with
        a required field, object of booleans] is not `{}`). A failed trial is remembered (see
        the class)."""
        trial = Coercion(value)
        key = (id(value), at.loc, at.lossy)
        if key in self.failed:
            return _NO, trial
        result = self.node(value, at, trial)
        if not (at.loc == whole or self.valid(at.loc, result)) or not self.valid(whole, result):
            self.failed[key] = value
            return _NO, trial
        return result, trial

    # -- the node's own keywords ----------------------------------------------------------

    def own(self, value: Any, at: _At, plan: _Node, out: Coercion) -> Any:
        allowed, choices = plan.allowed, plan.choices
        if (
            self.cut is not None
            and type(value) is str
            and at.path == self.cut
            and (
                (choices is not None and value not in choices)
                or (allowed is not None and not _fits("string", allowed))
            )
        ):
            out.blocked.append((at.path, _CUT_NOTE))
            return value
        if choices is not None:
            matched = self.match_choice(value, choices, at.lossy)
            if matched is _NO and type(value) is str and len(alike := choices.named(value)) > 1:
                out.blocked.append((at.path, _alike_note(alike)))
            if matched is not _NO:
                unspelled = self.unspelled(value, matched)
                _record(
                    out,
                    at.path,
                    _spelled("match_enum", unspelled),
                    value,
                    matched,
                    expected=_types(allowed, matched),
                    lost=unspelled + _unsaid(value, matched),
                )
                return matched
        kind = json_type(value)
        listed: tuple[Any, Coercion] | None = None
        if allowed is not None and not _fits(kind, allowed):
            inner = Coercion(value)  # kept only if the conversion itself is allowed
            converted, transform, lost = self.convert(value, kind, allowed, at, inner)
            if converted is _NO:
                note = None
                if kind == "string" and allowed & {"integer", "number"}:
                    note = number_note(value, lenient=self.lenient and at.lossy)
                if kind == "string" and note is None and "boolean" in allowed and self.lenient:
                    note = bool_note(value)
                if note is not None:
                    out.blocked.append((at.path, note))
                return value
            target, name = conversion(value, converted, allowed)
            if not permits(self.allowlist, target, name):
                out.blocked.append((at.path, f"{name} is not in the allowlist"))
                return value
            if transform == "wrap_in_array" and kind in ("object", "array"):
                # The moved value is the list's one item: it is not written as its JSON text
                # (see `made_text`), which only the walk of the list tells.
                walked = Coercion(converted)
                listed = self.array(converted, at, plan, walked), walked
                if made_text(walked, pointer.join(at.path, 0)):
                    return value
            out.absorb(inner)
            _record(out, at.path, transform, value, converted, expected=_types(allowed), lost=lost)
            value = converted
            kind = json_type(value)
            if choices is not None and value not in choices:
                # A sentence is searched for a member only where the reply wrote one: not in
                # the JSON text a container was turned into.
                search = at.lossy and transform != "json_to_string"
                matched = self.match_choice(value, choices, search)
                if matched is not _NO:
                    _record(
                        out,
                        at.path,
                        "match_enum",
                        value,
                        matched,
                        expected=_types(allowed, matched),
                        lost=_unsaid(value, matched),
                    )
                    return matched
        if kind == "object":
            if plan.one_field is not None and _names_no_field(value, plan.one_field):
                wrapped = self.wrap_in_object(value, at, out)
                if wrapped is not _NO:
                    _record(out, at.path, "wrap_in_object", value, wrapped, expected="object")
                    return wrapped
            return self.object(value, at, plan, out)
        if kind == "array":
            if listed is not None:
                out.absorb(listed[1])
                return listed[0]
            return self.array(value, at, plan, out)
        return value

    def object(self, value: dict[str, Any], at: _At, plan: _Node, out: Coercion) -> dict[str, Any]:
        properties, keyed, additional = plan.properties, plan.keyed, plan.additional
        result = dict(value)
        if properties:
            self.rename_keys(result, plan, at, out)
        for key in list(result):
            child_loc = properties.get(key)
            if child_loc is not None:
                pass
            elif (pattern := next((p for p in keyed if patterns.search(p, key)), None)) is not None:
                child_loc = keyed[pattern]
            elif isinstance(additional, dict):
                child_loc = plan.additional_loc
            else:
                if additional is False and at.lossy:
                    dropped = result.pop(key)
                    lost = loss.size(encode({key: dropped}))
                    path = pointer.join(at.path, key)
                    _record(
                        out,
                        path,
                        "drop_unexpected_key",
                        dropped,
                        None,
                        expected="absent",
                        lost=lost,
                    )
                continue
            result[key] = self.node(result[key], at.child(child_loc, key), out)
        if at.lossy:
            for name in plan.required:
                self.deadline.tick()
                if name not in result and name in properties:
                    self.fill_missing(result, properties[name], at.child(at.loc, name), out)
        # An object left as it was stays the same object: the walk knows a value it met
        # before by its identity (see the class).
        unchanged = len(result) == len(value) and all(
            result.get(key, _NO) is item for key, item in value.items()
        )
        return value if unchanged else result

    def rename_keys(self, result: dict[str, Any], plan: _Node, at: _At, out: Coercion) -> None:
        """Rename a key that differs from a declared property only in case, accents or
        surrounding spaces ("Name", " name " for name): when exactly one declared property the
        reply left out has that normalized name, and no other key of the reply could be that
        property too (with "Name" and "NAME" neither is renamed: which is meant?). The work is
        per key of the reply, not per declared property (an object of a wide schema is met once
        per candidate)."""
        properties = plan.properties
        strays = [key for key in result if key not in properties]
        if not strays:
            return
        named = plan.by_normalized_name()
        claims: dict[str, list[str]] = {}  # declared name -> the stray keys it could be
        for key in strays:
            names = [n for n in named.get(normalize_key(key), ()) if n not in result]
            if len(names) == 1:
                claims.setdefault(names[0], []).append(key)
        for name, keys in claims.items():
            if len(keys) == 1:  # "Name" and "NAME" both for name: which one? Neither is renamed
                result[name] = result.pop(keys[0])
                where = pointer.join(at.path, name)
                _record(out, where, "rename_key", keys[0], name, expected=None, actual=None)

    def fill_missing(self, result: dict[str, Any], loc: str, at: _At, out: Coercion) -> None:
        """A required field the reply left out (its location `loc`), when the schema implies
        its only sensible value: its default, null where null is allowed, or an empty list or
        map."""
        way = self.fill_for(loc)
        if way is None:
            return
        fill: Any
        if way == "default":
            fill, transform = self.compiled.resolve(loc)[1]["default"], "fill_default"
        elif way == "null":
            fill, transform = None, "fill_null"
        else:
            fill, transform = ([] if way == "list" else {}), "fill_empty"
        result[str(at.key)] = fill
        _record(out, at.path, transform, None, fill, expected=json_type(fill), actual="absent")

    def fill_for(self, loc: str) -> _Fill:
        """How a property left out is filled at `loc` (see fill_missing); None: it is not."""
        try:
            return self.fills[loc]
        except KeyError:
            way = self.fills[loc] = self._fill_for(loc)
            return way

    def _fill_for(self, loc: str) -> _Fill:
        _, schema = self.compiled.resolve(loc)
        if isinstance(schema, dict) and "default" in schema:
            return "default"
        if self.compiled.is_valid_at(loc, None):
            return "null"
        if self.compiled.is_valid_at(loc, []):
            return "list"
        if (
            isinstance(schema, dict)
            and not schema.get("properties")
            and self.compiled.is_valid_at(loc, {})
        ):
            return "map"
        return None

    def array(self, value: list[Any], at: _At, plan: _Node, out: Coercion) -> list[Any]:
        prefix, rest = plan.prefix, plan.rest
        result = list(value)
        # A list of items none of which is a list, where items that are lists are wanted, may
        # be one item written without its brackets (`[1, 2, 3]` for a list of lists: one row
        # or three?): its items are walked apart, and their wrapping kept only if it is not.
        written_flat = len(value) > 1 and not any(type(item) is list for item in value)
        walked = Coercion(value) if written_flat else out
        wrapped: _At | None = None  # the first item wrapped in a list
        for index, item in enumerate(result):
            if index < len(prefix):
                child_loc = prefix[index]
            elif rest is not None:
                child_loc = rest
            else:
                break
            child = at.child(child_loc, index)
            made = len(walked.changes)
            result[index] = self.node(item, child, walked)
            if (
                written_flat
                and wrapped is None
                and len(walked.changes) > made
                and any(
                    c.transform == "wrap_in_array" and c.path == child.path
                    for c in walked.changes[made:]
                )
            ):
                wrapped = child
        if walked is not out:
            if (
                wrapped is not None
                and self.trial(value, at.schema(wrapped.loc), wrapped.loc)[0] is not _NO
            ):
                out.blocked.append((wrapped.path, _one_level_note(value)))
                return value
            out.absorb(walked)
        return value if all(map(operator.is_, result, value)) else result

    # -- conversions ----------------------------------------------------------------------

    def convert(
        self, value: Any, kind: str, allowed: frozenset[str], at: _At, out: Coercion
    ) -> tuple[Any, str, int]:
        """Turn `value` into one of the allowed types: the value, the transform and the
        characters of the reply's content it discards; (_NO, "", 0) when there is none."""
        lenient = self.lenient and at.lossy
        if kind == "string":
            converted = self.from_string(value, allowed, lenient)
            if converted[0] is not _NO:
                return converted
        elif kind in ("integer", "number"):
            if "boolean" in allowed and value in (0, 1):
                return bool(value), "number_to_boolean", 0
            if "string" in allowed:
                text, known = self.spellings.spell(value)
                if text is not None:
                    return text, _spelled("number_to_string", not known), int(not known)
        elif kind == "boolean" and "string" in allowed:
            return ("true" if value else "false"), "boolean_to_string", 0
        elif kind == "array":
            if len(value) == 1 and (inner := self.attempt(value[0], at, out)) is not _NO:
                return inner, "unwrap_single_item", 0
            if lenient and "string" in allowed:
                text, known = self.spellings.encode(value)
                return text, _spelled("json_to_string", not known), int(not known)
        elif kind == "object" and lenient:
            converted = self.from_object(value, allowed, at, out)
            if converted[0] is not _NO:
                return converted
        if "object" in allowed and (wrapped := self.wrap_in_object(value, at, out)) is not _NO:
            return wrapped, "wrap_in_object", 0
        if "array" in allowed:
            if kind != "null":
                return [value], "wrap_in_array", 0
            if at.lossy:
                return [], "null_to_empty_array", 0
        return _NO, "", 0

    def from_object(
        self, value: dict[str, Any], allowed: frozenset[str], at: _At, out: Coercion
    ) -> tuple[Any, str, int]:
        """An object where it is not wanted (lenient): its one key's value, its JSON text, or
        the object in a list. Unwrapping drops the key's name, content of the reply (see
        `key_loss`), so a conversion that keeps it and fits is tried first: `{"a": 0}` for a
        list is `[{"a": 0}]`, as at level minimal, not `[0]`."""
        key = next(iter(value)) if len(value) == 1 else None
        lost = -1 if key is None else self.key_loss(key, at)
        if key is not None and lost == 0:
            inner = self.attempt(value[key], at, out)
            if inner is not _NO:
                return inner, "unwrap_single_key", 0
        text, known = self.spellings.encode(value) if "string" in allowed else (None, True)
        as_text = _spelled("json_to_string", not known), int(not known)
        if text is not None and (lost <= 0 or self.valid(at.loc, text)):
            return text, *as_text
        if key is not None and lost > 0:
            if "array" in allowed and (listed := self.wrap_in_array(value, at, out)) is not _NO:
                return listed, "wrap_in_array", 0
            inner = self.attempt(value[key], at, out)
            if inner is not _NO:
                return inner, f"unwrap_single_key(dropped the key {clip(key, 40)!r})", lost
        if text is not None:
            return text, *as_text  # not valid there: validation says why
        return _NO, "", 0

    def unspelled(self, value: Any, matched: Any) -> int:
        """1 when `matched` is the text of a number in `value` whose spelling by the reply is
        not known (see literals.py; lossy: it may have been written otherwise), else 0."""
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not _is_number(value) or not isinstance(matched, str):
            return 0
        return int(not self.spellings.spell(value)[1])

    def key_loss(self, key: str, at: _At) -> int:
        """The letters and digits of content unwrapping `{key: value}` at `at` discards: the
        key's name (see loss.py), or nothing when the key names the value there: it is the key
        of the object holding it (`{"age": {"age": 180}}` for an integer `age`), or the
        schema's `title` there (`{"Priority": "HIGH"}` for an enum titled Priority)."""
        named = normalize_key(key)
        if at.parent is not None and isinstance(at.key, str) and normalize_key(at.key) == named:
            return 0
        title = self.plan(at.loc)[1].schema.get("title")
        if isinstance(title, str) and normalize_key(title) == named:
            return 0
        return loss.measure(encode(key), comments=False).size

    def wrap_in_object(self, value: Any, at: _At, out: Coercion) -> Any:
        """`{field: value}` when the object wanted has exactly one declared field: for a value
        the reply wrote without a key of its own there. Not when the field's value is then got
        by dropping a key the reply wrote (`{"height": 180}` is not `{"age": 180}`): that
        would move a value under a name the reply did not give it. Nor when it is got by
        writing the moved object or list as its JSON text (`{"text": "hello"}` is not
        `{"answer": "{\"text\":\"hello\"}"}`): its keys would become text of a string the
        reply never wrote, where it wrote an object whose keys are wrong."""
        _, schema = self.compiled.resolve(at.loc)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict) or len(properties) != 1:
            return _NO
        (name,) = properties
        result, trial = self.trial({name: value}, at.schema(at.loc), at.loc)
        if result is _NO:
            return _NO
        field = pointer.join(at.path, name)
        if any(
            c.path == field
            and ((c.transform == "unwrap_single_key" and c.lost) or c.transform == "json_to_string")
            for c in trial.changes
        ):
            return _NO
        out.absorb(trial)
        return result

    def wrap_in_array(self, value: Any, at: _At, out: Coercion) -> Any:
        """`[value]`, coerced, when it then fits the node at `at`, and its one item is not had
        by writing the moved object or list as its JSON text (see `made_text`)."""
        result, trial = self.trial([value], at.schema(at.loc), at.loc)
        if result is _NO or made_text(trial, pointer.join(at.path, 0)):
            return _NO
        out.absorb(trial)
        return result

    def from_string(
        self, text: str, allowed: frozenset[str], lenient: bool
    ) -> tuple[Any, str, int]:
        if "null" in allowed and is_null_word(text):
            return None, "string_to_null", 0
        if allowed & {"integer", "number"}:
            number = parse_number(text, lenient=lenient)
            if number is not None:
                # Read out of a sentence, the number leaves the sentence's words behind.
                lost = _unsaid(text, number.value) if number.how == "in_text" else 0
                integer = number.integer
                if "integer" in allowed and integer is not None:
                    return integer, f"string_to_integer({number.how})", lost
                if "number" in allowed:
                    if isinstance(number.value, float) and number.written:
                        self.spellings.made(number.value, number.written)
                    return number.value, f"string_to_number({number.how})", lost
        if "boolean" in allowed:
            flag = parse_bool(text, lenient=lenient)
            if flag is not None:
                if parse_bool(text) is None:  # a sentence: its other words are left behind
                    return flag, "string_to_boolean(in_text)", _unsaid(text, flag)
                return flag, "string_to_boolean", 0
        if allowed & {"array", "object"}:
            stripped = text.strip()
            if stripped[:1] in ("{", "["):
                outcome = decode(
                    stripped,
                    self.tolerance,
                    deadline=self.deadline,
                    max_repair_chars=self.max_repair_chars,
                    max_repair_string=self.max_repair_string,
                )
                if isinstance(outcome, Decoded) and json_type(outcome.value) in allowed:
                    return outcome.value, "decode_json_string", outcome.lost
        return _NO, "", 0

    def match_choice(self, value: Any, choices: Choices, search: bool) -> Any:
        """The enum member `value` unambiguously names, or _NO. `search`: also look for a
        member mentioned in a sentence (lenient, lossy)."""
        if value in choices:
            return _NO
        if isinstance(value, str):
            hits = choices.named(value)
            if len(hits) == 1:
                return hits[0]
            number = parse_number(value)
            if number is not None:
                exact = number.integer
                hits = choices.equal_to(number.value if exact is None else exact)
                if len(hits) == 1:
                    return hits[0]
            if search and self.lenient and len(value) <= _SEARCH_LIMIT:
                mentioned = choices.mentioned(value, self.deadline)
                if mentioned is not None:
                    return mentioned
        elif _is_number(value):
            text, known = self.spellings.spell(value)
            if text is not None and text in choices:
                return text
            if not known and len(hits := choices.spelling(value)) == 1:
                return hits[0]
        elif isinstance(value, list) and len(value) == 1:
            return value[0] if value[0] in choices else self.match_choice(value[0], choices, search)
        return _NO


# -- helpers ------------------------------------------------------------------------------


def made_text(moved: Coercion, item: str) -> bool:
    """Whether the coercion of a list made by `wrap_in_array` wrote its one item (at `item`),
    the object or list the reply wrote where the list is, as its JSON text: an object or list
    is written as text only where the reply wrote it (`{"a": 1}` for a list of strings is not
    `['{"a":1}']`), as for `wrap_in_object` (docs/pipeline.md, *Keys*)."""
    return any(c.path == item and c.transform == "json_to_string" for c in moved.changes)


def _record(
    out: Coercion,
    path: str,
    transform: str,
    before: Any,
    after: Any,
    *,
    expected: str | None,
    actual: str | None = _BEFORE,
    lost: int = 0,
) -> None:
    """Record a change; a transform written `name(detail)` is split into the two fields.
    `expected`: the types the schema allows there; `actual`: the type the reply had (by
    default, the type of `before`)."""
    name, _, detail = transform.partition("(")
    had = json_type(before) if actual is _BEFORE else actual
    out.changes.append(
        Change(
            path,
            "semantic",
            name,
            _snapshot(before),
            _snapshot(after),
            detail.rstrip(")"),
            lost,
            expected,
            had,
        )
    )


def _unsaid(text: Any, value: Any) -> int:
    """The letters and digits of a string `text` (or of the one string a one-item list holds)
    that `value`, read out of it, does not keep (see loss.py): the rest of a sentence a number,
    boolean or enum member was found in ("about 42 apples" -> 42 leaves 11); nothing for a
    re-spelling ("**EUR**" -> "EUR", "yes" -> true)."""
    if isinstance(text, list) and len(text) == 1:
        text = text[0]
    if not isinstance(text, str):
        return 0
    kept = loss.measure(encode(value), comments=False).size
    return max(0, loss.measure(encode(text), comments=False).size - kept)


def _alike_note(members: list[str]) -> str:
    """Why a string naming several members alike but for case or accents took none."""
    shown = ", ".join(preview(m, 40) for m in members[:5])
    more = f" and {len(members) - 5} more" if len(members) > 5 else ""
    return (
        f"it may name {shown}{more}, members that differ only in case or accents, and spells "
        "none of them exactly; write one as declared"
    )


def _spelled(transform: str, unknown: bool | int) -> str:
    """`transform`, saying so when the reply's spelling of a number it writes is not known."""
    if not unknown:
        return transform
    return f"{transform}(the reply's spelling of the number is not known: it may differ)"


def _types(allowed: frozenset[str] | None, value: Any = _NO) -> str | None:
    """The allowed types as one word (`integer|null`); without them, the type of `value`."""
    if allowed:
        return "|".join(sorted(allowed))
    return None if value is _NO else json_type(value)


def _own(schema: dict[str, Any]) -> tuple[frozenset[str] | None, Choices | None]:
    """The types a node's own keywords allow, and its members indexed (None: no enum)."""
    members = enum_choices(schema)
    if members is None:
        return own_types(schema), None
    choices = Choices(members)
    kind = schema.get("type")
    if isinstance(kind, str | list):
        return own_types(schema), choices
    return choices.types, choices


def _snapshot(value: Any) -> Any:
    """Small values as they are; long strings and containers as a short preview."""
    if isinstance(value, str):
        return value if len(value) <= 200 else preview(value, 200)
    if isinstance(value, dict | list):
        text = preview(value, 200)
        return value if len(text) < 200 else text
    return value


def _names_no_field(value: dict[str, Any], declared: frozenset[str]) -> bool:
    """`value` uses none of the (normalized) names of the one field the object declares."""
    return bool(value) and not any(normalize_key(k) in declared for k in value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _fits(kind: str, allowed: frozenset[str]) -> bool:
    return kind in allowed or (kind == "integer" and "number" in allowed)


_MEMBERS_ONLY = frozenset(
    {"enum", "const", "type", "title", "description", "default", "examples", "$comment"}
)


def _kind(value: Any) -> str:
    """The JSON type of a value as `type` sees it: a float with a whole value is an integer."""
    kind = json_type(value)
    return "integer" if kind == "number" and float(value).is_integer() else kind


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


__all__ = ["Coercer", "Coercion"]
