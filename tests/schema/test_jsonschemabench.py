"""Every dialect over the 300 real schemas of JSONSchemaBench (dev split).

For each dialect: the translation rate (goal >= 97% for openai_strict and gemini), every
translated schema obeys the dialect's documented rules, every labelled valid instance survives
forward -> wire validation -> reverse unchanged (or is refused by `forward` for a narrowing the
dialect documents), and, where the ledger claims everything is enforced, the wire schema
rejects every labelled invalid instance. Aliases (groq, ollama, mistral, ...) share their rules
with a dialect below and are covered by tests/schema/test_registry.py.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest

from outform.errors import SchemaError
from outform.schema.dialects import (
    DialectResult,
    NotRepresentableError,
    check_rules,
    get,
    translate,
)
from outform.schema.dialects.codec import same
from tests.vendored import corpus

DIALECTS = (
    "openai_strict",
    "openai",
    "anthropic",
    "bedrock",
    "gemini",
    "gemini_openapi",
    "llama_cpp",
    "xai",
    "openai_compatible",
)
GOALS = {"openai_strict": 0.97, "gemini": 0.97}
ROWS = corpus("jsonschemabench_dev.jsonl")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return ROWS


Translated = list[tuple[dict[str, Any], DialectResult]]
_DONE: dict[tuple[str, str | None], Translated] = {}


def translations(dialect: str, rows: list[dict[str, Any]], open_objects: Any = None) -> Translated:
    """The schemas the dialect translates (each translation computed once per test session)."""
    key = (dialect, open_objects)
    if key not in _DONE:
        done = []
        for row in rows:
            try:
                done.append((row, translate(row["schema"], dialect, open_objects=open_objects)))
            except SchemaError:
                continue
        _DONE[key] = done
    return _DONE[key]


def allowed_narrowings(dialect: str) -> set[str]:
    rules = get(dialect)
    kinds = set()
    if rules.closes_open_objects:
        kinds.add("closed_object")
    if rules.all_required:
        kinds.add("absent_or_null")
    if rules.typed_nodes:
        kinds.add("type")
    if rules.typed_nodes or not rules.schema_maps:  # JSON strings and pairs can look alike
        kinds.add("ambiguous")
    return kinds


@pytest.mark.parametrize("dialect", DIALECTS)
def test_dialect_over_the_benchmark(dialect: str, rows: list[dict[str, Any]]) -> None:
    done = translations(dialect, rows)
    rate = len(done) / len(rows)
    assert rate >= GOALS.get(dialect, 0.5), f"{dialect} translates {rate:.1%}"
    narrowings = allowed_narrowings(dialect)
    for row, result in done:
        problems = check_rules(result.schema, dialect)
        assert not problems, f"{row['id']}: {[str(p) for p in problems[:3]]}"
        wire = jsonschema_rs.validator_for(result.validation_schema, validate_formats=True)
        for test in row.get("tests") or []:
            if test["valid"]:
                _round_trip(row["id"], result, wire, test["data"], narrowings)


def _round_trip(
    ident: str, result: DialectResult, wire: Any, value: Any, narrowings: set[str]
) -> None:
    try:
        sent = result.forward(value)
    except NotRepresentableError as refused:
        assert refused.kind in narrowings, f"{ident}: {refused} ({refused.kind})"
        return
    assert wire.is_valid(sent), f"{ident}: forward value breaks the wire schema"
    assert same(result.reverse(sent), value), f"{ident}: round trip changed {value!r}"


def test_open_objects_keep_makes_every_closed_object_representable(
    rows: list[dict[str, Any]],
) -> None:
    for row, result in translations("openai_strict", rows, open_objects="keep"):
        assert not check_rules(result.schema, "openai_strict"), row["id"]
        for test in row.get("tests") or []:
            if test["valid"]:
                wire = jsonschema_rs.validator_for(result.validation_schema)
                _round_trip(row["id"], result, wire, test["data"], {"absent_or_null", "type"})


@pytest.mark.parametrize(
    "dialect", ["openai_strict", "anthropic", "gemini", "gemini_openapi", "xai"]
)
def test_a_fully_enforced_translation_rejects_every_invalid_instance(
    dialect: str, rows: list[dict[str, Any]]
) -> None:
    checked = 0
    for row, result in translations(dialect, rows):
        if any(e.disposition != "enforced" for e in result.ledger.constraints()):
            continue
        original = jsonschema_rs.validator_for(row["schema"])
        wire = jsonschema_rs.validator_for(result.validation_schema, validate_formats=True)
        for test in row.get("tests") or []:
            if test["valid"] or original.is_valid(test["data"]):
                continue
            try:
                sent = result.forward(test["data"])
            except NotRepresentableError:
                continue
            checked += 1
            assert not wire.is_valid(sent), f"{row['id']}: the wire accepts {test['data']!r}"
    assert checked > 50
