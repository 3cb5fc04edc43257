"""A reply written as its reading: the fast path's proof, in one comparison, that nothing was
lost in reading it.

orjson passes over two things without a word: a key written twice (it keeps the last value)
and a number it cannot hold (an integer past 64 bits becomes a float, a fraction past a float's
digits is rounded). Both change the value read, so orjson writing that value back gives other
text: a dropped member's characters are missing, a misread number is spelled otherwise. A reply
that is, byte for byte, orjson's writing of its own reading therefore hides neither. Compact
JSON is a common shape of replies (a tool call's arguments, which outform's adapters write with
orjson; models asked for JSON often write it so), and the comparison is one `==` in C, where
finding both otherwise takes several passes over the text.

A reply written otherwise (pretty-printed, `1.50` for 1.5, `\\u00e9` for `é`, a key written
twice) is checked the long way, with the writing made here reused. (Setting whitespace aside on
both sides would be sound too, but the two translations it takes cost as much as the long
way, which a reply that still differs then pays on top.)
"""

from __future__ import annotations

from typing import Any

import orjson


def writing(value: Any) -> bytes | None:
    """orjson's writing of a value it read (None when it cannot write it: nested past its
    own limit of 254 levels, which the caller's depth check then judges)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


def written_as_read(text: str, written: bytes) -> bool:
    """Whether the JSON `text` is `written` (orjson's writing of its reading): then no key is
    written twice and every number reads as written."""
    return text.encode("utf-8", "surrogatepass") == written


def opening_brackets(written: bytes) -> int:
    """How many containers `written` opens (and strings' brackets): a bound on its nesting."""
    return written.count(b"[") + written.count(b"{")
