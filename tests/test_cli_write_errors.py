"""A write the system refuses is told as what it is (found by a new-user trial).

`outform health --output /dev/full`, `outform parse - > /dev/full` and `--output /proc/version`
exited 3 with "internal error: OSError: [Errno 28] No space left on device ... this is a bug in
outform". The rule (docs/cli.md, "Exit codes"): a full disk or an I/O error names the file (or
standard output), the system's reason and the fix, and exits 2, as every other problem of the
environment the command runs in does. Standard error can tell nobody: what it would have held
is dropped and the exit code is the outcome's, as for a closed pipe (tests/test_cli_pipes.py).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform.cli import EXIT_INVALID, EXIT_OK, EXIT_USAGE, main
from outform.trace import Batch
from outform.trace.sqlite_store import SqliteTraceStore
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import CONSOLE_SCRIPT, SCHEMA, isolated
from tests.trace.runs import RunSpec, run_events

FULL = Path("/dev/full")
pytestmark = pytest.mark.skipif(
    not FULL.exists(), reason="needs /dev/full (a Linux device every write to fails with ENOSPC)"
)

STDOUT_FULL = (
    "error: cannot write to standard output: No space left on device (ENOSPC)\n"
    "  where: standard output\n"
    "  fix: free space on the disk standard output goes to, or redirect standard output to "
    "another file\n"
)


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "good.txt").write_text('{"a": 1}')
    (tmp_path / "bad.txt").write_text("not JSON at all")
    yield from isolated(tmp_path, monkeypatch, {"schema.json": SCHEMA})


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A trace store holding a few runs, as --store spells it."""
    path = tmp_path / "trace.sqlite"
    opened = SqliteTraceStore(path)
    opened.open()
    now = time.time()
    opened.write(Batch(run_events(RunSpec(step="triage"), now - 60), time=now))
    opened.close()
    return f"sqlite:{path}"


def outform(
    workdir: Path, *args: str, stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """The installed console script, standard input empty unless `-` reads good.txt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTFORM_")}
    with (workdir / "good.txt").open("rb") as stdin:
        return subprocess.run(
            [str(CONSOLE_SCRIPT), *args],
            cwd=workdir,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=True,
            timeout=120,
            check=False,
        )


def into_full(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`outform ARGS > /dev/full`."""
    with FULL.open("w") as full:
        return outform(workdir, *args, stdout=full)


@pytest.mark.parametrize(
    "args",
    [
        ["parse", "good.txt"],
        ["parse", "-"],
        ["parse", "good.txt", "--json"],
        ["parse", "good.txt", "--stream"],
        ["schema", "schema.json", "--dialect", "openai"],
        ["config", "show"],
        ["--version"],
        ["--help"],
        ["parse", "--help"],
    ],
    ids=" ".join,
)
def test_a_full_standard_output_is_named_with_the_reason_and_exits_2(
    workdir: Path, args: list[str]
) -> None:
    done = into_full(workdir, *args)
    assert (done.returncode, done.stderr) == (EXIT_USAGE, STDOUT_FULL)


def test_a_value_that_does_not_match_still_says_standard_output_is_full(workdir: Path) -> None:
    """The write fails before the outcome is known to be 1: what was lost is the news."""
    done = into_full(workdir, "parse", "bad.txt", "--json")
    assert done.returncode == EXIT_USAGE and done.stderr == STDOUT_FULL


@pytest.mark.parametrize("form", [[], ["--json"], ["--csv"]], ids=["tables", "json", "csv"])
def test_a_full_output_file_is_named_with_the_reason_and_exits_2(
    capsys: pytest.CaptureFixture[str], store: str, form: list[str]
) -> None:
    code = main(["health", "--store", store, "--output", str(FULL), *form])
    captured = capsys.readouterr()
    assert (code, captured.out) == (EXIT_USAGE, "")
    assert captured.err == (
        "error: cannot write to /dev/full: No space left on device (ENOSPC)\n"
        "  where: /dev/full\n"
        "  fix: free space on the disk of /dev/full, or choose another file\n"
    )


def test_health_to_a_full_standard_output_exits_2(workdir: Path, store: str) -> None:
    done = into_full(workdir, "health", "--store", store, "--json")
    assert (done.returncode, done.stderr) == (EXIT_USAGE, STDOUT_FULL)


def _writable_but_refusing(path: Path) -> bool:
    """Whether `path` opens for writing here (as root) and then refuses the write."""
    try:
        with path.open("w") as handle:
            handle.write("x")
    except OSError as exc:
        return exc.errno == errno.EIO
    return False


@pytest.mark.skipif(
    not _writable_but_refusing(Path("/proc/version")),
    reason="/proc/version does not open for writing here (not root): no EIO to see",
)
def test_an_io_error_names_the_file_and_says_to_choose_another(
    capsys: pytest.CaptureFixture[str], store: str
) -> None:
    code = main(["health", "--store", store, "--json", "--output", "/proc/version"])
    assert code == EXIT_USAGE
    assert capsys.readouterr().err == (
        "error: cannot write to /proc/version: Input/output error (EIO)\n"
        "  where: /proc/version\n"
        "  fix: choose another file: /proc/version does not take writes\n"
    )


def test_generate_to_a_full_standard_output_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer() as server, FULL.open("w") as full:
        server.json(openai_wire.chat_completion(content='{"a": 1}'))
        monkeypatch.setattr(sys, "stdout", full)
        url = server.url + "/v1"
        code = main(["generate", "openai:gpt-4o", "hi", "-s", "schema.json", "--base-url", url])
    assert code == EXIT_USAGE
    assert capsys.readouterr().err == STDOUT_FULL


@pytest.mark.parametrize(
    ("args", "code"),
    [(["parse", "good.txt"], EXIT_OK), (["parse", "bad.txt", "-s", "schema.json"], EXIT_INVALID)],
    ids=["valid", "invalid"],
)
def test_a_full_standard_error_is_dropped_and_the_exit_code_is_the_outcomes(
    workdir: Path, args: list[str], code: int
) -> None:
    with FULL.open("w") as full:
        done = outform(workdir, *args, stderr=full)
    assert done.returncode == code
    if code == EXIT_OK:
        assert orjson.loads(done.stdout) == {"a": 1}


def test_a_full_disk_met_anywhere_else_is_no_bug_either(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    """Where no writing helper knew the file (a store, a batch's output), the system names
    it, and the command exits 2 without calling it a bug in outform."""

    def full(*_: Any, **__: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/data/trace.sqlite")

    monkeypatch.setattr("outform.trace.health.report", full)
    code = main(["health", "--store", store])
    assert code == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == (
        "error: the system refused a read or write (/data/trace.sqlite): No space left on "
        "device (ENOSPC)\n"
        "  where: /data/trace.sqlite\n"
        "  fix: free space on the disk of /data/trace.sqlite, then run the command again\n"
    )
    assert "bug" not in err
