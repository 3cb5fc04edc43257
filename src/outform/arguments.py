"""What a caller passes to a public entry point, or what its code returns to one (a processor's
value), checked where it enters: a wrong one is a UsageError naming it, what it is and what is
taken, never a TypeError or AttributeError from deep inside (or an InternalError blaming
outform).

The rule: an argument of the wrong type is refused before it is used. A parse option (a
setting outform.toml's [parse] takes too) is checked with the others in `Options.replace`,
which says ConfigError, as for every setting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from outform.errors import UsageError

if TYPE_CHECKING:
    from outform.parse.context import Deadline

T = TypeVar("T")


def shown(value: Any) -> str:
    """A value in a message: its type and a short repr."""
    text = repr(value)
    if len(text) > 40:
        text = text[:39] + "…"
    return f"{type(value).__name__} {text}"


def refused(name: str, allowed: str, value: Any, fix: str | None = None) -> UsageError:
    return UsageError(f"{name} must be {allowed}, got {shown(value)}", where=name, fix=fix)


def flag(name: str, value: Any) -> bool:
    """A yes/no argument: True or False (not "yes", not 1)."""
    if type(value) is not bool:
        raise refused(name, "True or False", value)
    return value


def whole(name: str, value: Any, low: int) -> int:
    """A whole number of at least `low`."""
    if type(value) is not int or value < low:
        raise refused(name, f"a whole number ≥ {low}", value)
    return value


def one_of(name: str, value: Any, kind: type[T] | tuple[type, ...], allowed: str) -> T:
    """An argument of one type (or None, when `kind` includes type(None))."""
    if not isinstance(value, kind):
        raise refused(name, allowed, value)
    return value  # type: ignore[return-value]


def text(name: str, value: Any, fix: str | None = None) -> str:
    if not isinstance(value, str):
        raise refused(name, "a str", value, fix)
    return value


def items(
    name: str, value: Any, check: Callable[[Any], bool], allowed: str, fix: str | None = None
) -> tuple[Any, ...]:
    """A list (any iterable but a string) whose every item passes `check` (`allowed` says what
    one item is); the first that does not is named by its index."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise refused(name, f"a list, each item {allowed}", value, fix)
    found = tuple(value)
    for index, item in enumerate(found):
        if not check(item):
            raise refused(f"{name}[{index}]", allowed, item, fix)
    return found


def iterable(name: str, value: Any, allowed: str) -> None:
    """Something `for` can go through (a list, a generator): what a stream's chunks are."""
    if not isinstance(value, Iterable):
        raise refused(name, allowed, value)


_JSON_TYPES = (dict, list, str, int, float, type(None))
_NOT_JSON = {
    "tuple": "a tuple (return a list)",
    "set": "a set (return a list)",
    "frozenset": "a frozenset (return a list)",
    "bytes": "bytes (return text)",
}


def not_json(value: Any, deadline: Deadline | None = None) -> str | None:
    """Why a value a caller's code returned is not JSON: a type JSON has not (a set, a tuple,
    an object of a class), or a cycle (a list or object inside itself, which no walk of it
    ends), else what `values.flaw` finds (a non-finite number, a key that is not a string, a
    lone surrogate). None when it is JSON. One walk, bounded by the deadline; a value shared
    by two places (not a cycle) is fine."""
    from outform.parse.values import flaw

    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    steps = 0
    while stack:
        item, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        steps += 1
        if deadline is not None and not steps & 1023:
            deadline.check()
        if not isinstance(item, _JSON_TYPES):
            kind = type(item).__name__
            return _NOT_JSON.get(kind, f"a {kind}, which is not a JSON value")
        if isinstance(item, float) and not math.isfinite(item):
            continue  # flaw names it
        if isinstance(item, dict | list):
            if id(item) in on_path:
                return f"a cycle: a {'list' if isinstance(item, list) else 'dict'} holds itself"
            on_path.add(id(item))
            stack.append((item, True))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, False) for child in children)
    return flaw(value, deadline)
