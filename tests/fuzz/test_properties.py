"""The fuzzer's short profile: the promises of `tests/fuzz/checks.py`, drawn from the grammar's
families by hypothesis, over `parse` at every level, the stream parser, the dialect translators
and the gateway's request parsing. `python -m benchmarks.bench_fuzz` runs the same checks on a
million seeded inputs; `python -m tests.fuzz.atheris_harness` lets coverage steer them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.checks import (
    LEVELS,
    check_dialects,
    check_gateway,
    check_parse,
    check_stream,
    parse_outcome,
)
from tests.fuzz.grammar import FAMILIES, Case
from tests.fuzz.strategies import FUZZ, cases, requests, schemas_and_instances, streamed

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@FUZZ
@given(data=st.data(), level=st.sampled_from(LEVELS))
def test_parse_keeps_every_promise(family: str, data: st.DataObject, level: str) -> None:
    """Only outform's errors; no unrecorded change; a valid result; the same result twice."""
    check_parse(data.draw(cases(family)), level)


@FUZZ
@given(item=streamed(), level=st.sampled_from(LEVELS))
def test_the_stream_parser_ends_where_parse_does(item: tuple[Case, list[int]], level: str) -> None:
    case, cuts = item
    expected, _ = parse_outcome(case, level)
    check_stream(case, level, cuts, expected)


@FUZZ
@given(item=schemas_and_instances())
def test_every_dialect_translates_or_refuses_a_schema(item: tuple[Any, Any]) -> None:
    check_dialects(*item)


@FUZZ
@given(item=requests(), level=st.sampled_from(LEVELS))
def test_the_gateway_answers_any_request_body_with_a_4xx_at_worst(
    item: tuple[bytes, str], level: str
) -> None:
    check_gateway(*item, level)


def test_the_atheris_harness_runs(tmp_path: Path) -> None:
    """A short run of the coverage-guided harness (a longer one is the fuzzer's job)."""
    pytest.importorskip(
        "atheris", reason="pip install atheris (wheels for Linux on x86-64) to run the harness"
    )
    harness = ["-m", "tests.fuzz.atheris_harness", "-runs=1500", "-seed=7"]
    done = subprocess.run(
        [sys.executable, *harness, f"-artifact_prefix={tmp_path}/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Done 1500 runs" in done.stderr
