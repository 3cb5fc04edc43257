"""Rate limits read from the provider's response headers, for jobs run live.

OpenAI-style `x-ratelimit-remaining-requests` / `x-ratelimit-reset-requests` (durations such
as `1s`, `6m0s`, `20ms`), Anthropic's `anthropic-ratelimit-requests-remaining` / `-reset` (an
RFC 3339 time) and `retry-after`. When the provider says no request is left, new requests
wait until its reset; transport already retries a 429 after its Retry-After.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime

from outform.transport import retry_after

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_WAIT = 120.0


def duration(text: str) -> float | None:
    """Seconds in `6m0s`, `1.5s`, `20ms` or a bare number of seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts:
        return None
    return sum(float(n) * _UNIT[unit] for n, unit in parts)


def _reset_at(text: str, now: float) -> float | None:
    seconds = duration(text)
    if seconds is not None:
        return now + seconds
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class RateGate:
    """Shared by the workers of one job: `wait()` before a request, `update()` after."""

    def __init__(
        self, clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._until = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self.waits = 0

    def wait(self) -> None:
        with self._lock:
            delay = self._until - self._clock()
        if delay > 0:
            self.waits += 1
            self._sleep(min(delay, MAX_WAIT))

    def update(self, headers: Mapping[str, str]) -> None:
        lowered = {k.lower(): v for k, v in headers.items()}
        now = self._clock()
        until: float | None = None
        for prefix in ("x-ratelimit-", "anthropic-ratelimit-"):
            remaining = lowered.get(f"{prefix}remaining-requests") or lowered.get(
                f"{prefix}requests-remaining"
            )
            reset = lowered.get(f"{prefix}reset-requests") or lowered.get(f"{prefix}requests-reset")
            if remaining is not None and reset and remaining.strip() in ("0", "0.0"):
                until = _reset_at(reset.strip(), now)
        import httpx

        after = retry_after(httpx.Headers(lowered))
        if after is not None:
            until = max(until or 0.0, now + after)
        if until is not None:
            with self._lock:
                self._until = max(self._until, min(until, now + MAX_WAIT))
