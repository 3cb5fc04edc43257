"""A live job keeps every answer it received, killed or interrupted: none is paid for twice.

A new-user trial ran 20 rows live (`--live --concurrency 2`) against a provider slow to
answer, and stopped the run after 5 to 7 s: with kill -9 the manifest still said `pending`
for all 20 rows though 8 were answered, and Ctrl-C waited for the calls in flight, then
recorded nothing either; `resume` sent the answered rows again, paid twice. Answers were
written 200 at a time, or at the end.

The rules: an answer is committed before its call's slot takes another row, so after kill -9
only the rows whose calls were in flight are sent again; interrupted (SIGINT, SIGTERM), the job
starts no new call, keeps what it received, and waits for the calls in flight to keep their
answers too (they are paid for).

The CLI runs in a subprocess against a live provider held in this process, which answers at
once but holds the last rows' calls until the test releases them: the moment to stop the run,
with every slot taken by a held call (nothing here is timed).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform import batch
from outform.transport import Reply, Transport
from tests.batch.conftest import SCHEMA, write_rows
from tests.batch.fakes import _Quiet
from tests.providers import openai_wire

ROOT = Path(__file__).resolve().parents[2]
ROWS = 12
HELD = {"r9", "r10", "r11", "r12"}
"""The last rows: their calls are held, one per slot (`--concurrency 4`)."""


class HeldProvider:
    """A Chat Completions server: a valid answer at once, but the calls of the `held` rows
    (the row id follows `#` in the prompt) wait for `release()`. Counts each row's calls."""

    def __init__(self, held: set[str]) -> None:
        self.held = set(held)
        self.calls: Counter[str] = Counter()
        self.all_held = threading.Event()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = _Quiet(("127.0.0.1", 0), self._handler())  # (quiet: a killed client)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def release(self) -> None:
        self._released.set()

    def _answer(self, body: bytes) -> bytes:
        request = orjson.loads(body)
        prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
        row = str(prompt).rsplit("#", 1)[-1]
        with self._lock:
            self.calls[row] += 1
            if all(self.calls[r] for r in self.held):
                self.all_held.set()
        if row in self.held:
            self._released.wait(60)
        number = int(row.lstrip("r"))
        reply = orjson.dumps({"name": f"P{number}", "age": number}).decode()
        return orjson.dumps(openai_wire.chat_completion(content=reply, model="gpt-4o"))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                raw = provider._answer(body)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler

    def __enter__(self) -> HeldProvider:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def provider() -> Iterator[HeldProvider]:
    with HeldProvider(HELD) as held:
        yield held


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-live-test-key", "COLUMNS": "300"}
    return subprocess.Popen(
        [sys.executable, "-m", "outform.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(tmp_path: Path, url: str) -> subprocess.Popen[str]:
    rows = write_rows(tmp_path / "rows.jsonl", ROWS)
    schema = tmp_path / "schema.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    return _cli(
        "batch", "run", str(rows), "-m", "openai:gpt-4o", "-s", str(schema), "-p", "{text}",
        "-o", str(tmp_path / "out.jsonl"), "--live", "--concurrency", "4",
        "--base-url", url, "--manifest", str(tmp_path / "m.sqlite3"),
    )  # fmt: skip


def _counts(manifest: Path) -> dict[str, int]:
    """The rows per state of the only job, as the manifest has them committed."""
    store = batch.open_manifest(manifest)
    try:
        (job,) = store.jobs()
        return dict(store.status_counts(job.id))
    finally:
        store.close()


def _resume(manifest: Path) -> None:
    store = batch.open_manifest(manifest)
    try:
        (job,) = store.jobs()
    finally:
        store.close()
    resumed = _cli("batch", "resume", job.id, "--manifest", str(manifest), "--json")
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert orjson.loads(stdout)["counts"] == {"ok": ROWS}


def _output(tmp_path: Path) -> list[str]:
    lines = (tmp_path / "out.jsonl").read_bytes().splitlines()
    return [orjson.loads(line)["id"] for line in lines]


def test_kill_9_loses_no_answer_received(provider: HeldProvider, tmp_path: Path) -> None:
    run = _run(tmp_path, provider.url)
    assert provider.all_held.wait(60), run.communicate(timeout=5)
    run.send_signal(signal.SIGKILL)  # every slot holds a call: r1 to r8 were answered
    run.wait(10)

    assert _counts(tmp_path / "m.sqlite3") == {"ok": 8, "pending": 4}
    provider.release()
    _resume(tmp_path / "m.sqlite3")
    assert _output(tmp_path) == [f"r{i}" for i in range(1, ROWS + 1)]
    # Paid once each; only the calls in flight at the kill went again.
    assert {r: n for r, n in provider.calls.items() if n > 1} == dict.fromkeys(HELD, 2)


class _Lines:
    """A process's standard error, read line by line in a thread (the test waits for one)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stderr is not None
        stream = process.stderr

        def read() -> None:
            for line in stream:
                self.lines.put(line)

        threading.Thread(target=read, daemon=True).start()

    def wait_for(self, text: str) -> bool:
        while True:
            try:
                line = self.lines.get(timeout=60)
            except queue.Empty:
                return False
            self.seen.append(line)
            if text in line:
                return True


@pytest.mark.parametrize(
    ("stop", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_an_interrupted_run_keeps_its_answers_and_those_of_its_calls_in_flight(
    provider: HeldProvider, tmp_path: Path, stop: signal.Signals, code: int
) -> None:
    run = _run(tmp_path, provider.url)
    stderr = _Lines(run)
    assert provider.all_held.wait(60)
    run.send_signal(stop)
    assert stderr.wait_for("interrupted: no new row is sent; waiting for the 4 row(s) under way"), (
        stderr.seen
    )
    provider.release()  # the calls in flight answer after the interrupt
    assert run.wait(60) == code

    assert _counts(tmp_path / "m.sqlite3") == {"ok": ROWS}  # every answer kept
    _resume(tmp_path / "m.sqlite3")  # (writes the output; sends nothing)
    assert _output(tmp_path) == [f"r{i}" for i in range(1, ROWS + 1)]
    assert set(provider.calls.values()) == {1}  # no row paid for twice


def test_a_row_held_back_by_the_rate_limit_is_not_sent_after_an_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r1 and r2 are sent together; r1's answer says no request is left for 30 s, so r3
    waits for the reset. The job is interrupted while r2's call is in flight: r2's answer is
    kept, r3 is never sent (it stays pending for resume), and the interrupt does not wait out
    the rate limit."""
    from outform.batch import live
    from outform.batch.ratelimit import RateGate

    both_sent, held = threading.Event(), threading.Event()

    class Gate(RateGate):
        def wait(self) -> None:
            if self._until > self._clock():
                held.set()  # a row is held back by the rate limit
            super().wait()

    sent: list[str] = []

    class Provider(Transport):
        def exchange(self, endpoint: Any, wire: Any, *args: Any, **kwargs: Any) -> Reply:
            row = str(wire.body["messages"][-1]["content"]).rsplit("#", 1)[-1]
            sent.append(row)
            if len(sent) == 2:
                both_sent.set()
            headers = {}
            if row == "r1":
                assert both_sent.wait(60)  # (r2 is past the gate before r1's answer closes it)
                headers = {
                    "x-ratelimit-remaining-requests": "0",
                    "x-ratelimit-reset-requests": "30s",
                }
            if row == "r2":
                assert held.wait(60)
                os.kill(os.getpid(), signal.SIGINT)
            answer = orjson.dumps({"name": row, "age": 1}).decode()
            return Reply(openai_wire.chat_completion(content=answer, model="m"), headers)

    monkeypatch.setattr(live, "RateGate", Gate)
    rows = write_rows(tmp_path / "rows.jsonl", 6)
    with pytest.raises(KeyboardInterrupt):
        batch.submit(
            rows, "vllm:qwen3", SCHEMA, prompt="{text}", base_url="http://127.0.0.1:9/v1",
            manifest=tmp_path / "m.sqlite3", concurrency=2, transport=Provider(),
        )  # fmt: skip
    assert sorted(sent) == ["r1", "r2"]
    assert _counts(tmp_path / "m.sqlite3") == {"ok": 2, "pending": 4}
