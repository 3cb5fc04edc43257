"""Keeping secrets out of every sink.

Events never carry keys by construction (no headers, no URLs, no raw error messages), but a
reply preview can echo what a prompt contained, and a caller's label can be anything. So
before an event reaches a sink, every string in it is checked against:

* the secrets outform knows: values registered with `register_secret` (the registry and the
  gateway register the keys they resolve) and, when the recorder starts, the values of
  environment variables whose names say they hold one (`*_API_KEY`, `*_TOKEN`, `*_SECRET`,
  `*_PASSWORD`, `*_KEY`);
* the shapes of common provider keys (OpenAI and Anthropic `sk-...`, Google `AIza...`, AWS
  access key ids, Groq `gsk_...`, xAI `xai-...`, `Bearer ...` tokens).

A match is replaced by `[redacted]`. So is a known secret a preview cut through: a text that
ends with the first `MIN_PIECE` or more characters of a known secret (an ellipsis, `…` or
`...`, may follow the cut), starts with its last `MIN_PIECE` or more (after an ellipsis), or
is, between two cuts, a piece of one that long. A shorter piece is no secret by itself. The
check costs two slices and two dictionary lookups per text, whatever the number of secrets
(`_Known.pieces`), and runs in the recorder's thread, off the hot path.
"""

from __future__ import annotations

import os
import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"
_MIN_SECRET = 8
"""Shorter values are not treated as secrets (they would match ordinary words)."""
MIN_PIECE = 8
"""The shortest piece of a known secret masked where a cut left it at a text's edge: eight
characters of a random key are no secret by themselves, and fewer would match ordinary text."""
_ELLIPSES = ("…", "...")
_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|_KEY)$", re.IGNORECASE)
_SHAPES = (
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"AIza[0-9A-Za-z_\-]{30,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"gsk_[A-Za-z0-9]{20,}",
    r"xai-[A-Za-z0-9]{20,}",
    r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",
)


@dataclass(frozen=True)
class _Known:
    """What the checks read, replaced whole when a secret is registered (read without the
    lock: one attribute read gives a consistent set)."""

    pattern: re.Pattern[str] = field(default_factory=lambda: re.compile("|".join(_SHAPES)))
    pieces: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    """Every `MIN_PIECE`-long piece of every secret -> (secret, offset) where it occurs: the
    edge of a text is looked up here, and only the few secrets it names are compared."""

    @classmethod
    def of(cls, secrets: Iterable[str]) -> _Known:
        known = sorted(secrets, key=len, reverse=True)  # the longest first: no partial hit
        pieces: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for secret in known:
            for offset in range(len(secret) - MIN_PIECE + 1):
                pieces[secret[offset : offset + MIN_PIECE]].append((secret, offset))
        return cls(
            re.compile("|".join([*map(re.escape, known), *_SHAPES])),
            {piece: tuple(places) for piece, places in pieces.items()},
        )


_lock = threading.Lock()
_secrets: set[str] = set()
_known = _Known()


def register_secret(value: str | None) -> None:
    """Never let `value` reach a sink (an API key, a password, a DSN)."""
    global _known  # noqa: PLW0603 - rebuilt under the lock, read without it
    if not value or len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _known = _Known.of(_secrets)


def register_environment(env: Mapping[str, str] = os.environ) -> None:
    """Register the values of environment variables whose names say they hold a secret."""
    for name, value in env.items():
        if _SECRET_NAME.search(name):
            register_secret(value)


def contains_secret(text: str) -> bool:
    known = _known
    return known.pattern.search(text) is not None or _cut_edges(text, known) is not None


def scrub_text(text: str) -> str:
    known = _known
    text = known.pattern.sub(REDACTED, text)
    edges = _cut_edges(text, known)
    if edges is None:
        return text
    start, front, back, end = edges
    if front >= back:  # the pieces meet: all of it is secret
        return text[:start] + REDACTED + text[end:]
    head = REDACTED if front > start else ""
    tail = REDACTED if back < end else ""
    return text[:start] + head + text[front:back] + tail + text[end:]


def _cut_edges(text: str, known: _Known) -> tuple[int, int, int, int] | None:
    """Where `text` holds a cut piece of a known secret: (start, front, back, end), the text
    between its ellipses being text[start:end], its secret head text[start:front] and its
    secret tail text[back:end]; None when it holds none."""
    if len(text) < MIN_PIECE or not known.pieces:
        return None
    start = next((len(e) for e in _ELLIPSES if text.startswith(e)), 0)
    end = len(text) - next((len(e) for e in _ELLIPSES if text.endswith(e)), 0)
    if end - start < MIN_PIECE:
        return None
    front = _head_end(text, start, end, known)
    back = start if front == end else _tail_start(text, start, end, known)
    if front == start and back == end:
        return None
    return start, front, back, end


def _head_end(text: str, start: int, end: int, known: _Known) -> int:
    """The end of the longest end of a secret text[start:end] starts with (start: none; end
    when all of it lies within one secret)."""
    front = start
    for secret, offset in known.pieces.get(text[start : start + MIN_PIECE], ()):
        rest = len(secret) - offset
        if rest <= end - start and text.startswith(secret[offset:], start):
            front = max(front, start + rest)
        elif rest > end - start and secret.startswith(text[start:end], offset):
            return end
    return front


def _tail_start(text: str, start: int, end: int, known: _Known) -> int:
    """The start of the longest beginning of a secret text[start:end] ends with (end: none)."""
    back = end
    for secret, offset in known.pieces.get(text[end - MIN_PIECE : end], ()):
        size = offset + MIN_PIECE
        if size <= end - start and text.endswith(secret[:size], start, end):
            back = min(back, end - size)
    return back


def scrub(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings...) with every secret replaced."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def holds_secret(value: Any) -> bool:
    """Whether `scrub(value)` would change a string of `value` (JSON-like): each string is
    checked on its own, since a cut piece is a secret only at a string's edge."""
    if isinstance(value, str):
        return contains_secret(value)
    if isinstance(value, dict):
        return any(holds_secret(k) or holds_secret(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(holds_secret(v) for v in value)
    return False
