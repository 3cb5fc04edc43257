"""Whole jobs through each batch API's fake server: split to the limits, results read as
batches end, invalid rows re-asked in a follow-up round, one output line per row."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from outform import batch
from tests.batch.conftest import SCHEMA, Scripted
from tests.batch.fakes import BatchFake

APIS = [
    ("openai", "openai:gpt-5-mini", "/v1"),
    ("openai", "openai-responses:gpt-5-mini", "/v1"),
    ("anthropic", "anthropic:claude-sonnet-4-5", ""),
    ("gemini", "gemini:gemini-2.5-flash", "/v1beta"),
]


@pytest.mark.parametrize(("api", "model", "prefix"), APIS, ids=[m for _, m, _ in APIS])
def test_a_job_ends_with_one_line_per_row(
    api: str, model: str, prefix: str, rows: Path, tmp_path: Path
) -> None:
    script = Scripted(errors=11)
    out = tmp_path / "out.jsonl"
    with BatchFake(api, script, polls=1) as fake:
        first = batch.submit(
            rows,
            model,
            SCHEMA,
            prompt="Extract the person: {text}",
            output=out,
            base_url=fake.url + prefix,
            api_key="test-key",
            manifest=tmp_path / "m.sqlite3",
            max_requests=12,
            poll_interval=0.001,
        )
        assert first.state == "running"
        assert [b["size"] for b in first.batches] == [12, 12, 6]  # split to the request limit
        done = batch.resume(first.job, manifest=tmp_path / "m.sqlite3", api_key="test-key")

    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [line["id"] for line in lines] == [f"r{i}" for i in range(1, 31)]
    by_id = {line["id"]: line for line in lines}
    assert by_id["r1"] == {**by_id["r1"], "status": "ok", "value": {"name": "P1", "age": 1}}
    assert by_id["r5"]["status"] == "repaired" and by_id["r5"]["value"] == {"name": "P5", "age": 5}
    # every 7th failed validation once and every 11th hit a transient error: one more round
    for n in (7, 11, 14, 21, 22, 28):
        assert by_id[f"r{n}"]["attempts"] == 2, n
        assert by_id[f"r{n}"]["status"] in ("ok", "repaired")
        assert by_id[f"r{n}"]["rounds"][0]["round"] == 0
    assert "age" in by_id["r7"]["rounds"][0]["detail"]
    assert done.counts == {"ok": 24, "repaired": 6}
    assert [r["sent"] for r in done.rounds] == [30, 6]
    # nothing was submitted twice in a round: re-asked rows twice in all, the others once
    assert sorted(n for n, c in fake.submitted.items() if c == 2) == sorted(
        f"r{n}" for n in (7, 11, 14, 21, 22, 28)
    )
    assert set(fake.submitted.values()) == {1, 2}


def test_the_re_ask_carries_the_bad_reply_and_the_hint(rows: Path, tmp_path: Path) -> None:
    script = Scripted()
    with BatchFake("openai", script) as fake:
        job = batch.submit(
            rows,
            "openai:gpt-5-mini",
            SCHEMA,
            prompt="{text}",
            base_url=fake.url + "/v1",
            api_key="k",
            manifest=tmp_path / "m.sqlite3",
            poll_interval=0.001,
        )
        batch.resume(job.job, manifest=tmp_path / "m.sqlite3", api_key="k")
        second = [r for r in fake.requests if r.path == "/v1/files"][-1].body
    line = next(x for x in second.splitlines() if b'"custom_id":"r7"' in x)
    messages = orjson.loads(line)["body"]["messages"]
    assert messages[-2] == {"role": "assistant", "content": '{"name": "P7", "age": "unknown"}'}
    assert "at age: expected integer" in messages[-1]["content"]


def test_the_last_round_leaves_failed_rows_with_their_hint(rows: Path, tmp_path: Path) -> None:
    def model(custom_id: str, body: object) -> str:
        n = int(custom_id[1:])
        return '{"name": "P", "age": "x"}' if n % 3 == 0 else '{"name": "P", "age": 1}'

    out = tmp_path / "out.jsonl"
    with BatchFake("anthropic", model) as fake:
        batch.submit(
            rows,
            "anthropic:claude-sonnet-4-5",
            SCHEMA,
            prompt="{text}",
            output=out,
            base_url=fake.url,
            api_key="k",
            manifest=tmp_path / "m.sqlite3",
            rounds=1,
            poll_interval=0.001,
        )
    lines = {row["id"]: row for row in map(orjson.loads, out.read_bytes().splitlines())}
    assert lines["r3"]["status"] == "failed"
    assert lines["r3"]["attempts"] == 2
    assert lines["r3"]["hint"]["violations"][0]["path"] == "/age"
    assert lines["r3"]["reply"] == '{"name": "P", "age": "x"}'
    assert fake.submitted["r3"] == 2 and fake.submitted["r1"] == 1
