"""Read numbers, booleans and null out of strings, accepting only unambiguous spellings.

A number may carry a currency sign, a trailing percent sign (kept as written: "12%" is 12),
commas grouping thousands ("1,234.5", "1,234,567"), a trailing full stop or comma, or be a
fraction ("9/10"). Commas are only ever thousands separators, and only in groups of three digits:
"12,5" and "1.234,56" are refused because their meaning depends on the writer's locale. So is a
number whose only separator is one `,` followed by exactly three digits, after one to three
digits that are not a lone 0 ("1,234", "$1,000"), and one whose only separator is such a `.`
next to a currency sign ("€1.234"): under one locale it groups thousands (1234), under another
it marks decimals (1.234), whatever the currency sign says, so it is refused with a note saying
so (`number_note`), never guessed; so is one whose digits are grouped by spaces
("1 234 567", "1 234,50 €": thousands in some locales, several numbers in others). A bare
"1.234" or "3.141" is a JSON number as written (the point is JSON's decimal point), and is read
as one. In lenient mode a string holding exactly one number among words ("about 42 apples")
gives that number; two numbers ("between 3 and 5") give nothing, and neither does one that is
not the value: multiplied by a scale word ("2 million"), a bound ("more than 100", "<100"), an
accounting negative ("(1,234.50)"), made negative by words ("minus 5", "- 5", "5 below zero")
or negated ("not 42"); the refusal says why (`number_note`).
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

from outform.parse.negation import Negations
from outform.parse.values import OutOfRange, int_digits, literal_range

_CURRENCY = "$€£¥₹₩₽¢₺₪₫₱₦฿"
_PLAIN = re.compile(r"[+-]?+(?:\d++\.?+\d*+|\.\d++)(?:[eE][+-]?+\d++)?+")
"""A number literal. Possessive: linear in the string's length (a plain `\\d+\\.?\\d*` is tried
at every split of a long run of digits that fails to end, which is quadratic)."""
_GROUPED = re.compile(r"[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?")
"""Commas grouping thousands: the first group is not a lone 0 ("0,250" groups nothing: a
decimal comma, refused by locale like "12,5")."""
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
_ANSWER_WORD = re.compile(r"(?<![\w'-])(?:yes|no)(?![\w'-])", re.IGNORECASE)
"""Yes or no as a word of a sentence: an answer of its own, beside a true or false."""


@dataclass(frozen=True, slots=True)
class Number:
    value: int | float
    how: str
    """Which spelling was recognised: plain, thousands, currency, percent, fraction, or
    in_text (lenient only)."""
    written: str = ""
    """The number as a plain literal (`12345678901234567890.0`, separators and signs of unit
    removed); empty for a fraction."""

    @property
    def integer(self) -> int | None:
        """The integer the string spells, every digit of it (`"12345678901234567890.0"` is
        12345678901234567890, where its float reads 12345678901234567168), or None when it
        spells none (3.5 is not rounded) or one of more digits than Python writes out."""
        if isinstance(self.value, int) or not self.written:
            return as_integer(self.value)
        exact = Decimal(self.written)
        limit = int_digits()
        if exact != exact.to_integral_value() or 0 < limit <= exact.adjusted():
            return None
        return int(exact)


def parse_number(text: str, *, lenient: bool = False) -> Number | None:
    """The number a string spells, or None when it is not unambiguously one, or is out of
    range (see `out_of_range`). Of any length: an integer keeps every digit, up to Python's
    int-string limit."""
    s = text.strip().rstrip(".,;").strip()
    if not s:
        found = _in_text(text) if lenient else None
        return found if isinstance(found, Number) else None
    hows: list[str] = []
    s = _unit_free(s, hows)
    number = _number(s, currency="currency" in hows)
    if number is None:
        found = _in_text(text) if lenient else None
        return found if isinstance(found, Number) else None
    value, how, written = number
    return Number(value, "+".join([*hows, how]) if hows else how, written)


def out_of_range(text: str) -> OutOfRange | None:
    """Why the number literal a string spells (plain, or with thousands, currency or percent)
    is not read: a float cannot hold it ("1e400", "1e-400"), or it is an integer of more digits
    than Python reads ("1000…", 5,000 digits): as the same literal written as JSON (see
    values.py), or None."""
    s = text.strip().rstrip(".,;").strip()
    if not s:
        return None
    s = _unit_free(s, [])
    if _PLAIN.fullmatch(s):
        return literal_range(s)
    if _GROUPED.fullmatch(s):
        return literal_range(s.replace(",", ""))
    return None


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


def number_note(text: str, *, lenient: bool = False) -> str | None:
    """Why a string that spells a number under some locale, or (`lenient`) a sentence whose
    one number is not the value, is not read as a number (the note a refused conversion
    carries to the caller and to the model), or None."""
    if lenient:
        found = _in_text(text)
        if isinstance(found, str):
            return found
    out = out_of_range(text)
    if out is not None:
        advice = f"write at most {int_digits():,} digits" if out.why == "too long" else out.advice
        return f"{out.describe()}; {advice}"
    s = text.strip().rstrip(".,;").strip()
    if not s or len(s) > 64:
        return None
    hows: list[str] = []
    s = _unit_free(s, hows)
    currency = "currency" in hows
    if _number(s, currency=currency) is not None:
        return None
    if _ambiguous(s, currency):
        return _ambiguity(s)
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


def _ambiguity(s: str) -> str:
    """The note of a number `_ambiguous` refuses."""
    separator = "." if "." in s else ","
    return (
        f"it may mean {s.replace(separator, '')} or {s.replace(separator, '.')}, as "
        f"{separator!r} groups thousands or marks decimals by locale; write a JSON number"
    )


def _in_text(text: str) -> Number | str | None:
    """The single number written among words; None when there is none, several, or a word
    mixing digits and letters ("v2", "1.234,56") that makes the reading unclear; or why the
    one number written is not the value (see `_not_the_number`)."""
    if len(text) > 10_000:
        return None
    found: list[tuple[Number, int]] = []
    words = [(m.start(), m.group()) for m in _WORD.finditer(text)]
    for index, (_, chunk) in enumerate(words):
        core = chunk.strip(_CHUNK_STRIP)
        if not any(c.isnumeric() for c in core):
            continue  # (numeric, not only digits: `½`, `³` and `三` are numbers too)
        number = parse_number(core)
        if number is None or found:
            return None
        found.append((number, index))
    if not found:
        return None
    number, index = found[0]
    core = words[index][1].strip(_CHUNK_STRIP)
    if _ambiguous(core, currency=True) and _beside_money(words, index):
        return _ambiguity(core)  # `€ 12.345`: as `€12.345` is, a sign apart or not
    why = _not_the_number(text, words, index)
    return why or Number(number.value, "in_text", number.written)


def _beside_money(words: list[tuple[int, str]], index: int) -> bool:
    """Whether a word next to the one at `index` names money: currency signs, a code of three
    capitals (`EUR`), or a currency's name (`euros`)."""
    for near in (index - 1, index + 1):
        if 0 <= near < len(words):
            word = words[near][1].strip(_CHUNK_STRIP)
            if word and (
                all(c in _CURRENCY for c in word)
                or _CURRENCY_CODE.fullmatch(word)
                or word.lower() in _MONEY_WORDS
            ):
                return True
    return False


_CURRENCY_CODE = re.compile(r"[A-Z]{3}")
_MONEY_WORDS = frozenset(
    {
        "euro", "euros", "dollar", "dollars", "pound", "pounds", "yen", "yuan", "rupee",
        "rupees", "franc", "francs", "won", "ruble", "rubles", "rouble", "roubles", "lira",
        "real", "reais", "peso", "pesos", "krona", "kronor", "krone", "kroner", "zloty",
        "rand", "shekel", "shekels", "dirham", "dirhams", "bucks",
    }
)  # fmt: skip
"""Currency names that may stand beside a number instead of its sign."""


_WORD = re.compile(r"\S+")
_SCALE = frozenset(
    {
        "hundred",
        "hundreds",
        "thousand",
        "thousands",
        "million",
        "millions",
        "billion",
        "billions",
        "trillion",
        "trillions",
        "lakh",
        "lakhs",
        "crore",
        "crores",
        "dozen",
        "dozens",
        "grand",
        "k",
        "m",
        "b",
        "bn",
        "mn",
        "mm",
        "mil",
        "mln",
        "tn",
    }
)
"""Words that multiply the number before them: "2 million" is not 2 (and "5 m", which may be
metres or millions, is refused rather than guessed)."""
_BOUNDS = (
    "more than",
    "less than",
    "fewer than",
    "greater than",
    "larger than",
    "smaller than",
    "higher than",
    "lower than",
    "at least",
    "at most",
    "up to",
    "no more than",
    "no less than",
    "over",
    "under",
    "above",
    "below",
    "exceeding",
    "upwards of",
    "beyond",
    "within",
    "exceeds",
    "exceed",
    "exceeded",
)
"""Words that make the number a bound: "more than 100" is not 100."""
_AFTER = (
    "or more",
    "or less",
    "or fewer",
    "or greater",
    "or higher",
    "or lower",
    "or above",
    "or below",
    "or over",
    "or under",
    "and up",
    "and above",
    "and over",
    "and under",
    "and below",
    "plus",
    "and a half",
    "and a quarter",
    "and a third",
    "tenths",
    "hundredths",
    "thousandths",
    "millionths",
)
"""Words after a number that make it a bound or another number: "5 or more", "5 plus",
"5 and a half" (5.5), "5 thousandths" (0.005)."""
_COMPARISON = "<>≤≥≈"
_SIGN_WORDS = frozenset({"-", "\u2212", "\u2013", "minus", "negative", "neg"})
"""Before a number, a sign written apart or as a word: "minus 5" is -5, not 5."""
_BELOW_ZERO = ("below zero", "under zero", "below 0", "under 0")


def _not_the_number(text: str, words: list[tuple[int, str]], index: int) -> str:
    """Why the number written as `words[index]` is not the value the sentence gives, or "":
    a scale word after it ("2 million"), a bound before it ("more than 100", "<100"), the
    accounting spelling of a negative number ("(1,234.50)"), or a negation ("not 42")."""
    at, chunk = words[index]
    following = words[index + 1][1].strip(_CHUNK_STRIP).casefold() if index + 1 < len(words) else ""
    if following in _SCALE:
        return f"{chunk!r} is followed by the scale word {following!r}; write the whole number"
    after = " ".join(w.strip(_CHUNK_STRIP) for _, w in words[index + 1 : index + 4]).casefold()
    changed = next((a for a in _AFTER if f"{after} ".startswith(a + " ")), None)
    if changed is not None:
        return f"{changed!r} after {chunk!r} makes it another number or a bound; write the value"
    preceding = " ".join(w for _, w in words[max(0, index - 3) : index]).casefold()
    bound = next((b for b in _BOUNDS if preceding == b or preceding.endswith(" " + b)), None)
    if bound is not None:
        return f"{bound!r} makes {chunk!r} a bound, not a value; write the value"
    sign = words[index - 1][1] if index else ""
    following_two = " ".join(w for _, w in words[index + 1 : index + 3]).casefold()
    if sign.casefold() in _SIGN_WORDS or following_two.rstrip(_CHUNK_STRIP).startswith(_BELOW_ZERO):
        return f"{chunk!r} is made negative by the words around it; write a JSON number (-5)"
    if chunk.lstrip(_CHUNK_STRIP.replace("<>", ""))[:1] in _COMPARISON or (
        sign and not sign.strip(_COMPARISON + "=~")
    ):
        return f"{chunk!r} is a comparison, not a value; write the value"
    core = chunk.strip(".,;:!?")
    if core.startswith("(") and core.endswith(")"):
        return f"{chunk!r} may be an accounting negative; write a JSON number (-1234.5)"
    if Negations(text).govern(at, at + len(chunk)):
        return f"{chunk!r} is negated; write the value"
    return ""


def _ambiguous(s: str, currency: bool) -> bool:
    """One separator followed by three digits that a locale may read either way (see the
    module): a comma always, a point only beside a currency sign."""
    return _AMBIGUOUS.fullmatch(s) is not None and ("," in s or currency)


def _number(s: str, *, currency: bool = False) -> tuple[int | float, str, str] | None:
    """The number `s` spells, how, and its plain literal (for a fraction, its exact decimal
    when it has one, else ""); None when it spells none, or one out of range (see
    `out_of_range`)."""
    if _ambiguous(s, currency):
        return None  # see number_note
    if _PLAIN.fullmatch(s):
        plain, how = s, "plain"
    elif _GROUPED.fullmatch(s):
        plain, how = s.replace(",", ""), "thousands"
    else:
        fraction = _FRACTION.fullmatch(s)
        return _fraction(fraction.group(1), fraction.group(2)) if fraction else None
    if literal_range(plain) is not None:
        return None  # see number_note
    if plain.lstrip("+-").isdecimal():
        return int(plain), how, plain
    return float(plain), how, plain


def _fraction(top: str, bottom: str) -> tuple[int | float, str, str] | None:
    """The number `top/bottom` spells, and its exact decimal when it has one ("3/4": 0.75,
    written "0.75"; "1/3" has none): a float holds it, or it is out of range (None)."""
    if literal_range(top) is not None or literal_range(bottom) is not None:
        return None
    numerator, denominator = int(top), int(bottom)
    if denominator == 0:
        return None
    if numerator % denominator == 0:
        return numerator // denominator, "fraction", ""
    try:
        value = numerator / denominator
    except OverflowError:
        return None
    if not math.isfinite(value) or value == 0:
        return None
    exact = Fraction(numerator, denominator)
    rest = exact.denominator
    for factor in (2, 5):
        while rest % factor == 0:
            rest //= factor
    if rest != 1:
        return value, "fraction", ""
    with localcontext(prec=len(top) + len(bottom) * 4 + 8):
        written = Decimal(exact.numerator) / Decimal(exact.denominator)
    return value, "fraction", format(written, "f")


def as_integer(number: int | float) -> int | None:
    """The integer a number equals exactly (3.0 -> 3), or None (3.5 is not rounded)."""
    if isinstance(number, int):
        return number
    if number.is_integer():
        return int(number)
    return None


def parse_bool(text: str, *, lenient: bool = False) -> bool | None:
    """true/false/yes/no/1/0 (and y/n, on/off) in any case; in lenient mode also a sentence
    that contains exactly one of the words true and false, and no yes or no saying the
    other ("Is it true? No." names both)."""
    token = text.strip(STRIP).casefold()
    if token in _TRUE:
        return True
    if token in _FALSE:
        return False
    if lenient and len(text) <= 10_000:
        words = _plain_bool_words(text)
        if len(words) == 1:
            flag = words.pop() == "true"
            # An answer word of the other sense ("Is it true? No.") makes it two answers.
            answers = {m.group().casefold() == "yes" for m in _ANSWER_WORD.finditer(text)}
            return None if (not flag) in answers else flag
    return None


def _plain_bool_words(text: str) -> set[str]:
    """The words true and false a sentence writes, but for those a negation governs."""
    found = list(_BOOL_WORD.finditer(text))
    negations = Negations(text) if found else None
    return {
        m.group().casefold()
        for m in found
        if negations is None or not negations.govern(m.start(), m.end())
    }


def bool_note(text: str) -> str | None:
    """Why a sentence that writes true or false is not read as a boolean (lenient), or None."""
    if len(text) > 10_000 or _plain_bool_words(text) or not _BOOL_WORD.search(text):
        return None
    return "its true or false is negated, which says what the value is not; write true or false"


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
