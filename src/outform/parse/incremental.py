"""Schema checks that advance with the streaming parser, to stop a reply that cannot succeed.

:class:`Checker` receives the events of :class:`outform.parse.partial.PartialParser` (a value
opens, a key is read, a member completes, a string grows, a value closes) and answers one
question as early as possible: can the text so far still become a valid reply? The moment it
cannot, it records a :class:`Violation` naming the path, what the schema expected there and
what the reply has, and the stream can be cut.

Work per event is bounded: a member completed between two chunks is checked once, whole, by
the compiled validator (or a short Python check for simple scalar schemas); an open container
is never re-validated, only its own keywords are checked as it grows (`required` when it
closes, `maxItems` as items arrive, `additionalProperties: false` as keys arrive). Full
validation happens once, at the end, through the normal pipeline.

Unions are tracked, not guessed: each position holds its still-possible *alternatives* (one
per `anyOf`/`oneOf` branch, each a conjunction of the schema nodes that apply: the node, its
`allOf` parts, its `$ref` target). An alternative that a check rules out is dropped, and the
parent's alternatives it came from are dropped with it; the position fails only when none is
left. Keywords the checker does not track (`not`, `if`/`then`, `uniqueItems`, `contains`,
`patternProperties` matching, ...) are left to the final validation: the checker may let a doomed
reply run to its end, but it never stops one that could have been valid.

Two modes. *Strict* (level "off", or a provider that enforces the schema) judges the JSON as
written. *Repairable* (levels "minimal" and "full") judges what the pipeline could still make of
it: a mismatch that a coercion can repair (`"42"` for a number, an unexpected key that will be
dropped, an object where a list is wanted) is not a reason to stop; a string past `maxLength`,
an array past `maxItems`, or a completed value that the coercer itself cannot repair is.

The degeneration guard watches the raw text for the two ways a model loops: a run of whitespace,
or one fragment repeated over and over.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Final, cast

from outform.parse.coerce import Coercer
from outform.parse.context import Deadline
from outform.parse.hint import Violation, clip, describe, preview
from outform.parse.partial import Kind
from outform.parse.validate import _violation as violation_of
from outform.parse.validate import summarize
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema
from outform.schema.types import JSON_TYPE_NAMES

_MAX_ALTERNATIVES = 64
_STRING_DONE = frozenset(
    {
        "type",
        "maxLength",
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
"""Keywords already settled for a string once it is complete (type at its start, maxLength as
it grew): a string under only these needs no final look."""
_TYPE_OF = JSON_TYPE_NAMES


class _Forbidden:
    __slots__ = ()


_FORBID: Final = _Forbidden()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Rules:
    """The keywords of one schema node that can be checked as a value is being written."""

    __slots__ = (
        "_check",
        "additional",
        "array_only",
        "choices",
        "compiled",
        "kinds",
        "limits",
        "loc",
        "longest",
        "max_items",
        "max_length",
        "max_props",
        "min_items",
        "min_props",
        "node",
        "patterns",
        "prefix",
        "prefixes",
        "properties",
        "required",
        "rest",
        "string_checks",
        "string_only",
        "types",
    )

    def __init__(self, compiled: CompiledSchema, loc: str, node: dict[str, Any]) -> None:
        self.compiled = compiled
        self.loc = loc
        self.node = node
        kind = node.get("type")
        types: frozenset[str] | None = None
        if isinstance(kind, str):
            types = frozenset({kind})
        elif isinstance(kind, list):
            types = frozenset(k for k in kind if isinstance(k, str))
        if types is not None and "number" in types:
            types |= {"integer"}
        self.types = types
        choices: list[Any] | None = None
        if "const" in node:
            choices = [node["const"]]
        elif isinstance(node.get("enum"), list):
            choices = node["enum"]
        self.choices = choices
        kinds = types
        if choices is not None:  # the kinds of the members, within the declared types
            members = frozenset(_TYPE_OF.get(type(c), "") for c in choices)
            kinds = members if kinds is None else kinds & members
        self.kinds = kinds
        """The kinds of value (object, array, string, ...) this node can take; None: any."""
        strings = [c for c in choices if isinstance(c, str)] if choices is not None else None
        self.prefixes = tuple(sorted(strings)) if strings is not None else None
        """The string members, sorted: whether one starts with a text is a binary search."""
        self.longest = max((len(c) for c in strings), default=0) if strings is not None else 0
        self.max_length = _int(node.get("maxLength"))
        self.max_items = _int(node.get("maxItems"))
        self.min_items = _int(node.get("minItems"))
        self.max_props = _int(node.get("maxProperties"))
        self.min_props = _int(node.get("minProperties"))
        required = node.get("required")
        self.required = (
            frozenset(r for r in required if isinstance(r, str))
            if isinstance(required, list)
            else frozenset()
        )
        properties = node.get("properties")
        self.properties = (
            {name: pointer.join(loc, "properties", name) for name in properties}
            if isinstance(properties, dict)
            else {}
        )
        self.patterns = isinstance(node.get("patternProperties"), dict) and bool(
            node["patternProperties"]
        )
        additional = node.get("additionalProperties", True)
        self.additional: str | _Forbidden | None = (
            _FORBID
            if additional is False
            else pointer.join(loc, "additionalProperties")
            if isinstance(additional, dict)
            else None
        )
        items = node.get("items")
        prefix_key, rest_key = "prefixItems", "items"
        prefix = node.get("prefixItems")
        if isinstance(items, list):  # draft 4-7 tuples
            prefix, prefix_key, rest_key = items, "items", "additionalItems"
        self.prefix = (
            [pointer.join(loc, prefix_key, i) for i in range(len(prefix))]
            if isinstance(prefix, list)
            else []
        )
        rest = node.get(rest_key)
        self.rest: str | _Forbidden | None = (
            _FORBID
            if rest is False
            else pointer.join(loc, rest_key)
            if isinstance(rest, dict)
            else None
        )
        self.limits = (
            self.max_items is not None
            or isinstance(self.rest, _Forbidden)
            or isinstance(self.additional, _Forbidden)
        )
        """Something limits the members this node takes."""
        self.string_checks = not set(node) <= _STRING_DONE
        """A complete string needs a look beyond its type and length (enum, pattern, ...)."""
        self.string_only = types is not None and types <= {"string"} and choices is None
        self.array_only = types is not None and types <= {"array"}
        self._check: Callable[[Any], bool] | None = None

    def accepts(self, value: Any) -> bool:
        """Whether a complete value satisfies this node: one call to the compiled validator of
        this location (a fraction of a microsecond for a small value)."""
        check = self._check
        if check is None:
            check = self._check = self._validator()
        try:
            return check(value)
        except Exception:  # a value the validator cannot take (a huge integer): cannot judge
            return True

    def _validator(self) -> Callable[[Any], bool]:
        compiled, loc = self.compiled, self.loc
        try:
            compiled.is_valid_at(loc, None)  # compiles and keeps the location's validator
        except Exception:  # a location that cannot be compiled on its own: cannot judge
            return _anything
        validator = compiled.validator if not loc else compiled._sub.get(loc)
        if validator is None:
            return lambda value: compiled.is_valid_at(loc, value)
        return cast(Callable[[Any], bool], validator.is_valid)

    def takes(self, kind: str) -> bool:
        """Whether a value of JSON type `kind` can satisfy this node's `type` and `enum`."""
        return self.kinds is None or kind in self.kinds

    def child(self, key: str | int) -> str | _Forbidden | None:
        """The location a member is checked against: a location, forbidden, or None (free)."""
        if isinstance(key, str):
            loc = self.properties.get(key)
            if loc is not None:
                return loc
            if self.patterns:
                return None  # a pattern may match: leave it to the final validation
            return self.additional
        if key < len(self.prefix):
            return self.prefix[key]
        return self.rest


def _anything(value: Any) -> bool:
    return True


Alternative = tuple[_Rules, ...]
"""A conjunction of schema nodes that must all hold at one position."""


class _Alt:
    """One still-possible alternative at a position, linked to the one it came from."""

    __slots__ = ("cap", "kids", "limit", "limited", "loc", "opaque", "rules", "up")

    def __init__(
        self, rules: Alternative, up: _Alt | None, *, opaque: bool = False, limit: int = -1
    ) -> None:
        self.rules = rules
        self.up = up
        self.kids: dict[str | int, list[_Alt]] = {}
        """The alternatives of each member, made once (they never change)."""
        self.cap = max((len(rule.prefix) for rule in rules), default=0)
        """Array members from this index on share one schema."""
        self.loc = rules[0].loc if rules else ""
        self.limited = limit >= 0 or any(rule.limits for rule in rules)
        """Whether anything limits the members this alternative takes."""
        self.opaque = opaque
        """Judged only once complete: a coercion could turn a value of the wrong JSON type
        into one of the right type (repairable mode only)."""
        self.limit = limit
        """The most members this alternative can take (-1: no limit)."""


class Slot:
    """A position in the document: its path and the alternatives still possible there."""

    __slots__ = ("alts", "key", "kind", "loc", "parent")

    def __init__(
        self, alts: list[_Alt], parent: Slot | None, key: str | int | None, loc: str
    ) -> None:
        self.alts = alts
        self.parent = parent
        self.key = key
        self.loc = loc
        """The schema location first declared here (for messages)."""
        self.kind: Kind | None = None

    @property
    def path(self) -> str:
        """The JSON pointer of the position (built on demand: only violations need it)."""
        parts: list[str | int] = []
        slot: Slot | None = self
        while slot is not None and slot.key is not None:
            parts.append(slot.key)
            slot = slot.parent
        return pointer.from_parts(reversed(parts))


Reason = Callable[[], Violation]
_FREE: Final = [_Alt((), None)]
"""The alternatives of a position nothing constrains."""


class _Shared:
    """What checkers of one schema share: the rules of each location, the alternatives of each
    location and member (each made once, never changed), the coercer. Built for the first
    reply, reused by every later one."""

    __slots__ = ("children", "coercer", "compiled", "expanded", "root", "rules")

    def __init__(self, compiled: CompiledSchema, coercer: Coercer) -> None:
        self.compiled = compiled
        self.coercer = coercer
        self.rules: dict[str, _Rules] = {}
        self.expanded: dict[str, tuple[Alternative, ...]] = {}
        self.children: dict[tuple[Alternative, str | int], tuple[Alternative, ...]] = {}
        self.root: list[_Alt] | None = None


_SHARED: dict[tuple[Any, ...], _Shared] = {}


def _starts_one(members: tuple[str, ...], head: str) -> bool:
    """Whether a member of `members` (sorted) starts with `head`: the first member not below
    `head` does, if any does."""
    index = bisect.bisect_left(members, head)
    return index < len(members) and members[index].startswith(head)


class Checker:
    """Incremental checks of one reply against one compiled schema (a parser `Listener`).

    `strict=True` checks the JSON as written; `strict=False` lets pass whatever the pipeline's
    coercion (with `lenient`, the *full* level's) could still repair. :attr:`violation` is set
    the first time the reply can no longer become valid; later events are ignored.
    """

    def __init__(
        self,
        compiled: CompiledSchema,
        *,
        strict: bool = True,
        lenient: bool = False,
        tolerance: int = 0,
        max_depth: int = 200,
        time_limit: float = 5.0,
    ) -> None:
        self.compiled = compiled
        self.strict = strict
        self.lenient = lenient
        self.time_limit = time_limit
        """Seconds one coercion check may take (a check that runs out cannot judge)."""
        key = (compiled.hash, strict, lenient, tolerance, max_depth)
        shared = _SHARED.get(key)
        if shared is None or shared.compiled is not compiled:
            if len(_SHARED) >= 64:
                _SHARED.clear()
            coercer = Coercer(compiled, lenient=lenient, max_depth=max_depth, tolerance=tolerance)
            shared = _SHARED[key] = _Shared(compiled, coercer)
        self._shared = shared
        self._coercer = shared.coercer
        self._rules = shared.rules
        self._expanded = shared.expanded
        self._children = shared.children
        self._expanding: set[str] = set()
        self.violation: Violation | None = None
        if shared.root is None:
            shared.root = [_Alt(rules, None) for rules in self._expand("")]
        self._root = self._new_root()

    # -- listener ---------------------------------------------------------------------------

    def reset(self) -> None:
        self.violation = None
        self._root = self._new_root()

    def root(self) -> Slot:
        return self._root

    def child(self, slot: Slot, key: str | int) -> Slot:
        if self.violation is not None:
            return Slot(_FREE, None, None, "")
        ups = slot.alts
        if len(ups) == 1 and not ups[0].limited:  # the common case
            up = ups[0]
            alts = up.kids.get(key if isinstance(key, str) or key < up.cap else up.cap)
            if alts is None:
                alts = self._members_of(up, key)
            if alts:
                return Slot(alts, slot, key, alts[0].loc)
        if not (self.lenient and isinstance(key, int)):
            self._admit(slot, key)  # (an item, at full, once it is whole: see `close`)
        ups = slot.alts
        if len(ups) == 1:
            alts = self._members_of(ups[0], key)
            child = Slot(alts, slot, key, alts[0].loc if alts else "")
            if not alts:
                self._keep(slot, [], self._gone(slot, key))
            return child
        alts = []
        for up in ups:
            alts += self._members_of(up, key)
        loc = next((a.loc for a in alts if a.rules), "")
        child = Slot(alts, slot, key, loc)
        if len({id(a.up) for a in alts}) < len(ups):
            kept = [a for a in ups if any(c.up is a for c in alts)]
            self._keep(slot, kept, self._gone(slot, key))
        return child

    def _members_of(self, up: _Alt, key: str | int) -> list[_Alt]:
        """The alternatives of member `key` under the alternative `up` of its container."""
        index = key if isinstance(key, str) or key < up.cap else up.cap
        found = up.kids.get(index)
        if found is None:
            if up.opaque:
                found = [_Alt((), up)]
            else:
                found = [_Alt(rules, up) for rules in self._kids(up.rules, key)]
            up.kids[index] = found
        return found

    def open(self, slot: Slot, kind: Kind) -> None:
        slot.kind = kind
        if self.violation is not None:
            return
        alts = slot.alts
        for index, alt in enumerate(alts):
            if alt.opaque:
                continue
            for rule in alt.rules:
                kinds = rule.kinds
                if kinds is not None and kind not in kinds:
                    self._narrow_open(slot, kind, alts[:index])
                    return

    def _narrow_open(self, slot: Slot, kind: Kind, kept: list[_Alt]) -> None:
        """Some alternative does not take a value of this JSON type (the rest of `open`)."""
        for alt in slot.alts[len(kept) :]:
            if alt.opaque or all(r.takes(kind) for r in alt.rules):
                kept.append(alt)
            elif not self.strict and self._plausible(kind, alt.rules):
                limit = 1 if kind == "array" and not self._keeps_arrays(alt.rules) else -1
                kept.append(_Alt(alt.rules, alt.up, opaque=True, limit=limit))
        self._keep(slot, kept, partial(self._type_violation, slot, kind))

    def key(self, slot: Slot, key: str) -> None:
        if self.violation is None and self.strict:
            self._admit(slot, key)

    def complete(self, slot: Slot, key: str | int, value: Any) -> None:
        if self.violation is not None:
            return
        alts = slot.alts
        if len(alts) == 1 and not alts[0].limited:  # the common case, without allocations
            up = alts[0]
            kids = up.kids.get(key if isinstance(key, str) or key < up.cap else up.cap)
            if kids is None:
                kids = self._members_of(up, key)
            for kid in kids:
                if kid.opaque:
                    return
                for rule in kid.rules:
                    if not rule.accepts(value):
                        break
                else:
                    return
                if not self.strict and self._repairable_all(kid.rules, value):
                    return
            self._keep(slot, [], partial(self._value_violation, slot, key, kids, value))
            return
        self._admit(slot, key)
        alts = slot.alts
        kept = [
            alt
            for alt in alts
            if alt.opaque or any(self._fits(kid.rules, value) for kid in self._members_of(alt, key))
        ]
        if len(kept) < len(alts):
            kids = self._members_of(alts[0], key)
            self._keep(slot, kept, partial(self._value_violation, slot, key, kids, value))

    def grow(self, slot: Slot, length: int, head: str) -> None:
        if self.violation is not None:
            return
        reason: list[Reason] = []
        kept = [
            alt
            for alt in slot.alts
            if alt.opaque or self._string_ok(alt.rules, length, head, reason, slot)
        ]
        if len(kept) < len(slot.alts):
            self._keep(slot, kept, reason[-1] if reason else self._gone(slot, ""))

    def close(self, slot: Slot, value: Any) -> None:
        if self.violation is not None:
            return
        parent = slot.parent
        if self.lenient and isinstance(slot.key, int) and parent is not None:
            # At full, an item counts against `maxItems` (or the one item of an array to be
            # unwrapped) once it is whole: json-repair drops an item the reply is cut off
            # inside when nothing in it is complete (`[{}, {"a": ` reads `[{}]`).
            self._admit(parent, slot.key)
            if self.violation is not None:
                return
        alts = slot.alts
        if slot.kind is None:  # a value never seen open: check it whole
            kept = [alt for alt in alts if alt.opaque or self._fits(alt.rules, value)]
            if len(kept) < len(alts):
                self._keep(slot, kept, partial(self._explain, slot.path, alts, value))
            return
        if len(alts) == 1 and not alts[0].opaque:  # the common case: nothing to narrow
            rules = alts[0].rules
            kind = slot.kind
            for rule in rules:
                if kind == "object":
                    if rule.required and not value.keys() >= rule.required:
                        break
                    if rule.min_props is not None or rule.max_props is not None:
                        break
                elif kind == "array":
                    if rule.min_items is not None and len(value) < rule.min_items:
                        break
                elif rule.string_checks and not rule.accepts(value):
                    break
            else:
                return
        reasons: list[Reason] = []
        kept = []
        for alt in slot.alts:
            if alt.opaque:
                ok = self._repairable_all(alt.rules, value)
            else:
                ok = self._closes(alt.rules, value, slot, reasons)
                if not ok and not self.strict:
                    ok = self._repairable_all(alt.rules, value)
            if ok:
                kept.append(alt)
        if len(kept) < len(slot.alts):
            self._keep(
                slot,
                kept,
                reasons[-1] if reasons else partial(self._explain, slot.path, alts, value),
            )

    # -- alternatives -----------------------------------------------------------------------

    def _new_root(self) -> Slot:
        alts = self._shared.root
        assert alts is not None
        loc = next((a.loc for a in alts if a.rules), "")
        return Slot(list(alts), None, None, loc)

    def _rule(self, loc: str, node: dict[str, Any]) -> _Rules:
        rules = self._rules.get(loc)
        if rules is None:
            rules = self._rules[loc] = _Rules(self.compiled, loc, node)
        return rules

    def _expand(self, loc: str) -> tuple[Alternative, ...]:
        """The alternatives of the node at `loc`: one per union branch, each a conjunction."""
        found = self._expanded.get(loc)
        if found is not None:
            return found
        if loc in self._expanding:  # a reference loop: leave it unchecked
            return ((),)
        self._expanding.add(loc)
        try:
            result = self._expand_node(loc)
        finally:
            self._expanding.discard(loc)
        self._expanded[loc] = result
        return result

    def _expand_node(self, loc: str) -> tuple[Alternative, ...]:
        try:
            loc, node = self.compiled.resolve(loc)
        except KeyError:
            return ((),)
        if node is False:
            return ()
        if not isinstance(node, dict) or not node:
            return ((),)
        alts: tuple[Alternative, ...] = ((self._rule(loc, node),),)
        ref = node.get("$ref")
        if isinstance(ref, str):  # a $ref next to other keywords (resolve stops there)
            target = self.compiled.ref_location(ref)
            if target is not None:
                alts = _product(alts, self._expand(target))
        all_of = node.get("allOf")
        if isinstance(all_of, list):
            for index in range(len(all_of)):
                alts = _product(alts, self._expand(f"{loc}/allOf/{index}"))
        for keyword in ("anyOf", "oneOf"):
            branches = node.get(keyword)
            if isinstance(branches, list):
                union: tuple[Alternative, ...] = ()
                for index in range(len(branches)):
                    union += self._expand(f"{loc}/{keyword}/{index}")
                alts = _product(alts, union)
            if len(alts) > _MAX_ALTERNATIVES:
                return ((),)
        return alts

    def _kids(self, rules: Alternative, key: str | int) -> tuple[Alternative, ...]:
        """The alternatives for member `key` under one alternative of its parent."""
        cache_key = (rules, key if isinstance(key, str) else min(key, _prefix_cap(rules)))
        found = self._children.get(cache_key)
        if found is not None:
            return found
        alts: tuple[Alternative, ...] = ((),)
        for rule in rules:
            loc = rule.child(key)
            if loc is None:
                continue
            if isinstance(loc, _Forbidden):
                if self.strict:
                    alts = ()
                    break
                continue  # the coercion drops it
            alts = _product(alts, self._expand(loc))
            if len(alts) > _MAX_ALTERNATIVES:
                alts = ((),)
                break
        self._children[cache_key] = alts
        return alts

    def _admit(self, slot: Slot, key: str | int) -> None:
        """Whether each alternative takes one more member (`maxItems`, forbidden keys)."""
        for alt in slot.alts:
            if alt.limited and not self._takes_member(alt, key):
                kept = [a for a in slot.alts if not a.limited or self._takes_member(a, key)]
                self._keep(slot, kept, self._gone(slot, key))
                return

    def _takes_member(self, alt: _Alt, key: str | int) -> bool:
        if isinstance(key, int) and alt.limit >= 0 and key >= alt.limit:
            return False
        if alt.opaque:
            return True
        for rule in alt.rules:
            if isinstance(key, int):
                if (
                    rule.max_items is not None
                    and key >= rule.max_items
                    and (self.strict or rule.array_only)
                ):
                    return False
                if isinstance(rule.child(key), _Forbidden) and self.strict:
                    return False
            elif self.strict and isinstance(rule.child(key), _Forbidden):
                return False
        return True

    def _keep(self, slot: Slot, kept: list[_Alt], reason: Reason) -> None:
        """Narrow a position to `kept`; narrow its parents accordingly; fail if none is left."""
        slot.alts = kept
        if not kept:
            if self.violation is None:
                self.violation = reason()
            return
        parent = slot.parent
        if parent is None or any(a.up is None for a in kept):
            return
        ups = {id(a.up) for a in kept}
        if len(ups) < len(parent.alts):
            self._keep(parent, [a for a in parent.alts if id(a) in ups], reason)

    # -- checks -----------------------------------------------------------------------------

    def _fits(self, rules: Alternative, value: Any) -> bool:
        for rule in rules:
            if not rule.accepts(value):
                return not self.strict and self._repairable_all(rules, value)
        return True

    def _repairable_all(self, rules: Alternative, value: Any) -> bool:
        """Whether the pipeline's coercion can make `value` satisfy every node of the
        alternative. Each node is first asked alone; then, for a conjunction (a node with its
        `allOf` parts, its `$ref` target), the coercion is made at each node and the result
        checked against all of them: a part states what the value must hold (`required` in
        an `if`/`else`, a model read by name or alias) where another declares the properties
        the coercion renames keys to (`{"Username": ...}` becomes `userName` only under the
        node that declares it)."""
        if all(rule.accepts(value) or self._repairable(rule.loc, value) for rule in rules):
            return True
        return len(rules) > 1 and self._repairable_together(rules, value)

    def _repairable_together(self, rules: Alternative, value: Any) -> bool:
        for loc in dict.fromkeys(rule.loc for rule in rules):
            try:
                coercion = self._coercer.coerce_at(value, loc, Deadline(self.time_limit))
                if any(_from_number(change.before) for change in coercion.changes):
                    return True  # (see `_repairable`)
                if all(self.compiled.is_valid_at(rule.loc, coercion.value) for rule in rules):
                    return True
            except Exception:  # cannot judge: never stop a reply on a guess
                return True
        return False

    def _repairable(self, loc: str, value: Any) -> bool:
        """Whether the pipeline's coercion makes `value` valid at `loc` (the exact question, asked
        only after a cheaper check failed)."""
        try:
            coercion = self._coercer.coerce_at(value, loc, Deadline(self.time_limit))
            if any(_from_number(change.before) for change in coercion.changes):
                # A number turned into text is the literal the reply wrote (`-0`, `1.10`),
                # which only the final parse reads: its length or its member is not known here.
                return True
            return self.compiled.is_valid_at(loc, coercion.value)
        except Exception:  # cannot judge: never stop a reply on a guess
            return True

    def _plausible(self, kind: Kind, rules: Alternative) -> bool:
        """Whether a coercion could turn a value of JSON type `kind` into what `rules` want."""
        if kind in ("string", "array"):
            return True  # strings are parsed (numbers, booleans, JSON); [x] is unwrapped
        if self.lenient:
            return True  # {"result": x} is unwrapped, an object becomes its JSON text
        return all(r.types is None or "array" in r.types for r in rules)  # wrap_in_array

    def _keeps_arrays(self, rules: Alternative) -> bool:
        """An array where these rules want something else can be longer than one item only if
        it can become a string (full level) or be wrapped in a one-field object."""
        for rule in rules:
            types = rule.types
            if types is None:
                return True
            if self.lenient and "string" in types:
                return True
            if "object" in types and len(rule.properties) == 1:
                return True
        return False

    def _string_ok(
        self, rules: Alternative, length: int, head: str, reasons: list[Reason], slot: Slot
    ) -> bool:
        for rule in rules:
            limit = rule.max_length
            if limit is not None and length > limit and (self.strict or rule.string_only):
                found = f"a string of {length}+ characters ({clip(head, 40)!r}…)"
                reasons.append(
                    partial(
                        Violation,
                        slot.path,
                        "constraint",
                        f"at most {limit} characters",
                        found,
                        "maxLength",
                    )
                )
                return False
            if (
                self.strict
                and rule.prefixes is not None
                and (length > rule.longest or not _starts_one(rule.prefixes, head))
            ):
                expected = "one of " + preview(rule.choices, 120)
                found = f"a string starting {clip(head, 40)!r}"
                reasons.append(partial(Violation, slot.path, "enum", expected, found, "enum"))
                return False
        return True

    def _closes(self, rules: Alternative, value: Any, slot: Slot, reasons: list[Reason]) -> bool:
        """Checks that need the whole container (or string): required members, minimums."""
        if isinstance(value, str):
            for rule in rules:
                if rule.string_checks and not rule.accepts(value):
                    reasons.append(partial(self._explain, slot.path, [_Alt(rules, None)], value))
                    return False
            return True
        path = slot.path
        size = len(value) if isinstance(value, dict | list) else 0
        for rule in rules:
            if isinstance(value, dict):
                missing = next((name for name in sorted(rule.required) if name not in value), None)
                if missing is not None:
                    expected = self._field(rule, missing)
                    reasons.append(
                        partial(Violation, path, "missing", expected, "nothing", "required")
                    )
                    return False
                if rule.min_props is not None and size < rule.min_props:
                    expected = f"at least {rule.min_props} fields"
                    reasons.append(
                        partial(
                            Violation,
                            path,
                            "constraint",
                            expected,
                            f"{size} fields",
                            "minProperties",
                        )
                    )
                    return False
                if rule.max_props is not None and size > rule.max_props:
                    expected = f"at most {rule.max_props} fields"
                    reasons.append(
                        partial(
                            Violation,
                            path,
                            "constraint",
                            expected,
                            f"{size} fields",
                            "maxProperties",
                        )
                    )
                    return False
            elif isinstance(value, list) and rule.min_items is not None and size < rule.min_items:
                expected = f"at least {rule.min_items} items"
                reasons.append(
                    partial(Violation, path, "constraint", expected, f"{size} items", "minItems")
                )
                return False
        return True

    # -- what went wrong --------------------------------------------------------------------

    def _field(self, rule: _Rules, name: str) -> str:
        loc = rule.properties.get(name)
        if loc is None:
            return repr(name)
        try:
            return f"{name!r} ({summarize(self.compiled, self.compiled.node(loc))})"
        except KeyError:
            return repr(name)

    def _expected(self, loc: str) -> str:
        try:
            return summarize(self.compiled, self.compiled.node(loc))
        except KeyError:
            return "a different value"

    def _gone(self, slot: Slot, key: str | int) -> Reason:
        alts = slot.alts  # as they are before the narrowing

        def reason() -> Violation:
            if isinstance(key, int):
                limit = min(
                    (r.max_items for a in alts for r in a.rules if r.max_items is not None),
                    default=key,
                )
                return Violation(
                    slot.path,
                    "constraint",
                    f"at most {limit} items",
                    f"{key + 1}+ items",
                    "maxItems",
                )
            allowed = sorted({p for a in alts for r in a.rules for p in r.properties})
            return Violation(
                slot.path,
                "unexpected",
                ", ".join(map(repr, allowed)) or "none",
                repr(key),
                "additionalProperties",
            )

        return reason

    def _type_violation(self, slot: Slot, kind: str) -> Violation:
        return Violation(
            slot.path,
            "type",
            self._expected(slot.loc),
            f"{'an' if kind[0] in 'ao' else 'a'} {kind}",
            "type",
        )

    def _value_violation(
        self, slot: Slot, key: str | int, kids: list[_Alt], value: Any
    ) -> Violation:
        path = slot.path + "/" + (str(key) if isinstance(key, int) else pointer.escape(key))
        return self._explain(path, kids, value)

    def _explain(self, path: str, alts: list[_Alt], value: Any) -> Violation:
        """The most precise violation for a complete value: the deepest member that fails."""
        rules = next((a.rules for a in alts if a.rules), ())
        if len(alts) == 1:
            for rule in rules:
                if rule.accepts(value):
                    continue
                inner = self._inner(path, rule, value)
                if inner is not None:
                    return inner
                return self._mismatch(path, rule, value)
        loc = rules[0].loc if rules else ""
        return Violation(path, "type", self._expected(loc), describe(value), "")

    def _inner(self, path: str, rule: _Rules, value: Any) -> Violation | None:
        members: list[tuple[str | int, Any]] = []
        if isinstance(value, dict):
            members = list(value.items())
            for name in sorted(rule.required):
                if name not in value:
                    return Violation(
                        path, "missing", self._field(rule, name), "nothing", "required"
                    )
        elif isinstance(value, list):
            members = list(enumerate(value))
        for key, item in members:
            loc = rule.child(key)
            if isinstance(loc, _Forbidden):
                holder = Slot([_Alt((rule,), None)], None, None, rule.loc)
                return replace(self._gone(holder, key)(), path=path)
            if loc is None:
                continue
            kids = self._expand(loc)
            if not any(all(r.accepts(item) for r in k) for k in kids):
                child = path + "/" + (str(key) if isinstance(key, int) else pointer.escape(key))
                return self._explain(child, [_Alt(k, None) for k in kids], item)
        return None

    def _mismatch(self, path: str, rule: _Rules, value: Any) -> Violation:
        kind = _TYPE_OF.get(type(value), "value")
        if not rule.takes(kind) and rule.types is not None:
            return Violation(path, "type", self._expected(rule.loc), describe(value), "type")
        if rule.choices is not None:
            return Violation(path, "enum", self._expected(rule.loc), describe(value), "enum")
        reported = self._reported(path, rule, value)
        if reported is not None:
            return reported
        return Violation(path, "constraint", self._expected_constraint(rule), describe(value), "")

    def _reported(self, path: str, rule: _Rules, value: Any) -> Violation | None:
        """The first error the validator of the node reports for `value`, as the final
        validation words it (`missing required field 'userName'` for the `required` of an
        `else`): a node that fails by a keyword the checker does not name (`if`/`then`, `not`,
        a `required` in an `allOf` part) would otherwise read "expected object, found
        object"."""
        try:
            rule.accepts(value)  # (compiles the node's validator)
            validator = (
                self.compiled.validator if not rule.loc else self.compiled._sub.get(rule.loc)
            )
            if validator is None:
                return None
            for error in validator.iter_errors(value):
                found = violation_of(self.compiled, error)
                return replace(found, path=path + found.path)
        except Exception:  # a node the validator cannot report on: the checker's own words
            return None
        return None

    def _expected_constraint(self, rule: _Rules) -> str:
        node = rule.node
        parts = [self._expected(rule.loc)]
        for key, text in (
            ("maxLength", "at most {} characters"),
            ("minLength", "at least {} characters"),
            ("minimum", "≥ {}"),
            ("maximum", "≤ {}"),
            ("exclusiveMinimum", "> {}"),
            ("exclusiveMaximum", "< {}"),
            ("pattern", "matching {}"),
            ("format", "in format {}"),
        ):
            if key in node:
                parts.append(text.format(node[key]))
        return ", ".join(parts)


def _product(
    left: tuple[Alternative, ...], right: tuple[Alternative, ...]
) -> tuple[Alternative, ...]:
    """Every combination of one alternative from each side (a conjunction of unions)."""
    out: dict[Alternative, None] = {}
    for a in left:
        for b in right:
            out[tuple(dict.fromkeys(a + b))] = None
    return tuple(out)


def _prefix_cap(rules: Alternative) -> int:
    return max((len(rule.prefix) for rule in rules), default=0)


# -- degeneration ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Degeneration:
    """When output counts as degenerate: a model looping instead of finishing.

    `whitespace`: the longest run of spaces, tabs and newlines allowed. `repeats`: how many times
    in a row one fragment (of up to `period` characters) may appear, and only once the
    repetition covers `span` characters (so that a legitimately regular list such as
    `[0, 0, 0, …]` has to be very long before it counts). `None` disables a check.

    `inside`: whether a loop *inside* the value stops the stream. Off by default: a run of
    whitespace or a repeated item can still end in valid JSON (a list of identical items is
    valid), and the stream parser never stops a reply that could have been valid. A loop
    after the value is complete always ends the stream, without an error.
    """

    whitespace: int | None = 1024
    repeats: int | None = 32
    span: int = 2048
    period: int = 256
    every: int = 256
    """Characters between two repetition checks (each costs a few microseconds)."""
    inside: bool = False


DEFAULT_DEGENERATION: Final = Degeneration()

_SPACE = frozenset(" \t\r\n")


class DegenerationGuard:
    """Watches raw chunks for degenerate output; O(1) amortised per character."""

    def __init__(self, limits: Degeneration = DEFAULT_DEGENERATION) -> None:
        self.limits = limits
        self._long_run = re.compile("[ \t\r\n]{" + str((limits.whitespace or 0) + 1) + ",}")
        self._run = 0
        """The length of the whitespace run at the end of the text so far."""
        self._tail = ""
        self._pending: list[str] = []
        self._pending_size = 0
        self.seen = 0

    def feed(self, chunk: str) -> Violation | None:
        """The violation, the first time the output turns degenerate."""
        self.seen += len(chunk)
        limit = self.limits.whitespace
        if limit is not None and chunk:
            if chunk[0] not in _SPACE and chunk[-1] not in _SPACE and len(chunk) <= limit:
                self._run = 0  # no run reaches either end, and none inside can pass the limit
            else:
                stripped = chunk.rstrip(" \t\r\n")
                if not stripped:
                    self._run += len(chunk)
                else:
                    lead = len(chunk) - len(chunk.lstrip(" \t\r\n"))
                    if self._run + lead > limit:
                        return self._whitespace(self._run + lead)
                    if len(chunk) > limit:
                        inside = self._long_run.search(chunk)
                        if inside is not None:
                            return self._whitespace(len(inside.group()))
                    self._run = len(chunk) - len(stripped)
                if self._run > limit:
                    return self._whitespace(self._run)
        if self.limits.repeats is not None:
            self._pending.append(chunk)
            self._pending_size += len(chunk)
            if self._pending_size >= self.limits.every:
                return self._repetition()
        return None

    def _whitespace(self, length: int) -> Violation:
        return Violation(
            "",
            "custom",
            f"output that ends (at most {self.limits.whitespace} whitespace characters in a row)",
            f"{length} whitespace characters in a row",
            "degenerate",
        )

    def _repetition(self) -> Violation | None:
        limits = self.limits
        assert limits.repeats is not None
        window = max(limits.span, limits.repeats * limits.period) + limits.period
        tail = (self._tail + "".join(self._pending))[-window:]
        self._tail = tail
        self._pending = []
        self._pending_size = 0
        probe = 16
        if len(tail) < limits.span or len(tail) < probe * 2:
            return None
        found = tail.rfind(tail[-probe:], 0, len(tail) - 1)
        if found < 0:
            return None
        period = len(tail) - probe - found
        if period > limits.period:
            return None
        span = max(limits.span, limits.repeats * period)
        if span > len(tail) or tail[-span:-period] != tail[-span + period :]:
            return None
        fragment = tail[-period:]
        return Violation(
            "",
            "custom",
            f"output that ends (a fragment repeated at most {limits.repeats} times)",
            f"{preview(fragment, 40)} repeated {span // period}+ times",
            "degenerate",
        )


def _from_number(before: Any) -> bool:
    """Whether a change was made to a number (not a boolean): its text is the reply's."""
    return isinstance(before, int | float) and not isinstance(before, bool)


__all__ = ["DEFAULT_DEGENERATION", "Checker", "Degeneration", "DegenerationGuard", "Slot"]
