"""kill -9 at the worst moments, then `outform batch resume`: no row sent twice, none lost.

The CLI runs in a subprocess against a fake held in this process. The fake stalls the chosen
request after its side effect (the batch exists at the provider, the client has not heard)
or half-way through a results download; the test kills the client there, then resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.batch.conftest import SCHEMA, Scripted, write_rows
from tests.batch.fakes import BatchFake

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, wait: bool = True) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": "test-key", "ANTHROPIC_API_KEY": "test-key"}
    return subprocess.Popen(
        [sys.executable, "-m", "outform.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize(
    ("api", "model", "prefix", "stall"),
    [
        ("openai", "openai:gpt-5-mini", "/v1", "POST /v1/batches"),
        ("openai", "openai:gpt-5-mini", "/v1", "GET /v1/files/out"),
        ("anthropic", "anthropic:claude-sonnet-4-5", "", "POST /v1/messages/batches"),
    ],
    ids=["openai-during-submission", "openai-during-download", "anthropic-during-submission"],
)
def test_kill_9_then_resume(api: str, model: str, prefix: str, stall: str, tmp_path: Path) -> None:
    rows = write_rows(tmp_path / "rows.jsonl", 40)
    schema = tmp_path / "schema.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    out, manifest = tmp_path / "out.jsonl", tmp_path / "m.sqlite3"
    script = Scripted()
    with BatchFake(api, script) as fake:
        if "files" in stall:
            fake.stall(stall)  # half-way through the first results file
        process = _cli(
            "batch",
            "run",
            str(rows),
            "-m",
            model,
            "-s",
            str(schema),
            "-p",
            "{text}",
            "-o",
            str(out),
            "--base-url",
            fake.url + prefix,
            "--max-requests",
            "15",
            "--poll-interval",
            "0.01",
            "--manifest",
            str(manifest),
            "--json",
        )
        if "batches" in stall:
            _stall_second(fake, stall)
        assert fake.stalled.wait(30), process.communicate(timeout=5)
        process.send_signal(signal.SIGKILL)
        process.wait(10)
        fake.release()
        assert not out.exists()
        job = _only_job(manifest)
        resumed = _cli("batch", "resume", job, "--manifest", str(manifest), "--json")
        stdout, stderr = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, stderr.decode()
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [line["id"] for line in lines] == [f"r{i}" for i in range(1, 41)]  # 0 missing
    assert {line["status"] for line in lines} <= {"ok", "repaired"}
    reasked = {f"r{n}" for n in range(7, 41, 7)}
    assert {k for k, n in fake.submitted.items() if n > 1} == reasked  # 0 duplicates
    assert all(fake.submitted[f"r{i}"] == (2 if f"r{i}" in reasked else 1) for i in range(1, 41))
    status = orjson.loads(stdout)
    assert status["counts"] == {"ok": 32, "repaired": 8}


def _stall_second(fake: BatchFake, what: str) -> None:
    """Arm the stall once the first create call has arrived: that call or the next one stops
    after the batch exists at the provider, before the client hears of it."""
    import time

    deadline = time.time() + 30
    while time.time() < deadline:
        creates = [r for r in fake.requests if f"{r.method} {r.path}".startswith(what)]
        if creates:
            fake.stall(what)
            return
        time.sleep(0.001)


def _only_job(manifest: Path) -> str:
    from outform import batch

    store = batch.open_manifest(manifest)
    try:
        (job,) = store.jobs()
        return job.id
    finally:
        store.close()
