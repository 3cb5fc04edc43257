"""Side by side with another outform source tree (an export of main, say): one benchmark's
probe, run in child processes that alternate between that tree and this one, so that a busy
moment of a shared machine disturbs one pair, not the comparison.

A probe is `python -m benchmarks.<name> --probe`: it prints one JSON object of measures (numbers,
smaller is better). `PYTHONPATH` picks the outform it imports; the benchmark code is this tree's.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def alternate(module: str, before: Path, pairs: int) -> tuple[list[dict[str, float]], ...]:
    """`pairs` probes of each tree, in alternating order: (before's, this tree's)."""
    trees = [("before", before.resolve()), ("this", ROOT / "src")]
    found: dict[str, list[dict[str, float]]] = {"before": [], "this": []}
    for index in range(pairs):
        for name, src in trees if index % 2 == 0 else trees[::-1]:
            done = subprocess.run(
                [sys.executable, "-m", module, "--probe"],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(src)},
                capture_output=True,
                text=True,
                check=True,
            )
            found[name].append(json.loads(done.stdout))
    return found["before"], found["this"]


def rows(
    before: list[dict[str, float]],
    this: list[dict[str, float]],
    labels: dict[str, str],
    fmt: dict[str, str],
) -> list[list[str]]:
    """Per measure: before's median, this tree's, and the median of the per-pair ratios."""
    out = []
    for key, label in labels.items():
        ratio = statistics.median(b[key] / a[key] for a, b in zip(before, this, strict=True))
        out.append(
            [
                label,
                fmt[key].format(statistics.median(run[key] for run in before)),
                fmt[key].format(statistics.median(run[key] for run in this)),
                f"{ratio:.2f}×",
            ]
        )
    return out
