"""How a running job reports what it does: phases with totals, counts per status, notes.

The library reports through this protocol and prints nothing; the CLI draws rich progress
bars from it, and `--json` or the Python API use `Silent`.
"""

from __future__ import annotations

from collections.abc import Mapping
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
