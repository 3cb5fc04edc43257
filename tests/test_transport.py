"""Transport against a real HTTP server on 127.0.0.1: retries, errors, stream framings."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform.errors import (
    AuthenticationError,
    BadRequestError,
    ConnectionFailedError,
    ProviderError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
    UsageError,
)
from outform.providers.base import WireRequest
from outform.transport import (
    AsyncTransport,
    Endpoint,
    RetryPolicy,
    Secret,
    Transport,
    Upload,
)
from tests.providers.fake import FakeServer, Reply


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


class Sleeps:
    """Records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def endpoint(server: FakeServer, **fields: object) -> Endpoint:
    return Endpoint("fake", server.url, api_key=Secret("sk-secret-123"), **fields)  # type: ignore[arg-type]


WIRE = WireRequest("/v1/chat", {"hello": "world"})


def test_a_json_reply_is_returned_and_the_request_is_sent_as_built(server: FakeServer) -> None:
    server.json({"ok": True})
    with Transport() as transport:
        assert transport.send(endpoint(server), WIRE) == {"ok": True}
    assert server.last.path == "/v1/chat"
    assert server.last.json == {"hello": "world"}
    assert server.last.headers["authorization"] == "Bearer sk-secret-123"


@pytest.mark.parametrize(
    ("auth", "header", "value"),
    [
        ("x-api-key", "x-api-key", "sk-secret-123"),
        ("x-goog-api-key", "x-goog-api-key", "sk-secret-123"),
    ],
)
def test_the_key_travels_in_the_header_the_provider_expects(
    server: FakeServer, auth: str, header: str, value: str
) -> None:
    server.json({})
    with Transport() as transport:
        transport.send(endpoint(server, auth=auth), WIRE)
    assert server.last.headers[header] == value
    assert "authorization" not in server.last.headers


def test_429_is_retried_after_the_wait_the_provider_asks_for(server: FakeServer) -> None:
    server.reply(
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"retry-after": "3"})
    )
    server.json({"ok": 1})
    sleeps = Sleeps()
    with Transport(sleep=sleeps) as transport:
        assert transport.send(endpoint(server), WIRE) == {"ok": 1}
    assert sleeps.waits == [3.0]
    assert len(server.requests) == 2


def test_5xx_is_retried_with_backoff_then_reported(server: FakeServer) -> None:
    for _ in range(3):
        server.json({"error": {"message": "overloaded"}}, status=503)
    sleeps = Sleeps()
    with (
        Transport(sleep=sleeps, retry=RetryPolicy(retries=2, backoff=1.0)) as transport,
        pytest.raises(ServerError) as caught,
    ):
        transport.send(endpoint(server), WIRE)
    assert caught.value.status == 503
    assert "overloaded" in caught.value.what
    assert len(sleeps.waits) == 2
    assert 0.5 <= sleeps.waits[0] <= 1.5 and 1.0 <= sleeps.waits[1] <= 3.0


def test_400_is_not_retried_and_names_the_providers_message(server: FakeServer) -> None:
    server.json({"error": {"message": "schema rejected: unsupported keyword"}}, status=400)
    with (
        Transport(sleep=Sleeps()) as transport,
        pytest.raises(BadRequestError, match="unsupported keyword"),
    ):
        transport.send(endpoint(server), WIRE)
    assert len(server.requests) == 1


def test_a_refused_key_is_an_authentication_error_without_the_key(server: FakeServer) -> None:
    server.json({"error": {"message": "invalid x-api-key"}}, status=401)
    with Transport(sleep=Sleeps()) as transport, pytest.raises(AuthenticationError) as caught:
        transport.send(endpoint(server), WIRE)
    assert "sk-secret-123" not in str(caught.value)
    assert "sk-secret-123" not in repr(endpoint(server))


def test_a_rate_limit_that_persists_carries_the_retry_after(server: FakeServer) -> None:
    for _ in range(2):
        server.reply(Reply(status=429, body={}, headers={"retry-after": "7"}))
    with (
        Transport(sleep=Sleeps(), retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(RateLimitError) as caught,
    ):
        transport.send(endpoint(server), WIRE)
    assert caught.value.retry_after == 7.0


def test_a_dropped_connection_is_retried_then_reported(server: FakeServer) -> None:
    server.reply(Reply(body={"ok": 1}, drop_after=0))
    server.json({"ok": 2})
    with Transport(sleep=Sleeps()) as transport:
        assert transport.send(endpoint(server), WIRE) == {"ok": 2}
    server.reply(Reply(body={"ok": 1}, drop_after=0), Reply(body={"ok": 1}, drop_after=0))
    with (
        Transport(sleep=Sleeps(), retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(ConnectionFailedError) as caught,
    ):
        transport.send(endpoint(server), WIRE)
    assert caught.value.reached  # the request was read: the provider may have acted on it


def test_nothing_listening_is_a_connection_failure() -> None:
    dead = Endpoint("fake", "http://127.0.0.1:9")
    with (
        Transport(sleep=Sleeps(), retry=RetryPolicy(retries=1)) as transport,
        pytest.raises(ConnectionFailedError, match="connection to fake") as caught,
    ):
        transport.send(dead, WIRE)
    assert not caught.value.reached  # no attempt connected: nothing was created there


def test_server_sent_events_are_read_as_json_events(server: FakeServer) -> None:
    server.stream([{"a": 1}, ("message_stop", {"b": 2}), "[DONE]"])
    with Transport() as transport:
        events = list(transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")))
    assert events == [{"a": 1}, {"b": 2, "type": "message_stop"}]
    assert server.last.headers["accept"] == "text/event-stream"


def test_ndjson_lines_are_read_as_json_events(server: FakeServer) -> None:
    server.stream([{"n": 1}, {"n": 2, "done": True}], framing="ndjson")
    with Transport() as transport:
        events = list(transport.stream(endpoint(server), WireRequest("/s", {}, stream="ndjson")))
    assert events == [{"n": 1}, {"n": 2, "done": True}]


def test_aws_event_stream_messages_are_read_as_named_events(server: FakeServer) -> None:
    server.stream(
        [{"messageStart": {"role": "assistant"}}, {"contentBlockDelta": {"delta": {"text": "{"}}}],
        framing="aws-event-stream",
    )
    wire = WireRequest("/s", {}, stream="aws-event-stream")
    with Transport() as transport:
        events = list(transport.stream(endpoint(server), wire))
    assert events == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "{"}}},
    ]


def test_an_aws_exception_in_the_stream_is_raised(server: FakeServer) -> None:
    server.stream(
        [{"messageStart": {}}, {"__exception__": "throttlingException", "message": "slow"}],
        framing="aws-event-stream",
    )
    wire = WireRequest("/s", {}, stream="aws-event-stream")
    with Transport() as transport, pytest.raises(RateLimitError, match="slow"):
        list(transport.stream(endpoint(server), wire))


def test_an_error_event_in_an_sse_stream_is_raised(server: FakeServer) -> None:
    server.stream(
        [{"a": 1}, ("error", {"type": "error", "error": {"message": "overloaded_error"}})]
    )
    with Transport() as transport, pytest.raises(RateLimitError, match="overloaded"):
        list(transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")))


def test_a_stream_that_breaks_off_is_reported_after_the_events_it_sent(server: FakeServer) -> None:
    server.stream([{"n": 1}, {"n": 2}, {"n": 3}], drop_after=2)
    received = []
    with Transport() as transport, pytest.raises(StreamInterruptedError):
        for event in transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")):
            received.append(event)
    assert received == [{"n": 1}, {"n": 2}]


def test_the_async_transport_behaves_the_same(server: FakeServer) -> None:
    server.reply(Reply(status=500, body={}))
    server.json({"ok": True})
    server.stream([{"a": 1}, {"a": 2}])

    async def main() -> tuple[Any, list[Any]]:
        async def no_wait(seconds: float) -> None:
            return None

        async with AsyncTransport(sleep=no_wait) as transport:
            body = await transport.send(endpoint(server), WIRE)
            events = [
                e
                async for e in transport.stream(
                    endpoint(server), WireRequest("/s", {}, stream="sse")
                )
            ]
        return body, events

    assert asyncio.run(main()) == ({"ok": True}, [{"a": 1}, {"a": 2}])


# -- uploads ---------------------------------------------------------------------------------

MIB = 1 << 20


class HeldUpload:
    """One request on 127.0.0.1: its body read up to `first` bytes, then held until `go`
    (the sender blocks once the sockets' buffers are full), then read to its end; the reply
    is JSON."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.halfway, self.go = threading.Event(), threading.Event()
        self.head = b""
        self.body = b""
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._sock.accept()
        with conn, self._sock:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            self.head, _, body = data.partition(b"\r\n\r\n")
            length = int(self.header("content-length"))
            parts = [body]
            received = len(body)
            while received < length:
                if received >= self.first and not self.go.is_set():
                    self.halfway.set()
                    self.go.wait(30)
                piece = conn.recv(min(65536, length - received))
                if not piece:
                    break
                parts.append(piece)
                received += len(piece)
            self.body = b"".join(parts)
            reply = b'{"id": "file-1"}'
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
            conn.sendall(b"content-length: %d\r\n\r\n%s" % (len(reply), reply))

    def header(self, name: str) -> str:
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key.strip().lower() == name.encode():
                return value.strip().decode()
        return ""


@pytest.mark.parametrize("field", [None, "file"], ids=["whole-body", "multipart"])
def test_an_uploaded_file_is_read_while_it_is_sent(tmp_path: Path, field: str | None) -> None:
    """A batch input file goes out as it is read, never whole in memory: the server holds
    the body after its first MiB, the file's last MiB is rewritten meanwhile, and the server
    receives the new one, every byte counted by Content-Length."""
    path = tmp_path / "requests.jsonl"
    size = 32 * MIB
    line = b'{"custom_id": "r", "body": {"text": "' + b"x" * 200 + b'"}}\n'
    path.write_bytes((line * (size // len(line) + 1))[:size])
    server = HeldUpload(first=MIB)

    def rewrite_the_tail() -> None:
        if server.halfway.wait(30):
            with path.open("r+b") as handle:
                handle.seek(size - MIB)
                handle.write(b"T" * MIB)
        server.go.set()

    rewriter = threading.Thread(target=rewrite_the_tail)
    rewriter.start()
    upload = Upload(path, media_type="application/jsonl", field=field, filename="batch.jsonl")
    wire = WireRequest("/v1/files", {"purpose": "batch"})
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        reply = transport.exchange(Endpoint("fake", server.url), wire, upload)
    rewriter.join()
    assert reply.body == {"id": "file-1"}
    assert server.header("transfer-encoding") == ""
    assert int(server.header("content-length")) == len(server.body)
    sent = path.read_bytes()
    assert sent.endswith(b"T" * MIB)  # the file as it was when its end was read
    if field is None:
        assert server.body == sent
    else:
        assert server.body.count(sent) == 1
        assert b'name="purpose"\r\n\r\nbatch' in server.body
        assert len(server.body) - len(sent) < 1024  # the form's few other bytes


def test_a_retried_upload_sends_the_whole_file_again(server: FakeServer, tmp_path: Path) -> None:
    path = tmp_path / "requests.json"
    path.write_bytes(b'{"requests": [' + b'{"custom_id": "r"},' * 5000 + b"{}]}")
    server.json({"error": {"message": "overloaded"}}, status=503)
    server.json({"id": "batch-1"})
    with Transport(sleep=Sleeps()) as transport:
        upload = Upload(path, media_type="application/json")
        reply = transport.exchange(endpoint(server), WIRE, upload)
    assert reply.body == {"id": "batch-1"}
    assert [r.body for r in server.requests] == [path.read_bytes()] * 2
    assert server.last.headers["content-type"] == "application/json"


def _escaped(text: str) -> str:
    """`text` with every character a JSON `\\u` escape: the same string to any JSON reader."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (401, b'{"error": {"message": "Incorrect API key provided: Bearer sk-secret-123456"}}'),
        (500, b'{"error": {"message": "' + _escaped("Bearer sk-secret-123456").encode() + b'"}}'),
        (503, b"upstream said: Bearer sk-secret-123456"),
    ],
)
def test_a_provider_echoing_the_key_it_was_sent_never_puts_it_in_an_error(
    server: FakeServer, status: int, body: bytes
) -> None:
    """Found by a new-user trial: `outform generate` printed "answered HTTP 401: Incorrect API
    key provided: Bearer sk-…", the key written plainly or in `\\u` escapes."""
    server.reply(*[Reply(status=status, body=body)] * 3)
    with Transport(sleep=Sleeps()) as transport, pytest.raises(ProviderError) as caught:
        transport.send(Endpoint("fake", server.url, api_key=Secret("sk-secret-123456")), WIRE)
    shown = f"{caught.value} {caught.value.body} {caught.value!r}"
    assert "sk-secret" not in shown and "123456" not in shown


# -- answers that cannot be read (found by a new-user trial) -----------------------------------


@pytest.mark.parametrize("value", ["nan", "soon", "-3", "inf", "1e400", ""])
def test_a_malformed_retry_after_falls_back_to_the_usual_back_off(
    server: FakeServer, value: str
) -> None:
    """A `Retry-After` that is neither seconds nor a date raised ValueError out of outform."""
    server.reply(Reply(status=429, body={}, headers={"retry-after": value}))
    server.json({"ok": 1})
    sleeps = Sleeps()
    with Transport(sleep=sleeps, retry=RetryPolicy(retries=1, backoff=1.0)) as transport:
        assert transport.send(endpoint(server), WIRE) == {"ok": 1}
    (wait,) = sleeps.waits
    assert 0.5 <= wait <= 1.5  # the back-off's first wait


def test_a_body_its_content_encoding_does_not_decode_is_a_provider_error(
    server: FakeServer,
) -> None:
    """httpx.DecodingError left outform (the CLI said "a bug in outform")."""
    server.reply(Reply(body=b'{"ok": 1}', headers={"content-encoding": "gzip"}))
    with Transport(sleep=Sleeps()) as transport, pytest.raises(ProviderError) as caught:
        transport.send(endpoint(server), WIRE)
    assert "cannot be read" in caught.value.what and "DecodingError" in caught.value.what
    server.reply(
        Reply(events=[{"n": 1}], headers={"content-encoding": "gzip"}),
    )
    with Transport(sleep=Sleeps()) as transport, pytest.raises(StreamInterruptedError):
        list(transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")))


def test_a_key_quoted_in_a_stream_error_event_is_not_in_the_error(server: FakeServer) -> None:
    quoted = {"type": "error", "error": {"message": "Incorrect API key provided: sk-secret-123"}}
    server.stream([{"a": 1}, ("error", quoted)])
    with Transport() as transport, pytest.raises(StreamInterruptedError) as caught:
        list(transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")))
    assert "Incorrect API key" in caught.value.what
    assert "sk-secret-123" not in str(caught.value) + repr(caught.value.body)


def test_a_connection_failure_does_not_show_the_base_urls_password() -> None:
    dead = Endpoint("fake", "http://user:hunter2-secret@127.0.0.1:9/v1")
    with (
        Transport(sleep=Sleeps(), retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(ConnectionFailedError) as caught,
    ):
        transport.send(dead, WIRE)
    assert "hunter2" not in str(caught.value)
    assert "retried" not in str(caught.value)  # (no retry was allowed)


def test_a_compressed_body_is_read_once_and_bounded(server: FakeServer) -> None:
    import gzip

    answer = {"text": "x" * 5_000}
    server.reply(
        Reply(body=gzip.compress(orjson.dumps(answer)), headers={"content-encoding": "gzip"})
    )
    with Transport(sleep=Sleeps()) as transport:
        assert transport.send(endpoint(server), WIRE) == answer
    server.reply(
        Reply(body=gzip.compress(orjson.dumps(answer)), headers={"content-encoding": "gzip"})
    )
    with (
        Transport(sleep=Sleeps(), max_body_bytes=1_000) as transport,
        pytest.raises(ProviderError, match="max_body_bytes"),
    ):
        transport.send(endpoint(server), WIRE)  # (the size decoded counts)


def test_a_provider_that_keeps_the_connection_busy_is_stopped_at_the_total_timeout(
    server: FakeServer,
) -> None:
    """`timeout` is the idle limit: keep-alive comments every 50 ms, or a body sent a byte at
    a time, reset it forever (found by a trial). `total_timeout` bounds the whole answer."""
    keep_alive = [b": keep-alive\n\n"] * 400
    server.reply(Reply(events=[{"n": 1}, *keep_alive], pace=0.05))
    received = []
    with (
        Transport(total_timeout=0.5) as transport,
        pytest.raises(ConnectionFailedError, match="total timeout") as caught,
    ):
        for event in transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")):
            received.append(event)
    assert received == [{"n": 1}]
    assert caught.value.fix is not None and "total_timeout" in caught.value.fix
    server.reply(Reply(body={"text": "x" * 400}, pace=0.01))
    with (
        Transport(total_timeout=0.5, retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(ConnectionFailedError, match=r"total timeout of 0\.5 s"),
    ):
        transport.send(endpoint(server), WIRE)


@pytest.mark.parametrize(
    ("option", "value"),
    [("total_timeout", 0), ("total_timeout", float("nan")), ("max_body_bytes", 0)],
)
def test_the_limits_are_checked_when_the_transport_is_made(option: str, value: float) -> None:
    with pytest.raises(UsageError, match=option):
        Transport(**{option: value})  # type: ignore[arg-type]


def test_the_async_transport_stops_at_the_total_timeout_too(server: FakeServer) -> None:
    server.reply(Reply(events=[{"n": 1}, *[b": keep-alive\n\n"] * 400], pace=0.05))
    server.reply(Reply(body={"text": "x" * 400}, pace=0.01))

    async def main() -> None:
        async with AsyncTransport(total_timeout=0.5, retry=RetryPolicy(retries=0)) as transport:
            with pytest.raises(ConnectionFailedError, match="total timeout"):
                async for _ in transport.stream(
                    endpoint(server), WireRequest("/s", {}, stream="sse")
                ):
                    pass
            with pytest.raises(ConnectionFailedError, match="total timeout"):
                await transport.send(endpoint(server), WIRE)

    asyncio.run(main())


def test_a_key_cut_by_the_excerpt_leaves_no_part_of_it(server: FakeServer) -> None:
    """The body excerpt of an error was cut, then scrubbed: a key across the cut left its
    first characters, too few to be recognised (found while fixing the stream errors)."""
    body = {"error": {"message": "x" * 1_968 + " key: sk-secret-123 was refused"}}
    assert orjson.dumps(body).index(b"sk-secret-123") == 1_995  # across the 2,000th byte
    server.json(body, status=400)
    with Transport(sleep=Sleeps()) as transport, pytest.raises(BadRequestError) as caught:
        transport.send(endpoint(server), WIRE)
    assert caught.value.body is not None
    assert "sk-se" not in caught.value.body and "sk-secret-123" not in str(caught.value)


def test_a_stream_left_silent_names_the_idle_timeout(server: FakeServer) -> None:
    """Found by a trial: it said "broke off: ReadTimeout", naming no limit and no fix."""
    server.reply(Reply(events=[{"n": 1}, {"n": 2}], pace=2.0))
    with (
        Transport(timeout=0.3) as transport,
        pytest.raises(StreamInterruptedError, match=r"sent nothing for 0\.3 s") as caught,
    ):
        list(transport.stream(endpoint(server), WireRequest("/s", {}, stream="sse")))
    assert caught.value.fix is not None and "raise `timeout`" in caught.value.fix


# -- redirects and answers without a body (found by a new-user trial) --------------------------

SSE = WireRequest("/v1/chat", {}, stream="sse")


def _call(transport: Transport, server: FakeServer, streamed: bool, base: str = "") -> Any:
    where = Endpoint("fake", server.url + base, api_key=Secret("sk-secret-123"))
    return list(transport.stream(where, SSE)) if streamed else transport.send(where, WIRE)


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


@STREAMED
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_names_where_it_points_and_the_base_url_to_set(
    server: FakeServer, streamed: bool, status: int
) -> None:
    """A 307 was "a body that is not JSON" (streamed: "answered HTTP 307 with application/json
    instead" of a stream). outform does not follow it: following it would send the key to
    whatever address it names."""
    target = "https://user:hunter2@api.example.com/v1/v1/chat?key=sk-secret-123"
    server.reply(Reply(status=status, body=b"", headers={"location": target}))
    with Transport(sleep=Sleeps()) as transport, pytest.raises(ProviderError) as caught:
        _call(transport, server, streamed, "/v1")
    error = caught.value
    assert type(error) is ProviderError and error.status is None  # (no status to pass on)
    assert f"answered HTTP {status} (a redirect) to https://api.example.com/v1/v1/chat" in (
        error.what
    )
    assert error.fix is not None and "set base_url to https://api.example.com/v1," in error.fix
    shown = str(error) + repr(error.body)
    assert "hunter2" not in shown and "sk-secret" not in shown and "user" not in shown
    assert len(server.requests) == 1  # neither followed nor retried


def test_a_relative_redirect_is_resolved_and_an_unrelated_one_suggests_no_url(
    server: FakeServer,
) -> None:
    server.reply(Reply(status=308, body=b"", headers={"location": "/v2/v1/chat"}))
    server.reply(Reply(status=302, body=b"", headers={"location": "https://login.example"}))
    server.reply(Reply(status=307, body=b""))
    with Transport(sleep=Sleeps()) as transport:
        with pytest.raises(ProviderError) as caught:
            _call(transport, server, False, "/v1")
        assert f"to {server.url}/v2/v1/chat;" in caught.value.what
        assert caught.value.fix is not None
        assert f"set base_url to {server.url}/v2," in caught.value.fix
        with pytest.raises(ProviderError) as caught:
            _call(transport, server, False, "/v1")
        assert "to https://login.example;" in caught.value.what
        assert caught.value.fix is not None and "base_url to the provider's API" in (
            caught.value.fix
        )
        with pytest.raises(ProviderError, match="no Location header"):
            _call(transport, server, False)


@STREAMED
@pytest.mark.parametrize(("status", "body"), [(204, b""), (200, b""), (201, b" \r\n ")])
def test_an_answer_without_a_body_says_so(
    server: FakeServer, streamed: bool, status: int, body: bytes
) -> None:
    """A 204 was "a body that is not JSON" (streamed: not a stream, or no events at all)."""
    server.reply(Reply(status=status, body=body))
    with Transport(sleep=Sleeps()) as transport, pytest.raises(ProviderError) as caught:
        _call(transport, server, streamed)
    assert type(caught.value) is ProviderError
    assert f"answered HTTP {status} with no body" in caught.value.what


def test_an_event_stream_that_sends_nothing_says_so(server: FakeServer) -> None:
    server.stream([])
    with Transport() as transport, pytest.raises(ProviderError, match="HTTP 200 with no body"):
        list(transport.stream(endpoint(server), SSE))


def test_the_async_transport_refuses_redirects_and_empty_answers_too(server: FakeServer) -> None:
    server.reply(Reply(status=307, body=b"", headers={"location": "https://api.example.com/v1"}))
    server.reply(Reply(status=204, body=b""))
    server.reply(Reply(status=308, body=b"", headers={"location": "https://api.example.com/v1"}))
    server.stream([])

    async def main() -> list[str]:
        seen = []
        async with AsyncTransport(retry=RetryPolicy(retries=0)) as transport:
            for streamed in (False, False, True, True):
                with pytest.raises(ProviderError) as caught:
                    if streamed:
                        async for _ in transport.stream(endpoint(server), SSE):
                            pass
                    else:
                        await transport.send(endpoint(server), WIRE)
                seen.append(caught.value.what)
        return seen

    redirect, empty, streamed_redirect, streamed_empty = asyncio.run(main())
    assert "HTTP 307 (a redirect)" in redirect and "HTTP 308 (a redirect)" in streamed_redirect
    assert "HTTP 204 with no body" in empty and "HTTP 200 with no body" in streamed_empty


# -- what JSON is (found by a new-user trial) -------------------------------------------------

LONE = b'{"text": "x\\ud800y"}'
"""An escaped lone surrogate: valid JSON grammar (RFC 8259 allows any \\u escape), which
orjson refuses."""
BOM = b"\xef\xbb\xbf"


@pytest.mark.parametrize("framing", ["sse", "ndjson"])
def test_an_event_with_an_escaped_lone_surrogate_is_read(server: FakeServer, framing: Any) -> None:
    """It was refused as "a stream event that is not JSON": the reply it carries is the parse
    pipeline's to refuse, naming where the surrogate is."""
    frame = b"data: " + LONE + b"\n\n" if framing == "sse" else LONE + b"\n"
    server.stream([frame, *([b"data: [DONE]\n\n"] if framing == "sse" else [])], framing=framing)
    with Transport() as transport:
        events = list(transport.stream(endpoint(server), WireRequest("/s", {}, stream=framing)))
    assert events == [{"text": "x\ud800y"}]


def test_an_escaped_lone_surrogate_in_a_whole_body_is_read(server: FakeServer) -> None:
    server.reply(Reply(body=LONE))
    with Transport() as transport:
        assert transport.send(endpoint(server), WIRE) == {"text": "x\ud800y"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"text": "x\xed\xa0\x80y"}',  # a surrogate as UTF-8 bytes: not UTF-8, so not JSON
        b'{"text": "\\ud800", "n": NaN}',  # the second reader refuses what orjson refuses
        b'{"text": "\\ud800",}',
    ],
)
def test_what_is_not_json_stays_refused(server: FakeServer, body: bytes) -> None:
    server.reply(Reply(body=body))
    server.stream([b"data: " + body + b"\n\n"])
    with Transport() as transport:
        with pytest.raises(ProviderError, match="body that is not JSON"):
            transport.send(endpoint(server), WIRE)
        with pytest.raises(StreamInterruptedError, match="not JSON"):
            list(transport.stream(endpoint(server), SSE))


def test_a_byte_order_mark_before_a_body_or_an_event_is_dropped(server: FakeServer) -> None:
    """Each was refused as not JSON; one opening an SSE stream hid its first event's `data`
    field (`\\ufeffdata:`), and the event was lost without a word."""
    server.reply(Reply(body=BOM + b'{"ok": 1}'))
    server.stream([BOM + b'data: {"n": 1}\n\n', b'data: \xef\xbb\xbf{"n": 2}\n\n'])
    server.stream([BOM + b'{"n": 1}\n', BOM + b'{"n": 2}\n'], framing="ndjson")
    with Transport() as transport:
        assert transport.send(endpoint(server), WIRE) == {"ok": 1}
        assert list(transport.stream(endpoint(server), SSE)) == [{"n": 1}, {"n": 2}]
        ndjson = WireRequest("/s", {}, stream="ndjson")
        assert list(transport.stream(endpoint(server), ndjson)) == [{"n": 1}, {"n": 2}]


def test_a_byte_order_mark_split_across_chunks_is_dropped(server: FakeServer) -> None:
    server.stream([BOM[:1], BOM[1:2], BOM[2:] + b'data: {"n": 1}\n\n'])
    with Transport() as transport:
        assert list(transport.stream(endpoint(server), SSE)) == [{"n": 1}]
