"""The grammar's families as hypothesis strategies: the same definitions the seeded run uses,
with hypothesis making every choice, so that a failure shrinks to its smallest input."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.fuzz.grammar import (
    FAMILIES,
    Case,
    Source,
    chunking,
    dialect_schema,
    gateway_request,
    value_for,
)

settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("OUTFORM_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("fuzz")
"""The profile of the fuzz tests: a few hundred examples per property in all under `make
test` (OUTFORM_FUZZ_EXAMPLES=10000 for a longer run)."""


class DrawSource:
    """A grammar source whose choices hypothesis draws (and shrinks towards the first option,
    the shortest text and False)."""

    __slots__ = ("_draw",)

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def below(self, n: int) -> int:
        return self._draw(st.integers(0, n - 1)) if n > 1 else 0

    def chance(self, p: float) -> bool:
        return self._draw(st.integers(0, 999)) >= round(1000 * (1 - p))

    def chars(self, alphabet: str, n: int) -> str:
        return self._draw(st.text(st.sampled_from(alphabet), min_size=n, max_size=n))

    def unit(self, index: int) -> Source:
        return self


MAX_SCALE = 6
"""The largest scale drawn: small inputs, quick to check and to shrink."""


@st.composite
def cases(draw: st.DrawFn, family: str | None = None) -> Case:
    """A reply and its schema, from one family (or any)."""
    source = DrawSource(draw)
    name = family or draw(st.sampled_from(sorted(FAMILIES)))
    return FAMILIES[name](source, 1 + source.below(MAX_SCALE))


@st.composite
def streamed(draw: st.DrawFn) -> tuple[Case, list[int]]:
    """A reply, its schema and where to cut it into chunks."""
    case = draw(cases())
    return case, chunking(DrawSource(draw), len(case.text))


@st.composite
def schemas_and_instances(draw: st.DrawFn) -> tuple[Any, Any]:
    source = DrawSource(draw)
    schema = dialect_schema(source, 1 + source.below(3))
    return schema, value_for(source, schema)


@st.composite
def requests(draw: st.DrawFn) -> tuple[bytes, str]:
    """A `POST /v1/responses` body and a backend's reply for enforcement to check."""
    source = DrawSource(draw)
    body = gateway_request(source, 1 + source.below(3))
    return body, FAMILIES["broken_json"](source, 1).text
