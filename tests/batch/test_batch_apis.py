"""Whole jobs through each batch API's fake server: split to the limits, results read as
batches end, invalid rows re-asked in a follow-up round, one output line per row."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from outform import batch
from tests.batch.conftest import Scripted, submit
from tests.batch.fakes import BatchFake, Expired

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
        manifest = tmp_path / "m.sqlite3"
        first = submit(rows, model, manifest, fake.url + prefix, output=out, max_requests=12)
        assert first.state == "running"
        assert [b["size"] for b in first.batches] == [12, 12, 6]  # split to the request limit
        done = batch.resume(first.job, manifest=manifest, api_key="k")

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
    # A row's usage is what all its replies cost: r7's invalid reply too, r11's error nothing.
    once = by_id["r1"]["usage"]
    assert by_id["r7"]["usage"] == {k: 2 * n for k, n in once.items()}
    assert by_id["r7"]["rounds"][0]["usage"] == once
    assert by_id["r11"]["usage"] == once
    assert {c["attempt"] for c in by_id["r10"]["changes"]} == {1}  # repaired on its first ask
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
        job = submit(rows, "openai:gpt-5-mini", tmp_path / "m.sqlite3", fake.url + "/v1")
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
        claude = "anthropic:claude-sonnet-4-5"
        submit(rows, claude, tmp_path / "m.sqlite3", fake.url, output=out, rounds=1)
    lines = {row["id"]: row for row in map(orjson.loads, out.read_bytes().splitlines())}
    assert lines["r3"]["status"] == "failed"
    assert lines["r3"]["attempts"] == 2
    assert lines["r3"]["hint"]["violations"][0]["path"] == "/age"
    assert lines["r3"]["reply"] == '{"name": "P", "age": "x"}'
    assert fake.submitted["r3"] == 2 and fake.submitted["r1"] == 1


@pytest.mark.parametrize(
    ("api", "model", "prefix"), APIS[:1] + APIS[2:], ids=["openai", "anthropic", "gemini"]
)
def test_expired_rows_are_sent_again_while_rounds_remain(
    api: str, model: str, prefix: str, rows: Path, tmp_path: Path
) -> None:
    """A request the batch ran out of time for is sent again, as it was, in the next round;
    `expired` is final only when no round is left. A row re-asked after an invalid reply
    keeps its re-ask when it expires."""
    asked: Counter[str] = Counter()

    def model_(custom_id: str, body: object) -> str | Expired:
        asked[custom_id] += 1
        n, ask = int(custom_id[1:]), asked[custom_id]
        if n == 12 or (n % 6 == 0 and ask == 1) or (n == 7 and ask == 2):
            return Expired()  # r12 always; every 6th on its first ask; r7 on its second
        if n == 7 and ask == 1:
            return '{"name": "P7", "age": "unknown"}'
        return f'{{"name": "P{n}", "age": {n}}}'

    out = tmp_path / "out.jsonl"
    with BatchFake(api, model_) as fake:
        done = submit(rows, model, tmp_path / "m.sqlite3", fake.url + prefix, output=out)
        done = batch.resume(done.job, manifest=tmp_path / "m.sqlite3", api_key="k")
        last = [b for b in fake.batches.values() if b["lines"]][-1]["lines"]
    lines = {row["id"]: row for row in map(orjson.loads, out.read_bytes().splitlines())}
    assert lines["r6"]["status"] == "ok" and lines["r6"]["attempts"] == 2
    assert [r["outcome"] for r in lines["r6"]["rounds"]] == ["expired"]
    assert lines["r7"]["status"] == "ok" and lines["r7"]["attempts"] == 3
    assert [r["outcome"] for r in lines["r7"]["rounds"]] == ["invalid", "expired"]
    assert lines["r12"]["status"] == "expired" and lines["r12"]["attempts"] == 3
    assert done.counts == {"ok": 29, "expired": 1}
    assert [r["sent"] for r in done.rounds] == [30, 6, 2]  # r6, r7, r12, r18, r24, r30; r7, r12
    assert asked["r6"] == 2 and asked["r1"] == 1
    if api == "openai":  # round 2 re-asks r7 about its invalid reply, and sends r12 as it was
        bodies = {line["custom_id"]: line["body"]["messages"] for line in last}
        assert bodies["r7"][-2]["content"] == '{"name": "P7", "age": "unknown"}'
        assert [m["role"] for m in bodies["r12"]] == ["user"]
