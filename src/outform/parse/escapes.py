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

import re

QUOTES = "'`\u201e\u201c\u201d\u2018\u2019\u201a\u00ab\u00bb\u2039\u203a"
"""Quote characters besides `"`: an escaped one reads as the quote (`\\'` is `'`, `\\„` is `„`),
the model's way of saying it does not end a string."""
_UNKNOWN = re.compile(r"((?:^|[^\\])(?:\\\\)*)\\(?=[^\"\\/bfnrtu\r\n" + QUOTES + "])", re.DOTALL)
"""A backslash that escapes a character JSON does not know (after an even run of backslashes,
which are escapes of a backslash); group 1 is what precedes it."""


def keep_unknown(text: str) -> tuple[str, list[str]]:
    """`text` with the backslash of every escape JSON does not know doubled, and those
    escapes as written (the first three kinds, for a change's detail; none: empty).
    One substitution in C."""
    if "\\" not in text:
        return text, []
    found: dict[str, None] = {}
    for match in _UNKNOWN.finditer(text):
        found[text[match.end() - 1 : match.end() + 1]] = None
        if len(found) == 3:
            break
    if not found:
        return text, []
    return _UNKNOWN.sub(r"\1\\\\", text), list(found)
