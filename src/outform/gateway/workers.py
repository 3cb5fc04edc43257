"""A bounded pool of worker processes, for CPU-heavy work the event loop must never do.

Enforcement mode runs outform's pipeline on whatever the backend sent, and a huge or hostile
reply can keep it busy for seconds: on the event loop, that froze every other request (and
`/healthz`). Here each job runs in one of at most `size` processes:

* the loop only waits: sending the job, waiting for the answer, starting, stopping and
  reaping processes all happen in helper threads;
* a job still running at its deadline has its process killed and replaced, so the pool stays
  usable whatever the job does (the job's own time limit should have stopped it first);
* jobs beyond `size` wait for a worker; a request that goes away (its task cancelled) kills
  the worker of its job too, so a busy worker is always one that someone waits for;
* workers are forked from a fork server that imported `preload` once, start on first use,
  and run at a lower CPU priority than the gateway, so the loop wins the CPU when both want it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")

_NICENESS = 5


class WorkerTimeoutError(Exception):
    """A job ran past its deadline; its worker was stopped."""


class WorkerError(Exception):
    """A job raised, or its worker died (the message says which)."""


class _Worker:
    __slots__ = ("conn", "process")

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    def call(self, job: tuple[Callable[..., Any], tuple[Any, ...]]) -> tuple[str, Any]:
        """Send a job and wait for its answer (in a helper thread)."""
        self.conn.send(job)
        answer: tuple[str, Any] = self.conn.recv()
        return answer

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.join(5)
        with contextlib.suppress(Exception):
            self.conn.close()


class WorkerPool:
    def __init__(self, size: int, *, preload: Sequence[str] = ()) -> None:
        self.size = max(1, size)
        methods = multiprocessing.get_all_start_methods()
        method = "forkserver" if "forkserver" in methods else "spawn"
        self._context = multiprocessing.get_context(method)
        if method == "forkserver" and preload:
            self._context.set_forkserver_preload(list(preload))
        self._threads = ThreadPoolExecutor(2 * self.size + 2, thread_name_prefix="outform-pool")
        self._idle: list[_Worker] = []
        self._slots: asyncio.Semaphore | None = None
        self._closed = False

    async def run(self, deadline: float, job: Callable[..., T], *args: Any) -> T:
        """`job(*args)` in a worker process, within `deadline` seconds of running (the wait
        for a free worker excluded). `job` and its arguments and result must pickle."""
        if self._closed:
            raise WorkerError("the worker pool is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size)
        loop = asyncio.get_running_loop()
        async with self._slots:
            worker = self._idle.pop() if self._idle else None
            if worker is None:
                worker = await loop.run_in_executor(self._threads, self._start)
            done = False
            try:
                async with asyncio.timeout(deadline):
                    kind, value = await loop.run_in_executor(
                        self._threads, worker.call, (job, args)
                    )
                done = True
            except TimeoutError:
                raise WorkerTimeoutError(
                    f"the job ran past its deadline of {deadline:g} s"
                ) from None
            except (EOFError, OSError) as exc:
                raise WorkerError(f"the worker process died: {type(exc).__name__}") from None
            finally:
                if done and not self._closed:
                    self._idle.append(worker)
                else:  # killed at once (the slot frees only once it is dead), reaped aside
                    with contextlib.suppress(Exception):
                        worker.process.kill()
                    self._threads.submit(worker.stop)
        if kind == "error":
            raise WorkerError(value)
        result: T = value
        return result

    def _start(self) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(  # type: ignore[attr-defined]
            target=_serve, args=(theirs,), name="outform-worker", daemon=True
        )
        process.start()
        theirs.close()
        return _Worker(process, ours)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        loop = asyncio.get_running_loop()
        for worker in idle:
            await loop.run_in_executor(self._threads, worker.stop)
        self._threads.shutdown(wait=False)


def _serve(conn: Connection) -> None:
    """A worker's life: run jobs until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the gateway to handle
    with contextlib.suppress(OSError):
        os.nice(_NICENESS)
    while True:
        try:
            job, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[str, Any] = ("ok", job(*args))
        except Exception as exc:
            answer = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(answer)
        except (EOFError, OSError):
            return


__all__ = ["WorkerError", "WorkerPool", "WorkerTimeoutError"]
