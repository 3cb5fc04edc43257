"""Operations: auth, body limit, backend timeouts and failures, shutdown, access log, docs.

Errors the gateway makes are OpenAI-shaped (`{"error": {message, type, param, code}}`,
validated against the spec's `Error`); errors the backend makes reach the client with the
backend's status and body, unchanged. The shutdown test runs `outform serve` as a real process
and sends it SIGTERM in the middle of a stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest

from outform.errors import StoreError
from outform.gateway.app import create_app
from outform.gateway.store import MemoryStore, StoredResponse
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import ChatFake, GatedReply, HeldReply, free_port, response_events
from tests.providers.fake import Reply
from tests.providers.openai_wire import chat_completion, chat_usage, chunk, text_stream

ROOT = Path(__file__).resolve().parents[2]
BACKEND_ERROR = {
    "error": {
        "message": "'response_format.json_schema.schema' is not a valid JSON schema",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": None,
    }
}


# -- auth and limits -----------------------------------------------------------------------


def test_client_keys_are_required_when_configured(make_gateway: MakeGateway) -> None:
    gw = make_gateway(
        api_keys=("GATEWAY_KEY",), env={"GATEWAY_KEY": "sk-gw-secret"}, api_key="wrong"
    )
    with pytest.raises(openai.AuthenticationError) as wrong:
        gw.client.responses.create(model="m", input="x")
    assert wrong.value.status_code == 401
    missing = gw.http.post(gw.url + "/v1/responses", json={"model": "m", "input": "x"})
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "invalid_api_key"
    assert gw.http.get(gw.url + "/healthz").json() == {"status": "ok"}
    assert gw.backend.requests == []

    gw.backend.json(chat_completion(content="ok"))
    good = gw.client.with_options(api_key="sk-gw-secret").responses.create(model="m", input="x")
    assert good.output_text == "ok"
    assert "authorization" not in gw.backend.last.headers  # the client's key stays here


def test_a_body_over_the_limit_is_refused_with_413(make_gateway: MakeGateway) -> None:
    gw = make_gateway(max_body_bytes=2048)
    big = {"model": "m", "input": "x" * 4096}
    answer = gw.http.post(gw.url + "/v1/responses", json=big)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "request_too_large"
    assert "max_body_bytes" in answer.json()["error"]["message"]  # the limit, named

    def chunked() -> Any:
        yield b'{"model": "m", "input": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}'

    streamed = gw.http.post(gw.url + "/v1/chat/completions", content=chunked())
    assert streamed.status_code == 413
    assert gw.backend.requests == []


def test_malformed_requests_get_400_in_the_api_shape(gw: Harness) -> None:
    cases: list[tuple[Any, str | None]] = [
        (b"{not json", None),
        ({"input": "x"}, "model"),
        ({"model": "m", "input": 42}, "input"),
        ({"model": "m", "input": [{"type": "item_reference", "id": 7}]}, "input[0].id"),
        ({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"model": "m", "input": "x", "tool_choice": {"type": "file_search"}}, "tool_choice"),
        ({"model": "m", "input": "x", "background": "yes"}, "background"),
        ({"model": "m", "input": "x", "background": True, "store": False}, "store"),
        ({"model": "m", "input": "x", "background": True, "stream": True}, "stream"),
        ({"model": "m", "input": "x", "conversation": "conv_1"}, "conversation"),
    ]
    for body, param in cases:
        content = body if isinstance(body, bytes) else orjson.dumps(body)
        answer = gw.http.post(gw.url + "/v1/responses", content=content)
        assert answer.status_code == 400, body
        assert answer.json()["error"]["param"] == param
    assert gw.backend.requests == []


# -- the backend's errors ------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 422, 429, 500, 503])
def test_backend_errors_reach_the_client_with_their_status_and_body(
    gw: Harness, status: int
) -> None:
    raw = orjson.dumps(BACKEND_ERROR)
    for path, body in (
        ("/v1/responses", {"model": "m", "input": "x"}),
        ("/v1/responses", {"model": "m", "input": "x", "stream": True}),
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}]}),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
        ),
    ):
        gw.backend.json(raw, status=status, headers={"retry-after": "1"})
        answer = gw.http.post(gw.url + path, json=body)
        assert (answer.status_code, answer.content) == (status, raw), (path, body)
    gw.backend.json(raw, status=400)
    with pytest.raises(openai.BadRequestError) as caught:
        gw.client.responses.create(model="m", input="x")
    assert caught.value.body == BACKEND_ERROR["error"]


def test_a_backend_that_does_not_answer_in_time_gives_504(make_gateway: MakeGateway) -> None:
    gw = make_gateway(backend_timeout=0.3)
    gw.backend.reply(Reply(body=chat_completion(content="late"), delay=1.0))
    with pytest.raises(openai.InternalServerError) as caught:
        gw.client.responses.create(model="m", input="x")
    assert caught.value.status_code == 504
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "backend_total_timeout"
    assert error["type"] == "server_error"
    gw.backend.reply(Reply(events=text_stream("late"), delay=1.0))
    answer = gw.http.post(
        gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": True}
    )
    assert answer.status_code == 504


def test_a_stream_that_stalls_ends_with_response_failed(make_gateway: MakeGateway) -> None:
    gw = make_gateway(backend_idle_timeout=0.3)
    stalled = GatedReply(events=text_stream("Hel", "lo"), gate_after=2)
    gw.backend.reply(stalled)
    try:
        answer = gw.http.post(
            gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": True}
        )
    finally:
        stalled.gate.set()
    events = response_events(answer.content)
    assert events[-1]["type"] == "response.failed"
    assert "sent nothing for 0.3 s (idle timeout" in events[-1]["response"]["error"]["message"]


def test_a_client_that_hangs_up_mid_stream_closes_the_backends_stream(
    make_gateway: MakeGateway, caplog: pytest.LogCaptureFixture
) -> None:
    gw = make_gateway(access_log=True)
    caplog.set_level("INFO", logger="outform.gateway.access")
    gated = GatedReply(events=text_stream(*["word "] * 200), gate_after=3)
    gw.backend.reply(gated)
    body = {"model": "m", "input": "x", "stream": True}
    try:
        with gw.http.stream("POST", gw.url + "/v1/responses", json=body) as answer:
            # The chunks are held while the backend gets to its gate: a reader dropped after
            # its first chunk closes the connection (httpcore ends a stream whose iterator
            # is closed), a hang-up before the gateway has read the backend's first events.
            chunks = answer.iter_bytes()
            assert b"response.created" in next(chunks)
            assert gated.reached.wait(10)
        deadline = time.monotonic() + 10  # the request is over once its access line is out
        while not any(r.name.endswith("access") for r in caplog.records):
            assert time.monotonic() < deadline, "the gateway did not notice the client left"
            time.sleep(0.01)
    finally:
        gated.gate.set()
    assert gated.broken.wait(10), "the gateway kept the backend's stream open"
    gw.backend.json(chat_completion(content="still serving"))
    assert gw.client.responses.create(model="m", input="x").output_text == "still serving"


def test_an_unreachable_backend_gives_502(make_gateway: MakeGateway) -> None:
    gw = make_gateway(backend=f"http://127.0.0.1:{free_port()}/v1")
    answer = gw.http.post(gw.url + "/v1/responses", json={"model": "m", "input": "x"})
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == "backend_unreachable"


def test_a_stream_that_breaks_ends_with_response_failed_and_is_stored(gw: Harness) -> None:
    gw.backend.stream(text_stream("Hel", "lo", " there"), drop_after=3)
    answer = gw.http.post(
        gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": True}
    )
    events = response_events(answer.content)
    failed = events[-1]
    assert failed["type"] == "response.failed"
    assert failed["response"]["error"]["code"] == "server_error"
    message = failed["response"]["output"][0]
    assert message["status"] == "incomplete" and message["content"][0]["text"] == "Hello"
    stored = gw.client.responses.retrieve(failed["response"]["id"])
    assert stored.status == "failed"


def test_an_error_event_in_the_backends_stream_fails_the_response(gw: Harness) -> None:
    gw.backend.stream(
        [
            chunk({"role": "assistant", "content": "Hel"}),
            {
                "error": {
                    "message": "CUDA out of memory",
                    "type": "InternalServerError",
                    "code": 500,
                }
            },
        ]
    )
    with gw.client.responses.stream(model="m", input="x") as stream:
        events = list(stream)
    assert events[-1].type == "response.failed"
    assert "CUDA out of memory" in str(events[-1].response.error)


def test_a_backend_ignoring_stream_true_is_still_streamed(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="Whole.", usage=chat_usage(3, 2)))
    events = list(gw.client.responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Whole."


class _BrokenStore(MemoryStore):
    async def save(self, record: StoredResponse) -> None:
        raise StoreError(
            "PostgreSQL response store at alice@db.internal:6543/prod: saving failed",
            where="[gateway] store",
        )


class _FailsAtTheEnd(MemoryStore):
    async def update(self, record: StoredResponse) -> bool:
        raise StoreError("database is locked", where="[gateway] store")


def test_a_store_that_fails_gives_503_or_a_failed_stream(make_gateway: MakeGateway) -> None:
    """Nothing is acknowledged that was not stored; the client is not told the database's
    user, host, port or name (the log is)."""
    gw = make_gateway(store=_BrokenStore())
    for stream in (False, True):
        if stream:
            gw.backend.stream(text_stream("lost"))
        else:
            gw.backend.json(chat_completion(content="lost"))
        answer = gw.http.post(
            gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": stream}
        )
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "store_error"
        for detail in ("alice", "db.internal", "6543", "prod"):
            assert detail not in answer.text
    gw.backend.json(chat_completion(content="kept nowhere, as asked"))
    kept = gw.http.post(gw.url + "/v1/responses", json={"model": "m", "input": "x", "store": False})
    assert kept.status_code == 200

    gw = make_gateway(store=_FailsAtTheEnd())
    gw.backend.stream(text_stream("lost"))
    streamed = gw.http.post(
        gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": True}
    )
    failed = response_events(streamed.content)[-1]
    assert failed["type"] == "response.failed"
    assert "could not be stored" in failed["response"]["error"]["message"]
    gw.backend.stream(text_stream("broken", "twice"), drop_after=2)
    streamed = gw.http.post(
        gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": True}
    )
    assert response_events(streamed.content)[-1]["type"] == "response.failed"  # no gap


# -- shutdown and the access log -----------------------------------------------------------


def test_sigterm_lets_an_in_flight_stream_finish_and_the_log_has_no_secrets(
    tmp_path: Path,
) -> None:
    secrets = {"GATEWAY_KEY": "sk-client-3f9a1c", "BACKEND_KEY": "sk-backend-77d2e0"}
    backend = ChatFake()
    with backend:
        gated = GatedReply(events=text_stream("Hello", ", world", "!"), gate_after=2)
        backend.reply(gated)
        process, port = _serve(
            tmp_path,
            secrets,
            "--backend",
            backend.base,
            "--store",
            "memory",
            "--api-key-env",
            "GATEWAY_KEY",
            "--backend-key-env",
            "BACKEND_KEY",
        )
        try:
            _wait_for(port)
            headers = {"authorization": f"Bearer {secrets['GATEWAY_KEY']}"}
            url = f"http://127.0.0.1:{port}/v1/responses?debug=sk-in-query"
            reader, received = _streaming(url, headers)
            assert gated.reached.wait(10), "the stream did not start"
            process.send_signal(signal.SIGTERM)
            _wait_until_closed(port)  # shutdown has begun: no new connections
            gated.gate.set()
            reader.join(20)
            assert process.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
        finally:
            gated.gate.set()
            if process.poll() is None:
                process.kill()
        _, stderr = process.communicate()
    events = response_events(b"".join(received))
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "Hello, world!"
    assert backend.requests[0].headers["authorization"] == f"Bearer {secrets['BACKEND_KEY']}"
    log = stderr.decode()
    lines = [
        orjson.loads(line) for line in log.splitlines() if line.startswith('{"event":"access"')
    ]
    assert [(line["method"], line["path"], line["status"]) for line in lines] == [
        ("POST", "/v1/responses", 200)
    ]
    assert lines[0]["model"] == "m" and lines[0]["stream"] is True
    assert lines[0]["response_id"] == events[-1]["response"]["id"]
    for secret in (*secrets.values(), "sk-in-query"):
        assert secret not in log


def test_a_stream_still_open_when_the_shutdown_grace_ends_gets_its_terminal_event(
    tmp_path: Path,
) -> None:
    """Found by a new-user trial: a stream the backend kept silent past `shutdown_timeout`
    was cut off without `response.failed` (uvicorn cancels what is left; a CancelledError
    traceback in the log) and stored as the client's leaving. Shortly before the grace ends
    the gateway stops it itself: the terminal event says why, and so does the stored row."""
    received: list[list[bytes]] = []

    def stream(port: int) -> threading.Thread:
        reader, got = _streaming(f"http://127.0.0.1:{port}/v1/responses", {})
        received.append(got)  # (filled as the reader reads)
        return reader

    gated = GatedReply(events=text_stream("Hello", ", world", "!"), gate_after=2)
    stderr, store = _shut_down_while_waiting(tmp_path, gated, stream)
    events = response_events(b"".join(received[0]))
    assert events[-1]["type"] == "response.failed"
    error = events[-1]["response"]["error"]["message"]
    assert error == "The gateway shut down before the response was complete."
    assert "Exception in ASGI application" not in stderr
    with contextlib.closing(sqlite3.connect(store)) as db:
        rows = db.execute("SELECT status, response FROM outform_responses").fetchall()
    assert len(rows) == 1 and rows[0][0] == "failed"
    assert orjson.loads(rows[0][1])["error"]["message"] == error


def test_a_request_still_waiting_when_the_shutdown_grace_ends_gets_a_json_503(
    tmp_path: Path,
) -> None:
    """Found by a new-user trial: a non-streamed request whose backend had not answered by
    the end of the grace got uvicorn's plain-text 500 (and a traceback in the log). It is
    answered 503 `shutting_down` instead, with nothing stored (no id was given out)."""
    answers: list[httpx.Response] = []

    def ask(port: int) -> threading.Thread:
        def post() -> None:
            with httpx.Client(timeout=30) as http:
                url = f"http://127.0.0.1:{port}/v1/responses"
                answers.append(http.post(url, json={"model": "m", "input": "x"}))

        client = threading.Thread(target=post)
        client.start()
        return client

    held = HeldReply(body=chat_completion(content="too late"))
    stderr, store = _shut_down_while_waiting(tmp_path, held, ask)
    (answer,) = answers
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "shutting_down"
    assert (
        answer.json()["error"]["message"]
        == "The gateway shut down before the response was complete."
    )
    assert "Exception in ASGI application" not in stderr
    with contextlib.closing(sqlite3.connect(store)) as db:
        assert db.execute("SELECT count(*) FROM outform_responses").fetchone() == (0,)


def _shut_down_while_waiting(
    tmp_path: Path,
    reply: GatedReply | HeldReply,
    client: Callable[[int], threading.Thread],
) -> tuple[str, Path]:
    """`outform serve` with a grace of 2 s and a SQLite store, its backend holding `reply`
    back: the client `client(port)` starts, and once its request reached the backend the
    gateway gets SIGTERM (the backend never answers). The gateway's log, and the store."""
    (tmp_path / "outform.toml").write_text(
        "[gateway]\nshutdown_timeout = 2\nbackend_idle_timeout = 100\n"
    )
    store = tmp_path / "responses.sqlite"
    backend = ChatFake()
    with backend:
        backend.reply(reply)
        process, port = _serve(
            tmp_path, {}, "--backend", backend.base, "--store", f"sqlite:{store}"
        )
        try:
            _wait_for(port)
            waiting = client(port)
            assert reply.reached.wait(10), "the request did not reach the backend"
            process.send_signal(signal.SIGTERM)
            waiting.join(30)
            assert process.wait(30) in (0, -signal.SIGTERM)
        finally:
            reply.gate.set()
            if process.poll() is None:
                process.kill()
        _, stderr = process.communicate()
    return stderr.decode(), store


def _serve(cwd: Path, env: dict[str, str], *flags: str) -> tuple[subprocess.Popen[bytes], int]:
    """`outform serve` in a process of its own (its outform.toml: `cwd`'s), and its port."""
    port = free_port()
    environment = {**os.environ, **env, "PYTHONPATH": str(ROOT / "src")}
    environment.pop("OUTFORM_CONFIG", None)
    command = [sys.executable, "-m", "outform.cli", "serve", "--port", str(port), *flags]
    process = subprocess.Popen(
        command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    return process, port


def _streaming(url: str, headers: dict[str, str]) -> tuple[threading.Thread, list[bytes]]:
    """A client reading a streamed response in a thread of its own, and what it received."""
    received: list[bytes] = []

    def consume() -> None:
        with (
            httpx.Client(timeout=30) as http,
            http.stream(
                "POST", url, json={"model": "m", "input": "x", "stream": True}, headers=headers
            ) as answer,
        ):
            received.extend(answer.iter_bytes())

    reader = threading.Thread(target=consume)
    reader.start()
    return reader, received


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise AssertionError("outform serve did not start")


def _wait_until_closed(port: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5)
        except httpx.HTTPError:
            return
        time.sleep(0.02)
    raise AssertionError("the gateway kept accepting connections after SIGTERM")


def test_the_access_log_is_one_json_line_per_request(
    make_gateway: MakeGateway, caplog: pytest.LogCaptureFixture
) -> None:
    gw = make_gateway(
        access_log=True, api_keys=("K",), env={"K": "sk-log-test"}, api_key="sk-log-test"
    )
    caplog.set_level("INFO", logger="outform.gateway.access")
    gw.backend.json(chat_completion(content="ok"))
    gw.client.responses.create(model="m", input="x")
    gw.http.get(gw.url + "/v1/responses/resp_missing")
    lines = [orjson.loads(r.getMessage()) for r in caplog.records if r.name.endswith("access")]
    assert [(line["path"], line["status"]) for line in lines] == [
        ("/v1/responses", 200),
        ("/v1/responses/resp_missing", 401),
    ]
    assert all(isinstance(line["ms"], float) for line in lines)
    assert "sk-log-test" not in caplog.text


# -- discovery -----------------------------------------------------------------------------


def test_the_openapi_document_lists_every_endpoint(gw: Harness) -> None:
    document = gw.http.get(gw.url + "/openapi.json").json()
    assert set(document["paths"]) == {
        "/v1/responses",
        "/v1/responses/{response_id}",
        "/v1/responses/{response_id}/input_items",
        "/v1/responses/{response_id}/cancel",
        "/v1/chat/completions",
        "/v1/models",
        "/healthz",
    }
    assert set(document["paths"]["/v1/responses/{response_id}"]) == {"get", "delete"}
    unknown = gw.http.post(gw.url + "/v1/responses/resp_1/compact")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"


def test_the_documented_routes_serve_what_the_fast_path_serves(gw: Harness) -> None:
    """The FastAPI routes of the hot endpoints run the same handlers: called on the inner
    FastAPI app directly (no fast path), they answer the same."""
    app = create_app(gw.gateway.app.settings, store=MemoryStore(), env={})
    gw.backend.json(chat_completion(content="Same."))
    gw.backend.json(chat_completion(content="Same."))

    async def both() -> tuple[httpx.Response, httpx.Response]:
        await app.startup()
        transport = httpx.ASGITransport(app=app.fastapi)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://inner") as inner:
                direct = await inner.post("/v1/responses", json={"model": "m", "input": "x"})
                chat = await inner.post(
                    "/v1/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
                )
                return direct, chat
        finally:
            await app.shutdown()

    direct, chat = asyncio.run(both())
    assert direct.status_code == 200
    assert direct.json()["output"][0]["content"][0]["text"] == "Same."
    assert chat.status_code == 200
    assert chat.json()["choices"][0]["message"]["content"] == "Same."
