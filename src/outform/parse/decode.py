"""Stage *decode*: text to a JSON value, strict first, then (opt-in) tolerant tiers.

Tier 0 is orjson: exact JSON, fast (an integer orjson would read as a float is read again
exactly). Tier 1 is pyjson5: JSON5 (comments, trailing commas, single quotes, unquoted keys).
Tier 2 is json-repair: anything it can salvage (missing quotes, commas and brackets,
truncation, Python literals). Its time is not linear in its input: the deadline interrupts it
(see repair.py), it only reads regions of up to `max_repair_chars`, long strings are read
without it (held.py), and it is stopped in a string it must read itself of more than
`max_repair_string` characters (one string costs it the square of its length): the tier is
then skipped, as for a region over `max_repair_chars`. NaN and Infinity are not JSON numbers,
and a number out of a float's range (`1e400`, `1e-400`) is not the number a float reads: a
text that writes one is read by no tier (pyjson5 would read a float JSON cannot hold,
json-repair a string the reply did not write). A tolerant reading is refused when its value is
not JSON (a number out of range, a lone surrogate), when it loses content the loss rule
refuses (a digit, members merged, more than half: see loss.py), or when json-repair made a key
of text the reply does not write as a key (see keys.py); a smaller loss is returned with the
value, to be recorded. A failure inside json-repair itself (an assertion of its own, on input
it does not expect) means that tier could not read the region, like any other failure of a
tier.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import orjson
import pyjson5

from outform.parse import escapes, keys, loss, values
from outform.parse.context import Deadline, too_deep
from outform.parse.delimit import read
from outform.parse.held import hold
from outform.parse.hint import preview
from outform.parse.repair import LongString, repair

TIER_NAMES = ("orjson", "pyjson5", "json_repair")
MAX_REPAIR_CHARS = 1_000_000
MAX_REPAIR_STRING = 65_536
"""The longest string json-repair may read itself (see repair.py): up to about this length its
time per character stays close to that of a short string; past it, copying what it has built
takes over, and one string of twice the length costs it four times as much."""
_CONTEXT = 24
_REPAIRED = "repaired"
"""The detail of a json-repair reading that logged nothing."""


@dataclass(frozen=True, slots=True)
class Decoded:
    value: Any
    tier: int
    detail: str = ""
    lost: int = 0
    """Letters and digits of content the tolerant reading discarded (see loss.py)."""
    dropped: tuple[str, ...] = ()
    """What a rule dropped on purpose at the end of a cut reply (see delimit.py)."""
    cut_string: bool = False
    """The reply ended inside the value's last string, kept as written (see delimit.py)."""
    escape: str = ""
    """The escape that string ended in, begun and cut off: dropped (see delimit.py)."""


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """Why decoding stopped: the message and the character offset. `refused` is set when a
    tolerant decoder did read a value but it was refused (a loss, or not JSON); `skipped` when
    the tier did not run at all (a region over `max_repair_chars`), or was stopped before it
    returned a reading (in a string over `max_repair_string`)."""

    message: str
    position: int
    refused: bool = False
    skipped: bool = False
    nonfinite: str = ""
    """The NaN or Infinity the text writes (at `position`): no tier reads it."""
    out_of_range: str = ""
    """Why a number the text writes (at `position`) is out of a float's range, or an integer
    too long for Python to read: no tier reads it (see values.out_of_range)."""
    number: values.OutOfRange | None = None
    """That number (what it is, and what to write instead)."""

    @property
    def unreadable(self) -> bool:
        """A number no tier reads: the reply must be written again."""
        return bool(self.nonfinite or self.out_of_range)

    def around(self, text: str) -> str:
        """The text around the failure, for a before/after preview."""
        start = max(0, self.position - _CONTEXT)
        end = min(len(text), self.position + _CONTEXT)
        prefix = "…" if start else ""
        suffix = "…" if end < len(text) else ""
        return prefix + text[start:end] + suffix


def strict(text: str) -> Any:
    """The JSON value of `text`, every integer exact; raises orjson.JSONDecodeError (or a
    ValueError for an integer of more than 4300 digits)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        if not values.may_be_inexact(text):
            raise
        return _exact_or_refused(text)  # orjson refuses an integer past a float's range
    if values.may_be_inexact(text):
        return values.decode_exact(text)
    return value


def _exact_or_refused(text: str) -> Any:
    """The exact reading of a text orjson refused, or orjson's error when that fails too, or
    when it reads what orjson rightly refused (the standard library takes an escaped lone
    surrogate, which is not Unicode text)."""
    try:
        value = values.decode_exact(text)
    except ValueError:
        return orjson.loads(text)
    if values.flaw(value) is not None:
        return orjson.loads(text)  # raises: orjson refused the text for this flaw
    return value


def strict_failure(text: str) -> DecodeFailure | None:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return _unreadable(text) or DecodeFailure(exc.msg, exc.pos)
    return None


def _unreadable(text: str) -> DecodeFailure | None:
    """The failure of a text that writes NaN or Infinity as a value, or a number out of a
    float's range (which orjson reads as 0 or refuses, pyjson5 reads as 0, json-repair as
    infinity), or None."""
    found = values.nonfinite_literal(text)
    if found is not None:
        position, word = found
        return DecodeFailure(
            f"{word} is not a JSON number (JSON has no NaN or Infinity)", position, nonfinite=word
        )
    out = values.out_of_range(text)
    if out is not None:
        return DecodeFailure(out.describe(), out.position, out_of_range=out.describe(), number=out)
    return None


def decode(
    text: str,
    max_tier: int,
    *,
    deadline: Deadline | None = None,
    max_repair_chars: int = MAX_REPAIR_CHARS,
    max_repair_string: int = MAX_REPAIR_STRING,
) -> Decoded | DecodeFailure:
    """Decode with tiers 0..max_tier; the first that succeeds wins (the strict failure is
    reported when none does)."""
    try:
        value = strict(text)
    except orjson.JSONDecodeError as exc:
        failure = _unreadable(text) or DecodeFailure(exc.msg, exc.pos)
    except ValueError as exc:
        return DecodeFailure(str(exc), 0)
    else:
        # orjson reads 1e-400 as 0 without a word; 1e400 it refuses (the branch above)
        return _unreadable(text) or Decoded(value, 0)
    if failure.unreadable:
        return failure
    for tier in range(1, max_tier + 1):
        decoded = decode_tier(
            text,
            tier,
            deadline=deadline,
            max_repair_chars=max_repair_chars,
            max_repair_string=max_repair_string,
        )
        if isinstance(decoded, Decoded):
            return decoded
    return failure


def decode_tier(
    text: str,
    tier: int,
    *,
    deadline: Deadline | None = None,
    max_repair_chars: int = MAX_REPAIR_CHARS,
    max_repair_string: int = MAX_REPAIR_STRING,
    max_depth: int | None = None,
) -> Decoded | DecodeFailure:
    """Decode with exactly one tolerant tier (1 or 2), under the loss rule. A reading nested
    deeper than `max_depth` is refused by the depth rule: raises InputError (see `_accept`)."""
    if deadline is not None:
        deadline.check()
    unreadable = _unreadable(text)
    if unreadable is not None:
        return unreadable
    if _cut_before_content(text):
        return DecodeFailure(
            "the reply was cut off before it wrote a value: it holds opening brackets or "
            "quotes and nothing else, which no reading may fill in",
            0,
            refused=True,
        )
    decoded: Decoded | DecodeFailure | None
    written, unknown = escapes.keep_unknown(text, deadline)  # `\\d` is not `d` (see escapes.py)
    if deadline is not None:
        deadline.check()
    if tier == 1:
        decoded = _json5(written)
    elif len(text) > max_repair_chars:
        return DecodeFailure(
            f"json_repair was not run: the region has {len(text):,} characters, over the "
            f"'max_repair_chars' limit of {max_repair_chars:,}",
            0,
            skipped=True,
        )
    else:
        try:
            decoded = _repair(text, written, deadline, max_repair_string)
        except LongString as stopped:
            return DecodeFailure(
                f"json_repair was stopped: it read a string of more than "
                f"{stopped.longest:,} characters, over the 'max_repair_string' limit (one "
                "string costs it the square of its length)",
                0,
                skipped=True,
            )
    if decoded is None:
        return DecodeFailure(f"{TIER_NAMES[tier]} failed", 0)
    if isinstance(decoded, DecodeFailure):
        return decoded
    accepted = _accept(text, decoded, deadline, max_depth)
    if unknown and isinstance(accepted, Decoded):
        # Named only as the value holds them (not those of a comment the reading dropped).
        encoded = values.encode(accepted.value)
        unknown = [kind for kind in unknown if "\\" + kind in encoded]
        if unknown:
            kept = f"kept the backslash of escapes JSON does not know ({', '.join(unknown)})"
            return replace(accepted, detail=f"{accepted.detail}; {kept}")
    return accepted


def _cut_before_content(text: str) -> bool:
    """Whether the region of `text` a decoder reads writes nothing but brackets, quotes,
    separators and spaces, and ends inside a bracket or a string it opened (`[`, `{"`, `"`):
    closing it would invent a value (`[]`, `""`) the reply never wrote. (A complete text of
    that kind, `[,]` or `{}`, is read as usual; a string cut off that holds any character,
    `["„`, keeps it.)"""
    read = loss.region(text)  # (prose before an opener is no value: `Answer: {`)
    if read.translate(_STRUCTURE).strip():
        return False
    return loss.left_open(read) or read.count('"') % 2 == 1


_STRUCTURE = str.maketrans("", "", '[]{}",:')
"""What no value is made of alone."""


def _accept(
    text: str, decoded: Decoded, deadline: Deadline | None, max_depth: int | None = None
) -> Decoded | DecodeFailure:
    """The depth rule, the loss rule and the JSON check for a tolerant reading.

    A tolerant decoder reads nesting the extraction did not count: json-repair closes a run of
    brackets the extraction read as prose (`[[[…[ Let me see`), one level a character. Such a
    reading deeper than `max_depth` is the reply's nesting, refused as the extraction refuses
    deep JSON (InputError naming the limit), before anything walks or writes it."""
    name = TIER_NAMES[decoded.tier]
    if max_depth is not None:
        deepest = values.depth(decoded.value, max_depth, deadline)
        if deepest:
            raise too_deep(max_depth, deepest)
    # pyjson5 refuses a literal out of range (1e400); json-repair reads it as infinity: that
    # is refused, as any non-finite number is (a NaN the scan for the words missed, too).
    flaw = values.flaw(decoded.value, deadline)
    if flaw is not None:
        return DecodeFailure(f"{name} read {flaw}", 0, refused=True)
    dropped = loss.measure("".join(decoded.dropped), deadline=deadline)
    unseen = loss.NOTHING
    if decoded.escape:
        written, unseen = loss.cut_escape(decoded.escape)
        dropped += written + unseen
    measured = loss.assess(text, values.encode(decoded.value), dropped, deadline, unseen)
    if measured.refused:
        return DecodeFailure(measured.describe(f"{name}'s reading"), 0, refused=True)
    if measured.lost:
        detail = f"{decoded.detail}; {measured.describe(f'{name} reading')}"
        return replace(decoded, detail=detail, lost=measured.lost)
    return decoded


def _json5(text: str) -> Decoded | None:
    try:
        value = pyjson5.decode(text)
    except (pyjson5.Json5Exception, ValueError, RecursionError):
        return None
    return Decoded(value, 1, "accepted JSON5 syntax")


def _repair(
    text: str, written: str, deadline: Deadline | None, longest: int
) -> Decoded | DecodeFailure | None:
    """json-repair's reading of `text`, once the delimit pass has read it; raises LongString
    when json-repair reads a string of more than `longest` characters. The delimit pass reads
    the text as written (a triple-quoted, backtick or fenced value is raw: its backslashes are
    its own); the readers after it are given the escapes JSON does not know kept (`written`,
    `text` as `escapes.keep_unknown` rewrites it)."""
    delimited = read(text, deadline)
    if delimited.notes or delimited.closers:
        # Its strings delimited (and the brackets a cut reply left open closed), the text is
        # often JSON or JSON5 again: read exactly, without json-repair's own guesses.
        kept = escapes.keep_unknown(delimited.text, deadline)[0]  # (closers hold no escape)
        closed = decode(kept + delimited.closers, 1)
        if isinstance(closed, Decoded):
            notes = [delimited.detail] if delimited.notes else []
            if delimited.closers:
                notes.append(f"closed {len(delimited.closers)} bracket(s) left open at the end")
            return Decoded(
                closed.value,
                2,
                "; ".join(notes),
                dropped=delimited.dropped,
                cut_string=delimited.cut_string,
                escape=delimited.escape,
            )
        decoded = _repair_text(kept, longest, deadline)
        if decoded is not None:
            detail = "; ".join(filter(None, (delimited.detail, decoded.detail)))
            decoded = Decoded(
                decoded.value,
                2,
                detail,
                dropped=delimited.dropped,
                cut_string=delimited.cut_string,
                escape=delimited.escape,
            )
        elif delimited.dropped:
            return None  # the text as written ends in what was dropped: not read again
    else:
        decoded = _repair_text(written, longest, deadline)
    if decoded is None:
        return None
    key = keys.invented(decoded.value, delimited.keys | keys.before_colons(written), deadline)
    if key is not None:
        return DecodeFailure(
            f"json_repair's reading makes a key of {key!r}, which the reply does not write as "
            "a key (a value read as a key)",
            0,
            refused=True,
        )
    return decoded


def _repair_text(text: str, longest: int, deadline: Deadline | None = None) -> Decoded | None:
    """json-repair's reading of `text`, its long strings held out (see held.py), the escapes
    it would keep as written given as JSON5 reads them (see `escapes.read_as_json5`)."""
    held = hold(text, deadline)
    if held is None:
        return _json_repair(escapes.read_as_json5(text, deadline), longest, deadline)
    decoded = _json_repair(escapes.read_as_json5(held.text, deadline), longest, deadline)
    if decoded is None:
        return None
    value, whole = held.put_back(decoded.value)
    if not whole:
        return _json_repair(escapes.read_as_json5(text, deadline), longest, deadline)
    detail = held.note if decoded.detail == _REPAIRED else f"{decoded.detail}; {held.note}"
    return Decoded(value, 2, detail)


def _json_repair(text: str, longest: int, deadline: Deadline | None) -> Decoded | None:
    try:
        value, log = repair(text, deadline or Deadline.never(), longest)
    except (RecursionError, ValueError, TypeError, IndexError, AssertionError):
        # json-repair's own failures (an assertion of its parser, issue 9): it could not read
        # the region, as when it returns nothing; the pipeline goes on to its other readings.
        return None
    if value == "" and text.strip() not in ('""', "''"):
        return None  # json-repair's way of saying "nothing salvageable"
    actions = [entry.get("text", "") for entry in log if isinstance(entry, dict)]
    detail = "; ".join(dict.fromkeys(a for a in actions if a)) or _REPAIRED
    return Decoded(value, 2, detail)


def render(value: Any) -> str:
    """Canonical one-line JSON of a decoded value, for previews."""
    return preview(value, 80)
