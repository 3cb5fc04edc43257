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

QUOTES = "'`\u201e\u201c\u201d\u2018\u2019\u201a\u00ab\u00bb\u2039\u203a"
"""Quote characters besides `"`: an escaped one reads as the quote (`\\'` is `'`, `\\„` is `„`),
the model's way of saying it does not end a string."""
_UNKNOWN = re.compile(r"\\(?=[^\"\\/bfnrtu\r\n" + QUOTES + "])")
"""A backslash that escapes a character JSON does not know, in a text whose escaped
backslashes (`\\\\`) were set aside (see `keep_unknown`)."""
_PAIRED = re.compile(r"((?:^|[^\\])(?:\\\\)*)\\(?=[^\"\\/bfnrtu\r\n" + QUOTES + "])", re.DOTALL)
"""The same backslash in a text as written: after an even run of backslashes."""
_MARKS = "".join(map(chr, range(0xE000, 0xF900)))
"""Private-use characters, one of which marks an escaped backslash set aside."""
_KIND = re.compile(r"\\[^\"\\/bfnrtu\r\n" + QUOTES + "]", re.DOTALL)
"""Such an escape as written."""


def keep_unknown(text: str) -> tuple[str, list[str]]:
    """`text` with the backslash of every escape JSON does not know doubled, and those
    escapes as written (the first three kinds, for a change's detail; none: empty).
    A few passes in C, whatever the number of escapes: the escaped backslashes are set aside
    first (a mark in their place, a character the text does not hold), so that every backslash
    left begins an escape, and the substitution writes a constant (a replacement naming a
    group costs a Python call per match on Python 3.11)."""
    if "\\" not in text:
        return text, []
    mark = ""
    if "\\\\" in text:
        held = set(text)
        mark = next((c for c in _MARKS if c not in held), "")
        if not mark:  # (a text holding every private-use character: one Python call a match)
            return _PAIRED.sub(r"\1\\\\", text), _kinds(text.replace("\\\\", "  "))
        text = text.replace("\\\\", mark)
    kinds = _kinds(text)
    if kinds:
        text = _UNKNOWN.sub(r"\\\\", text)
    if mark:
        text = text.replace(mark, "\\\\")
    return text, kinds


def _kinds(text: str) -> list[str]:
    """The first three kinds of unknown escape among the first 1,024 (for a change's detail:
    a reply of a million `\\d` is not listed a million times to find that it holds one)."""
    found = (match.group() for match in _KIND.finditer(text))
    return list(dict.fromkeys(itertools.islice(found, 1024)))[:3]
