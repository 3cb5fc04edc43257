"""Timing helpers shared by the benchmarks: medians of repeated runs, in one process."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any


def per_call(fn: Callable[[], Any], *, budget: float = 0.5, repeats: int = 7) -> float:
    """Seconds per call of `fn`: the fastest of `repeats` batches, each sized to take about
    budget/repeats. The fastest batch is the one least disturbed by the rest of the machine
    (the advice of Python's timeit); every side of a comparison is measured the same way."""
    fn()  # warm caches (compiled schemas, imports)
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(budget / repeats / once))
    samples = []
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - start) / number)
    finally:
        gc.enable()
    return min(samples)


def paired(
    floor: Callable[[], Any], others: list[Callable[[], Any]], *, rounds: int = 21
) -> tuple[float, list[float], list[float]]:
    """The floor's time per call, each other's, and each other's ratio to the floor: medians
    over many short rounds that measure every side back to back, so that a busy moment of a
    shared machine disturbs a pair, not the comparison."""
    times: list[list[float]] = [[] for _ in range(len(others) + 1)]
    for _ in range(rounds):
        for index, fn in enumerate([floor, *others]):
            times[index].append(per_call(fn, budget=0.05, repeats=3))
    ratios = [
        statistics.median(t / f for t, f in zip(side, times[0], strict=True)) for side in times[1:]
    ]
    return (
        statistics.median(times[0]),
        [statistics.median(side) for side in times[1:]],
        ratios,
    )


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"
