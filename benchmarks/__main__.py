"""`python -m benchmarks [--write]`: every benchmark, one after the other, in one run."""

from __future__ import annotations

import sys

from benchmarks import bench_dialects, bench_gateway, bench_instructions, bench_parse, bench_stream


def main(argv: list[str]) -> int:
    bench_parse.main(argv)
    bench_stream.main(argv)
    bench_dialects.main(argv)
    bench_instructions.main(argv)
    bench_gateway.main(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
