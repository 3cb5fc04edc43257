"""Long strings held out of json-repair: read here, as JSON reads them, and put back after.

json-repair builds a string a character at a time, copying what it has built at each step, so
its time grows with the square of a string's length (a value of 80,000 characters with one
escape took 0.27 s, one of 320,000 3.4 s), and it cannot be interrupted. In the text it reads,
each double-quoted value in an object or an array of more than LONGER_THAN characters whose
extent the delimit pass leaves as written (closed by a quote its rule confirms, or open to the
end) is replaced by a short placeholder string, which json-repair reads in one step; the value
read here takes the placeholder's place in what it returns. Up to that length the copying
costs less than json-repair's own reading, and the string is left to it (its reading, quirks
included, is unchanged there). So are strings whose end the rule leaves to json-repair, and
top-level or single-quoted ones, whose content json-repair may read as structure: json-repair
reads at most `max_repair_string` characters of such a string (see repair.py).

The value is delimit's reading of a quoted body (an unknown escape's backslash kept, as
json-repair keeps it) read by Python's json, which like json-repair reads an escaped lone
surrogate as one: the check after the tier refuses it either way. Where json-repair did not
return a placeholder as a whole string (it read it together with what follows), it reads the
text as written instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from outform.parse.delimit import long_strings

if TYPE_CHECKING:
    from outform.parse.context import Deadline

LONGER_THAN = 4_096
"""Strings longer than this are held. json-repair reads about a character a microsecond; its
copying adds about 30 ps per character already built (four times that beyond Latin-1), so
0.1 to 0.5 µs a character at this length, doubling with it."""
_MARKERS = tuple(chr(code) for code in range(0xE000, 0xE010))
"""Private-use characters that may mark a placeholder: the first the text lacks."""


@dataclass(frozen=True, slots=True)
class Held:
    text: str
    """The text with each long string replaced by its placeholder."""
    strings: tuple[str, ...]
    marker: str

    @property
    def note(self) -> str:
        """What was done, for the change's detail."""
        count = len(self.strings)
        strings = "string" if count == 1 else "strings"
        return f"read {count} {strings} as JSON (over {LONGER_THAN:,} characters, or escaped)"

    def put_back(self, value: Any) -> tuple[Any, bool]:
        """`value` with each placeholder replaced by its string, and whether every marker
        was a whole placeholder (a marker elsewhere: json-repair changed one)."""
        if isinstance(value, str):
            restored = self._restored(value)
            return (value, False) if restored is None else (restored, True)
        marker = self.marker
        stack = [value]
        while stack:
            node = stack.pop()
            items: Any = node.items() if isinstance(node, dict) else enumerate(node)
            for key, item in items:
                if isinstance(key, str) and marker in key:
                    return value, False
                if isinstance(item, str):
                    if marker in item:
                        restored = self._restored(item)
                        if restored is None:
                            return value, False
                        node[key] = restored
                elif isinstance(item, dict | list):
                    stack.append(item)
        return value, True

    def _restored(self, text: str) -> str | None:
        """The string placeholder `text` stands for; `text` if it holds no marker; None if it
        holds one but is no placeholder."""
        marker = self.marker
        if marker not in text:
            return text
        index = text[1:-1]
        if len(text) < 3 or text[0] != marker or text[-1] != marker or not index.isdigit():
            return None
        return self.strings[int(index)] if int(index) < len(self.strings) else None


def hold(text: str, deadline: Deadline | None = None) -> Held | None:
    """`text` with its long string values, and those holding an escape, held out, or None
    when it has none."""
    if len(text) <= LONGER_THAN and "\\" not in text:
        return None
    marker = next((m for m in _MARKERS if m not in text), None)
    if marker is None:
        return None
    pieces: list[str] = []
    strings: list[str] = []
    at = 0
    for start, end, literal in long_strings(text, LONGER_THAN, deadline):
        try:
            string = json.loads(literal)
        except ValueError:  # an escape JSON lacks (`\u12`): left to json-repair
            continue
        pieces += (text[at:start], f'"{marker}{len(strings)}{marker}"')
        strings.append(string)
        at = end
    if not strings:
        return None
    pieces.append(text[at:])
    return Held("".join(pieces), tuple(strings), marker)
