"""The exit code when standard output or standard error is closed (found by a new-user trial).

`outform parse bad.txt --schema s.json 2>&-`, or standard error piped to `head -c0`, exited 1
with Python's "Exception ignored ... BrokenPipeError", whatever the outcome; so did `| head -c1`
on standard output. The rule (docs/cli.md, "Exit codes"): what would have been written to a
closed stream is dropped silently, and the exit code is the outcome's. The installed console
script, in real pipes whose reader is gone.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from outform.cli import EXIT_INPUT, EXIT_INVALID, EXIT_OK, EXIT_USAGE
from tests.test_cli import CONSOLE_SCRIPT, SCHEMA, isolated


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "bad.txt").write_text("not JSON at all")
    (tmp_path / "good.txt").write_text('{"a": 1}')
    (tmp_path / "big.txt").write_text('{"a": 1, "note": "' + "x" * 300_000 + '"}')
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00{}")
    yield from isolated(tmp_path, monkeypatch, {"schema.json": SCHEMA})


CASES = [
    (["bad.txt", "-s", "schema.json"], EXIT_INVALID),
    (["good.txt", "-s", "missing.json"], EXIT_USAGE),
    (["binary.txt", "-s", "schema.json"], EXIT_INPUT),
    (["good.txt", "-s", "schema.json"], EXIT_OK),
    (["big.txt", "-s", "schema.json"], EXIT_OK),  # more than a pipe's buffer on stdout
    (["big.txt", "-s", "schema.json", "--stream"], EXIT_OK),
]
IDS = ["invalid", "usage", "input", "valid", "valid-big", "stream"]


def _gone() -> int:
    """The writing end of a pipe whose reader has closed: every write fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    return write


def _run(workdir: Path, args: list[str], **streams: Any) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTFORM_")}
    try:
        return subprocess.run(
            [str(CONSOLE_SCRIPT), "parse", *args],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
            **streams,
        )
    finally:
        for stream in streams.values():
            if isinstance(stream, int) and stream > 2:
                os.close(stream)


@pytest.mark.parametrize(("args", "code"), CASES, ids=IDS)
def test_a_closed_stderr_keeps_the_exit_code_and_says_nothing(
    workdir: Path, args: list[str], code: int
) -> None:
    done = _run(workdir, args, stdout=subprocess.DEVNULL, stderr=_gone())
    assert done.returncode == code


@pytest.mark.parametrize(("args", "code"), CASES, ids=IDS)
def test_a_closed_stdout_keeps_the_exit_code_and_says_nothing(
    workdir: Path, args: list[str], code: int
) -> None:
    done = _run(workdir, args, stdout=_gone(), stderr=subprocess.PIPE)
    assert done.returncode == code
    for word in (b"BrokenPipe", b"Exception ignored", b"Traceback", b"internal error"):
        assert word not in done.stderr


@pytest.mark.parametrize(("args", "code"), CASES[:4], ids=IDS[:4])
def test_both_closed_keep_the_exit_code(workdir: Path, args: list[str], code: int) -> None:
    assert _run(workdir, args, stdout=_gone(), stderr=_gone()).returncode == code


def test_a_stderr_closed_as_a_descriptor_keeps_the_exit_code(workdir: Path) -> None:
    """`2>&-`: the descriptor is not open at all."""
    done = subprocess.run(
        f"{CONSOLE_SCRIPT} parse binary.txt -s schema.json 2>&-",
        shell=True,
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_INPUT


def test_a_reader_that_stops_after_one_byte_leaves_the_exit_code(workdir: Path) -> None:
    """`| head -c1`: the first bytes are read, then the reader goes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTFORM_")}
    process = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "parse", "big.txt", "-s", "schema.json"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stdout.read(1) == b"{"
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_OK
    assert b"valid as sent" in err and b"BrokenPipe" not in err


@pytest.mark.parametrize(
    ("command", "what"),
    [
        ("parse - -s schema.json", "reply"),
        ("schema - --dialect gemini", "schema"),
        ("generate openai:gpt-4o -", "prompt"),
    ],
)
def test_a_closed_standard_input_is_a_usage_error(workdir: Path, command: str, what: str) -> None:
    """`<&-`: Python starts with no `sys.stdin`; reading `-` was an internal error (exit 3)."""
    done = subprocess.run(
        f"{CONSOLE_SCRIPT} {command} <&-",
        shell=True,
        cwd=workdir,
        env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_USAGE, done.stderr
    assert f"cannot read the {what} from standard input: it is closed".encode() in done.stderr
    assert b"internal error" not in done.stderr
