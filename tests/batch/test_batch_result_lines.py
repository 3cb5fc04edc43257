"""Only a well-formed result answers a row: a results line that carries a row's custom id but
is not a result of the API's documented shape is unreadable.

Found by a new-user trial: OpenAI `{"custom_id": "r1"}`, or a response whose body is a
string, and Anthropic `{"custom_id": "r1"}`, were taken as r1's final answer: r1 ended
`provider_error` in round 0 ("HTTP None: no reply body"), never sent again, with no warning,
exit 1; and r1's genuine result later in the same file was thrown away as a second result.

The rule (docs/batch.md, "Results lines not used"): such a line is counted `unreadable`, with a
warning naming the batch, the line and the id; it does not answer the row, so a well-formed
line for the row later in the file is its result, and a row left without one is sent again
while rounds remain.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform import batch
from outform.batch.anthropic_batch import AnthropicBatch
from outform.batch.api import NotAResultError
from outform.batch.bedrock_batch import BedrockBatch
from outform.batch.gemini_batch import GeminiBatch
from outform.batch.openai_batch import OpenAIBatch
from outform.batch.runner import NO_RESULT
from outform.cli import main
from tests.batch.conftest import SCHEMA, Scripted, submit
from tests.batch.fakes import TamperedFake

APIS = {
    "openai": ("openai:gpt-5-mini", "/v1", "custom_id"),
    "anthropic": ("anthropic:claude-sonnet-4-5", "", "custom_id"),
    "gemini": ("gemini:gemini-2.5-flash", "/v1beta", "key"),
}

NOT_RESULTS = [
    ("openai", {"custom_id": "r1"}),
    ("openai", {"custom_id": "r1", "response": {"status_code": 200, "body": "oops"}}),
    ("openai", {"custom_id": "r1", "response": {"body": {}}, "error": None}),
    ("openai", {"custom_id": "r1", "response": None, "error": "oops"}),
    ("anthropic", {"custom_id": "r1"}),
    ("anthropic", {"custom_id": "r1", "result": {"type": "succeeded"}}),
    ("anthropic", {"custom_id": "r1", "result": {"type": "pending"}}),
    ("gemini", {"key": "r1"}),
]


SHOWN = [orjson.dumps(line).decode() for _, line in NOT_RESULTS]


def _with(line: dict[str, Any], *, keep: bool) -> Callable[[int, list[bytes]], list[bytes]]:
    """The first results file with `line` in place of r1's result, or before it (`keep`)."""

    def tamper(made: int, lines: list[bytes]) -> list[bytes]:
        if made:
            return lines
        out: list[bytes] = []
        for result in lines:
            if b'"r1"' in result:
                out.append(orjson.dumps(line))
                if not keep:
                    continue
            out.append(result)
        return out

    return tamper


def _outputs(path: Path) -> dict[str, dict[str, Any]]:
    return {line["id"]: line for line in map(orjson.loads, path.read_bytes().splitlines())}


@pytest.mark.parametrize(("api", "line"), NOT_RESULTS, ids=SHOWN)
def test_a_line_with_a_rows_id_that_is_not_a_result_does_not_hide_the_rows_result_after_it(
    api: str, line: dict[str, Any], rows: Path, tmp_path: Path
) -> None:
    model, prefix, _ = APIS[api]
    output, manifest = tmp_path / "out.jsonl", tmp_path / "m.sqlite3"
    replies = Scripted(invalid=10_000)
    with TamperedFake(api, replies, _with(line, keep=True)) as fake:
        job = submit(rows, model, manifest, fake.url + prefix, output=output).job
        done = batch.resume(job, manifest=manifest, api_key="k")
    assert done.done and fake.submitted["r1"] == 1
    r1 = _outputs(output)["r1"]
    assert (r1["status"], r1["value"], r1["attempts"]) == ("ok", {"name": "P1", "age": 1}, 1)
    assert done.warning_counts == {"unreadable": 1}
    (warning,) = done.warnings
    assert (warning.batch, warning.line, warning.row_id) == ("r0b0", 1, "r1")
    assert warning.message().startswith(f"batch r0b0 ({warning.provider_id}), results line 1: ")
    assert "(custom id 'r1'): ignored" in warning.message()


@pytest.mark.parametrize(("api", "line"), NOT_RESULTS, ids=SHOWN)
def test_a_row_answered_only_by_a_line_that_is_not_a_result_is_sent_again(
    api: str, line: dict[str, Any], rows: Path, tmp_path: Path
) -> None:
    model, prefix, _ = APIS[api]
    output, manifest = tmp_path / "out.jsonl", tmp_path / "m.sqlite3"
    replies = Scripted(invalid=10_000)
    with TamperedFake(api, replies, _with(line, keep=False)) as fake:
        job = submit(rows, model, manifest, fake.url + prefix, output=output).job
        done = batch.resume(job, manifest=manifest, api_key="k")
    assert done.done and fake.submitted["r1"] == 2
    r1 = _outputs(output)["r1"]
    assert (r1["status"], r1["attempts"]) == ("ok", 2)
    assert r1["rounds"] == [
        {"round": 0, "batch": "r0b0", "outcome": "provider_error", "detail": NO_RESULT}
    ]
    assert done.warning_counts == {"unreadable": 1}
    assert set(done.counts) <= {"ok", "repaired"}


def test_with_no_round_left_the_row_ends_provider_error_and_the_cli_warns(
    rows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trial's run: exit 1 for the row left without a result, and a warning printed."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    output, manifest, schema = tmp_path / "out.jsonl", tmp_path / "m.sqlite3", tmp_path / "s.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    tamper = _with({"custom_id": "r1"}, keep=False)
    with TamperedFake("openai", Scripted(invalid=10_000), tamper) as fake:
        code = main([
            "batch", "run", str(rows), "-m", "openai:gpt-5-mini", "-s", str(schema),
            "-p", "{text}", "-o", str(output), "--manifest", str(manifest),
            "--base-url", fake.url + "/v1", "--poll-interval", "0.001", "--rounds", "0",
        ])  # fmt: skip
    assert code == 1
    said = capsys.readouterr().err
    assert "1 line(s) that are not results" in said
    assert "results line 1: not a result: neither a response nor an error (custom id 'r1')" in said
    r1 = _outputs(output)["r1"]
    assert (r1["status"], r1["error"]) == ("provider_error", NO_RESULT)


# -- each API's result shape (pure readers) ----------------------------------------------------


READERS: dict[str, Any] = {
    "openai": OpenAIBatch(),
    "anthropic": AnthropicBatch(),
    "gemini": GeminiBatch(),
    "bedrock": BedrockBatch(),
}

WELL_FORMED = [
    (
        "openai",
        {"custom_id": "r1", "response": {"status_code": 200, "body": {"id": "c"}}, "error": None},
        "reply",
    ),
    (
        "openai",
        {
            "custom_id": "r1",
            "response": {"status_code": 500, "body": {"error": {"message": "x"}}},
            "error": None,
        },
        "error",
    ),
    (
        "openai",
        {
            "custom_id": "r1",
            "response": None,
            "error": {"code": "batch_expired", "message": "late"},
        },
        "expired",
    ),
    (
        "anthropic",
        {"custom_id": "r1", "result": {"type": "succeeded", "message": {"id": "m"}}},
        "reply",
    ),
    (
        "anthropic",
        {
            "custom_id": "r1",
            "result": {
                "type": "errored",
                "error": {"type": "error", "error": {"type": "api_error", "message": "x"}},
            },
        },
        "error",
    ),
    ("anthropic", {"custom_id": "r1", "result": {"type": "canceled"}}, "error"),
    ("anthropic", {"custom_id": "r1", "result": {"type": "expired"}}, "expired"),
    ("gemini", {"key": "r1", "response": {"candidates": []}}, "reply"),
    (
        "gemini",
        {"key": "r1", "error": {"code": 500, "message": "x", "status": "INTERNAL"}},
        "error",
    ),
    ("bedrock", {"recordId": "r1", "modelInput": {}, "modelOutput": {"output": {}}}, "reply"),
    (
        "bedrock",
        {"recordId": "r1", "modelInput": {}, "error": {"errorCode": 500, "errorMessage": "x"}},
        "error",
    ),
]


@pytest.mark.parametrize(("api", "line", "kind"), WELL_FORMED)
def test_a_well_formed_result_is_read_as_its_rows_outcome(
    api: str, line: dict[str, Any], kind: str
) -> None:
    outcome = READERS[api].outcome(orjson.dumps(line))
    assert (outcome.custom_id, outcome.kind) == ("r1", kind)


@pytest.mark.parametrize(
    ("api", "line"),
    [
        *NOT_RESULTS,
        ("openai", {"response": {"status_code": 200, "body": {}}}),  # no custom_id
        ("openai", {"custom_id": 1, "response": {"status_code": 200, "body": {}}}),
        ("openai", {"custom_id": "r1", "response": {"status_code": True, "body": {}}}),
        ("anthropic", {"custom_id": "r1", "result": {"type": "errored"}}),
        ("gemini", {"key": "r1", "response": "oops"}),
        ("bedrock", {"recordId": "r1"}),
        ("bedrock", {"recordId": "r1", "modelOutput": "oops"}),
        ("openai", ["r1"]),
    ],
)
def test_a_line_not_of_the_apis_result_shape_is_not_a_result(api: str, line: Any) -> None:
    with pytest.raises(NotAResultError) as caught:
        READERS[api].outcome(orjson.dumps(line))
    assert caught.value.detail.startswith("not a result")
