"""Escapes JSON does not know, kept as written for the tolerant readers.

JSON knows eight escapes (`\\" \\\\ \\/ \\b \\f \\n \\r \\t`, and `\\u` with four hex digits).
JSON5 (pyjson5) reads any other `\\X` as `X` and json-repair reads some of them its own way
(`\\x41` as `A`): a regular expression `"\\d{3}"` would come back as `"d{3}"` and a Windows path
`"C:\\Program Files"` as `"C:Program Files"`, a change of content that counts no letter or
digit lost. A model that writes such an escape in a JSON reply means the backslash (JSON has
no other reading of it), so before a tolerant tier reads the text, the backslash of every
escape JSON does not know is doubled: `\\d` stays `\\d`, `\\x41` stays `\\x41`. Two escapes
keep their JSON5 reading, as they lose nothing: an escaped quote of any kind is the quote (`\\'`
is `'`: JSON5's single-quoted strings need it; `\\„` is `„`) and a backslash ending a line joins
the lines (JSON5's line continuation). The same
rule holds where outform reads strings itself (delimit.py, held.py).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from outform.parse.context import Deadline

QUOTES = "'`\u201e\u201c\u201d\u2018\u2019\u201a\u00ab\u00bb\u2039\u203a"
"""Quote characters besides `"`: an escaped one reads as the quote (`\\'` is `'`, `\\„` is `„`),
the model's way of saying it does not end a string."""
_KNOWN = '"/bfnrtu\r\n' + QUOTES
"""What may follow a backslash in an escape the tolerant readers keep as they read it (the
escaped backslash aside): JSON's own, a line continuation and a quote."""
_KNOWN_ESCAPE = re.compile("\\\\[" + re.escape(_KNOWN) + "]")
_UNKNOWN_CHAR = "[^\\\\" + re.escape(_KNOWN) + "]"
"""A character that, after a backslash, makes an escape JSON does not know."""
_PAIRED = re.compile(r"((?:^|[^\\])(?:\\\\)*)\\(?=" + _UNKNOWN_CHAR + ")", re.DOTALL)
"""The same backslash in a text as written: after an even run of backslashes."""
_MARKS = "".join(map(chr, [*range(0xE000, 0xF900), *range(0xF0000, 0xFFFFE)]))
"""Private-use characters, two of which mark the backslashes set aside (see `keep_unknown`)."""
_WINDOW = 1 << 16
"""Characters rewritten by one call of the pattern, where no mark is free (see `_paired`)."""
_KIND = re.compile(r"\\" + _UNKNOWN_CHAR, re.DOTALL)
"""Such an escape as written."""


def keep_unknown(text: str, deadline: Deadline | None = None) -> tuple[str, list[str]]:
    """`text` with the backslash of every escape JSON does not know doubled, and those
    escapes as written (the first three kinds, for a change's detail; none: empty).

    A few passes of `str.replace` in C, whatever the number of escapes (a regular expression's
    substitution costs a match each: 0.5 s for a million). The escaped backslashes are set
    aside first, under a mark (a character the text does not hold), so that every backslash
    left begins an escape; the backslashes of the escapes kept as they are go under a second
    mark; every backslash left is then doubled, and the marks are written back. The
    `deadline` is read between the passes (each is a few milliseconds a megabyte)."""
    if "\\" not in text:
        return text, []
    held, kept = _marks(text)
    if not kept:  # (a text holding all but one private-use character)
        return _paired(text, deadline), _kinds(text.replace("\\\\", "  "))
    text = text.replace("\\\\", held)
    kinds = _kinds(text)
    if kinds:
        found = _KNOWN_ESCAPE.search(text)
        while found is not None:  # (each kind once: a pass to mark all of it)
            if deadline is not None:
                deadline.check()
            escape = found.group()
            text = text.replace(escape, kept + escape[1])
            found = _KNOWN_ESCAPE.search(text, found.start())
        if deadline is not None:
            deadline.check()
        last = text[-1] == "\\"  # (a backslash ending the text escapes nothing)
        text = text[:-1].replace("\\", "\\\\") + "\\" if last else text.replace("\\", "\\\\")
        text = text.replace(kept, "\\")
    return text.replace(held, "\\\\"), kinds


_REPAIR_QUOTES = "'\u201e\u201c\u201d"
"""The quotes json-repair reads as quotes itself (`'`, `„`, `“`, `”`): the escaped one is the
quote there, and an unescaped one may end one of its strings."""
_READ_AS = {"/": "/", "\r\n": "", "\r": "", "\n": ""} | {
    quote: quote for quote in QUOTES if quote not in _REPAIR_QUOTES
}
"""What json-repair is given instead of the escapes it keeps as written although JSON5 reads
them as a character: `\\/` (JSON's own), an escaped quote (but those of `_REPAIR_QUOTES`) and
a line continuation."""
_READ_AS_ESCAPE = re.compile(r"\\(\r\n|[" + re.escape("".join(_READ_AS)) + "])")
_READ_AS_PAIRED = re.compile(r"\\(\\|\r\n|[" + re.escape("".join(_READ_AS)) + "])")
"""The same, or an escaped backslash (kept): matched left to right, every backslash is paired."""


def read_as_json5(text: str, deadline: Deadline | None = None) -> str:
    """`text` with `\\/`, an escaped quote and a line continuation written as JSON5 reads them
    (`/`, the quote, nothing), for json-repair: it keeps the backslash of these where a string
    is cut off or is followed by no comma (`{"s": "a \\/ b" "t": 1}` read as `a \\/ b`), a
    change of content beside every other reader's. Escaped backslashes are set aside under a
    mark first (as in `keep_unknown`), so that each backslash left begins an escape; each kind
    found is then one `str.replace`, the deadline read between them."""
    if "\\" not in text or _READ_AS_ESCAPE.search(text) is None:
        return text
    held = _marks(text)[0]
    if not held:  # (a text holding all but one private-use character)
        return _paired(text, deadline, _READ_AS_PAIRED, _read_as)
    text = text.replace("\\\\", held)
    found = _READ_AS_ESCAPE.search(text)
    while found is not None:
        if deadline is not None:
            deadline.check()
        if found.group(1) == "\r":
            text = text.replace("\\\r\n", "")  # (a continuation ends at a whole line end)
        text = text.replace(found.group(), _READ_AS[found.group(1)])
        found = _READ_AS_ESCAPE.search(text, found.start())
    return text.replace(held, "\\\\")


def _read_as(match: re.Match[str]) -> str:
    escaped = match.group(1)
    return "\\\\" if escaped == "\\" else _READ_AS[escaped]


def _paired(
    text: str,
    deadline: Deadline | None,
    pattern: re.Pattern[str] = _PAIRED,
    replacement: str | Callable[[re.Match[str]], str] = r"\1\\\\",
) -> str:
    """The rewrite by one pattern (a Python call a match, on Python 3.11), window by window so
    that the deadline is read between them; a window never ends after a backslash, so each
    starts with the count of backslashes before it even and no escape is cut."""
    parts = []
    start = 0
    while start < len(text):
        end = min(len(text), start + _WINDOW)
        while end < len(text) and text[end - 1] in "\\\r":
            end += 1
        parts.append(pattern.sub(replacement, text[start:end]))
        if deadline is not None:
            deadline.check()
        start = end
    return "".join(parts)


def _marks(text: str) -> tuple[str, str]:
    """Two private-use characters `text` does not hold ("" for each one missing). A text
    rarely holds any: the first few are looked for one pass each, and only a text holding
    them is read into a set."""
    likely = (char for char in _MARKS[:4] if char not in text)
    pair = next(likely, ""), next(likely, "")
    if pair[1]:
        return pair
    held = set(text)
    free = (char for char in _MARKS if char not in held)
    return next(free, ""), next(free, "")


def _kinds(text: str) -> list[str]:
    """The first three kinds of unknown escape among the first 1,024 (for a change's detail:
    a reply of a million `\\d` is not listed a million times to find that it holds one)."""
    found = (match.group() for match in _KIND.finditer(text))
    return list(dict.fromkeys(itertools.islice(found, 1024)))[:3]
