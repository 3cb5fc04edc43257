"""Side-by-side benchmarks (docs/benchmarks.md).

Every benchmark runs with trace recording off: `python -m benchmarks.X` imports this package
first, and the worker processes and servers the benchmarks start inherit the variable. Millions
of parsed inputs must never land in the user's trace store; a benchmark that measures the
recorder (bench_health) opens a store of its own in a temporary directory.
"""

import os

os.environ["OUTFORM_TRACE"] = "off"
