"""Jobs on providers without a batch API (Ollama, vLLM, llama.cpp, SGLang, the OpenAI-
compatible ones), or run with `live`: the same rows, requests, verdicts and manifest, sent as
ordinary calls with bounded concurrency.

Each row runs its rounds at once: a reply that fails validation is re-asked right away, up to
the job's rounds. A live answer is paid for and cannot be collected again, so it is committed
to the manifest as soon as it arrives, before its call's slot takes another row: one commit
for the answers that arrived together (at most `_GROUP`). After kill -9, at most
`concurrency` rows have no outcome recorded though they were sent: those whose calls were in
flight, and an answer that arrived while the last ones were being committed (its slot waits
for it). `resume` sends them again (a live call leaves nothing at the provider to collect).

Interrupted (Ctrl-C, or SIGTERM while the job runs in the main thread), the job starts no new
row (one held back by the provider's rate limit is not sent), commits the answers already
received at once, then waits for the rows under way and commits their outcomes as they end:
their calls are paid for, and a row re-asked about an invalid reply is asked again first (that
call is owed to the row either way; the process could not end before its calls anyway). A
second interrupt stops that wait. The interrupt then goes on (exit code 130, or 143 for
SIGTERM).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

import orjson

from outform.batch.job import Prepared, hint_from_dict
from outform.batch.manifest import Manifest, PendingRow, RowUpdate
from outform.batch.outcome import Verdict, judge, output_line, tokens
from outform.batch.progress import Counts
from outform.batch.ratelimit import RateGate
from outform.batch.rows import Row, rows_at
from outform.batch.runs import RowRuns, attempt_of
from outform.errors import OutformError, ProviderError
from outform.trace.tracer import RunTrace, elapsed_ms
from outform.transport import CallStats, Transport

_GROUP = 200
"""Most answers committed in one transaction (more than one only when several calls ended
while the last commit was under way)."""

Call = concurrent.futures.Future[RowUpdate | None]
"""A row under way: its outcome, or None when the job stopped before its first call."""


def run_live(
    prepared: Prepared,
    manifest: Manifest,
    job: str,
    pending: Iterator[Sequence[PendingRow]],
    *,
    transport: Transport,
    progress: Counts,
    runs: RowRuns,
    gate: RateGate | None = None,
) -> int:
    """Run the pending rows; how many were sent."""
    calls = _Calls(manifest, job, progress, runs)
    gate = gate or RateGate(sleep=calls.sleep)  # (a wait for the rate limit ends at a stop)
    limit = max(1, prepared.spec.concurrency)
    pool = concurrent.futures.ThreadPoolExecutor(limit, thread_name_prefix="outform-live")
    sent = 0
    try:
        with _terminate_as_interrupt():
            for stored, row in _rows(prepared, pending):
                while len(calls.running) >= limit:  # a slot is taken once its answer is kept
                    calls.record(calls.wait())
                call = pool.submit(
                    _row,
                    prepared,
                    stored,
                    row,
                    transport=transport,
                    gate=gate,
                    runs=runs,
                    stopping=calls.stopping,
                )
                calls.running.add(call)
                sent += 1
            while calls.running:
                calls.record(calls.wait())
    except BaseException as stop:
        calls.stop(interrupted=isinstance(stop, KeyboardInterrupt | SystemExit))
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    progress.flush()
    return sent


def _rows(
    prepared: Prepared, pending: Iterator[Sequence[PendingRow]]
) -> Iterator[tuple[PendingRow, Row]]:
    for page in pending:
        places = [(p.idx, p.line, p.offset) for p in page]
        rows = rows_at(prepared.input, places, prepared.prompt, prepared.spec.id_field)
        yield from zip(page, rows, strict=True)


class _Calls:
    """The rows under way, and the answers received and not yet committed."""

    def __init__(self, manifest: Manifest, job: str, progress: Counts, runs: RowRuns) -> None:
        self.manifest, self.job, self.progress, self.runs = manifest, job, progress, runs
        self.running: set[Call] = set()
        self.answered: list[Call] = []
        """Rows ended and not yet committed (kept until the commit is: an interrupt
        between the two loses none)."""
        self.stopping = threading.Event()
        """Set when the job stops: a row that has not made its first call makes none."""

    def sleep(self, seconds: float) -> None:
        """A wait (for the provider's rate limit) that ends early when the job stops."""
        self.stopping.wait(seconds)

    def wait(self) -> list[Call]:
        """Wait for the next rows to end (one or more); the rows ended and not yet
        committed."""
        done, _ = concurrent.futures.wait(
            self.running, return_when=concurrent.futures.FIRST_COMPLETED
        )
        self.answered += done
        self.running -= done
        return self.answered

    def record(self, ended: Sequence[Call]) -> None:
        """Commit the outcomes of the calls ended (those that gave one: a call that raised
        raises here, after the others are committed)."""
        failed = next((c for c in ended if c.exception() is not None), None)
        outcomes = [c.result() for c in ended if c.exception() is None]
        updates = [u for u in outcomes if u is not None]
        for start in range(0, len(updates), _GROUP):
            self.manifest.record(self.job, updates[start : start + _GROUP])
        kept = set(ended)
        self.answered = [c for c in self.answered if c not in kept]
        self.progress.advance("parsing", len(updates))
        self.runs.keep_up()
        if failed is not None:
            failed.result()

    def stop(self, *, interrupted: bool) -> None:
        """The job stops: no row starts any more, the answers received are committed, and
        after an interrupt the rows under way are waited for and committed as they end
        (a second interrupt stops the wait)."""
        self.stopping.set()
        for call in self.running:
            call.cancel()  # (one not started yet)
        self.running = {c for c in self.running if not c.cancelled()}
        self.answered += [c for c in self.running if c.done()]
        self.running -= set(self.answered)
        try:
            self.record([c for c in self.answered if c.exception() is None])
            if interrupted and self.running:
                self.progress.note(
                    f"interrupted: no new row is sent; waiting for the {len(self.running)} "
                    "row(s) under way, to record their answers (interrupt again to stop "
                    "waiting: those rows are then sent again on resume)"
                )
                while self.running:
                    self.record([c for c in self.wait() if c.exception() is None])
        except (KeyboardInterrupt, SystemExit):
            return  # interrupted again: the calls in flight are left


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While the job runs in the main thread of a process that left SIGTERM to its default
    (which ends the process at once), SIGTERM ends the job as an interrupt does: the answers
    received are committed first. The process then exits with 143."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def terminate(number: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + number)

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _row(
    prepared: Prepared,
    stored: PendingRow,
    row: Row,
    *,
    transport: Transport,
    gate: RateGate,
    runs: RowRuns,
    stopping: threading.Event,
) -> RowUpdate | None:
    """The row's calls, re-asked while rounds remain; each call and verdict go in the row's
    run (`batch.runs`). None when the job stops before the row's first call (it stays
    pending)."""
    trace = runs.run(stored.idx)
    rounds = prepared.spec.rounds
    history: list[dict[str, Any]] = orjson.loads(stored.history) if stored.history else []
    trace.attempt = attempt_of(history)
    if stored.last_text is not None and stored.last_hint:
        hint = hint_from_dict(orjson.loads(stored.last_hint))
        request = prepared.reask(row.messages, stored.last_text, hint)
    else:
        request = prepared.request(row.messages)
    attempt = stored.attempts
    endpoint = prepared.resolved.endpoint
    adapter = prepared.resolved.adapter
    while True:
        gate.wait()
        if attempt == stored.attempts:  # the row's first call in this process
            if stopping.is_set():
                return None  # (the job stopped first: nothing was sent, nothing recorded)
            if attempt == 0:
                runs.start(trace)
        stats = CallStats()
        sent = time.perf_counter()
        try:
            reply = transport.exchange(endpoint, prepared.wire(request), stats=stats)
        except ProviderError as error:
            gate.update(
                {} if error.retry_after is None else {"retry-after": str(error.retry_after)}
            )
            latency = elapsed_ms(stats.sent_at or sent)
            trace.call(latency, status=stats.status, retries=stats.retries, error=error)
            verdict = Verdict("provider_error", error=error.what)
            return _final(row, verdict, attempt + 1, history, prepared, runs=runs, trace=trace)
        gate.update(reply.headers)
        latency = elapsed_ms(stats.sent_at or sent)
        try:
            response = adapter.parse(request, reply.body)
        except (OutformError, KeyError, TypeError, ValueError) as exc:
            trace.call(latency, status=stats.status, retries=stats.retries, error=exc)
            verdict = Verdict("provider_error", error=f"unreadable reply: {exc}")
            return _final(row, verdict, attempt + 1, history, prepared, runs=runs, trace=trace)
        trace.call(
            latency,
            status=stats.status,
            retries=stats.retries,
            tokens=response.usage,
            finish_reason=response.finish_reason,
        )
        verdict = judge(response, prepared.pipeline, can_reask=attempt < rounds)
        # Masked at once: the re-ask, the history and the row's line show no secret the
        # model echoed (the model is shown `***` where it wrote the key).
        verdict = verdict.hidden(prepared.hide)
        attempt += 1
        if verdict.status != "reask" or verdict.hint is None:
            return _final(row, verdict, attempt, history, prepared, runs=runs, trace=trace)
        runs.judged(trace, verdict)
        trace.attempt += 1
        # the same entries as a batch job's rounds (without a provider batch)
        entry: dict[str, Any] = {"round": attempt - 1}
        if verdict.usage.total_tokens:  # (what the reply re-asked about cost: see output_line)
            entry["usage"] = tokens(verdict.usage)
        history.append(entry | {"outcome": "invalid", "detail": verdict.hint.message()})
        request = prepared.reask(row.messages, verdict.text, verdict.hint)


def _final(
    row: Row,
    verdict: Verdict,
    attempts: int,
    history: list[dict[str, Any]],
    prepared: Prepared,
    *,
    runs: RowRuns,
    trace: RunTrace,
) -> RowUpdate:
    verdict = verdict.hidden(prepared.hide)
    runs.judged(trace, verdict)
    line = output_line(
        row.id, row.line, verdict, attempts=attempts, rounds=history or None, hide=prepared.hide
    )
    return RowUpdate(row.index, status=verdict.status, result=line)
