"""Feeding wire events to an adapter's stream decoder, for the adapter tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from outform.providers.base import Adapter, Delta, Request


def decode(
    adapter: Adapter,
    request: Request,
    events: Iterable[Mapping[str, Any]],
    check: Callable[[Any], object] | None = None,
) -> list[Delta]:
    """Every delta the decoder yields for `events`; `check` validates each event first (against
    the provider's official artifact)."""
    decoder = adapter.decoder(request)
    out: list[Delta] = []
    for event in events:
        if check is not None:
            check(event)
        out += decoder.feed(event)
    return out


def joined(deltas: Sequence[Delta], kind: str) -> str:
    """The text of every delta of one kind, concatenated."""
    return "".join(d.text for d in deltas if d.kind == kind)
