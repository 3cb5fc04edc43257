"""Bounded memory for request bodies: a budget of bytes shared by every request in flight.

A request's body is held, parsed and translated for as long as the request lasts (a stream's,
until its last event: its input is stored with the response), and costs a few times its size
in memory. Sixteen concurrent 15 MB bodies took the process from 73 MB to nearly 1 GB. So
each request takes the bytes of its body from one budget (`max_buffered_bytes`) as they
arrive, chunk by chunk, and gives them back when its answer is sent. A request that would go
past the budget gets 503 with `Retry-After` before more of its body is read; small requests
are never refused while big ones are not hogging the budget.

Bytes are taken as they arrive, never as `Content-Length` promises them: a client that
declares 16 MiB and then sends one byte holds one byte, not 16 MiB (a few such stalled
uploads once shut every other client out). What a body does hold, it holds for at most
`body_timeout`: the app reads the whole body under that deadline, and a body still
incomplete then gets 408, its connection closed and its bytes given back. The deadline is
for the whole body, so a client that trickles a byte a second is cut off as surely as one
that stops.

Memory given back must also leave the process: glibc serves large blocks from its heap once
it has freed one (its mmap threshold adapts upwards), and a heap fragmented by many large
bodies is not returned to the system. `release_memory()` fixes the threshold, so big bodies
are mapped and unmapped on their own, and trims the heap once the budget is empty again
after large bodies went through.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from typing import Any

from outform.gateway.replies import GatewayError

logger = logging.getLogger("outform.gateway")

RETRY_AFTER = 1
"""Seconds a refused client is told to wait: bodies in flight are usually gone by then."""
LARGE = 1024 * 1024
"""A body at least this large makes the heap worth trimming once it is gone."""


class BodyBudget:
    """Bytes of request bodies held at once, all requests together."""

    __slots__ = ("_trim_due", "limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._trim_due = False

    def lease(self) -> Lease:
        return Lease(self)

    def _give_back(self, size: int, large: bool) -> None:
        self.used -= size
        self._trim_due = self._trim_due or large
        if self.used == 0 and self._trim_due:
            self._trim_due = False
            _ALLOCATOR.trim()


class Lease:
    """One request's share of the budget; `release()` when its answer has been sent."""

    __slots__ = ("_budget", "_large", "held")

    def __init__(self, budget: BodyBudget) -> None:
        self._budget = budget
        self.held = 0
        self._large = False

    def take(self, size: int) -> None:
        budget = self._budget
        if budget.used + size > budget.limit:
            raise GatewayError(
                503,
                "The gateway is holding as many request bodies as it may "
                f"(max_buffered_bytes = {budget.limit}); retry in a moment.",
                type="server_error",
                code="server_busy",
                headers=[(b"retry-after", b"%d" % RETRY_AFTER)],
            )
        budget.used += size
        self.held += size
        self._large = self._large or self.held >= LARGE

    def release(self) -> None:
        held, self.held = self.held, 0
        if held:
            self._budget._give_back(held, self._large)


class _Allocator:
    """glibc's malloc tuning, where there is glibc (elsewhere: nothing to do)."""

    M_MMAP_THRESHOLD = -3
    THRESHOLD = 128 * 1024  # glibc's initial value, kept from adapting upwards

    def __init__(self) -> None:
        self._libc: Any = None
        name = ctypes.util.find_library("c")
        if name is None:
            return
        try:
            libc = ctypes.CDLL(name)
            libc.mallopt  # noqa: B018 - glibc has both; musl and others do not
            libc.malloc_trim  # noqa: B018
        except (OSError, AttributeError):
            return
        self._libc = libc

    def fix_threshold(self) -> None:
        if self._libc is not None:
            self._libc.mallopt(self.M_MMAP_THRESHOLD, self.THRESHOLD)

    def trim(self) -> None:
        if self._libc is not None:
            self._libc.malloc_trim(0)


_ALLOCATOR = _Allocator()


def release_memory() -> None:
    """Make large blocks go back to the system when freed (call once, at start-up)."""
    _ALLOCATOR.fix_threshold()


__all__ = ["BodyBudget", "Lease", "release_memory"]
