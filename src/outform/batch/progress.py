"""How a running job reports what it does: phases with totals, counts per status, notes.

The library reports through this protocol and prints nothing; the CLI draws rich progress
bars from it, and `--json` or the Python API use `Silent`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Protocol

Phase = str
"""checking, submitting, waiting or parsing."""


class Progress(Protocol):
    def start(self, phase: Phase, total: int | None) -> None: ...

    def advance(self, phase: Phase, n: int = 1) -> None: ...

    def counts(self, counts: Mapping[str, int]) -> None: ...

    def note(self, text: str) -> None: ...


class Silent:
    def start(self, phase: Phase, total: int | None) -> None:
        return None

    def advance(self, phase: Phase, n: int = 1) -> None:
        return None

    def counts(self, counts: Mapping[str, int]) -> None:
        return None

    def note(self, text: str) -> None:
        return None


class Counts:
    """A Progress passed on, with the counts per status read again as rows advance, at most
    once a second: reading them costs a scan of the job's rows."""

    def __init__(self, progress: Progress, read: Callable[[], Mapping[str, int]]) -> None:
        self.progress, self.read = progress, read
        self._next = 0.0

    def start(self, phase: Phase, total: int | None) -> None:
        self.progress.start(phase, total)

    def advance(self, phase: Phase, n: int = 1) -> None:
        self.progress.advance(phase, n)
        if time.monotonic() >= self._next:
            self.flush()

    def counts(self, counts: Mapping[str, int]) -> None:
        self.progress.counts(counts)

    def note(self, text: str) -> None:
        self.progress.note(text)

    def flush(self) -> None:
        """Show the counts now."""
        if not isinstance(self.progress, Silent):
            self.progress.counts(self.read())
        self._next = time.monotonic() + 1.0
