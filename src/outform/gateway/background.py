"""`background: true` responses: run on the server, polled with GET, cancelled with POST.

A background request is checked like any other, stored as `queued` (committed before the
answer, which is that queued Response) and run by the process that accepted it: `in_progress`
when a slot is free, then its final state. Each step is a conditional update of the unfinished
row (`ResponseStore.update`), and so is a cancellation, so whichever commits first wins: a
result that arrives after a cancellation or a deletion is dropped. With PostgreSQL (or one
SQLite file) any gateway process serves the poll, the cancellation and the deletion; the
process running the job notices a cancellation or deletion made elsewhere within `POLL_EVERY`
seconds and stops calling the backend.

`Worker` is this process as the store sees it: its id, its heartbeat (every
`store.HEARTBEAT_EVERY` seconds; a process that stops beating has its unfinished responses
read as failed, see `store.settle`), and its background jobs, bounded: at most `max_running`
call backends at once, at most `max_queued` more wait, beyond that a 429. On shutdown running
jobs get `grace` seconds, then are stored as failed. A process starting where a killed one
ran (same host, boot and pid namespace: `place`) retires the workers there whose pid is gone,
so a restart after `kill -9` shows their unfinished responses as failed at once rather than
after `STALE_AFTER`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from outform.errors import StoreError
from outform.gateway.keeper import Keeper
from outform.gateway.output import Shell, response_from_completion
from outform.gateway.replies import GatewayError, PassthroughError, bad_request, not_found
from outform.gateway.store import HEARTBEAT_EVERY, ResponseStore, new_worker_id

QUEUE_RETRY_AFTER = 5
"""Seconds a client refused by a full background queue is told to wait (`Retry-After`): a
background response runs for seconds, so a slot is seldom free sooner."""

log = logging.getLogger("outform.gateway")

POLL_EVERY = 0.5
"""Seconds between two checks for cancellations and deletions made by other processes."""

SHUTDOWN = "The gateway stopped before this background response finished."

Produce = Callable[[], Awaitable[dict[str, Any]]]
"""Calls the backend (with enforcement when asked) and returns the `chat.completion`."""


def requested(req: dict[str, Any]) -> bool:
    """Whether a (parsed) request asks for background mode; a 400 for what cannot be."""
    value = req.get("background")
    if value is None or value is False:
        return False
    if value is not True:
        raise bad_request("'background' must be a boolean.", "background", "invalid_type")
    if req.get("store") is False:
        raise bad_request(
            "A background response must be stored: 'background': true needs 'store': true.",
            "store",
            "invalid_value",
        )
    if req.get("stream") is True:
        raise bad_request(
            "This gateway does not stream background responses: send 'stream': false and "
            "poll GET /v1/responses/{id}.",
            "stream",
            "unsupported",
        )
    return True


@dataclass
class _Job:
    keeper: Keeper
    shell: Shell
    task: asyncio.Task[None] | None = None


class Worker:
    def __init__(
        self,
        store: ResponseStore,
        *,
        max_running: int = 64,
        max_queued: int = 1024,
        grace: float = 30.0,
    ) -> None:
        self.id = new_worker_id()
        self.store = store
        self._max_jobs = max_running + max_queued
        self._max_running, self._max_queued = max_running, max_queued
        self._slots = asyncio.Semaphore(max_running)
        self._grace = grace
        self._jobs: dict[str, _Job] = {}
        self._ticking: asyncio.Task[None] | None = None
        self._last_beat = 0.0
        self._warned = 0.0

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        here = place()
        await self.store.heartbeat(self.id, here, os.getpid())
        self._last_beat = time.monotonic()
        if here:
            for worker, pid in await self.store.workers(here):
                if worker != self.id and not _running(pid):
                    await self.store.retire(worker)
        self._ticking = asyncio.get_running_loop().create_task(self._tick())

    async def stop(self) -> None:
        """Let running jobs finish for `grace` seconds; store the others as failed."""
        tasks = [job.task for job in self._jobs.values() if job.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=self._grace)
        for response_id, job in list(self._jobs.items()):
            if job.task is not None:
                job.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job.task
            failed = job.shell.build(
                "failed", [], error={"code": "server_error", "message": SHUTDOWN}
            )
            with contextlib.suppress(StoreError):
                await job.keeper.update(failed)
            self._jobs.pop(response_id, None)
        if self._ticking is not None:
            self._ticking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticking
        with contextlib.suppress(StoreError):
            await self.store.retire(self.id)

    # -- jobs ------------------------------------------------------------------------------

    async def submit(self, keeper: Keeper, shell: Shell, produce: Produce) -> dict[str, Any]:
        """Store the response as queued, start it, and return the queued Response."""
        if len(self._jobs) >= self._max_jobs:
            running = min(len(self._jobs), self._max_running)
            raise GatewayError(
                429,
                f"This gateway already has {running} background responses running "
                f"(background_max_running = {self._max_running}) and "
                f"{len(self._jobs) - running} waiting (background_max_queued = "
                f"{self._max_queued}); retry later.",
                type="rate_limit_error",
                code="too_many_background_responses",
                headers=[(b"retry-after", b"%d" % QUEUE_RETRY_AFTER)],
            )
        queued = shell.build("queued", [])
        await keeper.begin(queued)
        job = self._jobs[shell.id] = _Job(keeper, shell)
        job.task = asyncio.get_running_loop().create_task(self._run(job, produce))
        return queued

    def cancel_local(self, response_id: str) -> None:
        """Stop calling the backend for a job of this process (cancelled or deleted)."""
        job = self._jobs.get(response_id)
        if job is not None and job.task is not None:
            job.task.cancel()

    async def _run(self, job: _Job, produce: Produce) -> None:
        try:
            async with self._slots:
                if not await job.keeper.update(job.shell.build("in_progress", [])):
                    return  # cancelled or deleted while it waited
                try:
                    response = response_from_completion(job.shell, await produce())
                except (GatewayError, PassthroughError) as exc:
                    response = job.shell.build("failed", [], error=failure(exc))
                except Exception:
                    log.exception("background response %s failed", job.shell.id)
                    error = {"code": "server_error", "message": "Internal error in the gateway."}
                    response = job.shell.build("failed", [], error=error)
                await self._final(job, response)
        except asyncio.CancelledError:
            pass  # cancelled or deleted (the canceller stored that), or shutting down (stop())
        except StoreError as exc:
            log.error("background response %s: the store failed: %s", job.shell.id, exc.what)
        except Exception:  # its final state could not be stored: stored bare, as failed
            log.exception("background response %s: storing its end failed", job.shell.id)
            error = {"code": "server_error", "message": "Internal error in the gateway."}
            with contextlib.suppress(Exception):
                await job.keeper.update(job.shell.build("failed", [], error=error))
        finally:
            self._jobs.pop(job.shell.id, None)

    async def _final(self, job: _Job, response: dict[str, Any]) -> None:
        """Store the final state; a store that fails is retried for a while (the response
        stays in_progress meanwhile, and reads as failed if this process dies)."""
        for delay in (0.5, 2.0, 5.0):
            try:
                await job.keeper.update(response)
                return
            except StoreError as exc:
                log.warning("background response %s: storing failed: %s", job.shell.id, exc.what)
                await asyncio.sleep(delay)
        await job.keeper.update(response)

    # -- the tick: heartbeat, and cancellations made elsewhere -----------------------------

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(POLL_EVERY)
            try:
                if time.monotonic() - self._last_beat >= HEARTBEAT_EVERY:
                    await self.store.heartbeat(self.id, place(), os.getpid())
                    self._last_beat = time.monotonic()
                running = [i for i, job in self._jobs.items() if job.task is not None]
                if running:
                    alive = await self.store.unfinished(running)
                    for response_id in set(running) - alive:
                        self.cancel_local(response_id)
            except StoreError as exc:
                if time.monotonic() - self._warned > 60:  # one line a minute while it lasts
                    self._warned = time.monotonic()
                    log.warning("the response store failed (heartbeat): %s", exc.what)


def place() -> str:
    """Where pids mean the same thing: host name, boot and pid namespace (Linux); "" where
    that cannot be told (then only the heartbeat's age tells a dead worker)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = str(Path("/proc/self/ns/pid").readlink())
    except OSError:
        return ""
    return f"{socket.gethostname()}|{boot}|{namespace}"


def _running(pid: int) -> bool:
    if pid <= 0:
        return True  # unknown: leave it to its heartbeat
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def failure(exc: GatewayError | PassthroughError) -> dict[str, str]:
    """The Response `error` of a background job whose backend call failed."""
    if isinstance(exc, GatewayError):
        status, message = exc.status, exc.message
    else:
        status, message = exc.status, _message(exc.body)
    code = "rate_limit_exceeded" if status == 429 else "server_error"
    return {"code": code, "message": message}


def _message(body: bytes) -> str:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body.decode(errors="replace")[:2000]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return body.decode(errors="replace")[:2000]


async def cancel(
    store: ResponseStore, worker: Worker, response_id: str, tenant: str
) -> dict[str, Any]:
    """`POST /v1/responses/{id}/cancel`: the cancelled Response (also when it already was)."""
    while True:
        record = await store.load(response_id, tenant)
        if record is None:
            raise not_found(f"Response with id '{response_id}' not found.", "response_id")
        if record.response.get("background") is not True:
            raise bad_request(
                "Only responses created with 'background': true can be cancelled.",
                "response_id",
                "invalid_value",
            )
        if record.status == "cancelled":
            return dict(record.response)
        if record.finished:
            raise bad_request(
                f"Cannot cancel a response that is already {record.status}.",
                "response_id",
                "invalid_value",
            )
        cancelled = {**record.response, "status": "cancelled"}
        if await store.update(dataclasses.replace(record, response=cancelled)):
            worker.cancel_local(response_id)
            return cancelled
        # it finished (or was cancelled) between the read and the update: read again


__all__ = ["POLL_EVERY", "Worker", "cancel", "failure", "requested"]
