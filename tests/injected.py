"""Faults injected as code of one of outform's modules: an exception raised by the caller's
own code is the caller's (`CallerCodeError`), so a test of what outform does with a fault of
its own raises it from a frame that names an outform module."""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable
from typing import Any


def _raise(*args: Any, **kwargs: Any) -> Any:
    fault = globals()  # (the namespace the copy runs in: see fault_in)
    raise fault["FAULT"](fault["MESSAGE"])


def fault_in(
    module: str, error: type[Exception] = TypeError, message: str = "a fault inside outform"
) -> Callable[..., Any]:
    """A function that raises `error(message)` as code of outform's `module` would."""
    namespace = {
        "__name__": module,
        "__builtins__": builtins,
        "FAULT": error,
        "MESSAGE": message,
    }
    return types.FunctionType(_raise.__code__, namespace, "fault")
