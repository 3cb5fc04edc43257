"""A real HTTP server on 127.0.0.1 that plays scripted provider replies and records requests.

Each test queues the replies it wants (`server.reply(...)`): a JSON body, a stream of events
framed as SSE, NDJSON or AWS event-stream, an error status with headers, or a connection that
drops part-way. The server answers them in order and keeps every request it received, so a
test can assert exactly what an adapter sent over the wire.
"""

from __future__ import annotations

import binascii
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import orjson

Framing = Literal["sse", "ndjson", "aws-event-stream"]


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    """A JSON value (encoded), or raw bytes."""
    events: Sequence[Any] | None = None
    """JSON values (encoded, framed), or bytes sent as they are (SSE, NDJSON)."""
    framing: Framing = "sse"
    headers: Mapping[str, str] = field(default_factory=dict)
    drop_after: int | None = None
    """Close the connection abruptly after this many events (or, without events, mid-body)."""
    delay: float = 0.0
    pace: float = 0.0
    """Seconds between two frames of a stream (between two halves of a body): a provider that
    keeps the connection busy without finishing."""
    stall_after: int | None = None
    """Go silent after this many events (or, without events, this many bytes of the body), the
    connection left open, until the server shuts down: a provider that stops sending without
    closing, for less time than any idle limit a test sets."""
    unanswered: bool = False
    """Send nothing at all (not even the status line) until the server shuts down."""
    ended_by_close: bool = False
    """Send a stream's frames as they are (not chunked), its end being the connection's close,
    as some servers do."""


class FakeServer:
    """Use as a context manager; `url` is the base URL to give the client."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        """Set when the server shuts down: it ends the stalls (`Reply.stall_after`)."""
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def reply(self, *replies: Reply, **fields: Any) -> None:
        """Queue replies (`Reply(...)` objects, or the fields of one as keywords)."""
        with self._lock:
            self._replies.extend(replies or (Reply(**fields),))

    def json(self, body: Any, status: int = 200, **fields: Any) -> None:
        self.reply(Reply(status=status, body=body, **fields))

    def stream(self, events: Sequence[Any], framing: Framing = "sse", **fields: Any) -> None:
        self.reply(Reply(events=events, framing=framing, **fields))

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def _next(self) -> Reply:
        with self._lock:
            if not self._replies:
                return Reply(status=599, body={"error": {"message": "no reply queued"}})
            return self._replies.popleft()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                server.requests.append(
                    Recorded(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                reply = server._next()
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.unanswered:
                    self._stall()
                    return
                if reply.events is not None:
                    self._stream(reply)
                else:
                    self._body(reply)

            def _body(self, reply: Reply) -> None:
                raw = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else json_bytes(reply.body if reply.body is not None else {})
                )
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if reply.stall_after is not None:
                    self.wfile.write(raw[: reply.stall_after])
                    self._stall()
                    return
                if reply.drop_after is not None:
                    self.wfile.write(raw[: len(raw) // 2])
                    self._drop()
                    return
                if reply.pace:
                    for byte in range(len(raw)):  # a byte at a time
                        self.wfile.write(raw[byte : byte + 1])
                        self.wfile.flush()
                        time.sleep(reply.pace)
                    return
                self.wfile.write(raw)

            def _unframed(self, reply: Reply) -> None:
                for index, frame in enumerate(_frames(reply)):
                    if reply.stall_after is not None and index >= reply.stall_after:
                        break
                    self.wfile.write(frame)
                if reply.stall_after is not None:
                    self._stall()

            def _stall(self) -> None:
                """Say nothing more until the server shuts down, then close the connection."""
                self.wfile.flush()
                server._closing.wait()
                self._drop()

            def _drop(self) -> None:
                """Cut the connection mid-reply (shutdown: the file objects keep it open)."""
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True

            def _stream(self, reply: Reply) -> None:
                content_type = {
                    "sse": "text/event-stream",
                    "ndjson": "application/x-ndjson",
                    "aws-event-stream": "application/vnd.amazon.eventstream",
                }[reply.framing]
                self.send_response(reply.status)
                self.send_header("content-type", content_type)
                if reply.ended_by_close:
                    self.send_header("connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("transfer-encoding", "chunked")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if reply.ended_by_close:
                    self._unframed(reply)
                    return
                for index, frame in enumerate(_frames(reply)):
                    if reply.stall_after is not None and index >= reply.stall_after:
                        self._stall()
                        return
                    if reply.drop_after is not None and index >= reply.drop_after:
                        self._drop()
                        return
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                    self.wfile.flush()
                    if reply.pace:
                        time.sleep(reply.pace)
                if reply.stall_after is not None:  # (every event sent: stall before the end)
                    self._stall()
                    return
                self.wfile.write(b"0\r\n\r\n")

        return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection the test cut on purpose ends with an error here: expected, not noise."""


def _frames(reply: Reply) -> Iterator[bytes]:
    for event in reply.events or ():
        if reply.framing == "sse":
            yield sse(event)
        elif reply.framing == "ndjson":
            yield bytes(event) if isinstance(event, bytes) else json_bytes(event) + b"\n"
        else:
            yield aws_event(event)


def sse(event: Any) -> bytes:
    """One SSE frame. A (name, data) pair gets an `event:` line; "[DONE]" is sent verbatim."""
    if isinstance(event, bytes):
        return bytes(event)
    if isinstance(event, tuple):
        name, data = event
        return b"event: " + str(name).encode() + b"\ndata: " + _data(data) + b"\n\n"
    return b"data: " + _data(event) + b"\n\n"


def _data(data: Any) -> bytes:
    return data.encode() if isinstance(data, str) else json_bytes(data)


def json_bytes(value: Any) -> bytes:
    """JSON of a reply: orjson's; for a value holding a lone surrogate (which orjson cannot
    write), the standard library's, which writes it as an escape (`"\\ud800"`), as a provider
    written in Python would send it."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


def aws_event(event: Any) -> bytes:
    """One AWS event-stream message: `{"eventName": payload}`, or an exception as
    `{"__exception__": name, "message": ...}`."""
    if "__exception__" in event:
        headers = {
            ":message-type": "exception",
            ":exception-type": event["__exception__"],
            ":content-type": "application/json",
        }
        payload = orjson.dumps({"message": event.get("message", "")})
    else:
        ((name, body),) = event.items()
        headers = {
            ":message-type": "event",
            ":event-type": name,
            ":content-type": "application/json",
        }
        payload = json_bytes(body)
    encoded = b"".join(
        struct.pack("!B", len(key))
        + key.encode()
        + struct.pack("!BH", 7, len(value))
        + value.encode()
        for key, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message) & 0xFFFFFFFF)
