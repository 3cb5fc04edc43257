"""Schema-aligned parsing cases (tests/parse/data/schema_aligned_cases.jsonl).

The inputs are ours; the expected values are what BAML's parser (baml-py 0.226.3) returns for
the equivalent BAML types, recorded by running it. Where outform answers differently on purpose
(it refuses to round floats into integers, to drop list items that do not fit, or to pick an
enum member by counting mentions) the case id is listed with the rule in docs/conformance.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

import outform
from outform import OutformError
from tests.vendored import ROOT

CASES = Path(__file__).resolve().parents[1] / "parse" / "data" / "schema_aligned_cases.jsonl"
DOC = ROOT / "docs" / "conformance.md"


def _cases() -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in CASES.read_bytes().splitlines() if line.strip()]


def _agrees(case: dict[str, Any], level: str) -> bool:
    try:
        got = outform.parse(case["input"], case["schema"], level=level).data
    except OutformError:
        return bool(case["outcome"] == "error")
    return bool(case["outcome"] == "ok" and got == case["expected"])


def _disagreements(level: str) -> list[dict[str, Any]]:
    return [case for case in _cases() if not _agrees(case, level)]


def test_agreement_at_full_level() -> None:
    cases = _cases()
    missed = _disagreements("full")
    plain = [c for c in cases if not c.get("guess")]
    missed_plain = [c for c in missed if not c.get("guess")]
    rate = 1 - len(missed) / len(cases)
    rate_plain = 1 - len(missed_plain) / len(plain)
    print(
        f"schema-aligned cases at level full: {rate:.1%} of {len(cases)}; "
        f"excluding the peer's heuristics: {rate_plain:.1%} of {len(plain)}"
    )
    assert rate >= 0.85  # cut numbers dropped on purpose (docs/conformance.md)
    assert rate_plain >= 0.93  # issue 9 asks 0.92; cut numbers are dropped on purpose


def test_every_disagreement_is_explained() -> None:
    text = DOC.read_text(encoding="utf-8")
    unexplained = [c["id"] for c in _disagreements("full") if c["id"] not in text]
    assert not unexplained, f"add these ids and the reason to {DOC.name}: {unexplained}"


def test_agreement_at_minimal_level() -> None:
    """The default level repairs no JSON syntax and extracts nothing from sentences, so the
    cases that need either are expected to fail here; the rest should agree."""
    cases = [c for c in _cases() if c["level"] == "minimal" and not c.get("guess")]
    agree = sum(_agrees(c, "minimal") for c in cases)
    print(f"schema-aligned cases needing no JSON repair, at level minimal: {agree}/{len(cases)}")
    assert agree / len(cases) >= 0.8
