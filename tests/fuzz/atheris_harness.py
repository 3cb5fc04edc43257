"""A coverage-guided harness (atheris, libFuzzer) over the grammar of `tests/fuzz/grammar.py`.

libFuzzer mutates byte strings; this harness reads each one as the choices of the grammar
(`FuzzedSource`), so every input is a well-formed case of a family, and coverage of outform's
own code steers the mutations. The properties are those of `tests/fuzz/checks.py`; a broken one
raises, and libFuzzer saves the input (`crash-*`) for `python -m tests.fuzz.atheris_harness
crash-...` to replay.

Run: `python -m tests.fuzz.atheris_harness [-runs=N] [-max_total_time=S] [corpus/]`
(`pip install atheris`: wheels for Linux on x86-64; elsewhere it needs clang to build).
"""

from __future__ import annotations

import sys
from typing import Any

import atheris

with atheris.instrument_imports(include=["outform"]):
    from tests.fuzz.checks import (
        LEVELS,
        check_dialects,
        check_gateway,
        check_parse,
        check_stream,
    )
    from tests.fuzz.grammar import (
        FAMILIES,
        Source,
        chunking,
        dialect_schema,
        gateway_request,
        value_for,
    )

SURFACES = (*sorted(FAMILIES), "stream", "dialects", "gateway")


class FuzzedSource:
    """Grammar choices read from libFuzzer's bytes (zeros once they run out)."""

    __slots__ = ("_data",)

    def __init__(self, data: Any) -> None:
        self._data = data

    def below(self, n: int) -> int:
        return int(self._data.ConsumeIntInRange(0, n - 1)) if n > 1 else 0

    def chance(self, p: float) -> bool:
        return bool(self._data.ConsumeProbability() < p)

    def chars(self, alphabet: str, n: int) -> str:
        last = len(alphabet) - 1
        return "".join(alphabet[self._data.ConsumeIntInRange(0, last)] for _ in range(n))

    def unit(self, index: int) -> Source:
        return self


def one_input(data: bytes) -> None:
    source = FuzzedSource(atheris.FuzzedDataProvider(data))
    surface = SURFACES[source.below(len(SURFACES))]
    level = LEVELS[source.below(len(LEVELS))]
    n = 1 + source.below(8)
    if surface == "dialects":
        schema = dialect_schema(source, n)
        check_dialects(schema, value_for(source, schema))
    elif surface == "gateway":
        check_gateway(gateway_request(source, n), FAMILIES["broken_json"](source, 1).text, level)
    elif surface == "stream":
        case = FAMILIES[sorted(FAMILIES)[source.below(len(FAMILIES))]](source, n)
        check_stream(case, level, chunking(source, len(case.text)), check_parse(case, level))
    else:
        check_parse(FAMILIES[surface](source, n), level)


def main(argv: list[str]) -> None:
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
