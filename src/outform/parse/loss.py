"""The loss rule: a repair may not discard what the reply said without saying so.

A tolerant decoder reads a *region* of the reply (from its first bracket to its last, or all of
it when it has none) and returns a value. The region's *content* is its count of characters
other than whitespace, leaving out comments and counting a `\\uXXXX` escape as the one
character it stands for; the value *keeps* the same count of its compact JSON text. Then:

- `lost = content - kept`; up to `max(SLACK, content / 50)` is the noise of re-spelling
  (trailing commas, `1.50` written `1.5`) and is no loss;
- a value that keeps less than half of the content is **refused**: the decode does not count,
  and the error says how much it would have discarded;
- any other loss is **recorded**: the change carries `lost`, and is flagged `lossy`.

The same rule is applied by every tolerant decode (the reply, a region of it, JSON written
inside a string value), and to a region read alone out of a reply that is one broken JSON
document (the rest of the document is content too); stages that drop a value the schema
forbids record its size the same way. See "Loss" in docs/pipeline.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SLACK = 16
"""Characters a lossless re-spelling may shed (trailing commas, number spellings)."""

_COMMENTS = re.compile(
    r'"(?:[^"\\\n]|\\.)*+"?'  # a double-quoted string (skipped, even unterminated)
    r"|'(?:[^'\\\n]|\\.)*+'?"  # a single-quoted string
    r"|(//[^\n]*+|/\*(?s:.*?)(?:\*/|\Z))"  # a comment
)


@dataclass(frozen=True, slots=True)
class Loss:
    content: int
    kept: int

    @property
    def lost(self) -> int:
        """Characters of content the value does not carry (0 within the slack)."""
        lost = self.content - self.kept
        return lost if lost > max(SLACK, self.content // 50) else 0

    @property
    def refused(self) -> bool:
        """The value keeps less than half of what the region said."""
        return self.lost > 0 and self.kept * 2 < self.content

    def describe(self, reading: str) -> str:
        return (
            f"{reading} keeps {self.kept:,} of {self.content:,} characters of content "
            f"({self.lost:,} discarded)"
        )


def region(text: str) -> str:
    """The part of a candidate a decoder reads as JSON: from its first opening bracket to its
    last closing one (or to the end when it is left open); all of it when it has none."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text
    start = min(starts)
    end = max(text.rfind("}"), text.rfind("]"))
    return text[start : end + 1] if end > start else text[start:]


def content_size(text: str) -> int:
    """Characters of content in `text` (see the module's docstring). Linear."""
    size = nonblank(text) - text.count("\\u") * 5
    if "/" in text:
        for match in _COMMENTS.finditer(text):
            if match.lastindex:
                size -= nonblank(match.group(1))
    return size


def nonblank(text: str) -> int:
    """Characters of `text` other than whitespace."""
    return len("".join(text.split()))


def assess(text: str, value_json: str) -> Loss:
    """The loss of a decode of candidate `text` into the value whose compact JSON is
    `value_json`."""
    return Loss(content_size(region(text)), nonblank(value_json))
