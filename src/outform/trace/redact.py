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

A match is replaced by `[redacted]`. The check runs in the recorder's thread, off the hot path.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from typing import Any

REDACTED = "[redacted]"
_MIN_SECRET = 8
"""Shorter values are not treated as secrets (they would match ordinary words)."""
_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|_KEY)$", re.IGNORECASE)
_SHAPES = (
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"AIza[0-9A-Za-z_\-]{30,}",
    r"(?:AKIA|ASIA)[0-9A-Z]{16}",
    r"gsk_[A-Za-z0-9]{20,}",
    r"xai-[A-Za-z0-9]{20,}",
    r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",
)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] = re.compile("|".join(_SHAPES))


def register_secret(value: str | None) -> None:
    """Never let `value` reach a sink (an API key, a password, a DSN)."""
    global _pattern  # noqa: PLW0603 - rebuilt under the lock, read without it
    if not value or len(value) < _MIN_SECRET:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        known = sorted(_secrets, key=len, reverse=True)  # the longest first: no partial hit
        _pattern = re.compile("|".join([*map(re.escape, known), *_SHAPES]))


def register_environment(env: Mapping[str, str] = os.environ) -> None:
    """Register the values of environment variables whose names say they hold a secret."""
    for name, value in env.items():
        if _SECRET_NAME.search(name):
            register_secret(value)


def contains_secret(text: str) -> bool:
    return _pattern.search(text) is not None


def scrub_text(text: str) -> str:
    return _pattern.sub(REDACTED, text)


def scrub(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings...) with every secret replaced."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value
