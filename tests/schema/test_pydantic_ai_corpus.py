"""pydantic-ai's schema-transformer tests, replayed on outform's dialects.

Each case of tests/data/corpus/pydantic_ai_schema_transformers.jsonl either gives the same result
with outform, or differs for a reason written in docs/dialects.md ("Differences from pydantic-ai").
The test fails when an undocumented case differs, and when a documented case no longer does
(so the page stays true).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from outform.errors import SchemaError
from outform.schema.dialects import DialectResult, translate
from tests.vendored import ROOT, corpus

DIALECT = {
    "google": "gemini",
    "openai": "openai_strict",
    "anthropic": "anthropic",
    "bedrock": "bedrock",
    "inlinedefs": "llama_cpp",
}
"""pydantic-ai transformer family -> the outform dialect that plays its part. Its inline-defs
transformer serves providers with no `$defs` support; llama_cpp is outform's dialect for that."""

DOCS = ROOT / "docs" / "dialects.md"
_ID = re.compile(r"`(test_[a-z_]+::[A-Za-z0-9_]+:\d+)`")


def outcome(case: dict[str, Any]) -> bool:
    """Whether outform's translation passes every check of the case."""
    try:
        result = translate(case["input"], DIALECT[case["dialect"]])
    except SchemaError:
        return bool(case["outcome"] == "error")
    if case["outcome"] == "error":
        return False
    return all(_check(result, check) for check in case["checks"])


def _check(result: DialectResult, check: dict[str, Any]) -> bool:
    op = check["op"]
    if op == "attr":  # pydantic-ai's is_strict_compatible: nothing is lost in the translation
        lossless = all(e.disposition == "enforced" for e in result.ledger.constraints())
        return bool(lossless == check["value"])
    if op == "warns":  # outform warns about nothing: it translates or it refuses
        return False
    try:
        node: Any = result.schema
        for step in check["path"]:
            node = node[step]
    except (KeyError, IndexError, TypeError):
        return False
    if op == "eq":
        return bool(node == check["value"])
    if op == "contains":
        return check["value"] in node
    if op == "not_contains":
        return check["value"] not in node
    raise AssertionError(f"unknown check {op!r}")


def documented_differences() -> set[str]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Differences from pydantic-ai", 1)
    assert len(section) == 2, f"{DOCS} has no 'Differences from pydantic-ai' section"
    return set(_ID.findall(section[1].split("\n## ", 1)[0]))


def test_every_case_matches_or_is_documented() -> None:
    cases = corpus("pydantic_ai_schema_transformers.jsonl")
    differing = {case["id"] for case in cases if not outcome(case)}
    matching = {case["id"] for case in cases} - differing
    documented = documented_differences()
    assert not differing - documented, f"undocumented differences: {sorted(differing - documented)}"
    assert not documented - differing, (
        f"documented but no longer different: {sorted(documented - differing)}"
    )
    assert matching, "no case matches at all: the mapping of dialects is broken"


@pytest.mark.parametrize("name", sorted(DIALECT.values()))
def test_the_mapped_dialects_exist(name: str) -> None:
    assert translate({"type": "object"}, name).dialect == name


def test_the_docs_page_exists() -> None:
    assert Path(DOCS).exists()
