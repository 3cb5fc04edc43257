"""kill -9 at the worst moments, then `outform batch resume` in another process: no row sent
twice, none lost, on each batch API and on both manifests.

The CLI runs in a subprocess against fakes held in this process. The fake stalls the chosen
request after its side effect (the batch exists at the provider, the client has not heard)
or half-way through a results download (for Bedrock, an S3 read through a `Relay` in front
of moto); the test kills the client there, then resumes from a new process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from tests.batch.conftest import AWS_ENV, ROLE_ARN, SCHEMA, Scripted, s3_client, write_rows
from tests.batch.fakes import BatchFake, Relay, Server

ROOT = Path(__file__).resolve().parents[2]
pytest_plugins = ["tests.postgres"]


@dataclass(frozen=True)
class Case:
    api: str
    model: str
    prefix: str
    stall: str
    """The request to stall ("METHOD path" contains it), then kill the client."""
    second: bool = False
    """Stall the second such request (the first batch is then already recorded)."""


CASES = {
    "openai-during-submission": Case(
        "openai", "openai:gpt-5-mini", "/v1", "POST /v1/batches", second=True
    ),
    "openai-during-download": Case("openai", "openai:gpt-5-mini", "/v1", "GET /v1/files/out"),
    "anthropic-during-submission": Case(
        "anthropic", "anthropic:claude-sonnet-4-5", "", "POST /v1/messages/batches", second=True
    ),
    "gemini-during-submission": Case(
        "gemini", "gemini:gemini-2.5-flash", "/v1beta", ":batchGenerateContent", second=True
    ),
    "gemini-during-download": Case(
        "gemini", "gemini:gemini-2.5-flash", "/v1beta", "GET /v1beta/files/out"
    ),
}
BEDROCK = "bedrock:anthropic.claude-sonnet-4-5-v1:0"


def _cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    keys = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}
    return subprocess.Popen(
        [sys.executable, "-m", "outform.cli", *args],
        cwd=ROOT,
        env={**os.environ, **keys, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _run_args(rows: Path, schema: Path, out: Path, manifest: str, model: str) -> list[str]:
    return [
        "batch", "run", str(rows), "-m", model, "-s", str(schema), "-p", "{text}",
        "-o", str(out), "--poll-interval", "0.01", "--manifest", manifest, "--json",
    ]  # fmt: skip


def _kill_and_resume(
    args: list[str],
    manifest: str,
    stalling: Server,
    recorded: BatchFake,
    case: Case,
    env: Mapping[str, str] | None = None,
) -> bytes:
    """Run the job, kill -9 it at the stall, resume it in a new process; its stdout."""
    if not case.second:
        stalling.stall(case.stall)
    process = _cli(*args, env=env)
    if case.second:
        _stall_second(recorded, stalling, case.stall)
    assert stalling.stalled.wait(60), process.communicate(timeout=5)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    stalling.release()
    resumed = _cli(
        "batch", "resume", _only_job(manifest), "--manifest", manifest, "--json", env=env
    )
    stdout, stderr = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, stderr.decode()
    return stdout


def _stall_second(fake: BatchFake, stalling: Server, what: str) -> None:
    """Arm the stall once the first matching call has arrived: that call or the next one
    stops after the batch exists at the provider, before the client hears of it."""
    deadline = time.time() + 60
    while time.time() < deadline:
        if any(what in f"{r.method} {r.path}" for r in fake.requests):
            stalling.stall(what)
            return
        time.sleep(0.001)


def _only_job(manifest: str) -> str:
    from outform import batch

    store = batch.open_manifest(manifest)
    try:
        (job,) = store.jobs()
        return job.id
    finally:
        store.close()


def _check(out: Path, fake: BatchFake, count: int, stdout: bytes) -> None:
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [line["id"] for line in lines] == [f"r{i}" for i in range(1, count + 1)]  # 0 missing
    assert {line["status"] for line in lines} <= {"ok", "repaired"}
    reasked = {f"r{n}" for n in range(7, count + 1, 7)}
    assert {k for k, n in fake.submitted.items() if n > 1} == reasked  # 0 duplicates
    assert all(
        fake.submitted[f"r{i}"] == (2 if f"r{i}" in reasked else 1) for i in range(1, count + 1)
    )
    status = orjson.loads(stdout)
    assert sum(status["counts"].values()) == count
    assert set(status["counts"]) <= {"ok", "repaired"}


@pytest.mark.parametrize(
    ("name", "store"),
    [(name, "sqlite") for name in CASES]
    + [("openai-during-submission", "postgres"), ("gemini-during-download", "postgres")],
)
def test_kill_9_then_resume(
    name: str, store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    case = CASES[name]
    if store == "postgres":  # the resuming process reads what the killed one recorded there
        manifest = str(request.getfixturevalue("postgres_manifest"))
    else:
        manifest = str(tmp_path / "m.sqlite3")
    rows = write_rows(tmp_path / "rows.jsonl", 40)
    schema = tmp_path / "schema.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    out = tmp_path / "out.jsonl"
    with BatchFake(case.api, Scripted()) as fake:
        args = _run_args(rows, schema, out, manifest, case.model)
        args += ["--base-url", fake.url + case.prefix, "--max-requests", "15"]
        stdout = _kill_and_resume(args, manifest, fake.server, fake, case)
    _check(out, fake, 40, stdout)


@contextlib.contextmanager
def _bedrock(moto_s3: str) -> Iterator[tuple[BatchFake, Relay, dict[str, str]]]:
    """Bedrock's control plane (the fake) and S3 (moto, behind a relay that can stall)."""
    with BatchFake("bedrock", Scripted(), s3=s3_client(moto_s3)) as fake, Relay(moto_s3) as relay:
        env = {
            **AWS_ENV,
            "AWS_ENDPOINT_URL_S3": relay.url,
            "AWS_ENDPOINT_URL_BEDROCK": fake.url,
            "BEDROCK_BASE_URL": fake.url,
        }
        yield fake, relay, env


@pytest.mark.parametrize("moment", ["during-submission", "during-download"])
def test_bedrock_kill_9_then_resume(moment: str, moto_s3: str, bucket: str, tmp_path: Path) -> None:
    """240 rows: two invocation jobs of 100 (a job takes at least 100), the last 40 live.
    Killed while the second job is created, or half-way through reading the first job's
    results from S3."""
    rows = write_rows(tmp_path / "rows.jsonl", 240)
    schema = tmp_path / "schema.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    out, manifest = tmp_path / "out.jsonl", str(tmp_path / "m.sqlite3")
    with _bedrock(moto_s3) as (fake, relay, env):
        args = _run_args(rows, schema, out, manifest, BEDROCK)
        args += ["--s3-uri", f"s3://{bucket}/outform/", "--role-arn", ROLE_ARN]
        args += ["--max-requests", "100"]
        if moment == "during-submission":
            case = Case("bedrock", BEDROCK, "", "POST /model-invocation-job", second=True)
            stdout = _kill_and_resume(args, manifest, fake.server, fake, case, env)
        else:
            case = Case("bedrock", BEDROCK, "", ".jsonl.out")
            stdout = _kill_and_resume(args, manifest, relay.server, fake, case, env)
    _check(out, fake, 240, stdout)
    assert len([r for r in fake.requests if r.path == "/model-invocation-job"]) == 2
