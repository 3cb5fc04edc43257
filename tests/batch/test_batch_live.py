"""Providers without a batch API run the same job live: the same output, re-asks at once,
rate limits read from the reply headers."""

from __future__ import annotations

from pathlib import Path

import orjson

from outform import batch
from outform.batch.ratelimit import RateGate, duration
from tests.batch.conftest import SCHEMA, Scripted
from tests.batch.fakes import BatchFake, Error


def test_a_live_job_gives_the_same_output(rows: Path, tmp_path: Path) -> None:
    def model(custom_id: str, body: object) -> str | Error:
        if custom_id == "r3":
            return Error(400, "bad request")  # not retried: a provider error for the row
        return script(custom_id, body)  # type: ignore[arg-type]

    script = Scripted()
    out = tmp_path / "out.jsonl"
    with BatchFake("live", model) as fake:
        status = batch.submit(
            rows,
            "vllm:qwen3",
            SCHEMA,
            prompt="Extract: {text}",
            output=out,
            base_url=fake.url + "/v1",
            manifest=tmp_path / "m.sqlite3",
            concurrency=4,
        )
    assert status.done
    lines = {row["id"]: row for row in map(orjson.loads, out.read_bytes().splitlines())}
    assert len(lines) == 30
    assert lines["r3"]["status"] == "provider_error" and "bad request" in lines["r3"]["error"]
    assert lines["r7"]["status"] == "ok" and lines["r7"]["attempts"] == 2
    assert lines["r7"]["rounds"][0]["outcome"] == "invalid"
    assert "expected integer" in lines["r7"]["rounds"][0]["detail"]
    once = lines["r1"]["usage"]  # both replies of r7 are paid for
    assert lines["r7"]["usage"] == {k: 2 * n for k, n in once.items()}
    assert lines["r5"]["status"] == "repaired"
    assert status.counts == {"ok": 23, "repaired": 6, "provider_error": 1}
    # Every row sent once, as ordinary calls (re-asks go at once, within the row): a trial
    # found the summary saying "round 0: 0 sent".
    assert [(r["round"], r["sent"]) for r in status.rounds] == [(0, 30)]


def test_the_rate_gate_waits_for_the_reset() -> None:
    now = [100.0]
    slept: list[float] = []
    gate = RateGate(clock=lambda: now[0], sleep=slept.append)
    gate.update({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "2s"})
    gate.wait()
    assert slept == []
    gate.update({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"})
    gate.wait()
    assert slept == [120.0]  # capped
    gate = RateGate(clock=lambda: now[0], sleep=slept.append)
    gate.update({"retry-after": "3"})
    gate.wait()
    assert slept[-1] == 3.0
    assert duration("1m30.5s") == 90.5 and duration("20ms") == 0.02
