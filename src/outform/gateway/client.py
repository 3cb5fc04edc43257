"""A lean HTTP/1.1 client for the gateway's hot path: one keep-alive pool, httptools parsing.

Why not httpx (which outform's transport uses for provider calls): in front of a backend that
answers at once, an httpx.AsyncClient cost about 0.7 ms of CPU per request and served about
300 requests/s at 64 concurrent clients on the 2-core benchmark machine; this client costs
about 0.1 ms and is never the bottleneck (benchmarks/bench_gateway.py). It does only what a
gateway needs: POST/GET with a body, keep-alive reuse, a connection cap, three timeouts
(`Timeouts`: connect, idle, total), back-pressure on streams, TLS. No proxies, no redirects,
no cookies, no HTTP/2.

The three limits, each named in the error that ends a wait:

* `connect`: opening the TCP (and TLS) connection;
* `idle`: the longest silence of the backend once it started answering, and, for a stream,
  before its headers too (a whole answer's first byte comes when the model is done, so only
  `total` bounds that wait);
* `total`: the whole exchange, from asking for a connection to the last byte.

A keep-alive connection the server closed while idle is detected when it is taken from the
pool; one closed under a request before any byte of the answer arrived is retried once on a
new connection (the server cannot have answered it).
"""

from __future__ import annotations

import asyncio
import math
import ssl
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Literal, cast
from urllib.parse import urlsplit

import httptools

from outform.gateway.settings import Timeouts

_HIGH_WATER = 256 * 1024
"""Bytes of a stream buffered before reading from the backend pauses."""


class BackendHTTPError(Exception):
    """The backend could not be reached, or its answer broke off."""


class BackendUnreachableError(BackendHTTPError):
    pass


Limit = Literal["connect", "idle", "total"]
Goal = Literal["headers", "chunk", "complete"]


class BackendTimeoutError(BackendHTTPError):
    """A wait ran past one of the `Timeouts`; `limit` says which."""

    def __init__(self, message: str, limit: Limit) -> None:
        super().__init__(message)
        self.limit: Limit = limit


class BackendClosedError(BackendHTTPError):
    """The connection closed (or the answer was not HTTP) before the answer was complete."""


class _Connection(asyncio.Protocol):
    """One TCP connection and the answer currently being read on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reused = False
        self.received = False
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.keep_alive = False
        self.headers_done = False
        self.complete = False
        self.error: BackendHTTPError | None = None
        self.streaming = False
        self.activity = 0.0
        """Loop time of the last bytes received (or of the request, before any)."""
        self.body: list[bytes] = []
        self.chunks: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._parser: httptools.HttpResponseParser | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._parser is not None and not self.complete and self.error is None:
            if self.headers_done and not any(
                name in (b"content-length", b"transfer-encoding") for name, _ in self.headers
            ):
                self.complete = True  # a body delimited by the end of the connection
            else:
                when = "in the middle of its answer" if self.received else "before answering"
                self.error = BackendClosedError(f"the backend closed the connection {when}")
        self._wake()

    def data_received(self, data: bytes) -> None:
        if self._parser is None:  # bytes nobody asked for: the connection is unusable
            self.close()
            return
        self.received = True
        self.activity = asyncio.get_running_loop().time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = BackendClosedError(f"the backend's answer is not valid HTTP: {exc}")
            self.close()
            self._wake()

    # -- httptools callbacks -----------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        self.status = self._parser.get_status_code()
        self.keep_alive = self._parser.should_keep_alive()
        self.headers_done = True
        self._wake()

    def on_body(self, body: bytes) -> None:
        if not self.streaming:
            self.body.append(body)
            return
        self.chunks.append(body)
        self._buffered += len(body)
        if self._buffered > _HIGH_WATER and not self._paused and self.transport is not None:
            self.transport.pause_reading()
            self._paused = True
        self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self._parser = None
        self._wake()

    # -- use -----------------------------------------------------------------------------------

    def start(self, streaming: bool) -> None:
        self.status = 0
        self.headers = []
        self.headers_done = self.complete = self.received = False
        self.error = None
        self.streaming = streaming
        self.body = []
        self.chunks.clear()
        self._buffered = 0
        self._parser = httptools.HttpResponseParser(self)
        self.activity = asyncio.get_running_loop().time()

    @property
    def reusable(self) -> bool:
        return self.complete and self.keep_alive and not self.closed and self.error is None

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self) -> None:
        if self.error is not None:
            raise self.error
        if self.closed:
            raise BackendClosedError("the backend closed the connection")
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.error is not None:
            raise self.error

    def ready(self, goal: Goal) -> bool:
        if goal == "headers":
            return self.headers_done
        if goal == "chunk":
            return bool(self.chunks) or self.complete
        return self.complete

    async def until(
        self, goal: Goal, timeouts: Timeouts, total_at: float, *, idle_first: bool
    ) -> None:
        """Wait until `goal` is reached, within `total_at` (loop time) and the idle limit:
        silences after the first byte, and also before it when `idle_first` (streams)."""
        loop = asyncio.get_running_loop()
        while not self.ready(goal):
            idle_at = self.activity + timeouts.idle if idle_first or self.received else math.inf
            when = min(total_at, idle_at)
            if loop.time() >= when:
                raise _timed_out("total" if total_at <= idle_at else "idle", timeouts)
            try:
                async with asyncio.timeout_at(when):
                    await self._wait()
            except TimeoutError:
                continue  # bytes may have come meanwhile: the deadlines are worked out again

    def pop_chunk(self) -> bytes:
        """The next piece of a streamed body (call when `chunks` is not empty)."""
        chunk = self.chunks.popleft()
        self._buffered -= len(chunk)
        if self._paused and self._buffered <= _HIGH_WATER // 2 and self.transport is not None:
            self.transport.resume_reading()
            self._paused = False
        return chunk


class Response:
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name: bytes, default: bytes = b"") -> bytes:
        return header_value(self.headers, name, default)


class StreamingResponse:
    """An answer whose body is read piece by piece; close it (or read it to the end)."""

    def __init__(
        self, client: HttpClient, conn: _Connection, timeouts: Timeouts, total_at: float
    ) -> None:
        self._client = client
        self._conn: _Connection | None = conn
        self._timeouts = timeouts
        self._total_at = total_at
        self.status = conn.status
        self.headers = conn.headers

    def header(self, name: bytes, default: bytes = b"") -> bytes:
        return header_value(self.headers, name, default)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            while (conn := self._conn) is not None:
                if not conn.chunks:
                    await conn.until("chunk", self._timeouts, self._total_at, idle_first=True)
                    if not conn.chunks:
                        break  # complete
                chunk = conn.pop_chunk()
                if chunk:
                    yield chunk
        finally:
            self.close()

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self])

    def close(self) -> None:
        """Give the connection back (reusable only if the answer was read to its end)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._client._release(conn)


class HttpClient:
    """A pool of keep-alive connections to one origin; paths are joined to the base URL's."""

    def __init__(
        self,
        base_url: str,
        *,
        timeouts: Timeouts,
        max_connections: int = 512,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeouts = timeouts
        self._ssl = ssl.create_default_context() if parts.scheme == "https" else None
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max_connections)
        default_port = self.port == (443 if self._ssl else 80)
        host = self.host if default_port else f"{self.host}:{self.port}"
        lines = [f"host: {host}", "user-agent: outform-gateway"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self._static = ("\r\n".join(lines) + "\r\n").encode("latin-1")

    async def request(
        self,
        method: bytes,
        path: str,
        body: bytes | None = None,
        *,
        accept: bytes = b"application/json",
    ) -> Response:
        """Send a request and read the whole answer within the timeouts (the wait for a free
        connection counts towards `total`)."""
        conn, _ = await self._exchange(method, path, body, accept, streaming=False)
        response = Response(conn.status, conn.headers, b"".join(conn.body))
        self._release(conn)
        return response

    async def stream(
        self,
        method: bytes,
        path: str,
        body: bytes | None = None,
        *,
        accept: bytes = b"text/event-stream",
    ) -> StreamingResponse:
        """Send a request and return once the answer's headers arrived; the connection (and
        its slot) belongs to the StreamingResponse from then on."""
        conn, total_at = await self._exchange(method, path, body, accept, streaming=True)
        return StreamingResponse(self, conn, self.timeouts, total_at)

    async def _exchange(
        self, method: bytes, path: str, body: bytes | None, accept: bytes, *, streaming: bool
    ) -> tuple[_Connection, float]:
        """Take a slot and a connection, send the request, and wait for the whole answer (or,
        streaming, its headers) within the timeouts. A stale keep-alive connection, closed
        before it saw any of the request, is replaced once. On success the caller owns the
        connection and its slot (and gets the loop time at which `total` runs out); on
        failure both are released here."""
        conn: _Connection | None = None
        slot = False
        timeouts = self.timeouts
        total_at = asyncio.get_running_loop().time() + timeouts.total
        try:
            if self._slots.locked():  # every connection is busy: wait, within `total`
                try:
                    async with asyncio.timeout_at(total_at):
                        await self._slots.acquire()
                except TimeoutError:
                    raise _timed_out("total", timeouts) from None
            else:
                await self._slots.acquire()
            slot = True
            for attempt in (0, 1):
                conn = await self._connection(total_at)
                conn.start(streaming=streaming)
                self._send(conn, method, path, body, accept)
                try:
                    goal: Goal = "headers" if streaming else "complete"
                    await conn.until(goal, timeouts, total_at, idle_first=streaming)
                except BackendClosedError:
                    if attempt == 0 and conn.reused and not conn.received:
                        continue  # a stale keep-alive connection: it never saw the request
                    raise
                return conn, total_at
        except BaseException:
            self._abandon(conn, slot)
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _abandon(self, conn: _Connection | None, slot: bool) -> None:
        if conn is not None:
            conn.close()
        if slot:
            self._slots.release()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- internals -----------------------------------------------------------------------------

    def _release(self, conn: _Connection) -> None:
        if conn.reusable:
            self._idle.append(conn)
        else:
            conn.close()
        self._slots.release()

    async def _connection(self, total_at: float) -> _Connection:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                conn.reused = True
                return conn
        loop = asyncio.get_running_loop()
        connect_at = loop.time() + self.timeouts.connect
        try:
            async with asyncio.timeout_at(min(connect_at, total_at)):
                _, conn = await loop.create_connection(
                    _Connection,
                    self.host,
                    self.port,
                    ssl=self._ssl,
                    server_hostname=self.host if self._ssl else None,
                )
        except TimeoutError:
            limit: Limit = "connect" if connect_at <= total_at else "total"
            raise _timed_out(limit, self.timeouts) from None
        except OSError as exc:
            raise BackendUnreachableError(
                f"cannot connect to the backend at {self.host}:{self.port}: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None
        return conn

    def _send(
        self, conn: _Connection, method: bytes, path: str, body: bytes | None, accept: bytes
    ) -> None:
        assert conn.transport is not None
        head = b"%s %s HTTP/1.1\r\n%saccept: %s\r\n" % (
            method,
            (self.prefix + path).encode("latin-1"),
            self._static,
            accept,
        )
        if body is None:
            conn.transport.write(head + b"\r\n")
        else:
            conn.transport.write(
                head
                + b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
                + body
            )


_LIMITS: dict[Limit, str] = {
    "connect": "could not connect within {:g} s (connect timeout, backend_connect_timeout)",
    "idle": "sent nothing for {:g} s (idle timeout, backend_idle_timeout)",
    "total": "did not finish its answer within {:g} s (total timeout, backend_timeout)",
}


def _timed_out(limit: Limit, timeouts: Timeouts) -> BackendTimeoutError:
    seconds = {"connect": timeouts.connect, "idle": timeouts.idle, "total": timeouts.total}
    return BackendTimeoutError(f"the backend {_LIMITS[limit].format(seconds[limit])}", limit)


def header_value(headers: list[tuple[bytes, bytes]], name: bytes, default: bytes) -> bytes:
    """The value of header `name` (lower case) in a parsed header list, or `default`."""
    for key, value in headers:
        if key == name:
            return value
    return default


__all__ = [
    "BackendClosedError",
    "BackendHTTPError",
    "BackendTimeoutError",
    "BackendUnreachableError",
    "HttpClient",
    "Response",
    "StreamingResponse",
    "Timeouts",
    "header_value",
]
