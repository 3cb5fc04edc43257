"""A tolerant reading may use as keys only text the reply writes as keys.

json-repair reads some broken objects by making a key of a value: `[1, 2, {bad}, 3]` becomes
`[1, 2, {"3": ""}]`, where `3` was an item and `bad` is gone. Such a reading is not a reading of
the reply, whatever else it keeps, and is refused. What the reply writes as a key is what the
delimiting pass (delimit.py) reads in a key's place, and any word or quoted text right before a
colon, wherever it stands (a decoder may read a string left open as ending before `, b: 1`);
keys are compared by their letters and digits, which every re-spelling of a key keeps (quotes,
escapes, spaces). A key with no letter or digit (`""`) carries no content and is not asked
about.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from outform.parse.delimit import content
from outform.parse.hint import clip

if TYPE_CHECKING:
    from collections.abc import Set

    from outform.parse.context import Deadline


_REACH = 256
"""How far back from a colon a key is looked for (keys are short; this keeps the scan linear)."""
_NOT_WORD = frozenset(" \t\r\n,{}[]:")


def before_colons(text: str) -> set[str]:
    """The content of the word, and of the quoted text, right before each colon of `text`."""
    found: set[str] = set()
    colon = text.find(":")
    while colon != -1:
        end = colon
        while end > 0 and text[end - 1] in " \t\r\n":
            end -= 1
        start = end
        floor = max(0, end - _REACH)
        while start > floor and text[start - 1] not in _NOT_WORD:
            start -= 1
        found.add(content(text[start:end]))
        if end and text[end - 1] in "\"'`":
            opening = text.rfind(text[end - 1], floor, end - 1)
            if opening != -1:
                found.add(content(text[opening:end]))
        colon = text.find(":", colon + 1)
    return found


def invented(value: Any, written: Set[str], deadline: Deadline | None = None) -> str | None:
    """The first key of `value` (depth first) that the reply does not write as a key, or None.
    Linear in the value: each container is visited once."""
    pending = [value]
    steps = 0
    while pending:
        item = pending.pop()
        steps += 1
        if deadline is not None and not steps & 4095:
            deadline.check()
        if isinstance(item, dict):
            for key, member in item.items():
                found = content(key)
                if found and found not in written:
                    return clip(key, 40)
                if isinstance(member, dict | list):
                    pending.append(member)
        elif isinstance(item, list):
            pending.extend(member for member in item if isinstance(member, dict | list))
    return None
