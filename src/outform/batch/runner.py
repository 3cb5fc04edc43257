"""The job runner: check the input, submit rows in batches, collect results, re-ask, finish.

Exactly-once rests on the manifest (see `manifest`): a batch is recorded before the provider
calls that make it, its creation call's deadline just before that call is sent, and the
provider's id after. A creation call is never sent twice blindly: one whose answer is lost
(cut off, timed out, or its process killed) may still make the batch until its deadline.
Batches still `submitting` are looked for at the provider (by the job and batch key they
carry) on every pass: a batch found is adopted; one whose call was never sent, or was refused,
made nothing and its rows are sent again; one not found whose call may still land is looked
for again at each poll, and released (its rows sent again) only once its deadline has passed.

Results are read as each batch ends; a line counts as a row's result only when it has the
API's result shape. A row's outcome is committed with the row leaving its batch, and rows
already done are skipped when a batch is read again after a restart. Rounds run one after
another: the rows whose replies failed validation in round r are sent in round r+1, up to the
job's rounds.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from outform.batch.api import (
    BatchApi,
    BatchState,
    Framing,
    Limits,
    NotAResultError,
    Outcome,
    OutcomeKind,
)
from outform.batch.carriers import Carrier, bedrock_place, carrier_for
from outform.batch.job import JobSpec, Prepared, batch_api, hint_from_dict, new_job_id, prepare
from outform.batch.live import run_live
from outform.batch.manifest import (
    BatchRecord,
    Manifest,
    PendingRow,
    ResultWarning,
    RowUpdate,
    WaitingRow,
    WarningKind,
)
from outform.batch.outcome import Verdict, judge, output_line, tokens
from outform.batch.paths import check_apart
from outform.batch.progress import Counts, Progress, Silent
from outform.batch.rows import count_rows, rows_at, scan
from outform.batch.runs import RowRuns, attempt_of
from outform.errors import ConnectionFailedError, OutformError, ProviderError, UsageError
from outform.providers.base import WireRequest
from outform.trace import redact
from outform.transport import NOT_DONE, Transport

_GROUP = 1000
WARNINGS_SHOWN = 1000
NO_RESULT = "the provider returned no result for this request"
CREATE_GRACE = 5.0
"""Seconds added to a creation call's deadline as recorded: the transport starts its own clock
just after the record, and another machine resuming the job reads the time by its own clock."""


@dataclass(frozen=True)
class JobStatus:
    """Where a job stands: its state, round, and the rows per state and status."""

    job: str
    state: str
    round: int
    rows: int
    counts: Mapping[str, int]
    batches: Sequence[Mapping[str, Any]]
    rounds: Sequence[Mapping[str, Any]]
    output: str | None
    message: str = ""
    warnings: Sequence[ResultWarning] = ()
    """Lines of the batches' results that were not used (the first `WARNINGS_SHOWN`)."""
    warning_counts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """All of them, per kind: `unknown_id`, `unreadable`, `duplicate`."""

    @property
    def done(self) -> bool:
        return self.state == "done"

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "state": self.state,
            "round": self.round,
            "rows": self.rows,
            "counts": dict(self.counts),
            "batches": list(self.batches),
            "rounds": list(self.rounds),
            "output": self.output,
            "message": self.message,
            "warnings": [w.to_dict() for w in self.warnings],
            "warning_counts": dict(self.warning_counts),
        }


def check_and_record(
    manifest: Manifest, spec: JobSpec, prepared: Prepared, progress: Progress
) -> tuple[str, int]:
    """Read every row (a bad one raises, naming its line, and nothing is recorded), then
    record the job and its rows in one transaction. Nothing is sent before this returns. (The
    output is checked before the manifest is made: `outform.batch.submit`.)"""
    path = prepared.input
    stat = path.stat() if path.exists() else None
    spec = JobSpec(
        **{
            **_fields(spec),
            "input": str(path.resolve()),
            "input_size": stat.st_size if stat else 0,
            "input_mtime": stat.st_mtime if stat else 0.0,
        }
    )
    job = new_job_id()
    progress.start("checking", count_rows(path))  # counted in rows, as every other bar
    api = batch_api(prepared) if prepared.api is not None and not spec.live else None
    limits = batch_limits(api, spec) if api is not None else None

    def rows() -> Iterator[tuple[int, str, int, int]]:
        shown = seen = 0
        for row in scan(path, prepared.prompt, spec.id_field):
            wire = prepared.wire(prepared.request(row.messages))  # the adapter accepts it
            if api is not None and limits is not None:  # and its request fits a batch file
                check_size(row.id, api.line(row.id, wire), api.framing, limits)
            seen = row.index + 1
            if seen - shown >= 1000:
                progress.advance("checking", seen - shown)
                shown = seen
            yield row.index, row.id, row.line, row.offset
        progress.advance("checking", seen - shown)

    count = manifest.create_job(job, spec.to_json(), rows())
    if count == 0:
        manifest.delete_job(job)
        raise UsageError(
            "the input file has no rows", where=str(path), fix="give one JSON object a line"
        )
    manifest.set_job(job, state="running", round=0)
    return job, count


def _fields(spec: JobSpec) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


class Runner:
    """Drives one job through transport; resumable at any point."""

    def __init__(
        self,
        manifest: Manifest,
        job: str,
        *,
        transport: Transport | None = None,
        progress: Progress | None = None,
        api_key: str | None = None,
        env: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.manifest = manifest
        self.job = job
        record = manifest.job(job)
        self.spec = JobSpec.from_json(record.spec)
        self.env = dict(env if env is not None else os.environ)
        self.prepared = prepare(self.spec, api_key=api_key, env=self.env)
        self.transport = transport or Transport()
        self.progress = progress or Silent()
        self.counts = Counts(self.progress, lambda: self.manifest.status_counts(job))
        self.sleep = sleep
        self._api: BatchApi | None = None
        self._carrier: Carrier | None = None
        if self.prepared.api is not None:
            self._api = batch_api(self.prepared)
            self._carrier = carrier_for(
                self._api,
                self.transport,
                self.prepared.resolved.endpoint,
                model=self.prepared.resolved.model,
                s3_uri=self.spec.s3_uri,
                role_arn=self.spec.role_arn,
                env=self.env,
            )
        self._parse_request = self.prepared.request(())
        self.runs = RowRuns(self.prepared, job)
        self._judged: list[tuple[int, bool, int, Verdict, float]] = []
        """Verdicts whose rows' runs record them once the manifest has their outcome."""
        self._awaited: set[str] = set()
        """Batches whose creation may still land, already said to be waited for."""

    # -- the loop ------------------------------------------------------------------------------

    def status(self) -> JobStatus:
        record = self.manifest.job(self.job)
        return status_of(self.manifest, self.job, record.state, self.spec.output)

    def run(self, *, wait: bool = True) -> JobStatus:
        """Advance the job as far as it goes: to the end with `wait`, else one pass (submit
        what is pending, read what has ended). JobBusyError if another process drives it."""
        written = Path(self.spec.output) if self.spec.output else None
        check_apart(written, self.prepared.input, self.manifest.files, stored=True)
        with self.manifest.claim(self.job):
            self._check_input()
            while True:
                record = self.manifest.job(self.job)
                if record.state == "done":
                    output = self.spec.output
                    if output and not Path(output).is_file():
                        # Deleted or moved since: written again from the manifest, which
                        # holds every row's line (a status never names a file not there).
                        write_output(self.manifest, self.job, Path(output))
                    return self.status()
                round_ = record.round
                if self._carrier is None:
                    self._live(round_)
                else:
                    self._recover()
                    self._submit(round_)
                    self._collect()
                if self.manifest.count_open(self.job, round_):
                    if not wait:
                        return self.status()
                    self.sleep(self.spec.poll_interval)
                    continue
                self.manifest.end_round(self.job, round_)
                if self.manifest.count_pending(self.job, round_ + 1):
                    self.manifest.set_job(self.job, round=round_ + 1)
                    self.progress.note(
                        f"round {round_ + 1}: sending again the rows that failed validation "
                        "or expired"
                    )
                    continue
                self._finish()

    def _check_input(self) -> None:
        path = self.prepared.input
        try:
            stat = path.stat()
        except OSError:
            raise UsageError(
                "the job's input file is gone", where=str(path), fix="put it back to resume the job"
            ) from None
        if self.spec.input_size and (
            stat.st_size != self.spec.input_size or stat.st_mtime != self.spec.input_mtime
        ):
            raise UsageError(
                "the job's input file changed since the job started",
                where=str(path),
                fix="restore the file as it was, or start a new job",
            )

    # -- live ----------------------------------------------------------------------------------

    def _live(self, round_: int) -> None:
        self.progress.start("parsing", self.manifest.count_pending(self.job))
        sent = run_live(
            self.prepared,
            self.manifest,
            self.job,
            self.manifest.pending_pages(self.job, round_),
            transport=self.transport,
            progress=self.counts,
            runs=self.runs,
        )
        self.manifest.add_sent(self.job, round_, sent)

    # -- submitting ----------------------------------------------------------------------------

    @property
    def limits(self) -> Limits:
        assert self._api is not None
        return batch_limits(self._api, self.spec)

    def _recover(self) -> None:
        """Batches recorded as `submitting`: adopt those the provider has; release those that
        made nothing (their creation call never sent, or sent longer ago than its deadline
        and not found); leave the others, whose creation may still land, to the next pass."""
        assert self._carrier is not None
        waiting = self.manifest.batches(self.job, ["submitting"])
        if not waiting:
            return
        deadlines = self.manifest.create_deadlines(self.job)  # (none: an older manifest's)
        never_sent = {key for key, deadline in deadlines.items() if deadline is None}
        for key in never_sent:
            self.manifest.release_batch(self.job, key)
        waiting = [b for b in waiting if b.key not in never_sent]
        if not waiting:
            return
        # Every batch any job of this manifest has: one API without metadata (Message
        # Batches) is matched by size and time, and must never adopt another job's batch.
        known = {
            b.provider_id
            for job in self.manifest.jobs()
            for b in self.manifest.batches(job.id)
            if b.provider_id
        }
        listed = time.time()  # (a batch made after the listing began may be missing from it)
        try:
            found = self._carrier.find(self.job, waiting, known)
        except ProviderError as error:
            raise _unknown(self.job, waiting, error) from None
        for batch in waiting:
            deadline = deadlines.get(batch.key)
            if batch.key in found:
                self.manifest.set_batch(
                    self.job, batch.key, "submitted", provider_id=found[batch.key]
                )
                self.progress.note(f"batch {batch.key}: found at the provider")
            elif deadline is not None and listed < deadline:
                if batch.key not in self._awaited:
                    self._awaited.add(batch.key)
                    self.progress.note(
                        f"batch {batch.key}: not at the provider yet, but its creation may "
                        "still be under way (its answer never came back); its rows are not "
                        f"sent again before {_clock(deadline)}, the call's deadline, and the "
                        f"provider's batches are looked at every {self.spec.poll_interval:g} s "
                        "until then"
                    )
            else:
                self.manifest.release_batch(self.job, batch.key)

    def _submit(self, round_: int) -> None:
        """Write the round's pending requests into chunks of the API's limits, each sent as
        one provider batch as soon as it is full; a tail too small for a batch goes live."""
        assert self._api is not None
        total = self.manifest.count_pending(self.job, round_)
        if not total:
            return
        limits = self.limits
        if total < limits.min_requests:
            self.progress.note(
                f"{total} row(s) are fewer than {self._api.name} batches take: sent live"
            )
            self._live(round_)
            return
        self.progress.start("submitting", total)
        with tempfile.TemporaryDirectory(prefix="outform-batch-") as folder:
            chunk = Chunk(Path(folder) / "chunk", self._api.framing, limits)
            try:
                for page in self.manifest.pending_pages(self.job, round_):
                    too_large: list[RowUpdate] = []
                    for stored, wire, line in self._lines(page):
                        try:
                            # (a re-ask, longer than the request the job's check measured)
                            check_size(stored.row_id, line, self._api.framing, limits)
                        except UsageError as over:
                            if stored.last_text is None:
                                raise  # the first request: the job's check missed it
                            too_large.append(_ended_over_size(stored, over, self.prepared.hide))
                            continue
                        if not chunk.fits(line):
                            self._send(round_, chunk)
                        chunk.add(stored.idx, wire, line)
                    self.manifest.record(self.job, too_large)
                if len(chunk.idxs) >= limits.min_requests:
                    self._send(round_, chunk)
            finally:
                chunk.close()
        if chunk.idxs:  # a tail too small for a batch: live
            self.progress.note(f"{len(chunk.idxs)} row(s) are fewer than a batch takes: sent live")
            self._live(round_)

    def _lines(self, page: Sequence[PendingRow]) -> Iterable[tuple[PendingRow, WireRequest, bytes]]:
        assert self._api is not None
        places = [(p.idx, p.line, p.offset) for p in page]
        rows = rows_at(self.prepared.input, places, self.prepared.prompt, self.spec.id_field)
        for stored, row in zip(page, rows, strict=True):
            if stored.last_text is not None and stored.last_hint:
                hint = hint_from_dict(orjson.loads(stored.last_hint))
                request = self.prepared.reask(row.messages, stored.last_text, hint)
            else:
                request = self.prepared.request(row.messages)
            wire = self.prepared.wire(request)
            yield stored, wire, self._api.line(stored.row_id, wire)

    def _send(self, round_: int, chunk: Chunk) -> None:
        assert self._carrier is not None and chunk.first is not None
        path, idxs, first = chunk.finish()
        key = f"r{round_}b{self.manifest.next_batch_number(self.job)}"
        self.manifest.start_batch(self.job, key, round_, idxs)  # recorded before the calls

        def sending() -> None:  # (the transport's deadline runs from just after this)
            deadline = time.time() + self.transport.limits.total_timeout + CREATE_GRACE
            self.manifest.creating(self.job, key, deadline)

        try:
            provider_id = self._carrier.submit(self.job, key, path, first, sending)
        except ProviderError as error:
            if _made_nothing(error):
                # No batch was made: none may be looked for (another job's could be taken
                # for it); its rows are sent again.
                self.manifest.release_batch(self.job, key)
                raise
            # The answer is lost: the batch may exist. Its rows are not sent again before
            # the provider is asked (now, and at each pass until the call's deadline).
            self.progress.note(
                f"batch {key}: the answer to its creation was lost ({error.what}); looking "
                "for it at the provider before its rows are sent again"
            )
            self._recover()
            self.progress.advance("submitting", len(idxs))
            return
        self.manifest.set_batch(self.job, key, "submitted", provider_id=provider_id)
        self.progress.advance("submitting", len(idxs))

    # -- collecting ----------------------------------------------------------------------------

    def _collect(self) -> None:
        assert self._carrier is not None
        outstanding = self.manifest.batches(self.job, ["submitted"])
        if not outstanding:
            return
        self.progress.start("waiting", len(outstanding))
        for batch in outstanding:
            assert batch.provider_id is not None
            state = self._carrier.state(batch.provider_id)
            if state.phase == "running":
                continue
            self._download(batch, state)
            self.progress.advance("waiting")

    def _download(self, batch: BatchRecord, state: BatchState) -> None:
        """Read a batch's results as they stream in, a group at a time: the group's rows
        still waiting are looked up in one query, judged, and recorded in one transaction.
        Lines not used are recorded as warnings. Rows the results did not answer are settled
        last: expired, or not answered (sent again while rounds remain, as a transient error
        is)."""
        assert self._carrier is not None and self._api is not None
        self.progress.start("parsing", self.manifest.count_waiting(self.job, batch.key))
        reading = _Reading(batch, self.manifest.job(self.job).rows, self.prepared.hide)
        group: dict[str, tuple[int, Outcome]] = {}
        for number, line in enumerate(self._carrier.results(state), 1):
            try:  # only a line of the API's result shape answers a row, whatever id it has
                outcome = self._api.outcome(line)
            except orjson.JSONDecodeError:
                reading.warn(number, "unreadable", detail="not JSON")
                continue
            except NotAResultError as bad:
                reading.warn(number, "unreadable", bad.custom_id, detail=bad.detail)
                continue
            except (KeyError, TypeError, AttributeError, ValueError):
                reading.warn(number, "unreadable", detail="not a result line")
                continue
            if outcome.custom_id in group:  # the first result is kept
                reading.warn(number, "duplicate", outcome.custom_id)
                continue
            group[outcome.custom_id] = (number, outcome)
            if len(group) >= _GROUP:
                self._settle(batch, group, reading)
                group = {}
        self._settle(batch, group, reading)
        expired = state.phase == "expired"
        kind: OutcomeKind = "expired" if expired else "error"
        error = state.message or NO_RESULT
        for page in self.manifest.left_in_batch(self.job, batch.key):
            self._record(
                [
                    self._update(batch, Outcome(r.row_id, kind, error=error, retryable=True), r)
                    for r in page
                ]
            )
        final = "done" if state.phase == "ended" else "failed"
        message = self.prepared.hide(state.message) if state.message else state.message
        self.manifest.set_batch(self.job, batch.key, final, message=message)
        self.counts.flush()

    def _settle(
        self, batch: BatchRecord, group: Mapping[str, tuple[int, Outcome]], reading: _Reading
    ) -> None:
        waiting = self.manifest.waiting(self.job, batch.key, list(group))
        updates = [self._update(batch, group[i][1], row) for i, row in waiting.items()]
        # Rows not waiting: read before a restart (silent), answered earlier in this reading
        # (a duplicate), or no row of the job at all.
        others = [i for i in group if i not in waiting]
        known = self.manifest.row_indexes(self.job, others) if others else {}
        for row_id in others:
            number = group[row_id][0]
            if row_id not in known:
                reading.warn(number, "unknown_id", row_id)
            elif reading.seen(known[row_id]):
                reading.warn(number, "duplicate", row_id)
            reading.mark(known.get(row_id))
        for row in waiting.values():
            reading.mark(row.idx)
        self.manifest.add_warnings(self.job, reading.take())
        self._record(updates)

    def _record(self, updates: Sequence[RowUpdate]) -> None:
        self.manifest.record(self.job, updates)
        self.counts.advance("parsing", len(updates))
        judged, self._judged = self._judged, []
        for idx, first, attempt, verdict, since in judged:
            if first and verdict.status == "ok":  # valid as sent: counted, as a fast path
                self.runs.count_valid()
                continue
            trace = self.runs.run(idx, since=since)
            if first:
                self.runs.start(trace)
            trace.attempt = attempt
            self.runs.judged(trace, verdict)
        self.runs.keep_up()

    def _update(self, batch: BatchRecord, outcome: Outcome, stored: WaitingRow) -> RowUpdate:
        can_retry = stored.round < self.spec.rounds
        if outcome.kind == "reply" and outcome.body is not None:
            try:
                response = self.prepared.resolved.adapter.parse(self._parse_request, outcome.body)
                verdict = judge(response, self.prepared.pipeline, can_reask=can_retry)
            except (OutformError, KeyError, TypeError, ValueError, AttributeError) as exc:
                verdict = Verdict("provider_error", error=f"unreadable reply: {exc}")
        elif outcome.kind == "expired":
            verdict = Verdict("reask" if can_retry else "expired", error=outcome.error)
        elif outcome.retryable and can_retry:
            verdict = Verdict("reask", error=outcome.error)
        else:
            verdict = Verdict("provider_error", error=outcome.error)
        verdict = verdict.hidden(self.prepared.hide)  # (all that is kept of it below)
        history = list(orjson.loads(stored.history)) if stored.history else []
        first = stored.attempts == 0
        self._judged.append((stored.idx, first, attempt_of(history), verdict, batch.started))
        entry: dict[str, Any] = {"round": stored.round, "batch": batch.key}
        if verdict.usage.total_tokens:  # (what the reply re-asked about cost: see output_line)
            entry["usage"] = tokens(verdict.usage)
        if verdict.status == "reask":
            if verdict.hint is not None:
                entry.update(outcome="invalid", detail=verdict.hint.message())
            else:
                kind = "expired" if outcome.kind == "expired" else "provider_error"
                entry.update(outcome=kind, detail=verdict.error)
            history.append(entry)
            return RowUpdate(
                stored.idx,
                next_round=stored.round + 1,
                text=verdict.text if verdict.hint is not None else None,
                hint=orjson.dumps(verdict.hint.to_dict()) if verdict.hint is not None else None,
                history=orjson.dumps(history),
            )
        result = output_line(
            stored.row_id,
            stored.line,
            verdict,
            attempts=stored.attempts + 1,
            rounds=history or None,
            hide=self.prepared.hide,
        )
        return RowUpdate(
            stored.idx,
            status=verdict.status,
            result=result,
            history=orjson.dumps(history) if history else None,
        )

    # -- finishing -----------------------------------------------------------------------------

    def _finish(self) -> None:
        if self.spec.output:
            write_output(self.manifest, self.job, Path(self.spec.output))
        self.manifest.set_job(self.job, state="done")


class Chunk:
    """The request file of one provider batch, written as requests come and sent when full:
    never more than one batch's requests on disk, and none in memory."""

    def __init__(self, path: Path, framing: Framing, limits: Limits) -> None:
        self.path, self.framing, self.limits = path, framing, limits
        self.idxs: list[int] = []
        self.first: WireRequest | None = None
        self._handle: BinaryIO | None = None
        self._size = 0

    def fits(self, line: bytes) -> bool:
        grow = len(line) + len(self.framing.separator)
        return not self.idxs or (
            len(self.idxs) < self.limits.max_requests and self._size + grow <= self.limits.max_bytes
        )

    def add(self, idx: int, wire: WireRequest, line: bytes) -> None:
        if self._handle is None:
            self._handle = self.path.open("wb")
            self._handle.write(self.framing.head)
            self._size = len(self.framing.head) + len(self.framing.tail)
            self.first = wire
        else:
            self._handle.write(self.framing.separator)
            self._size += len(self.framing.separator)
        self._handle.write(line)
        self._size += len(line)
        self.idxs.append(idx)

    def finish(self) -> tuple[Path, list[int], WireRequest]:
        """The finished file, its rows and its first request; the chunk starts again empty."""
        assert self._handle is not None and self.first is not None
        self._handle.write(self.framing.tail)
        self.close()
        done = (self.path, self.idxs, self.first)
        self.idxs, self.first = [], None
        return done

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class _Reading:
    """One reading of a batch's results: the rows answered so far (a bit per row of the job:
    flat in the batch's size), and the warnings not yet recorded."""

    def __init__(
        self, batch: BatchRecord, rows: int, hide: Callable[[str], str] = redact.scrub_text
    ) -> None:
        self.batch = batch
        self._hide = hide
        self._answered = bytearray((rows + 7) // 8)
        self._warnings: list[ResultWarning] = []

    def seen(self, idx: int) -> bool:
        byte = idx >> 3
        return 0 <= byte < len(self._answered) and bool(self._answered[byte] >> (idx & 7) & 1)

    def mark(self, idx: int | None) -> None:
        if idx is not None and 0 <= idx >> 3 < len(self._answered):
            self._answered[idx >> 3] |= 1 << (idx & 7)

    def warn(
        self, line: int, kind: WarningKind, row_id: str | None = None, *, detail: str = ""
    ) -> None:
        key, provider_id = self.batch.key, self.batch.provider_id
        # What the provider wrote (an id no row has, a line's excerpt) is stored and printed:
        # no secret the job sends goes with it (`Prepared.hide`).
        shown_id = self._hide(row_id) if row_id is not None else None
        shown = ResultWarning(key, provider_id, line, kind, shown_id, self._hide(detail))
        self._warnings.append(shown)

    def take(self) -> list[ResultWarning]:
        """The warnings found since the last call (for the manifest)."""
        taken, self._warnings = self._warnings, []
        return taken


def _made_nothing(error: ProviderError) -> bool:
    """Whether a creation call that failed provably made no batch: no attempt reached the
    provider, or it answered that it did not act: one of the transport's `NOT_DONE` answers
    (it retries a creation only after those, so the last one tells), or a refusal (a 4xx)
    other than a 409, a conflict that may be with a batch one of the attempts made. A lost
    or cut answer, a timeout after sending, a 500, 502 or 504 may have made one."""
    if isinstance(error, ConnectionFailedError):
        return not error.reached
    status = error.status
    return status is not None and (status in NOT_DONE or (400 <= status < 500 and status != 409))


def _unknown(job: str, batches: Sequence[BatchRecord], error: ProviderError) -> ProviderError:
    """Batches that may exist at the provider, whose listing failed: the job stops, their
    rows unsent, until the provider can be asked."""
    keys = ", ".join(b.key for b in batches)
    return ProviderError(
        f"batch {keys} may exist at the provider (its creation was sent, and no answer "
        f"read), and listing the provider's batches to find out failed: {error.what}",
        provider=error.provider,
        status=error.status,
        where=error.where,
        fix=f"`outform batch resume {job}` looks again once the provider answers; the rows "
        "are not sent again until the provider is known not to have the batch",
    )


def _clock(when: float) -> str:
    """A Unix time as the local time of day (the date too when it is not today)."""
    moment = time.localtime(when)
    same_day = time.localtime()[:3] == moment[:3]
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S", moment)


def _ended_over_size(stored: PendingRow, over: UsageError, hide: Callable[[str], str]) -> RowUpdate:
    """A row whose re-ask grew past the batch's byte limit: it ends `failed`, with its last
    reply and why it was not asked again (the job goes on; its answers so far are kept)."""
    history = list(orjson.loads(stored.history)) if stored.history else []
    error = f"not asked again: {over.what}"
    verdict = Verdict("failed", error=error, text=stored.last_text or "")
    if stored.last_hint:
        verdict = dataclasses.replace(verdict, hint=hint_from_dict(orjson.loads(stored.last_hint)))
    result = output_line(
        stored.row_id,
        stored.line,
        verdict,
        attempts=stored.attempts,
        rounds=history or None,
        hide=hide,
    )
    return RowUpdate(stored.idx, status="failed", result=result, history=stored.history)


def check_output(path: Path, input_path: Path) -> None:
    """Before anything is paid for: OUT.jsonl can be written where it is asked for (its
    folder made, a file created there), and it is not the input (a paid job cannot then
    end unwritable, nor overwrite what it read)."""
    check_apart(path, input_path, ())
    if path.is_dir():
        raise UsageError(
            f"the output {path} is a directory", where="-o", fix="give a file path: -o out.jsonl"
        )
    if path.exists() and not path.is_file():
        # It is written whole, then moved into place: a device or a pipe would be replaced.
        raise UsageError(
            f"the output {path} is not a regular file (a device, a pipe or a socket)",
            where="-o",
            fix="give the path of a file: -o out.jsonl",
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        Path(probe).unlink()
    except OSError as exc:
        raise UsageError(
            f"the output {path} cannot be written: {exc.strerror or exc}",
            where="-o",
            fix="choose a path in a folder you may write to",
        ) from None


def write_output(manifest: Manifest, job: str, path: Path) -> int:
    """OUT.jsonl, one line per input row in input order, written whole or not at all (a
    temporary file renamed into place)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise UsageError(
            f"the output {path} cannot be written: {exc.strerror or exc}",
            where=str(path),
            fix="make the folder writable (or remove what is in the way), then "
            "`outform batch resume` writes it",
        ) from None
    count = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for _, result in manifest.results(job):
                if result is None:
                    raise UsageError("the job is not finished", where=job)
                handle.write(result)
                handle.write(b"\n")
                count += 1
            handle.flush()
            os.fsync(handle.fileno())
        Path(temp).replace(path)
    except IsADirectoryError:
        Path(temp).unlink(missing_ok=True)
        raise UsageError(
            f"the output {path} is a directory",
            where=str(path),
            fix="remove or rename it, then `outform batch resume` writes the output",
        ) from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return count


def status_of(manifest: Manifest, job: str, state: str, output: str | None) -> JobStatus:
    record = manifest.job(job)
    batches = [
        {
            "key": b.key,
            "round": b.round,
            "state": b.state,
            "provider_id": b.provider_id,
            "size": b.size,
            "message": b.message,
        }
        for b in manifest.batches(job)
    ]
    return JobStatus(
        job,
        record.state,
        record.round,
        record.rows,
        manifest.status_counts(job),
        batches,
        manifest.rounds(job),
        output,
        record.message,
        manifest.warnings(job, WARNINGS_SHOWN),
        manifest.warning_counts(job),
    )


def start(
    manifest: Manifest,
    spec: JobSpec,
    *,
    progress: Progress | None = None,
    api_key: str | None = None,
) -> str:
    """Check the input and record the job; its id. Nothing is submitted yet."""
    prepared = prepare(spec, api_key=api_key)
    if prepared.api == "bedrock":
        bedrock_place(spec.s3_uri, spec.role_arn)  # before the rows are read
    job, _ = check_and_record(manifest, spec, prepared, progress or Silent())
    return job


def batch_limits(api: BatchApi, spec: JobSpec) -> Limits:
    """The API's limits per batch, lowered by the job's settings (never raised past them)."""
    base = api.limits
    return Limits(
        min(base.max_requests, spec.max_requests or base.max_requests),
        min(base.max_bytes, spec.max_bytes or base.max_bytes),
        base.min_requests,
    )


def check_size(row: str, line: bytes, framing: Framing, limits: Limits) -> None:
    """A UsageError when the request `line` alone makes a batch file over the byte limit."""
    size = len(line) + len(framing.head) + len(framing.tail) + len(framing.separator)
    if size > limits.max_bytes:
        raise UsageError(
            f"row {row!r} makes a request of {len(line):,} bytes, over the "
            f"{limits.max_bytes:,} bytes a batch file may hold (--max-bytes, or the API's own "
            "limit)",
            where="--max-bytes",
            fix="raise --max-bytes (up to the API's limit), or shorten the row or the prompt",
        )


__all__ = ["JobStatus", "Runner", "new_job_id", "start", "status_of", "write_output"]
