"""`python -m benchmarks [--write]`: every benchmark, one after the other, in one run."""

from __future__ import annotations

import sys

from benchmarks import (
    bench_batch,
    bench_bounds,
    bench_dialects,
    bench_gateway,
    bench_gateway_limits,
    bench_health,
    bench_instructions,
    bench_parse,
    bench_stream,
)


def main(argv: list[str]) -> int:
    bench_parse.main(argv)
    bench_bounds.main(argv)
    bench_stream.main(argv)
    bench_dialects.main(argv)
    bench_instructions.main(argv)
    bench_gateway.main(argv)
    bench_gateway_limits.main(argv)
    bench_health.main(argv)
    bench_batch.main(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
