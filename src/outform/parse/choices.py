"""The members of one `enum` (or `const`), indexed once so that matching a value costs the same
for 3 members as for a million.

Coercion asks four questions of an enum: is this value a member (JSON equality: `1` equals
`1.0`, `true` is not `1`); which members does this word name, ignoring case, accents and
surrounding punctuation; which members equal this number; which members does this sentence
mention as whole words. Each is a dictionary lookup here. An index is built the first time it
is needed (in bulk, with string operations that run in C), then kept with the compiled schema.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from outform.parse import literals
from outform.parse.negation import Negations
from outform.parse.scalars import STRIP, fold_accents, normalize_token
from outform.schema.types import json_type

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_NOT_WORD = re.compile(r"[^A-Za-z0-9_]")
_NUMBER_START = frozenset("+-.0123456789")
_SEPARATOR = "\n"
_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    type(None): "null",
    list: "array",
    dict: "object",
}


def _kinds(members: list[Any]) -> dict[type, Any]:
    """One member of each Python type among `members` (the set of types found in C)."""
    kinds = set(map(type, members))
    return {kind: next(m for m in members if type(m) is kind) for kind in kinds}


def _key(value: Any) -> tuple[str, Any] | None:
    """A hashable key under JSON equality for a value that is not a string, or None for
    containers."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if value is None:
        return ("z", None)
    return None


class _Index:
    """Keys to members: the key of each member, computed in bulk; keys several members share
    map to all of them."""

    __slots__ = ("_lengths", "shared", "single")

    def __init__(self, members: list[str], keys: list[str]) -> None:
        self._lengths: list[int] | None = None
        self.single = dict(zip(keys, members, strict=True))
        self.shared: dict[str, list[str]] = {}
        if len(self.single) < len(members):
            counts = Counter(keys)
            for key, member in zip(keys, members, strict=True):
                if counts[key] > 1:
                    self.shared.setdefault(key, []).append(member)

    def get(self, key: str) -> list[str]:
        shared = self.shared.get(key)
        if shared is not None:
            return shared
        member = self.single.get(key)
        return [] if member is None else [member]

    def __contains__(self, key: str) -> bool:
        return key in self.single

    @property
    def lengths(self) -> list[int]:
        """The lengths the keys come in, sorted."""
        if self._lengths is None:
            self._lengths = sorted(set(map(len, self.single)))
        return self._lengths


def _bulk(members: list[str], fn: Callable[[str], str]) -> list[str]:
    """`fn` applied to every member, as one call on the members joined by a separator when
    none contains it (`fn` maps characters one by one, in C, so the pieces come back apart)."""
    text = _SEPARATOR.join(members)
    if members and text.count(_SEPARATOR) == len(members) - 1:
        keys = fn(text).split(_SEPARATOR)
        if len(keys) == len(members):
            return keys
    return [fn(member) for member in members]


def _folded(members: list[str]) -> list[str]:
    """Members without case or accents (how a sentence is searched the second time)."""
    return _bulk(members, _fold)


def _fold(text: str) -> str:
    return fold_accents(text).casefold()


def _tokens(members: list[str]) -> list[str]:
    """normalize_token of every member (surrounding punctuation off, then folded), in bulk."""
    return _folded([member.strip(STRIP) for member in members])


class Choices:
    """The members of one enum, with lookups by value, by word, by number and by mention."""

    __slots__ = (
        "_folded",
        "_lengths",
        "_named",
        "_numbers",
        "_others",
        "_spaced",
        "_spaced_index",
        "_spaced_members",
        "_spelled",
        "_strings",
        "_unique",
        "members",
        "strings",
        "types",
    )

    def __init__(self, members: list[Any]) -> None:
        self.members = members
        kinds = {type(m): m for m in members} if len(members) < 64 else _kinds(members)
        self.strings: list[str] = (
            members if kinds.keys() <= {str} else [m for m in members if isinstance(m, str)]
        )
        self.types = frozenset(
            _TYPE_NAMES.get(kind, "") or json_type(m) for kind, m in kinds.items()
        )
        self._unique: list[str] | None = None
        self._strings: frozenset[str] | None = None
        self._lengths: list[int] | None = None
        self._others: tuple[set[tuple[str, Any]], list[Any]] | None = None
        self._named: _Index | None = None
        self._spaced: bool | None = None
        self._folded: _Index | None = None
        self._spaced_members: list[str] | None = None
        self._spaced_index: _Index | None = None
        self._numbers: dict[int | float, list[Any]] | None = None
        self._spelled: dict[int | str, list[str]] | None = None

    @property
    def unique(self) -> list[str]:
        """The string members, each once, in declaration order."""
        if self._unique is None:
            distinct = len(self.string_set) == len(self.strings)
            self._unique = self.strings if distinct else list(dict.fromkeys(self.strings))
        return self._unique

    @property
    def string_set(self) -> frozenset[str]:
        if self._strings is None:
            self._strings = frozenset(self.strings)
        return self._strings

    def __contains__(self, value: Any) -> bool:
        if isinstance(value, str):
            return value in self.string_set
        if self._others is None:
            keys: set[tuple[str, Any]] = set()
            containers: list[Any] = []
            for member in self.members:
                if not isinstance(member, str):
                    key = _key(member)
                    if key is None:
                        containers.append(member)
                    else:
                        keys.add(key)
            self._others = (keys, containers)
        keys, containers = self._others
        key = _key(value)
        if key is not None:
            return key in keys
        return any(value == member for member in containers)

    def named(self, text: str) -> list[str]:
        """The string members equal to `text` up to case, accents and surrounding punctuation
        (`"**eur**"` names `"EUR"`), each once. Of several members that differ only in case
        or accents (`"ON"` and `"On"`), the one `text` spells exactly wins (`"**On**"` names
        `"On"`); without one, all are given, and the caller picks none (`"on"`)."""
        token = normalize_token(text)
        if len(token.split(maxsplit=1)) > 1 and not self.spaced:
            return []  # words with spaces between them name no member without one
        if self._named is None:
            self._named = _Index(self.unique, _tokens(self.unique))
        hits = self._named.get(token)
        if len(hits) > 1:
            spelled = text.strip(STRIP)
            if spelled in hits:
                return [spelled]
        return hits

    @property
    def spaced(self) -> bool:
        """Whether a string member has whitespace inside it."""
        if self._spaced is None:
            # One pass in C when no member has any whitespace (the usual case).
            anywhere = len("".join(self.unique).split(maxsplit=1)) > 1
            self._spaced = anywhere and any(len(m.split(maxsplit=1)) > 1 for m in self.unique)
        return self._spaced

    def equal_to(self, number: int | float) -> list[Any]:
        """The numeric members equal to `number`."""
        if self._numbers is None:
            numbers: dict[int | float, list[Any]] = {}
            if not self.types <= {"string"}:
                for member in self.members:
                    if isinstance(member, int | float) and not isinstance(member, bool):
                        numbers.setdefault(member, []).append(member)
            self._numbers = numbers
        return self._numbers.get(number, [])

    def spelling(self, number: int | float) -> list[str]:
        """The string members that are a literal of `number` (`"1.10"` and `"1.1"` for 1.1):
        where the reply's own spelling of a number is not known (see literals.py)."""
        if self._spelled is None:
            spelled: dict[int | str, list[str]] = {}
            for member in self.unique:
                found = literals.spelled(member) if member[:1] in _NUMBER_START else None
                if found is not None:
                    spelled.setdefault(found, []).append(member)
            self._spelled = spelled
        return self._spelled.get(literals.key(number), [])

    def mentioned(self, text: str, deadline: Deadline | None = None) -> str | None:
        """The one member a sentence mentions as a whole word, or None (none, or several).

        Members written exactly as declared are looked for first; only when none is, the
        search ignores case and accents. Words are apart however the sentence parts them: a
        hyphen, several spaces, a line break or Markdown emphasis are one space, in the
        sentence as in the members ("very-high" and "**very** high" mention "VERY HIGH").
        Where one mention lies inside a longer one ("1040" in "1040-X"), the longer counts,
        whatever its case ("HIGH" in "VERY HIGH" is the member "very high"). A mention a
        negation governs ("Not HIGH", "It is low, not HIGH") names nothing (see negation.py).
        """
        text = _respace(text)
        exact = self._spans(text, False, deadline)
        folded = fold_accents(text).casefold()
        if exact and len(folded) == len(text):
            # A mention inside a longer one written in another case: the longer counts (where
            # folding keeps every position: "ß" folds to two letters).
            exact += [
                span
                for span in self._spans(folded, True, deadline)
                if any(
                    span[0] <= start and end <= span[1] and span[1] - span[0] > end - start
                    for start, end, _ in exact
                )
            ]
        for spans in (exact, [] if exact else self._spans(folded, True, deadline)):
            if not spans:
                continue
            spans.sort(key=lambda span: (span[0], -(span[1] - span[0])))
            kept: set[str] = set()
            reach = -1
            taken = (-1, -1)
            for start, end, name in spans:
                if start >= reach or (start, end) == taken:
                    # (Members alike but for case or accents mention the same words: each is
                    # kept, and the mention names none: `"I'd say on"` for "ON" and "On".)
                    kept.add(name)
                    reach, taken = end, (start, end)
            return kept.pop() if len(kept) == 1 else None
        return None

    def _spans(
        self, haystack: str, fold: bool, deadline: Deadline | None
    ) -> list[tuple[int, int, str]]:
        """The mentions of members in `haystack` that no negation governs: as declared, or
        (`fold`, the haystack folded by the caller) ignoring case and accents."""
        table: _Index | frozenset[str]
        if fold:
            if self._folded is None:
                self._folded = _Index(self.unique, _folded(self._respaced()))
            table, lengths = self._folded, self._folded.lengths
        elif self._respaced() is not self.unique:
            if self._spaced_index is None:
                self._spaced_index = _Index(self.unique, self._respaced())
            table, lengths = self._spaced_index, self._spaced_index.lengths
        else:
            if self._lengths is None:
                self._lengths = sorted(set(map(len, self.unique)))
            table, lengths = self.string_set, self._lengths
        spans = _find(haystack, table, lengths, deadline)
        if spans:
            negations = Negations(haystack)
            spans = [span for span in spans if not negations.govern(span[0], span[1])]
        return spans

    def _respaced(self) -> list[str]:
        """The members as `_respace` writes them (the members themselves when it changes
        none: one search of them all)."""
        if self._spaced_members is None:
            members = self.unique
            flat = "".join(members)
            if flat.isprintable() and "  " not in flat and not any(c in flat for c in "*`~-"):
                spaced = members  # (passes in C: no whitespace but spaces, none doubled)
            else:
                spaced = [_respace(member) for member in members]
            self._spaced_members = members if spaced == members else spaced
        return self._spaced_members


_RESPACE = re.compile(r"[\s*`~-]{2,}|[\t\n\r\f\v*`~-]")
"""What parts two words other than one space: runs of spaces, a line break, a hyphen,
Markdown's emphasis and code marks."""


def _respace(text: str) -> str:
    return _RESPACE.sub(" ", text)


def _find(
    text: str,
    table: _Index | frozenset[str],
    lengths: list[int],
    deadline: Deadline | None,
) -> list[tuple[int, int, str]]:
    """Every (start, end, member) where a substring of `text` that starts after a non-word
    character and ends before one (as the regex (?<!\\w)member(?!\\w) finds it, \\w being
    ASCII) is a key of `table`. The lengths of the keys bound the substrings tried."""
    size = len(text)
    boundaries = [m.start() for m in _NOT_WORD.finditer(text)]
    ends = {size, *boundaries}
    found: list[tuple[int, int, str]] = []
    for count, start in enumerate([0, *(b + 1 for b in boundaries)]):
        if deadline is not None and not count & 255:
            deadline.check()
        for length in lengths:
            end = start + length
            if end > size:
                break
            if end in ends:
                piece = text[start:end]
                if piece in table and piece.strip():
                    names = table.get(piece) if isinstance(table, _Index) else [piece]
                    found += [(start, end, name) for name in names]
    return found
