"""A batch is created once: its creation call, which costs money, is never sent twice blindly.

Found by a new-user trial: the provider made a batch and the answer to the call never came
back (the connection dropped); the transport sent the call again, and the rows were billed
twice (the first batch orphaned, exit 0). And: `kill -9` while the provider was still making
a batch, then an immediate `resume`, found no batch yet, took it for one that never reached
the provider, and sent its rows again.

The rule: a creation call is retried only when no attempt can have acted on it (nothing
connected, or the provider answered that it did nothing: 408, 425, 429, 503, 529). Its
deadline is recorded in the manifest just before it is sent. A batch whose answer was lost is
looked for at the provider (by its label, as `resume` reconciles) and adopted when found; its
rows are sent again only once the provider does not list it after that deadline. A call never
sent made nothing: its batch is released at once. Listing that fails stops the job without
sending the rows again.

The fakes are real HTTP servers on 127.0.0.1; the killed runs are real processes.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from outform import batch
from outform.batch import runner
from outform.errors import ConnectionFailedError, ProviderError, ServerError
from outform.providers.base import WireRequest
from outform.transport import Endpoint, RetryPolicy, Transport
from tests.batch.conftest import SCHEMA, Scripted, submit, write_rows
from tests.batch.fakes import BatchFake
from tests.batch.test_batch_resume import _cli, _only_job, _run_args
from tests.providers.fake import FakeServer, Recorded, Reply

pytest_plugins = ["tests.postgres"]

CREATES = {
    "openai": ("openai:gpt-5-mini", "/v1", "POST /v1/batches", "GET /v1/batches"),
    "anthropic": (
        "anthropic:claude-sonnet-4-5",
        "",
        "POST /v1/messages/batches",
        "GET /v1/messages/batches",
    ),
    "gemini": (
        "gemini:gemini-2.5-flash",
        "/v1beta",
        "POST /v1beta/models/gemini-2.5-flash:batchGenerateContent",
        "GET /v1beta/batches",
    ),
}
"""Per API: the model, the base URL's path, the creation call and the listing."""


class _DroppedError(ConnectionAbortedError):
    """The fake ends a request without an answer (the server thread stops quietly)."""


class Faulty(BatchFake):
    """A BatchFake with one fault at the first request that is exactly `at` ("METHOD path"):

    - `drop`: read, then the connection closed before it is acted on (nothing made);
    - `lose`: acted on (the batch made), then the connection closed before any answer;
    - `hold`: read, then held before it is acted on until `go()` (`held` set meanwhile): a
      creation still under way when its client is killed.

    `failing` ("METHOD path"): every such request is answered 503 while it is set."""

    def __init__(
        self, api: str, model: Any, *, fault: str | None = None, at: str = "", **options: Any
    ) -> None:
        self.fault, self.at = fault, at
        self.failing: str | None = None
        self.held = threading.Event()
        self._go = threading.Event()
        super().__init__(api, model, **options)

    def go(self) -> None:
        self._go.set()

    def count(self, what: str) -> int:
        """Requests exactly `what` ("METHOD path") received so far."""
        return sum(f"{r.method} {urlsplit(r.path).path}" == what for r in self.requests)

    def _fault(self, kind: str, what: str) -> bool:
        if self.fault != kind or what != self.at:
            return False
        self.fault = None
        return True

    def _handler(self) -> Any:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc]
            def what(self) -> str:
                return f"{self.command} {urlsplit(self.path).path}"

            def answer(self) -> None:
                if fake.failing is not None and self.what() == fake.failing:
                    self.body()
                    raw = orjson.dumps({"error": {"message": "unavailable"}})
                    self.send_response(503)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                    return
                super().answer()

            def body(self) -> bytes | None:
                data: bytes | None = super().body()
                if fake._fault("drop", self.what()):
                    fake.requests.append(Recorded(self.command, self.path, {}, data or b""))
                    self._drop()
                if fake._fault("hold", self.what()):
                    fake.held.set()
                    fake._go.wait(120)
                return data

            def send_response(self, code: int, message: str | None = None) -> None:
                if fake._fault("lose", self.what()):
                    self._drop()
                super().send_response(code, message)

            def _drop(self) -> None:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                raise _DroppedError(self.what())

        return Handler


class Told:
    """A progress that keeps its notes."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def start(self, phase: str, total: int | None) -> None:
        return None

    def advance(self, phase: str, n: int = 1) -> None:
        return None

    def counts(self, counts: Mapping[str, int]) -> None:
        return None

    def note(self, text: str) -> None:
        self.notes.append(text)


def _valid() -> Scripted:
    """Replies valid as sent (some repaired): no re-asks, so every row is sent exactly once."""
    return Scripted(invalid=10_000)


WIDE = {"COLUMNS": "1000"}
"""The CLI's notes on one line each (rich wraps at 80 columns when not on a terminal)."""


def _sent_once(fake: BatchFake, count: int) -> None:
    assert dict(fake.submitted) == {f"r{i}": 1 for i in range(1, count + 1)}


def _outputs(path: Path) -> dict[str, dict[str, Any]]:
    return {line["id"]: line for line in map(orjson.loads, path.read_bytes().splitlines())}


# -- transport: a call that must not be sent twice --------------------------------------------


WIRE = WireRequest("/v1/batches", {"input_file_id": "file-1"})


def test_a_call_that_must_not_be_sent_twice_is_not_sent_again_once_it_may_have_acted() -> None:
    """An answer lost after the request was read, or a 500, may mean the batch was made:
    the caller is told (`reached`), and the call is not sent again."""
    with FakeServer() as server, Transport(sleep=lambda _: None) as transport:
        fake = Endpoint("fake", server.url)
        server.reply(Reply(body={"id": "batch_1"}, drop_after=0), Reply(body={"id": "batch_2"}))
        with pytest.raises(ConnectionFailedError) as lost:
            transport.send(fake, WIRE, resend=False)
        assert lost.value.reached and len(server.requests) == 1
        server._replies.clear()
        server.reply(Reply(status=500, body={}), Reply(body={"id": "batch_2"}))
        with pytest.raises(ServerError):
            transport.send(fake, WIRE, resend=False)
        assert len(server.requests) == 2
        server._replies.clear()
        # any other call is retried as before
        server.reply(Reply(body={"id": "x"}, drop_after=0), Reply(body={"id": "batch_3"}))
        assert transport.send(fake, WIRE) == {"id": "batch_3"}


@pytest.mark.parametrize("status", [408, 425, 429, 503, 529])
def test_a_call_that_must_not_be_sent_twice_is_sent_again_when_the_provider_did_nothing(
    status: int,
) -> None:
    with FakeServer() as server, Transport(sleep=lambda _: None) as transport:
        server.reply(Reply(status=status, body={}), Reply(body={"id": "batch_1"}))
        assert transport.send(Endpoint("fake", server.url), WIRE, resend=False) == {"id": "batch_1"}
        assert len(server.requests) == 2


def test_a_call_that_must_not_be_sent_twice_is_sent_again_when_nothing_connected() -> None:
    with (
        Transport(sleep=lambda _: None, retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(ConnectionFailedError) as caught,
    ):
        transport.send(Endpoint("fake", "http://127.0.0.1:9"), WIRE, resend=False)
    assert not caught.value.reached


# -- a lost answer, in the running process ----------------------------------------------------


@pytest.mark.parametrize("api", list(CREATES))
def test_a_batch_whose_creation_answer_was_lost_is_found_and_adopted_not_made_again(
    api: str, tmp_path: Path
) -> None:
    """The trial's double charge: the provider makes r0b0, the connection drops before its
    answer. The batch is looked for, found by its label and adopted: two batches for 30
    rows in batches of 15, each row sent once, exit 0."""
    model, prefix, create, _ = CREATES[api]
    rows, manifest = write_rows(tmp_path / "rows.jsonl", 30), tmp_path / "m.sqlite3"
    output = tmp_path / "out.jsonl"
    told = Told()
    with Faulty(api, _valid(), fault="lose", at=create) as fake:
        job = submit(rows, model, manifest, fake.url + prefix, output=output, max_requests=15,
                     progress=told).job  # fmt: skip
        done = batch.resume(job, manifest=manifest, api_key="k")
        assert fake.count(create) == 2
    assert done.done and done.counts == {"ok": 24, "repaired": 6}
    _sent_once(fake, 30)
    assert [b["key"] for b in done.batches] == ["r0b0", "r0b1"]
    lost = next(n for n in told.notes if n.startswith("batch r0b0: the answer to its creation"))
    assert "looking for it at the provider before its rows are sent again" in lost
    assert "batch r0b0: found at the provider" in told.notes


def test_a_creation_that_reached_the_provider_but_made_nothing_is_sent_again_after_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request was read, then the connection dropped before the provider acted: no batch.
    Its rows are not sent again while the provider might still make it (until the call's
    deadline: a total timeout of 1 s here, no grace), then they are, once."""
    monkeypatch.setattr(runner, "CREATE_GRACE", 0.0)
    model, prefix, create, listing = CREATES["openai"]
    rows, manifest = write_rows(tmp_path / "rows.jsonl", 30), tmp_path / "m.sqlite3"
    told = Told()
    with (
        Faulty("openai", _valid(), fault="drop", at=create) as fake,
        Transport(total_timeout=1.0) as transport,
    ):
        job = submit(rows, model, manifest, fake.url + prefix, max_requests=15, progress=told,
                     poll_interval=0.05, transport=transport).job  # fmt: skip
        done = batch.resume(job, manifest=manifest, api_key="k", transport=transport, progress=told)
        assert fake.count(listing) >= 2  # looked for before and after the deadline
    assert done.done
    _sent_once(fake, 30)
    assert fake.count(create) == 3  # r0b0 (dropped), r0b1, then r0b0's rows again
    assert [b["key"] for b in done.batches] == ["r0b1", "r0b2"]  # r0b0's key is not reused
    waited = next(n for n in told.notes if n.startswith("batch r0b0: not at the provider yet"))
    assert "its rows are not sent again before" in waited and "the call's deadline" in waited
    assert sum(r["sent"] for r in done.rounds) == 30


def test_when_the_provider_cannot_be_asked_the_job_stops_and_resume_settles_it(
    tmp_path: Path,
) -> None:
    """The answer was lost and listing the provider's batches fails too: the job stops with
    an error that says what to do, the rows unsent; `resume` then finds the batch."""
    model, prefix, create, listing = CREATES["openai"]
    rows, manifest = write_rows(tmp_path / "rows.jsonl", 30), tmp_path / "m.sqlite3"
    with (
        Faulty("openai", _valid(), fault="lose", at=create) as fake,
        Transport(retry=RetryPolicy(retries=0)) as transport,
    ):
        fake.failing = listing
        with pytest.raises(ProviderError) as caught:
            submit(rows, model, manifest, fake.url + prefix, max_requests=15, transport=transport)
        assert fake.count(create) == 1
        assert "batch r0b0 may exist at the provider" in caught.value.what
        assert "HTTP 503" in caught.value.what
        (job,) = batch.jobs(manifest=manifest)
        assert f"outform batch resume {job['job']}" in str(caught.value.fix)
        fake.failing = None
        done = batch.resume(job["job"], manifest=manifest, api_key="k")
    assert done.done
    _sent_once(fake, 30)


# -- kill -9 while a creation is under way, then resume at once --------------------------------


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_resume_never_sends_again_the_rows_of_a_creation_still_under_way(
    api: str, tmp_path: Path
) -> None:
    """The run is killed while the provider is still making r0b0 (the request read, the
    batch not made yet); `resume` starts at once and finds no batch. It says it waits for the
    call's deadline, and looks again at each poll; once the provider has made the batch, it is
    adopted. Every row is sent once."""
    model, prefix, create, listing = CREATES[api]
    rows = write_rows(tmp_path / "rows.jsonl", 40)
    schema, out, manifest = tmp_path / "schema.json", tmp_path / "out.jsonl", str(tmp_path / "m.db")
    schema.write_bytes(orjson.dumps(SCHEMA))
    with Faulty(api, _valid(), fault="hold", at=create) as fake:
        args = _run_args(rows, schema, out, manifest, model)
        run = _cli(*args, "--base-url", fake.url + prefix, "--max-requests", "15")
        assert fake.held.wait(60), run.communicate(timeout=5)
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        assert fake.count(listing) == 0
        resumed = _cli("batch", "resume", _only_job(manifest), "--manifest", manifest, env=WIDE)
        give_up = time.monotonic() + 60
        while fake.count(listing) == 0:  # until the resume has looked, and not found r0b0
            assert resumed.poll() is None and time.monotonic() < give_up, resumed.communicate()
            time.sleep(0.01)
        fake.go()  # the provider makes the batch now
        _, stderr = resumed.communicate(timeout=120)
    said = stderr.decode()
    assert resumed.returncode == 0, said
    _sent_once(fake, 40)
    assert len(_outputs(out)) == 40
    assert "batch r0b0: not at the provider yet, but its creation may still be under way" in said
    assert "batch r0b0: found at the provider" in said


def test_a_resume_sends_at_once_the_rows_of_a_creation_never_sent(tmp_path: Path) -> None:
    """Killed during the file upload, before the creation call: nothing can have been made,
    so `resume` sends the rows again without waiting for any deadline."""
    model, prefix, create, _ = CREATES["openai"]
    rows = write_rows(tmp_path / "rows.jsonl", 40)
    schema, out, manifest = tmp_path / "schema.json", tmp_path / "out.jsonl", str(tmp_path / "m.db")
    schema.write_bytes(orjson.dumps(SCHEMA))
    with Faulty("openai", _valid(), fault="hold", at="POST /v1/files") as fake:
        args = _run_args(rows, schema, out, manifest, model)
        run = _cli(*args, "--base-url", fake.url + prefix, "--max-requests", "15")
        assert fake.held.wait(60), run.communicate(timeout=5)
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        resumed = _cli("batch", "resume", _only_job(manifest), "--manifest", manifest, env=WIDE)
        _, stderr = resumed.communicate(timeout=120)
        fake.go()
        assert fake.count(create) == 3
    said = stderr.decode()
    assert resumed.returncode == 0, said
    assert "not at the provider yet" not in said
    _sent_once(fake, 40)


def test_a_batch_number_is_never_given_twice_in_a_job(manifest: str) -> None:
    """r0b0 released while r0b1 lives: the next batch is r0b2 (not r0b1 again, nor r0b0, a
    label a late batch at the provider may carry). SQLite and PostgreSQL alike."""
    store = batch.open_manifest(manifest)
    try:
        store.create_job("j1", b"{}", [(i, f"r{i}", i + 1, 0) for i in range(4)])
        store.set_job("j1", state="running", round=0)
        store.start_batch("j1", "r0b0", 0, [0, 1])
        store.start_batch("j1", "r0b1", 0, [2, 3])
        store.creating("j1", "r0b1", 1e12)
        assert store.create_deadlines("j1") == {"r0b0": None, "r0b1": 1e12}
        store.release_batch("j1", "r0b0")
        assert store.next_batch_number("j1") == 2
        store.set_batch("j1", "r0b1", "submitted", provider_id="batch_1")
        assert store.create_deadlines("j1") == {}  # none left submitting
    finally:
        store.close()
