"""Keys written more than once in one object.

JSON readers (orjson, Pydantic, every JSON5 reader) keep the last value of a repeated key and
drop the others without a word: `{"paid": true, "paid": false}` reads as `{"paid": false}`. Such
a text is still valid JSON (RFC 8259 only says names *should* be unique), so no level refuses
it; but a value is discarded, so outform says so at every level: the last value is kept and
each repeated key is a recorded change (`drop_duplicate_key`, lossy when a dropped value
differs from the kept one).

Finding them costs a second reading, so it is only done when a cheap bound says it may be
needed (:func:`may_repeat`): every key written is followed by a `:`, so a text with no more
colons than its reading holds keys and colons inside strings has no key twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from outform import jsontext
from outform.schema import pointer


@dataclass(frozen=True, slots=True)
class Repeat:
    """A key written `len(written)` times in the object at `path`; the last value is kept."""

    path: str
    key: str
    written: tuple[Any, ...]

    @property
    def pointer(self) -> str:
        return pointer.join(self.path, self.key)


def may_repeat(
    text: str, value: Any, written: int | None = None, writing: bytes | None = None
) -> bool:
    """Whether the JSON `text`, read as `value`, may write a key twice (False is certain);
    `written`: the colons of `text`, when already counted; `writing`: orjson's writing of
    `value` (or of orjson's reading of `text`), when already made."""
    if written is None:
        written = text.count(":")
    if not written or (type(value) is dict and written <= len(value)):
        return False
    if writing is None:
        try:
            writing = orjson.dumps(value)
        except TypeError:  # an integer beyond 64 bits, read exactly by the slow path
            writing = jsontext.dumps(value)
    read = writing.count(b":")
    if written > read:
        return True
    # An escaped colon in a string is a colon in the reading only: it may hide a repeat.
    return "\\" in text and written + text.count("\\u003a") + text.count("\\u003A") > read


def find(text: str) -> list[Repeat]:
    """Every key written more than once in the JSON `text`, by path ([] when the
    text is not strict JSON)."""
    try:
        value = json.loads(text, object_pairs_hook=_Object.of, parse_constant=_refuse)
    except (ValueError, RecursionError):
        return []
    found: list[Repeat] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Object):
            for key, written in (item.repeated or {}).items():
                found.append(Repeat(path, key, tuple(written)))
            stack.extend((child, pointer.join(path, key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, pointer.join(path, i)) for i, child in enumerate(item))
    found.sort(key=lambda repeat: repeat.pointer)
    return found


class _Object(dict[str, Any]):
    """An object as read, with the values of each repeated key in the order written."""

    repeated: dict[str, list[Any]] | None = None

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> _Object:
        obj = cls()
        for key, item in pairs:
            if key in obj:
                if obj.repeated is None:
                    obj.repeated = {}
                obj.repeated.setdefault(key, [obj[key]]).append(item)
            obj[key] = item
        return obj


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
