"""`outform serve` starts cleanly or says, in one error, what to fix (exit 2).

A busy port, a port that is no port, an unknown host, a missing `gateway` extra and bad
`[gateway]` values fail before anything listens; the address announced is the one listened
on, `--port 0` included (the test connects to the announced port).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import outform.config
import outform.errors
from outform.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _serve(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = main(["serve", "--store", "memory", *flags])
    return code, capsys.readouterr().err


def test_a_busy_port_is_refused_before_start_up(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _serve(capsys, "--port", str(port))
    assert code == 2
    assert f"error: cannot listen on 127.0.0.1:{port}: Address already in use" in err
    assert "choose another with --port" in err
    assert "startup complete" not in err and "outform gateway on" not in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--port", "99999"), "port 99999 is not a TCP port"),
        (("--port", "-1"), "port -1 is not a TCP port"),
        (("--host", "no-such-host.invalid"), "the host is not known"),
        (("--max-body-bytes", "4096", "--max-buffered-bytes", "1024"), "max_buffered_bytes"),
        # Found by a new-user trial: flags skipped the rules the file's keys obey, and the
        # gateway started to answer every request 413, 504 or 500.
        (("--max-body-bytes", "-5"), "--max-body-bytes must be an integer from 1024"),
        (("--backend-timeout", "0"), "--backend-timeout must be a number from 0.01"),
        (("--backend-timeout", "nan"), "--backend-timeout must be a number from 0.01"),
        (("--backend-idle-timeout", "-1"), "--backend-idle-timeout must be a number"),
        (("--backend-connect-timeout", "nan"), "--backend-connect-timeout must be a number"),
    ],
)
def test_bad_addresses_and_limits_exit_2_with_what_to_fix(
    project: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], message: str
) -> None:
    code, err = _serve(capsys, *flags)
    assert code == 2
    assert message in err and "fix:" in err
    assert "Traceback" not in err and "outform gateway on" not in err


def test_bad_timeouts_in_the_file_exit_2(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "outform.toml").write_text("[gateway]\nbackend_idle_timeout = 0\n")
    with pytest.raises(outform.errors.ConfigError):
        outform.config.reload()  # forget the settings read before the file was there
    code, err = _serve(capsys)
    assert code == 2
    assert "backend_idle_timeout" in err


def test_without_the_gateway_extra_it_says_what_to_install(project: Path) -> None:
    hide = "import sys; sys.modules['fastapi'] = None; from outform.cli import run; run()"
    done = subprocess.run(
        [sys.executable, "-c", hide, "serve", "--store", "memory"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "outform serve needs the gateway extra (fastapi is not installed)" in done.stderr
    assert "pip install 'outform[gateway]'" in done.stderr
    assert "internal error" not in done.stderr


def test_port_0_announces_the_port_it_listens_on(project: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "outform.cli", "serve", "--store", "memory", "--port", "0"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("outform gateway on http://127.0.0.1:"), line
        url = line.split()[3]
        assert not url.endswith(":0")
        health = httpx.get(url + "/healthz", timeout=30)  # served once start-up is done
        assert health.json() == {"status": "ok"}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
