"""Read numbers, booleans and null out of strings, accepting only unambiguous spellings.

A number may carry a currency sign, a trailing percent sign (kept as written: "12%" is 12),
commas grouping thousands ("1,234.5", "1,234,567"), a trailing full stop or comma, or be a
fraction ("9/10"). Commas are only ever thousands separators, and only in groups of three digits:
"12,5" and "1.234,56" are refused because their meaning depends on the writer's locale. So is a
number whose only separator is one `,` followed by exactly three digits, after one to three
digits that are not a lone 0 ("1,234", "$1,000"), and one whose only separator is such a `.`
next to a currency sign ("€1.234"): under one locale it groups thousands (1234), under another
it marks decimals (1.234), whatever the currency sign says, so it is refused with a note saying
so (`locale_note`), never guessed; so is one whose digits are grouped by spaces
("1 234 567", "1 234,50 €": thousands in some locales, several numbers in others). A bare
"1.234" or "3.141" is a JSON number as written (the point is JSON's decimal point), and is read
as one. In lenient mode a string holding exactly one number among words ("about 42 apples")
gives that number; two numbers ("between 3 and 5") give nothing.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass

_CURRENCY = "$€£¥₹₩₽¢₺₪₫₱₦฿"
_PLAIN = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_FRACTION = re.compile(r"([+-]?\d+)\s*/\s*(\d+)")
_AMBIGUOUS = re.compile(r"[+-]?(?!0[.,])\d{1,3}[.,]\d{3}")
"""One separator, three digits after it: thousands or decimals, by locale."""
_LOCALE = re.compile(r"[+-]?\d{1,3}(?:\.\d{3})+(?:,\d+)?|[+-]?\d+,\d+")
"""A decimal comma ("12,5") or points grouping thousands ("1.234,56")."""
_SPACED = re.compile(r"[+-]?\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d+)?")
"""Spaces (plain, no-break or narrow no-break) grouping thousands ("1 234 567", "1 234,50")."""
_CHUNK_STRIP = "\"'`*_()[]{}<>:;!?,."

_TRUE = frozenset({"true", "yes", "1", "y", "on"})
_FALSE = frozenset({"false", "no", "0", "n", "off"})
_NULL = frozenset({"null", "none", "nil", "n/a", "na", ""})
STRIP = " \t\r\n\"'`*_.,;:!?()[]{}<>"
_BOOL_WORD = re.compile(r"(?<![A-Za-z0-9_])(true|false)(?![A-Za-z0-9_])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Number:
    value: int | float
    how: str
    """Which spelling was recognised: plain, thousands, currency, percent, fraction, or
    in_text (lenient only)."""


def parse_number(text: str, *, lenient: bool = False) -> Number | None:
    """The number a string spells, or None when it is not unambiguously one."""
    s = text.strip().rstrip(".,;").strip()
    if not s or len(s) > 64:
        return _in_text(text) if lenient else None
    hows: list[str] = []
    s = _unit_free(s, hows)
    number = _number(s, currency="currency" in hows)
    if number is None:
        return _in_text(text) if lenient else None
    value, how = number
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return Number(value, "+".join([*hows, how]) if hows else how)


def _unit_free(s: str, hows: list[str]) -> str:
    """`s` without its currency sign and percent sign (each named in `hows`)."""
    if s[0] in _CURRENCY or s[-1] in _CURRENCY:
        s = s.strip(_CURRENCY).strip()
        hows.append("currency")
    elif s[:1] in "+-" and s[1:2] in _CURRENCY:
        s = s[0] + s[2:].strip()
        hows.append("currency")
    if s.endswith("%"):
        s = s[:-1].strip()
        hows.append("percent")
    return s


def locale_note(text: str) -> str | None:
    """Why a string that spells a number under some locale is not read as one (the note a
    refused conversion carries to the caller and to the model), or None."""
    s = text.strip().rstrip(".,;").strip()
    if not s or len(s) > 64:
        return None
    hows: list[str] = []
    s = _unit_free(s, hows)
    currency = "currency" in hows
    if _number(s, currency=currency) is not None:
        return None
    if _ambiguous(s, currency):
        separator = "." if "." in s else ","
        return (
            f"it may mean {s.replace(separator, '')} or {s.replace(separator, '.')}, as "
            f"{separator!r} groups thousands or marks decimals by locale; write a JSON number"
        )
    if _SPACED.fullmatch(s):
        return (
            "spaces between digit groups mark thousands in some locales, where the decimal "
            "mark may be a comma, and separate numbers in others; write a JSON number"
        )
    if _LOCALE.fullmatch(s):
        return (
            "a decimal comma, or points between thousands, depend on the locale; write a JSON "
            "number"
        )
    return None


def _in_text(text: str) -> Number | None:
    """The single number written among words, or None when there is none, several, or a
    word mixing digits and letters ("v2", "1.234,56") that makes the reading unclear."""
    if len(text) > 10_000:
        return None
    found: list[Number] = []
    for chunk in text.split():
        core = chunk.strip(_CHUNK_STRIP)
        if not any(c.isdigit() for c in core):
            continue
        number = parse_number(core)
        if number is None or found:
            return None
        found.append(number)
    return Number(found[0].value, "in_text") if found else None


def _ambiguous(s: str, currency: bool) -> bool:
    """One separator followed by three digits that a locale may read either way (see the
    module): a comma always, a point only beside a currency sign."""
    return _AMBIGUOUS.fullmatch(s) is not None and ("," in s or currency)


def _number(s: str, *, currency: bool = False) -> tuple[int | float, str] | None:
    if _ambiguous(s, currency):
        return None  # see locale_note
    if _PLAIN.fullmatch(s):
        return _to_number(s), "plain"
    if _GROUPED.fullmatch(s):
        return _to_number(s.replace(",", "")), "thousands"
    fraction = _FRACTION.fullmatch(s)
    if fraction:
        numerator, denominator = int(fraction.group(1)), int(fraction.group(2))
        if denominator == 0:
            return None
        if numerator % denominator == 0:
            return numerator // denominator, "fraction"
        return numerator / denominator, "fraction"
    return None


def _to_number(s: str) -> int | float:
    if re.fullmatch(r"[+-]?\d+", s):
        return int(s)
    return float(s)


def as_integer(number: int | float) -> int | None:
    """The integer a number equals exactly (3.0 -> 3), or None (3.5 is not rounded)."""
    if isinstance(number, int):
        return number
    if number.is_integer():
        return int(number)
    return None


def parse_bool(text: str, *, lenient: bool = False) -> bool | None:
    """true/false/yes/no/1/0 (and y/n, on/off) in any case; in lenient mode also a sentence
    that contains exactly one of the words true and false."""
    token = text.strip(STRIP).casefold()
    if token in _TRUE:
        return True
    if token in _FALSE:
        return False
    if lenient and len(text) <= 10_000:
        words = {w.casefold() for w in _BOOL_WORD.findall(text)}
        if len(words) == 1:
            return bool(words.pop() == "true")
    return None


def is_null_word(text: str) -> bool:
    return text.strip(STRIP).casefold() in _NULL


def normalize_token(text: str) -> str:
    """Case-folded and accent-free, with surrounding whitespace, quotes and punctuation removed."""
    return fold_accents(text.strip(STRIP)).casefold()


def fold_accents(text: str) -> str:
    """'São Paulo' -> 'Sao Paulo', 'Straße' -> 'Strasse': letters without their diacritics."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    if max(decomposed) <= "\uffff":
        return decomposed.translate(_plain_table())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return plain.translate(_LIGATURES)


@functools.cache
def _plain_table() -> dict[int, str | None]:
    """The ligatures spelled out, and every combining mark of the Basic Multilingual Plane
    dropped: one `translate` (in C) instead of a test per character."""
    table: dict[int, str | None] = {
        code: None for code in range(0x10000) if unicodedata.combining(chr(code))
    }
    table.update(_LIGATURES)
    return table


_LIGATURES = str.maketrans(
    {
        "ß": "ss",
        "æ": "ae",
        "Æ": "AE",
        "ø": "o",
        "Ø": "O",
        "œ": "oe",
        "Œ": "OE",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
    }
)


def normalize_key(text: str) -> str:
    """A key as matched against declared property names: trimmed, case-folded, accent-free.
    Separators are kept: 'user-name' and 'user_name' are different keys."""
    return fold_accents(text.strip()).casefold()
