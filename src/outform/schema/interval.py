"""The numbers a schema node's bounds and `multipleOf` allow, in exact arithmetic.

JSON numbers are read as the decimals they spell (0.1 is 1/10, not the nearest binary float),
so that "is there a multiple of 0.1 between 0.3 and 0.3" has the answer a reader expects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class Interval:
    """The numbers a node's bounds and `multipleOf` allow, in exact arithmetic."""

    low: Fraction | None = None
    low_open: bool = False
    high: Fraction | None = None
    high_open: bool = False
    step: Fraction | None = None

    @classmethod
    def of(cls, node: Mapping[str, Any]) -> Interval:
        low, low_open = _bound(node, "minimum", "exclusiveMinimum", max)
        high, high_open = _bound(node, "maximum", "exclusiveMaximum", min)
        step = _exact(node.get("multipleOf"))
        return cls(low, low_open, high, high_open, step if step and step > 0 else None)

    def holds(self, value: float) -> bool:
        exact = _exact(value)
        if exact is None:
            return False
        if self.low is not None and (exact < self.low or (self.low_open and exact == self.low)):
            return False
        if self.high is not None and (exact > self.high or (self.high_open and exact == self.high)):
            return False
        return self.step is None or (exact / self.step).denominator == 1

    def _first(self, step: Fraction) -> int:
        """The index of the first multiple of `step` in the interval (`low` is set)."""
        assert self.low is not None
        ratio = self.low / step
        return math.ceil(ratio) + (1 if self.low_open and ratio.denominator == 1 else 0)

    def _count(self, step: Fraction) -> int | None:
        """How many multiples of `step` lie in the interval (None: unbounded)."""
        if self.low is None or self.high is None:
            return None
        ratio = self.high / step
        last = math.floor(ratio) - (1 if self.high_open and ratio.denominator == 1 else 0)
        return max(0, last - self._first(step) + 1)

    def has_number(self) -> bool:
        if self.step is not None:
            return self._count(self.step) != 0
        if self.low is None or self.high is None:
            return True
        return self.low < self.high or (
            self.low == self.high and not (self.low_open or self.high_open)
        )

    def has_integer(self) -> bool:
        step = Fraction(self.step.numerator) if self.step is not None else Fraction(1)
        return self._count(step) != 0

    def has_fraction(self) -> bool:
        """Whether a number that is not an integer fits."""
        if self.step is not None:
            if self.step.denominator == 1:
                return False
            count = self._count(self.step)
            if count is None or count >= 2:  # of two consecutive multiples, one is not whole
                return True
            return count == 1 and (self._first(self.step) * self.step).denominator != 1
        if self.low is None or self.high is None:
            return True
        if self.low < self.high:
            return True
        return self.low == self.high and not self.low_open and self.low.denominator != 1

    def describe(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'above' if self.low_open else 'at least'} {_show(self.low)}")
        if self.high is not None:
            parts.append(f"{'below' if self.high_open else 'at most'} {_show(self.high)}")
        if self.step is not None:
            parts.append(f"a multiple of {_show(self.step)}")
        return " and ".join(parts)


def _bound(
    node: Mapping[str, Any], inclusive: str, exclusive: str, pick: Any
) -> tuple[Fraction | None, bool]:
    """The tighter of an inclusive and an exclusive bound (draft 4 spells exclusivity as a
    boolean beside the inclusive keyword)."""
    closed = _exact(node.get(inclusive))
    flag = node.get(exclusive)
    if isinstance(flag, bool):
        return closed, flag and closed is not None
    opened = _exact(flag)
    if closed is None or opened is None:
        return (closed, False) if opened is None else (opened, True)
    chosen = pick(closed, opened)
    if chosen == opened and opened == closed:
        return opened, True
    return chosen, chosen == opened


def _exact(value: Any) -> Fraction | None:
    """A JSON number as an exact fraction of its decimal spelling (0.1 is 1/10)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def _show(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else repr(float(value))
