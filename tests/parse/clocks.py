"""Fake clocks for the time limit: time passes where a test says, never by measurement."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any


class StillClock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def taking(clock: StillClock, seconds: float, work: Callable[..., Any]) -> Callable[..., Any]:
    """`work`, as if it took `seconds` (when it succeeds: the clock moves as it returns)."""

    def slow(*args: Any, **kwargs: Any) -> Any:
        result = work(*args, **kwargs)
        clock.now += seconds
        return result

    return slow


def _running(frame: Any, inside: Callable[[Any], bool]) -> bool:
    while frame is not None:
        if inside(frame):
            return True
        frame = frame.f_back
    return False


class ExpiresInside:
    """A clock at 0 until it is read from inside the code `inside` recognises (a frame test);
    from then on far past any limit: the limit passes while that code runs."""

    def __init__(self, inside: Callable[[Any], bool]) -> None:
        self.inside = inside
        self.expired = False

    def __call__(self) -> float:
        self.expired = self.expired or _running(sys._getframe(1), self.inside)
        return 1e9 if self.expired else 0.0


def in_module(prefix: str) -> Callable[[Any], bool]:
    """A frame test: code of the modules whose name starts with `prefix`."""
    return lambda frame: str(frame.f_globals.get("__name__", "")).startswith(prefix)


def in_function(function: Callable[..., Any]) -> Callable[[Any], bool]:
    """A frame test: the code of `function`."""
    code = getattr(function, "__code__", None)
    return lambda frame: frame.f_code is code


def raised_inside(traceback: TracebackType | None, inside: Callable[[Any], bool]) -> bool:
    """Whether an exception's traceback passes through the code `inside` recognises."""
    while traceback is not None:
        if inside(traceback.tb_frame):
            return True
        traceback = traceback.tb_next
    return False
