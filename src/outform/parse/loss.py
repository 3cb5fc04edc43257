"""The loss rule: a repair may not discard what the reply said without saying so.

A tolerant decoder reads a *region* of the reply (from its first bracket to its last, or all of
it when it has none) and returns a value. What carries content is the region's letters and
digits: brackets, commas, colons, quotes, whitespace and comments are punctuation a JSON5 or
json-repair re-spelling may remove. So the region's *content* is its count of letters and of
digits, measured by :func:`measure`, and the value *keeps* the same measure of its compact JSON
(its keys, strings, numbers and `true` / `false` / `null`). Both sides are measured alike:

- comments count for nothing;
- an escape counts as what it stands for (`\\u00e9` as one letter, `\\n` as nothing, and one
  JSON does not know as its backslash and character: `\\d` counts its `d`, see escapes.py);
- a number with a fraction or an exponent counts the digits of its shortest spelling
  (`1.50` and `1.5` both count 2, `1e3` and `1000.0` both 5, `0x1F` and `31` both 2), so that
  re-spelling a number is no loss; Python's `None` / `True` / `False` have as many letters as
  `null` / `true` / `false`.

Then:

- a **digit** the value does not keep is **refused**: a number cut short (`1 234 567` read as
  1, `10:30` as 10, `9 / 10` as 9) or dropped is a different answer, never a re-spelling;
- a key holding a member boundary the reply did not write escaped (a quote next to a comma or
  colon: `"x" "y", "c": true` read as the key `y", "c`) was read across the end of a string,
  merging two members: **refused**;
- a value that keeps less than half of the content is **refused**;
- any other loss (letters) is **recorded**: the change carries `lost`, and is flagged `lossy`.

What a rule drops on purpose and says so (a key left without a value at the end of a cut reply,
a number cut off at the end) is recorded as `lost` too, but is never a reason to refuse. The
same rule is applied by every tolerant decode (the reply, a region of it, JSON written inside
a string value), and to a region read alone out of a reply that is one broken JSON document
(the rest of the document is content too); stages that drop a value the schema forbids record
its measure the same way. See "Loss" in docs/pipeline.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from outform.parse.context import Deadline

_DOUBLE_QUOTED = r'"(?:[^"\\\n]|\\.)*+"?'
"""A string, or one left open to the end of its line: every match consumes its text (a pattern
that needed the closing quote tried again from each later quote of a long open string, the
square of its length: 200 KB of escapes took 28 s past a 5 s time_limit)."""
_COMMENTS = re.compile(
    _DOUBLE_QUOTED  # a string (skipped, even unterminated)
    + r"|'(?:[^'\\\n]|\\.)*+'?"  # a single-quoted string
    + r"|(//[^\n]*+|/\*(?s:.*?)(?:\*/|\Z))"  # a comment
)
_QUOTED = re.compile(_DOUBLE_QUOTED)
_BOUNDARY = re.compile(r'\\"\s*[,:]|[,:]\s*\\"')
"""An escaped quote next to a comma or colon, as a key holding a member boundary is written."""
_NOT_ALNUM = re.compile(r"[\W_]+")
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
# A number that a decoder may write otherwise: with a fraction, an exponent, or in hex.
_RESPELLABLE = re.compile(
    r"(?<![\w.])(?:0[xX][0-9a-fA-F]+|(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])"
)
_DIGITS = "0123456789"
_NOT_LETTER = bytes(b for b in range(128) if not chr(b).isalpha())
_NOT_DIGIT = bytes(b for b in range(128) if not chr(b).isdigit())
_EXPONENT_OR_HEX = re.compile(r"[eExX]")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"(:?)', re.DOTALL)
_CONTINUED = re.compile(r"([\"'])(?:\\(?:\r\n|[\r\n]))+\1")
"""A string of line continuations alone (`"\\⏎"`): JSON5's empty string."""


@dataclass(frozen=True, slots=True)
class Measure:
    """Letters and digits: the characters of a text that carry content."""

    letters: int = 0
    digits: int = 0

    @property
    def size(self) -> int:
        return self.letters + self.digits

    def __add__(self, other: Measure) -> Measure:
        return Measure(self.letters + other.letters, self.digits + other.digits)


NOTHING = Measure()


@dataclass(frozen=True, slots=True)
class Loss:
    content: Measure
    kept: Measure
    dropped: Measure = NOTHING
    """What a rule dropped on purpose, already said in the change's detail."""
    merged: int = 0
    """Member boundaries inside the value's keys that the reply did not escape."""
    invented: int = 0
    """Empty strings in the value that the reply does not write (see `invented_empties`)."""

    @property
    def lost_letters(self) -> int:
        return max(0, self.content.letters - self.dropped.letters - self.kept.letters)

    @property
    def lost_digits(self) -> int:
        return max(0, self.content.digits - self.dropped.digits - self.kept.digits)

    @property
    def lost(self) -> int:
        """Letters and digits of content the value does not carry."""
        return self.lost_letters + self.lost_digits + self.dropped.size

    @property
    def refused(self) -> bool:
        """A digit lost, members merged, or less than half of the content kept (what a rule
        dropped on purpose aside)."""
        unexplained = self.lost_letters + self.lost_digits
        said = self.content.size - self.dropped.size
        return bool(
            self.lost_digits
            or self.merged
            or self.invented
            or (unexplained and self.kept.size * 2 < said)
        )

    def describe(self, reading: str) -> str:
        content, kept = self.content.size, self.kept.size
        if self.invented:
            return (
                f"{reading} reads {self.invented:,} empty string(s) the reply does not write "
                '(a key left without a value is absent, never "")'
            )
        if self.merged:
            return (
                f"{reading} makes a key of a quote the reply wrote as the end of a string "
                "(two members merged into one)"
            )
        text = (
            f"{reading} keeps {kept:,} of {content:,} letters and digits of content "
            f"({self.lost:,} discarded"
        )
        if self.lost_digits:
            text += f", {self.lost_digits:,} of them digits: a number cut short or dropped"
        return text + ")"


def region(text: str) -> str:
    """The part of a candidate a decoder reads as JSON: from its first opening bracket to its
    last closing one, or to the end when it is left open (more brackets opened than closed,
    outside double-quoted strings: a cut reply's tail is content) or when what follows the
    last closer `continues` the JSON; all of it when it has none."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text
    start = min(starts)
    end = max(text.rfind("}"), text.rfind("]"))
    if (
        end > start
        and not left_open(text[start:])
        and not _in_string(text, start, end)
        and not continues(text[end + 1 :].lstrip())
    ):
        return text[start : end + 1]
    return text[start:]


_CONTINUES = re.compile(r'(?:-?\d[\d.eE+-]*|true|false|null)[ \t]*[,\]}]|,\s*"')


def continues(tail: str) -> bool:
    """Whether `tail`, what a reply writes after a closed value (spaces stripped), is more of
    the same JSON document: a number or a literal followed by a separator or a closer
    (`{"price": -12.}75, "qty": 3}`, `{"a": 1} true, "b": 2`), or a comma and a quoted key or
    item. Prose is not (`12 apples`, `2. Next`, `, as asked`)."""
    return _CONTINUES.match(tail) is not None


def _in_string(text: str, start: int, end: int) -> bool:
    """Whether the closer at `end`, which text follows, is inside a string (one left open:
    `{"s": "x} y`, a reply cut off in a string holding a bracket, whose tail is content). One
    substitution in C, and only when text follows the closer."""
    if not text[end + 1 :].strip() or '"' not in text:
        return False
    quote = text.rfind('"', start, end)
    closes = quote >= start and not text[quote + 1 : end + 1].strip(" \t}]")
    if closes and text[end + 1 :].lstrip(" \t\r")[:1] == "\n":
        # A quote followed by nothing but closers to the end of its line closes a string (one
        # written too many: `{"name": "F"g"}]}`): a later line is prose after the value.
        return False
    return not _QUOTED.sub("", text[start : end + 1]).endswith(text[end])


def left_open(text: str) -> bool:
    """Whether `text` opens more brackets than it closes, outside its strings."""
    opened, closed = _brackets(text)
    if opened != closed and '"' in text:
        # Brackets inside strings are text: counted again without them (only then, as the
        # counts of a document written whole agree).
        opened, closed = _brackets(_QUOTED.sub("", text))
    return opened > closed


def _brackets(text: str) -> tuple[int, int]:
    return text.count("{") + text.count("["), text.count("}") + text.count("]")


def measure(
    text: str, *, comments: bool = True, numbers: bool = True, deadline: Deadline | None = None
) -> Measure:
    """The letters and digits of content in `text` (see the module's docstring). Linear: a few
    passes in C, and one Python step per comment or number with a fraction (the deadline read
    as they go).
    `comments=False` for JSON (a value's text), which has none; `numbers=False` counts numbers
    (and comments) as written."""
    if deadline is not None:
        deadline.check()
    letters, digits = _letters_and_digits(text)
    if deadline is not None:
        deadline.check()
    written_digits = digits  # (no digit written, no number to spell again)
    if not numbers:
        comments = False
    if comments and ("//" in text or "/*" in text):
        for match in _COMMENTS.finditer(text):
            if deadline is not None:
                deadline.tick()
            if match.lastindex:
                gone = _letters_and_digits(match.group(1))
                letters, digits = letters - gone[0], digits - gone[1]
    if "\\" in text:
        letters, digits = _unescaped(text, letters, digits, deadline)
    for match in _RESPELLABLE.finditer(text) if numbers and written_digits else ():
        token = match.group()
        if deadline is not None:
            deadline.tick()
        if len(token) < 16 and token[-1] not in "0." and not _EXPONENT_OR_HEX.search(token):
            continue  # already written as Python writes it: nothing to count again (`2.`
            # is not: Python writes `2.0`, as the value read from it will be measured)
        respelled = _meant(token)
        if respelled is not None:
            written = _count(token)
            letters += respelled.letters - written.letters
            digits += respelled.digits - written.digits
    return Measure(letters, digits)


def _unescaped(
    text: str, letters: int, digits: int, deadline: Deadline | None = None
) -> tuple[int, int]:
    """The counts of `text` as written (`letters`, `digits`), corrected for its escapes: an
    escape counts as what it stands for (`\\u00e9` one letter, `\\n` nothing). In bulk, a few
    passes in C whatever the number of escapes: escaped backslashes set aside first (a
    space: no letter or digit), so that every backslash left begins an escape; `\\uXXXX`
    decoded together; the letters of the other escapes JSON knows taken away (see
    `_escaped_letters`). The `deadline` is read between the passes."""
    if "\\\\" in text:
        text = text.replace("\\\\", " ")
    if deadline is not None:
        deadline.check()
    if "\\u" in text:
        hexas = _UNICODE_ESCAPE.findall(text)
        if hexas:
            shown = _letters_and_digits("".join(hexas))
            meant = _letters_and_digits(
                ("\\u" + "\\u".join(hexas)).encode("ascii").decode("unicode_escape")
            )
            letters += meant[0] - shown[0] - len(hexas)  # (and each `u`)
            digits += meant[1] - shown[1]
            text = _UNICODE_ESCAPE.sub(" ", text)
            if deadline is not None:
                deadline.check()
    if "\\" in text:
        letters -= _escaped_letters(text)
    return letters, digits


def _escaped_letters(text: str) -> int:
    """The letters that name an escape JSON knows (`\\n`, `\\t`, `\\b`, `\\f`, `\\r`; `\\u`
    without its four digits), in a text where each backslash begins an escape: they stand for
    no letter. The letter or digit of an escape JSON does not know is content, as the rule
    for those escapes reads it (`\\d` is a backslash and a `d`: see escapes.py). Six counts
    in C."""
    return sum(text.count("\\" + letter) for letter in "bfnrtu")


def _letters_and_digits(text: str) -> tuple[int, int]:
    """A few passes in C: for ASCII, what is not a letter (or a digit) deleted from the bytes;
    otherwise everything that is not a letter or digit removed by a regex."""
    if text.isascii():
        data = text.encode("ascii")
        return len(data.translate(None, _NOT_LETTER)), len(data.translate(None, _NOT_DIGIT))
    digits = sum(text.count(d) for d in _DIGITS)
    return len(_NOT_ALNUM.sub("", text)) - digits, digits


def _count(text: str) -> Measure:
    return Measure(sum(c.isalpha() for c in text), sum(c.isdigit() for c in text))


def _meant(token: str) -> Measure | None:
    """The letters and digits of a number token's shortest spelling as Python writes it, or
    None when it has none (out of range). A hexadecimal integer's digits are counted, not
    written: Python writes no integer of more than 4,300 digits (`0x1F…` can be longer)."""
    if token[:2] in ("0x", "0X"):
        return Measure(0, decimal_digits(int(token, 16)))
    number = float(token)
    return _count(repr(number)) if math.isfinite(number) else None


def decimal_digits(n: int) -> int:
    """How many digits the natural number `n` has in decimal, without writing it: from its
    bit length (a lower bound of the count, even when the float rounds up), then up by
    powers of ten."""
    digits = max(1, int((n.bit_length() - 1) * _LOG10_2))
    while 10**digits <= n:
        digits += 1
    return digits


_LOG10_2 = math.log10(2)


def merged_keys(value_json: str, text: str, deadline: Deadline | None = None) -> int:
    """Member boundaries inside the keys of `value_json` that `text` does not write escaped: a
    key holding a quote next to a comma or a colon (`y", "c`) was read across the end of a
    string, two members merged into one. (A quote inside a word, `k"e"y`, is no boundary.)
    The strings are looked at one by one only when the value holds such a boundary at all."""
    if '\\"' not in value_json or _BOUNDARY.search(value_json) is None:
        return 0
    held = 0
    for string in _STRING.finditer(value_json):
        if deadline is not None:
            deadline.tick()
        if string.group(2):
            held += len(_BOUNDARY.findall(string.group(1)))
    return max(0, held - len(_BOUNDARY.findall(text))) if held else 0


def invented_empties(value_json: str, text: str, deadline: Deadline | None = None) -> int:
    """Empty strings among the values of `value_json` that `text` does not write: json-repair
    reads a key whose value it lost track of as `""` (`{"name": "Ana, "nick":` as
    `{"name": "Ana", "nick": ""}`), a value the reply never wrote. What the reply writes empty
    (`""`, `''`, a string opened at its very end) is counted as written. The strings are
    looked at one by one only when the value writes `""` more often than the reply."""
    if '""' not in value_json:
        return 0
    written = text.count('""') + text.count("''") + text.rstrip().endswith(('"', "'"))
    if value_json.count('""') <= written:
        return 0
    if "\\" in text:  # a string of line continuations alone is written empty too (JSON5)
        written += len(_CONTINUED.findall(text))
    made = 0
    for string in _STRING.finditer(value_json):
        if deadline is not None:
            deadline.tick()
        made += not string.group(1) and not string.group(2)
    return max(0, made - written)


def assess(
    text: str,
    value_json: str,
    dropped: Measure = NOTHING,
    deadline: Deadline | None = None,
    unseen: Measure = NOTHING,
) -> Loss:
    """The loss of a decode of candidate `text` into the value whose compact JSON is
    `value_json`; `dropped` is what a rule dropped on purpose and said so; `unseen`, content
    the text does not show but a rule dropped (the character an escape cut off began: see
    `cut_escape`), counted on both sides."""
    read = region(text)
    merged = merged_keys(value_json, read, deadline)
    invented = invented_empties(value_json, read, deadline)
    # Counted as written first (a few passes in C): when both sides agree exactly, the reading
    # kept every letter and digit as the reply wrote them, and comments and number spellings
    # need no second look (a large reply with trailing commas pays only this).
    content = measure(read, numbers=False, deadline=deadline) + unseen
    kept = measure(value_json, numbers=False, deadline=deadline)
    if content != kept + dropped or (
        not dropped.size and _digits_of_each(read) != _digits_of_each(value_json)
    ):
        # (The same count of digits may hide a digit lost behind a number re-spelled: `2.⏎5`
        # read as 2.0. With nothing dropped, the same digits, each as often, hide nothing.)
        content = measure(read, deadline=deadline) + unseen
        kept = measure(value_json, comments=False, deadline=deadline)
    return Loss(content, kept, dropped, merged, invented)


def _digits_of_each(text: str) -> tuple[int, ...]:
    """How often `text` writes each digit: ten counts in C."""
    return tuple(text.count(digit) for digit in _DIGITS)


def cut_escape(escape: str) -> tuple[Measure, Measure]:
    """An escape the end of a cut reply began, dropped (`\\`, `\\u00`, `\\ud83d`: see
    delimit.py): what the region's text counts of it (`\\u00` its two digits), and what it
    discards besides, unseen there: the character it began, one letter, where the text counts
    nothing of it (a backslash alone, half of a surrogate pair). Either way the drop is lossy."""
    written = measure(escape, comments=False)
    return written, (NOTHING if written.size else Measure(letters=1))


def size(value_json: str) -> int:
    """The content of a dropped member (its compact JSON), at least 1: a member dropped is
    never nothing, even `"": ""`."""
    return max(1, measure(value_json, comments=False).size)
