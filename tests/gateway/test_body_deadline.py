"""A request body holds the shared budget only for the bytes it sent, and only until
`body_timeout`; what the gateway echoes of a request in its own errors is scrubbed.

A trial shut one key out for 40+ s with four connections of another key that sent their
headers (`Content-Length: 16 MiB`) and one byte: each declared length was taken from
`max_buffered_bytes` before the body was read, and the body was waited for without a
deadline. Now bytes are taken as they arrive, and a body still incomplete at `body_timeout`
gets 408 `request_timeout`, its connection closed and its bytes given back, whether it stalled
or trickles on. The stalled uploads here are raw sockets; the gateway is a real uvicorn server.
A second hole of the same trial: `GET /v1/<a key>` answered 404 with the key in its message.
"""

from __future__ import annotations

import math
import select
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from outform.cli import main
from outform.errors import ConfigError
from outform.gateway.settings import GatewaySettings
from tests.gateway.harness import ChatFake, Running, running
from tests.providers.openai_wire import chat_completion

KEY_A = "sk-tenant-a-0123456789abcdef"
KEY_B = "sk-tenant-b-fedcba9876543210"
GUARD = 30.0
"""Seconds before a test gives up on a hang: a guard, never a measurement."""


def _gateway(**settings: Any) -> Iterator[tuple[ChatFake, Running]]:
    options: dict[str, Any] = {"store": "memory", "access_log": False, **settings}
    backend = ChatFake()
    with backend:
        gateway = GatewaySettings(backend=backend.base, api_keys=("KEY_A", "KEY_B"), **options)
        with running(gateway, env={"KEY_A": KEY_A, "KEY_B": KEY_B}) as gw:
            yield backend, gw


@pytest.fixture
def patient() -> Iterator[tuple[ChatFake, Running]]:
    """Small limits, and a deadline the tests never reach: a stall is held throughout."""
    yield from _gateway(max_body_bytes=10_000, max_buffered_bytes=20_000, body_timeout=600)


@pytest.fixture
def hasty() -> Iterator[tuple[ChatFake, Running]]:
    """Small limits and a short deadline, which every stalled body here outlasts."""
    yield from _gateway(max_body_bytes=10_000, max_buffered_bytes=20_000, body_timeout=0.5)


def _upload(gw: Running, key: str, declared: int, sent: bytes) -> socket.socket:
    """A POST that declares `declared` bytes of body, sends `sent` of them and waits."""
    port = urlsplit(gw.url).port
    assert port is not None
    sock = socket.create_connection(("127.0.0.1", port), timeout=GUARD)
    head = (
        "POST /v1/responses HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n\r\n"
    )
    sock.sendall(head.encode() + sent)
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    """The status and error of the next answer on the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _more(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    fields = dict(line.lower().split(": ", 1) for line in lines[1:])
    while len(body) < int(fields["content-length"]):
        body += _more(sock)
    error: dict[str, Any] = orjson.loads(body)["error"]
    return int(lines[0].split(" ", 2)[1]), error


def _answer_then_close(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    """The answer, then the connection's end (one left open fails the test at `GUARD`)."""
    answer = _answer(sock)
    assert sock.recv(1) == b"", "the gateway answered and kept the connection"
    return answer


def _more(sock: socket.socket) -> bytes:
    chunk = sock.recv(65_536)
    assert chunk, "the gateway closed the connection without an answer"
    return chunk


def _until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.005)


def _ask(gw: Running, key: str) -> httpx.Response:
    with httpx.Client(timeout=GUARD) as http:
        return http.post(
            gw.url + "/v1/responses",
            json={"model": "m", "input": "hello"},
            headers={"authorization": f"Bearer {key}"},
        )


# -- bytes are taken as they arrive ---------------------------------------------------------


def test_a_declared_length_holds_only_the_bytes_that_arrived(
    patient: tuple[ChatFake, Running],
) -> None:
    backend, gw = patient
    backend.json(chat_completion(content="ok"))
    with ExitStack() as stack:
        for _ in range(4):  # each declares half the budget, and sends `{`
            stack.enter_context(_upload(gw, KEY_B, 10_000, b"{"))
        _until(
            lambda: gw.app.budget.used == 4,
            "the stalled uploads do not hold just their one byte each",
        )
        answer = _ask(gw, KEY_A)  # another key, while all four stalls are held
        assert answer.status_code == 200, answer.text
        _until(lambda: gw.app.budget.used == 4, "the answered request kept its bytes")
        # (one byte for each stalled upload, not the 40,000 they declared)


def test_a_declared_length_over_max_body_bytes_is_refused_before_any_byte(
    patient: tuple[ChatFake, Running],
) -> None:
    _, gw = patient
    with _upload(gw, KEY_B, 10_001, b"") as sock:
        status, error = _answer(sock)  # with no byte sent (waiting would hit `GUARD`)
    assert status == 413
    assert error["code"] == "request_too_large"
    assert "max_body_bytes" in error["message"]


# -- ... and held until body_timeout at most -------------------------------------------------


def test_a_stalled_body_gets_408_naming_body_timeout_and_its_connection_closed(
    hasty: tuple[ChatFake, Running],
) -> None:
    backend, gw = hasty
    backend.json(chat_completion(content="ok"))
    with _upload(gw, KEY_B, 10_000, b"{") as sock:
        status, error = _answer_then_close(sock)
    assert status == 408
    assert error["code"] == "request_timeout"
    assert error["type"] == "invalid_request_error"
    assert "body_timeout" in error["message"] and "--body-timeout" in error["message"]
    _until(lambda: gw.app.budget.used == 0, "the stalled body's bytes were never given back")
    assert _ask(gw, KEY_B).status_code == 200  # the key itself is not punished


def test_stalled_bodies_that_fill_the_budget_give_it_back_at_their_deadline(
    hasty: tuple[ChatFake, Running],
) -> None:
    """Two stalls of 9,999 of 10,000 bytes hold all but 2 bytes of the 20,000 budget, which
    refuses even a small request (503) while they last: at their deadline both get 408, the
    budget is whole again, and the small request passes."""
    backend, gw = hasty
    backend.json(chat_completion(content="ok"))
    with ExitStack() as stack:
        stalls = [
            stack.enter_context(_upload(gw, KEY_B, 10_000, b"{" + b" " * 9_998)) for _ in range(2)
        ]
        answers = [_answer_then_close(sock) for sock in stalls]
    assert [(status, error["code"]) for status, error in answers] == [
        (408, "request_timeout"),
        (408, "request_timeout"),
    ]
    _until(lambda: gw.app.budget.used == 0, "the stalled bodies' bytes were never given back")
    answer = _ask(gw, KEY_A)
    assert answer.status_code == 200, answer.text


def test_a_body_that_trickles_on_gets_408_too(hasty: tuple[ChatFake, Running]) -> None:
    """The deadline is for the whole body, not for a silence: a byte every 50 ms would keep
    an idle timeout of 0.5 s waiting for 500 s."""
    _, gw = hasty
    with _upload(gw, KEY_B, 10_000, b"{") as sock:
        deadline = time.monotonic() + GUARD
        while not select.select([sock], [], [], 0.05)[0]:  # until the gateway answers
            assert time.monotonic() < deadline, "the trickling body was never cut off"
            sock.sendall(b" ")
        status, error = _answer_then_close(sock)
    assert (status, error["code"]) == (408, "request_timeout")
    _until(lambda: gw.app.budget.used == 0, "the trickled bytes were never given back")


# -- the setting ------------------------------------------------------------------------------


def test_body_timeout_defaults_to_30_seconds_and_reads_from_the_gateway_table() -> None:
    assert GatewaySettings().body_timeout == 30.0
    assert GatewaySettings.from_config({"body_timeout": 5}).body_timeout == 5.0


@pytest.mark.parametrize("value", [0, -1, 3_601, math.inf, math.nan])
def test_a_body_timeout_that_is_no_deadline_is_refused(value: float) -> None:
    with pytest.raises(ConfigError, match="body_timeout"):
        GatewaySettings(body_timeout=value)


def test_a_bad_body_timeout_flag_exits_2_with_what_to_fix(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--store", "memory", "--body-timeout", "nan"])
    err = capsys.readouterr().err
    assert code == 2
    assert "body_timeout" in err and "fix:" in err
    assert "Traceback" not in err and "outform gateway on" not in err


# -- what the gateway's own errors echo of a request ------------------------------------------


@pytest.mark.parametrize(
    ("method", "status", "code"),
    [("GET", 404, "not_found"), ("PUT", 405, "method_not_allowed")],
)
def test_an_unknown_path_or_method_echoes_the_request_scrubbed(
    patient: tuple[ChatFake, Running], method: str, status: int, code: str
) -> None:
    """`GET /v1/<key>` and `PUT /v1/responses/<key>`: the path goes back as `***`."""
    _, gw = patient
    path = f"/v1/{KEY_B}" if status == 404 else f"/v1/responses/{KEY_B}"
    with httpx.Client(timeout=GUARD) as http:
        answer = http.request(method, gw.url + path, headers={"authorization": f"Bearer {KEY_A}"})
    assert answer.status_code == status
    assert KEY_B not in answer.text
    error = answer.json()["error"]
    assert error["code"] == code
    assert error["message"].endswith(f"{method} {path.replace(KEY_B, '***')}")
