"""A store that cannot work stops `outform serve` before anything listens: exit 2 and one
error (what, where, how to fix), no traceback, no password. Without client keys, a gateway
listening beyond the loopback says it is open to everyone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway import served
from tests.gateway.harness import free_port


@pytest.mark.parametrize(
    ("store", "said"),
    [
        ("redis://cache:6379", "unknown response store 'redis://cache:6379'"),
        ("sqlite:/proc/outform-responses.sqlite", "/proc/outform-responses.sqlite"),
        ("sqlite:/no/such/dir/r.sqlite", "the directory /no/such/dir does not exist"),
        (
            f"postgres:postgresql://alice:hunter2-secret@127.0.0.1:{free_port()}/gw",
            "cannot connect to the PostgreSQL response store at alice@127.0.0.1",
        ),
    ],
)
def test_a_store_that_cannot_work_is_exit_2_before_listening(
    store: str, said: str, tmp_path: Path
) -> None:
    port = free_port()
    done = served.run_until_exit("--store", store, "--port", str(port), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    error = " ".join(done.stderr.split())  # the console wraps long lines
    assert said in error
    assert "fix:" in error
    for noise in ("Traceback", "Uvicorn running", "Application startup", "hunter2"):
        assert noise not in done.stderr


def test_listening_beyond_the_loopback_without_keys_warns(tmp_path: Path) -> None:
    backend = "http://127.0.0.1:9/v1"
    open_gateway = served.start(backend, "memory", tmp_path, "--host", "0.0.0.0")
    assert "listening on 0.0.0.0 without client keys" in " ".join(open_gateway.stderr().split())
    local = served.start(backend, "memory", tmp_path)
    assert "without client keys" not in local.stderr()
