"""Jobs on providers without a batch API (Ollama, vLLM, llama.cpp, SGLang, the OpenAI-
compatible ones), or run with `live`: the same rows, requests, verdicts and manifest, sent as
ordinary calls with bounded concurrency.

Each row runs its rounds at once: a reply that fails validation is re-asked right away, up to
the job's rounds. Outcomes are committed in groups as they complete. A row in flight when the
process dies has no outcome recorded, so `resume` sends it again: a live call leaves nothing
at the provider to collect.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator, Sequence
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
    gate = gate or RateGate()
    sent = 0
    limit = max(1, prepared.spec.concurrency)
    updates: list[RowUpdate] = []
    with concurrent.futures.ThreadPoolExecutor(limit, thread_name_prefix="outform-live") as pool:
        running: set[concurrent.futures.Future[RowUpdate]] = set()
        for page in pending:
            places = [(p.idx, p.line, p.offset) for p in page]
            rows = rows_at(prepared.input, places, prepared.prompt, prepared.spec.id_field)
            for stored, row in zip(page, rows, strict=True):
                sent += 1
                running.add(
                    pool.submit(
                        _row, prepared, stored, row, transport=transport, gate=gate, runs=runs
                    )
                )
                if len(running) >= limit * 4:  # bounded: memory stays flat in the rows
                    done, running = concurrent.futures.wait(
                        running, return_when=concurrent.futures.FIRST_COMPLETED
                    )
                    updates += [f.result() for f in done]
                    progress.advance("parsing", len(done))
                if len(updates) >= _GROUP:
                    manifest.record(job, updates)
                    updates = []
                    runs.keep_up()
        for future in concurrent.futures.as_completed(running):
            updates.append(future.result())
            progress.advance("parsing")
    manifest.record(job, updates)
    progress.flush()
    return sent


def _row(
    prepared: Prepared,
    stored: PendingRow,
    row: Row,
    *,
    transport: Transport,
    gate: RateGate,
    runs: RowRuns,
) -> RowUpdate:
    """The row's calls, re-asked while rounds remain; each call and verdict go in the row's
    run (`batch.runs`)."""
    trace = runs.run(stored.idx)
    rounds = prepared.spec.rounds
    history: list[dict[str, Any]] = orjson.loads(stored.history) if stored.history else []
    if stored.attempts == 0:
        runs.start(trace)
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
            return _final(row, verdict, attempt + 1, history, runs=runs, trace=trace)
        gate.update(reply.headers)
        latency = elapsed_ms(stats.sent_at or sent)
        try:
            response = adapter.parse(request, reply.body)
        except (OutformError, KeyError, TypeError, ValueError) as exc:
            trace.call(latency, status=stats.status, retries=stats.retries, error=exc)
            verdict = Verdict("provider_error", error=f"unreadable reply: {exc}")
            return _final(row, verdict, attempt + 1, history, runs=runs, trace=trace)
        trace.call(
            latency,
            status=stats.status,
            retries=stats.retries,
            tokens=response.usage,
            finish_reason=response.finish_reason,
        )
        verdict = judge(response, prepared.pipeline, can_reask=attempt < rounds)
        attempt += 1
        if verdict.status != "reask" or verdict.hint is None:
            return _final(row, verdict, attempt, history, runs=runs, trace=trace)
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
    *,
    runs: RowRuns,
    trace: RunTrace,
) -> RowUpdate:
    runs.judged(trace, verdict)
    line = output_line(row.id, row.line, verdict, attempts=attempts, rounds=history or None)
    return RowUpdate(row.index, status=verdict.status, result=line)
