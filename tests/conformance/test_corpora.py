"""Other projects' test cases (tests/data/corpus), run through outform.parse.

These measure agreement rather than define behaviour: where outform answers differently on
purpose, the case id is listed with its reason in docs/conformance.md, and a test checks that
every disagreement is listed there. The rates are printed (`pytest -s`) and asserted against
floors a regression would cross.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

import outform
from outform import OutformError
from tests.vendored import ROOT, corpus

DOC = ROOT / "docs" / "conformance.md"
# json_repair options that select behaviour outside what a JSON parser should do by default:
# altering valid JSON (skip_json_loads), prefix-stable streaming output, or salvage mode
# (dropping and inventing data). Cases using them are reported separately.
_PEER_ONLY_OPTIONS = {"skip_json_loads", "stream_stable", "schema_repair_mode"}

_NOT_SET = object()


def _value(text: str | bytes, schema: Any = None, level: str = "full") -> Any:
    """The parsed value, or _NOT_SET when outform refuses the reply with its own error."""
    try:
        return outform.parse(text, schema, level=level).data
    except OutformError:
        return _NOT_SET


def _peer_only(record: dict[str, Any]) -> bool:
    options = record.get("options") or {}
    return any(
        key in _PEER_ONLY_OPTIONS and value not in (False, "standard")
        for key, value in options.items()
    )


def _documented_ids() -> str:
    return DOC.read_text(encoding="utf-8")


def _json_repair_disagreements() -> Iterator[tuple[dict[str, Any], Any]]:
    for record in corpus("json_repair.jsonl"):
        if record["outcome"] == "ok":
            got = _value(record["input"], record.get("schema"))
            if got != record["expected"]:
                yield record, got


def test_json_repair_ok_cases_agree() -> None:
    records = [r for r in corpus("json_repair.jsonl") if r["outcome"] == "ok"]
    standard = [r for r in records if not _peer_only(r)]
    disagreeing = {r["id"] for r, _ in _json_repair_disagreements()}
    rate_all = 1 - len(disagreeing) / len(records)
    rate_standard = 1 - len(disagreeing & {r["id"] for r in standard}) / len(standard)
    print(
        f"json_repair ok cases: {rate_all:.1%} of {len(records)}; "
        f"without peer-only options: {rate_standard:.1%} of {len(standard)}"
    )
    # The refusals and drops on purpose, each listed in conformance.md: cut numbers, escapes
    # and keys without a value dropped, values read as keys refused, replies cut off before any
    # value.
    assert rate_standard >= 0.935
    assert rate_all >= 0.91


def test_every_json_repair_disagreement_is_explained() -> None:
    text = _documented_ids()
    unexplained = [r["id"] for r, _ in _json_repair_disagreements() if r["id"] not in text]
    assert not unexplained, f"add these ids and the reason to {DOC.name}: {unexplained}"


def test_nothing_in_any_corpus_crashes_the_parser() -> None:
    """Every input either parses or is refused with an outform error, at every level."""
    inputs: list[tuple[str, str | bytes, Any]] = []
    for name in (
        "json_repair.jsonl",
        "json5_tests.jsonl",
        "langchain_json.jsonl",
        "pydantic_ai_markdown_fences.jsonl",
        "instructor_json_extraction.jsonl",
        "partial_json_parser.jsonl",
        "json_test_suite_parsing.jsonl",
    ):
        for record in corpus(name):
            text = record.get("input")
            if text is None and "input_base64" in record:
                text = base64.b64decode(record["input_base64"])
            if isinstance(text, str | bytes):
                inputs.append((f"{name}:{record['id']}", text, record.get("schema")))
    crashed = []
    for level in ("off", "minimal", "full"):
        for ident, text, schema in inputs:
            try:
                outform.parse(text, schema, level=level)
            except OutformError:
                pass
            except Exception as exc:  # a crash: the point of this test
                crashed.append(f"{ident} at {level}: {exc!r}")
    assert not crashed


def test_json_test_suite_strict_level_accepts_valid_and_refuses_invalid_json() -> None:
    accepted = refused = 0
    valid = invalid = 0
    for record in corpus("json_test_suite_parsing.jsonl"):
        text = record.get("input")
        if text is None:
            text = base64.b64decode(record["input_base64"])
        got = _value(text, level="off")
        if record["outcome"] == "ok":
            valid += 1
            accepted += got == record["expected"]
        elif record["outcome"] == "error":
            invalid += 1
            refused += got is _NOT_SET
    print(
        f"JSONTestSuite at level off: y_ {accepted}/{valid} accepted, "
        f"n_ {refused}/{invalid} refused"
    )
    assert accepted == valid
    assert refused == invalid


def test_json5_documents_decode_with_the_json5_tier() -> None:
    ok = [r for r in corpus("json5_tests.jsonl") if r["outcome"] == "ok"]
    agree = 0
    for record in ok:
        got = _value(record["input"], level="full")
        if record.get("expected_nonfinite"):
            # JSON has no NaN or Infinity: outform refuses them at every level
            # (docs/pipeline.md#values), where a JSON5 reader returns them.
            agree += got is _NOT_SET
        else:
            agree += got == record["expected"]
    print(f"json5 ok cases: {agree}/{len(ok)}")
    assert agree == len(ok)


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_markdown_fence_cases_from_pydantic_ai(level: str) -> None:
    for record in corpus("pydantic_ai_markdown_fences.jsonl"):
        got = _value(record["input"], level=level)
        if record.get("expected") is not None:
            assert got == record["expected"], record["id"]
        elif level == "minimal":
            # The peer returns the text unchanged because it holds no valid JSON.
            assert got is _NOT_SET, record["id"]


def test_markdown_cases_from_langchain() -> None:
    cases = [r for r in corpus("langchain_json.jsonl") if r["kind"] == "markdown"]
    for record in cases:
        keys = (record.get("options") or {}).get("expected_keys")
        schema = {"type": "object", "required": keys} if keys else None
        got = _value(record["input"], schema)
        if record["outcome"] == "ok":
            assert got == record["expected"], record["id"]
        else:
            assert got is _NOT_SET, record["id"]


def test_extraction_cases_from_instructor() -> None:
    for record in corpus("instructor_json_extraction.jsonl"):
        if record["function"] != "extract_json_from_codeblock":
            continue  # the stream variant is exercised by the streaming tests
        got = _value(record["input"], level="minimal")
        if any(check["op"] in ("not_json", "text_eq") for check in record["checks"]):
            # The peer hands back text that is not JSON; outform refuses such a reply.
            assert got is _NOT_SET, record["id"]
            continue
        for check in record["checks"]:
            _check(check, got, record["id"])


def _check(check: dict[str, Any], got: Any, ident: str) -> None:
    op, path = check["op"], check.get("path")
    if op == "not_contains" and path is None:
        # The extracted text has no '{': there was no JSON, and outform refuses the reply.
        assert got is _NOT_SET, ident
        return
    if path is None:
        # "The extracted text contains '{'": outform found and returned a value.
        assert got is not _NOT_SET, ident
        return
    node = got
    for key in path:
        node = node[key]
    if op == "eq":
        assert node == check["value"], ident
    elif op == "contains":
        assert check["value"] in node, ident
    else:
        assert op == "not_contains", ident
        assert check["value"] not in node, ident


def test_real_world_schemas_never_crash_the_pipeline() -> None:
    """Every labelled instance of jsonschemabench's 300 real schemas, sent as is, fenced with
    a trailing comma, and double-encoded, at both levels: parsed or refused, never a crash."""
    crashed = []
    for record in corpus("jsonschemabench_dev.jsonl"):
        for test in record.get("tests") or []:
            text = orjson.dumps(test["data"]).decode()
            variants = (text, f"Here:\n```json\n{text[:-1]},{text[-1]}\n```", orjson.dumps(text))
            for level in ("minimal", "full"):
                for variant in variants:
                    try:
                        outform.parse(variant, record["schema"], level=level)
                    except OutformError:
                        pass
                    except Exception as exc:  # a crash: the point of this test
                        crashed.append(f"{record['id']} at {level}: {exc!r}")
    assert not crashed
