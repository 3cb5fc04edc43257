"""`outform serve` as a real process: started, waited for, killed with SIGKILL, restarted.

For the tests that need what a thread cannot give: a crash (`kill -9`) in the middle of work,
start-up errors and exit codes, and several gateway processes sharing one store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from tests.gateway.harness import free_port

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    port: int
    log: IO[bytes]
    """Its standard error: a file, never a pipe nobody reads (a full pipe would block the
    gateway's event loop on its next access-log line)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def crash(self) -> None:
        """SIGKILL, now: no shutdown, no flush, nothing the process could still do."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL, and wait until the process is gone."""
        self.crash()
        self.process.wait(30)

    def stderr(self) -> str:
        self.kill()
        self.log.seek(0)
        text = self.log.read().decode()
        self.log.close()
        return text


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "outform.cli", "serve", *args]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(extra or {})}
    env.pop("OUTFORM_CONFIG", None)
    return env


def start(
    backend: str, store: str, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> Served:
    """`outform serve` on a free port of 127.0.0.1, once its /healthz answers."""
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by Served
    process = subprocess.Popen(
        command("--backend", backend, "--store", store, "--port", str(port), *args),
        cwd=cwd,
        env=environment(env),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    served = Served(process, port, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"outform serve exited early:\n{served.stderr()}")
        try:
            if httpx.get(served.url + "/healthz", timeout=1).status_code == 200:
                return served
        except httpx.HTTPError:
            time.sleep(0.05)
    served.kill()
    raise AssertionError("outform serve did not start")


@contextmanager
def serving(
    backend: str, store: str, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[Served]:
    served = start(backend, store, cwd, *args, env=env)
    try:
        yield served
    finally:
        served.kill()
        served.log.close()


def run_until_exit(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`outform serve ARGS` expected to stop by itself (a start-up error)."""
    return subprocess.run(
        command(*args),
        cwd=cwd,
        env=environment(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


__all__ = ["ROOT", "Served", "environment", "run_until_exit", "serving", "start"]
