"""HTTP for provider calls: connection reuse, timeouts, retries, streaming readers, signing.

Transport moves bytes. It knows nothing about schemas or about any provider's body: it sends a
`WireRequest` built by an adapter to an `Endpoint`, retries what is worth retrying (429, 5xx,
dropped connections; honouring `Retry-After`), and hands back JSON bodies or, for streams, JSON
events read from Server-Sent Events, NDJSON or the AWS event-stream framing. Credentials live
in `Endpoint` as `Secret`s, which never show in reprs, logs or errors.
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import random
import re
import socket
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    Awaitable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import urljoin, urlsplit

import httpx
import orjson

from outform import baseurl, jsontext
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
from outform.jsontext import dumps
from outform.providers.base import Auth, StreamFormat, WireRequest
from outform.providers.credentials import TokenSource
from outform.trace import redact

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
NOT_DONE = frozenset({408, 425, 429, 503, 529})
"""Answers that say the provider did not act on the request (timed out reading it, too early,
rate-limited, unavailable, overloaded): a call that must not be sent twice is retried on these
(`resend=False`), never on one that may have acted (500, 502, 504, 409, a lost answer)."""
_BODY_EXCERPT = 2_000


class Secret:
    """A credential: usable as a string where it is sent, shown as `***` everywhere else."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call one provider."""

    provider: str
    base_url: str
    auth: Auth = "bearer"
    api_key: Secret | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra headers that are not secret (versions, organisation ids)."""
    aws_region: str | None = None
    aws_service: str = "bedrock"
    tokens: TokenSource | None = field(default=None, repr=False)
    """For `auth="google"`: where the OAuth access token comes from."""

    def url(self, path: str) -> str:
        return self.base_url.rstrip("/") + "/" + path.lstrip("/")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2
    backoff: float = 0.5
    """First wait in seconds; doubled at each retry, with jitter."""
    max_wait: float = 30.0
    """Longest wait, also the cap on a Retry-After the provider asks for."""

    def wait(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_wait)
        base = self.backoff * 2.0**attempt
        jitter = 0.5 + random.random()  # spreads retries out; not cryptography
        return float(min(base * jitter, self.max_wait))


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from a `Retry-After` header (delta seconds or an HTTP date), or None when
    there is none or it is neither (`soon`, `nan`, a negative number): the usual back-off
    then applies."""
    value = headers.get("retry-after") or headers.get("retry-after-ms")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        return max(parsed.timestamp() - time.time(), 0.0)
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return (
        seconds / 1000 if "retry-after-ms" in headers and "retry-after" not in headers else seconds
    )


TOTAL_TIMEOUT = 600.0
"""Seconds one call's answer may take, from the call to its last byte (retries included)."""
MAX_BODY_BYTES = 64 * 1024 * 1024
"""Bytes a whole (not streamed) answer may hold."""


@dataclass(frozen=True)
class Limits:
    """The limits of one answer, enforced while it arrives: `timeout` (the idle limit, of
    httpx) alone lets a provider that keeps sending (keep-alive comments, a byte at a time)
    hold a call forever, and a whole answer is read into memory. The deadline is checked as
    each chunk arrives and at the end; a wait for the next byte is ended at the deadline by
    the transports (`_Watchdog`, `_before`), since httpx's timeouts apply to each read."""

    total_timeout: float = TOTAL_TIMEOUT
    max_body_bytes: int = MAX_BODY_BYTES

    @classmethod
    def checked(cls, total_timeout: float, max_body_bytes: int) -> Limits:
        if not (isinstance(total_timeout, int | float) and math.isfinite(total_timeout)) or (
            total_timeout <= 0
        ):
            raise UsageError(
                f"total_timeout must be a positive number of seconds, got {total_timeout!r}",
                where="total_timeout",
                fix="pass total_timeout=600.0, or more for long answers",
            )
        if not isinstance(max_body_bytes, int) or max_body_bytes < 1:
            raise UsageError(
                f"max_body_bytes must be a positive integer, got {max_body_bytes!r}",
                where="max_body_bytes",
                fix=f"pass max_body_bytes={MAX_BODY_BYTES}",
            )
        return cls(float(total_timeout), max_body_bytes)

    def deadline(self) -> float:
        return time.monotonic() + self.total_timeout

    @staticmethod
    def left(deadline: float) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(deadline - time.monotonic(), 0.0)

    @staticmethod
    def passed(deadline: float) -> bool:
        return time.monotonic() >= deadline

    def late(self, endpoint: Endpoint, *, reached: bool = True) -> ConnectionFailedError:
        """The error of a call that passed its deadline, whatever the provider was doing."""
        return ConnectionFailedError(
            f"{endpoint.provider} did not finish its answer within the total timeout of "
            f"{self.total_timeout:g} s (total_timeout)",
            provider=endpoint.provider,
            where=baseurl.shown(endpoint.base_url),
            fix="raise `total_timeout` (an argument of Transport) for longer answers",
            reached=reached,
        )

    def check(self, deadline: float, endpoint: Endpoint) -> None:
        if self.passed(deadline):
            raise self.late(endpoint)

    def in_time(
        self, chunks: Iterable[bytes], deadline: float, endpoint: Endpoint
    ) -> Iterator[bytes]:
        """The chunks of a stream, checked against the deadline as each arrives and at its
        end (an end read after the deadline is no answer in time)."""
        for chunk in chunks:
            self.check(deadline, endpoint)
            yield chunk
        self.check(deadline, endpoint)

    def read(self, chunks: Iterable[bytes], deadline: float, endpoint: Endpoint) -> bytes:
        """A whole body, its time and size checked as each chunk arrives, and at its end."""
        body = bytearray()
        for chunk in chunks:
            self._add(body, chunk, deadline, endpoint)
        self.check(deadline, endpoint)
        return bytes(body)

    async def aread(
        self, chunks: AsyncIterable[bytes], deadline: float, endpoint: Endpoint
    ) -> bytes:
        body = bytearray()
        async for chunk in chunks:
            self._add(body, chunk, deadline, endpoint)
        self.check(deadline, endpoint)
        return bytes(body)

    def _add(self, body: bytearray, chunk: bytes, deadline: float, endpoint: Endpoint) -> None:
        self.check(deadline, endpoint)
        body += chunk
        if len(body) > self.max_body_bytes:
            raise ProviderError(
                f"{endpoint.provider} answered with a body over {self.max_body_bytes:,} bytes "
                "(max_body_bytes); the rest was not read",
                provider=endpoint.provider,
                where=baseurl.shown(endpoint.base_url),
                fix="raise `max_body_bytes` (an argument of Transport), or ask for a shorter "
                "answer",
            )


@dataclass(frozen=True)
class Upload:
    """What to send instead of the JSON body: bytes, or a file read as it is sent (a batch
    input file of hundreds of MB costs no memory), as the whole body (`field` None) or as one
    file of a multipart form whose other fields are the request's body (`field` its name).
    Either way the body has a Content-Length."""

    content: bytes | Path
    media_type: str = "application/octet-stream"
    field: str | None = None
    filename: str = "file"


@dataclass
class CallStats:
    """What the transport saw of one call, filled in as it goes, for the caller's records
    (trace events): the HTTP `status` of the last answer (None while none came), the
    `retries` made before it, and when the last attempt was sent (`time.perf_counter()`), so
    that latency leaves out the waits between retries. Nothing about the request's body."""

    status: int | None = None
    retries: int = 0
    sent_at: float | None = None


@dataclass(frozen=True)
class Reply:
    """A JSON reply with its headers (rate limits, upload URLs, request ids)."""

    body: Mapping[str, Any]
    headers: Mapping[str, str]


class Transport:
    """Synchronous transport over one pooled httpx client."""

    def __init__(
        self,
        *,
        timeout: float = 120.0,
        total_timeout: float = TOTAL_TIMEOUT,
        max_body_bytes: int = MAX_BODY_BYTES,
        retry: RetryPolicy = RetryPolicy(),
        client: httpx.Client | None = None,
        sleep: Any = time.sleep,
    ) -> None:
        self.retry = retry
        self.limits = Limits.checked(total_timeout, max_body_bytes)
        self._client = client or httpx.Client(timeout=httpx.Timeout(timeout, connect=10.0))
        self._sleep = sleep

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        *,
        stats: CallStats | None = None,
        resend: bool = True,
    ) -> Mapping[str, Any]:
        """POST the request and return the decoded JSON body (`stats`: filled in; `resend`:
        see `exchange`)."""
        return self.exchange(endpoint, wire, stats=stats, resend=resend).body

    def exchange(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        upload: Upload | None = None,
        *,
        stats: CallStats | None = None,
        resend: bool = True,
    ) -> Reply:
        """Send the request (or `upload` in place of its body); the JSON body and headers.
        `resend=False`: a call that must not be sent twice (it makes something, and may cost
        money) is retried only when no attempt can have acted on it: the connection was never
        made, or the provider answered that it did nothing (`NOT_DONE`). An attempt that may
        have reached it (its answer lost or cut, a timeout, a 500) is the caller's to settle:
        ConnectionFailedError with `reached`, or the status's error."""
        with contextlib.ExitStack() as stack:
            source = _Source(upload, stack)
            response = self._with_retries(
                endpoint, wire, stream=False, upload=source, stats=stats, resend=resend
            )
            return Reply(_json_body(endpoint, response), dict(response.headers))

    def lines(self, endpoint: Endpoint, wire: WireRequest) -> Generator[bytes, None, None]:
        """The lines of a downloaded text body (JSONL results), read as they arrive, so that a
        file of any size passes in constant memory. Retries only before the first byte."""
        response = self._with_retries(endpoint, wire, stream=True, deadline=math.inf)
        buffer = b""
        try:
            for chunk in response.iter_bytes():  # (a download: no total timeout, no size cap)
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                yield from (line for line in complete if line.strip())
            if buffer.strip():
                yield buffer
        except httpx.RequestError as exc:  # (a TransportError, or a body not decodable)
            raise StreamInterruptedError(
                f"the {endpoint.provider} download broke off: {type(exc).__name__}",
                provider=endpoint.provider,
                fix="download it again; nothing read so far is lost",
            ) from None
        finally:
            response.close()

    def stream(
        self, endpoint: Endpoint, wire: WireRequest, *, stats: CallStats | None = None
    ) -> Generator[Mapping[str, Any], None, None]:
        """Events of a streamed reply. Retries only before the first event arrives."""
        deadline = self.limits.deadline()
        response = self._with_retries(endpoint, wire, stream=True, stats=stats, deadline=deadline)
        try:
            with _Watchdog(response, deadline):
                if not _is_stream(wire.stream, response):
                    head = next(response.iter_bytes(_BODY_EXCERPT + 1), b"")
                    raise _not_a_stream(endpoint, wire.stream, response, head)
                chunks = self.limits.in_time(response.iter_bytes(), deadline, endpoint)
                yield from _events(endpoint, wire.stream, chunks, response.status_code)
        except httpx.RequestError as exc:  # (a TransportError, or a body not decodable)
            if self.limits.passed(deadline):  # (the watchdog cut the connection)
                raise self.limits.late(endpoint) from None
            raise _broken_stream(endpoint, exc, self._client.timeout) from None
        finally:
            response.close()

    def _with_retries(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        *,
        stream: bool,
        upload: _Source | None = None,
        stats: CallStats | None = None,
        deadline: float | None = None,
        resend: bool = True,
    ) -> Any:
        """The answer (a whole body read, or a stream's headers), by `deadline` (the call's;
        a new one by default; `math.inf` for a download, which has none). `resend`: see
        `exchange`."""
        attempt = 0
        reached = False  # whether any attempt may have reached the provider
        deadline = self.limits.deadline() if deadline is None else deadline
        while True:
            if self.limits.passed(deadline):  # (a retry's wait ended at the deadline)
                raise self.limits.late(endpoint, reached=reached)
            token = endpoint.tokens.headers() if endpoint.tokens is not None else None
            request = _within(_build(self._client, endpoint, wire, token, upload), deadline)
            _sending(stats, attempt)
            try:
                response = self._client.send(request, stream=True)
                if not stream and response.status_code < 400:
                    # A whole answer is read here, so that a body broken off is retried; in
                    # chunks, so that its size and its time are bounded as it arrives.
                    response = _read(response, self._whole(response, deadline, endpoint))
            except httpx.TransportError as exc:
                reached = reached or not isinstance(exc, _NOT_SENT)
                if self.limits.passed(deadline):  # (a wait cut at the deadline: see _within)
                    raise self.limits.late(endpoint, reached=reached) from None
                if attempt >= self.retry.retries or (reached and not resend):
                    raise _connection_failed(
                        endpoint, exc, self._client.timeout, reached, retried=attempt > 0
                    ) from None
                self._sleep(min(self.retry.wait(attempt, None), self.limits.left(deadline)))
                attempt += 1
                continue
            except httpx.RequestError as exc:  # an answer httpx cannot read (see _unreadable)
                raise _unreadable(endpoint, exc) from None
            if stats is not None:
                stats.status = response.status_code
            if _is_redirect(response.status_code):
                response.close()
                raise _redirected(endpoint, wire, response)
            if response.status_code < 400:
                return response
            reached = True
            status = response.status_code
            asked = retry_after(response.headers)
            left = self.limits.left(deadline)
            retrying = (
                status in _RETRY_STATUS
                and attempt < self.retry.retries
                and (resend or status in NOT_DONE)
            )
            if retrying and not _past(asked, left):
                wait = self.retry.wait(attempt, asked)
                response.close()
                self._sleep(min(wait, left))
                attempt += 1
                continue
            try:
                body = self._whole(response, deadline, endpoint)
            except httpx.TransportError as exc:
                if self.limits.passed(deadline):
                    raise self.limits.late(endpoint) from None
                raise _connection_failed(endpoint, exc, self._client.timeout) from None
            error = _status_error(endpoint, response.status_code, body, response.headers)
            if retrying and asked is not None:  # (not retried: the wait ends past the deadline)
                error = _waits_past_deadline(error, asked, left, self.limits)
            raise error

    def _whole(self, response: httpx.Response, deadline: float, endpoint: Endpoint) -> bytes:
        """A whole body, read in chunks within the deadline and the size limit; closed."""
        try:
            with _Watchdog(response, deadline):
                return self.limits.read(response.iter_bytes(), deadline, endpoint)
        finally:
            response.close()


class AsyncTransport:
    """The same, on an httpx.AsyncClient."""

    def __init__(
        self,
        *,
        timeout: float = 120.0,
        total_timeout: float = TOTAL_TIMEOUT,
        max_body_bytes: int = MAX_BODY_BYTES,
        retry: RetryPolicy = RetryPolicy(),
        client: httpx.AsyncClient | None = None,
        sleep: Any = None,
    ) -> None:
        import anyio

        self.retry = retry
        self.limits = Limits.checked(total_timeout, max_body_bytes)
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0))
        self._sleep = sleep or anyio.sleep

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> AsyncTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def send(
        self, endpoint: Endpoint, wire: WireRequest, *, stats: CallStats | None = None
    ) -> Mapping[str, Any]:
        deadline = self.limits.deadline()
        response = await self._with_retries(endpoint, wire, deadline, stream=False, stats=stats)
        return _json_body(endpoint, response)

    async def stream(
        self, endpoint: Endpoint, wire: WireRequest, *, stats: CallStats | None = None
    ) -> AsyncGenerator[Mapping[str, Any], None]:
        deadline = self.limits.deadline()
        response = await self._with_retries(endpoint, wire, deadline, stream=True, stats=stats)
        reader = _EventReader(endpoint, wire.stream, response.status_code)
        try:
            if not _is_stream(wire.stream, response):
                start = anext(aiter(response.aiter_bytes(_BODY_EXCERPT + 1)), b"")
                head = await self._before(deadline, endpoint, start)
                raise _not_a_stream(endpoint, wire.stream, response, head)
            chunks = response.aiter_bytes()
            while (
                chunk := await self._before(deadline, endpoint, anext(chunks, None))
            ) is not None:
                self.limits.check(deadline, endpoint)
                for event in reader.feed(chunk):
                    yield event
            self.limits.check(deadline, endpoint)
            for event in reader.finish():
                yield event
        except httpx.RequestError as exc:  # (a TransportError, or a body not decodable)
            if self.limits.passed(deadline):  # (an httpx timeout just at the deadline)
                raise self.limits.late(endpoint) from None
            raise _broken_stream(endpoint, exc, self._client.timeout) from None
        finally:
            await response.aclose()

    async def _with_retries(
        self,
        endpoint: Endpoint,
        wire: WireRequest,
        deadline: float,
        *,
        stream: bool,
        stats: CallStats | None = None,
    ) -> Any:
        attempt = 0
        reached = False  # whether any attempt may have reached the provider
        while True:
            if self.limits.passed(deadline):  # (a retry's wait ended at the deadline)
                raise self.limits.late(endpoint, reached=reached)
            request = _build(self._client, endpoint, wire, await _token_headers(endpoint))
            _sending(stats, attempt)
            try:
                response = await self._before(
                    deadline, endpoint, self._client.send(request, stream=True)
                )
                if not stream and response.status_code < 400:
                    response = _read(response, await self._whole(response, deadline, endpoint))
            except httpx.TransportError as exc:
                reached = reached or not isinstance(exc, _NOT_SENT)
                if self.limits.passed(deadline):  # (an httpx timeout just at the deadline)
                    raise self.limits.late(endpoint, reached=reached) from None
                if attempt >= self.retry.retries:
                    raise _connection_failed(
                        endpoint, exc, self._client.timeout, reached, retried=attempt > 0
                    ) from None
                await self._sleep(min(self.retry.wait(attempt, None), self.limits.left(deadline)))
                attempt += 1
                continue
            except httpx.RequestError as exc:  # an answer httpx cannot read (see _unreadable)
                raise _unreadable(endpoint, exc) from None
            if stats is not None:
                stats.status = response.status_code
            if _is_redirect(response.status_code):
                await response.aclose()
                raise _redirected(endpoint, wire, response)
            if response.status_code < 400:
                return response
            reached = True
            asked = retry_after(response.headers)
            left = self.limits.left(deadline)
            retrying = response.status_code in _RETRY_STATUS and attempt < self.retry.retries
            if retrying and not _past(asked, left):
                wait = self.retry.wait(attempt, asked)
                await response.aclose()
                await self._sleep(min(wait, left))
                attempt += 1
                continue
            try:
                body = await self._whole(response, deadline, endpoint)
            except httpx.TransportError as exc:
                if self.limits.passed(deadline):
                    raise self.limits.late(endpoint) from None
                raise _connection_failed(endpoint, exc, self._client.timeout) from None
            error = _status_error(endpoint, response.status_code, body, response.headers)
            if retrying and asked is not None:  # (not retried: the wait ends past the deadline)
                error = _waits_past_deadline(error, asked, left, self.limits)
            raise error

    async def _whole(self, response: httpx.Response, deadline: float, endpoint: Endpoint) -> bytes:
        """A whole body (as the synchronous transport reads it: see there); closed."""
        try:
            return await self._before(
                deadline, endpoint, self.limits.aread(response.aiter_bytes(), deadline, endpoint)
            )
        finally:
            await response.aclose()

    async def _before(self, deadline: float, endpoint: Endpoint, waiting: Awaitable[_T]) -> _T:
        """What `waiting` gives, or the total timeout's error at the deadline: httpx's timeouts
        apply to each read, so a provider silent for less would hold the call past it."""
        import anyio

        at = anyio.current_time() + self.limits.left(deadline)
        with anyio.CancelScope(deadline=at):
            return await waiting
        raise self.limits.late(endpoint)


# -- requests ------------------------------------------------------------------------------


def _read(response: httpx.Response, body: bytes) -> httpx.Response:
    """`response`, its body read (as httpx's own reading leaves it: decoded, so without the
    `Content-Encoding` that would decode it again)."""
    headers = httpx.Headers(response.headers)
    for name in ("content-encoding", "content-length"):
        headers.pop(name, None)
    return httpx.Response(
        response.status_code, headers=headers, content=body, request=response.request
    )


def _sending(stats: CallStats | None, attempt: int) -> None:
    if stats is not None:
        stats.status, stats.retries, stats.sent_at = None, attempt, time.perf_counter()


def _within(request: httpx.Request, deadline: float) -> httpx.Request:
    """`request`, each of its waits (for a connection, to connect, to send, for a byte) no
    longer than the time left: until its headers come, no watchdog can cut the connection."""
    if math.isinf(deadline):
        return request
    left = max(deadline - time.monotonic(), 0.001)  # (0 would make the socket non-blocking)
    timeouts = request.extensions.get("timeout", {})
    request.extensions["timeout"] = {
        name: left if seconds is None else min(seconds, left) for name, seconds in timeouts.items()
    }
    return request


class _Watchdog:
    """Cuts a response's connection at the deadline, while the synchronous transport reads it.

    httpx's read timeout applies to each read: a provider silent for less than it would hold
    the read, and the call, past the deadline. At the deadline the socket is shut down (from
    the timer's thread), which ends the blocked read at once, as an error or the end of the
    body; the reader then sees the deadline passed and raises the total timeout's error. A
    connection shut down so is not reused (httpcore drops an idle connection that reads its
    end). Without a socket (a client with another transport), only the checks as bytes
    arrive remain."""

    def __init__(self, response: httpx.Response, deadline: float) -> None:
        self._response = response
        self._deadline = deadline
        self._timer: threading.Timer | None = None
        if not math.isinf(deadline) and _socket(response) is not None:
            self._timer = threading.Timer(max(deadline - time.monotonic(), 0.0), self._fire)
            self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _fire(self) -> None:
        time.sleep(max(self._deadline - time.monotonic(), 0.0))  # (never before the deadline)
        sock = _socket(self._response)
        if sock is not None and not self._response.is_closed:
            with contextlib.suppress(OSError):  # (closed meanwhile: nothing left to cut)
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # (a TLS socket's too: its TCP)


def _socket(response: httpx.Response) -> socket.socket | None:
    """The socket a response arrives on (httpcore's network stream's), if any."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None


_T = TypeVar("_T")


async def _token_headers(endpoint: Endpoint) -> dict[str, str] | None:
    """The token source's headers; fetching a token blocks, so it runs in a worker thread."""
    tokens = endpoint.tokens
    if tokens is None:
        return None
    cached = tokens.cached()
    if cached is not None:
        return cached
    import anyio.to_thread

    return await anyio.to_thread.run_sync(tokens.headers)


class _Source:
    """An upload's content for one attempt after another: its bytes, or its file opened
    once (closed with `stack`) and read from the start again by each attempt."""

    def __init__(self, upload: Upload | None, stack: contextlib.ExitStack) -> None:
        self.upload = upload
        content = upload.content if upload is not None else b""
        self._file = stack.enter_context(content.open("rb")) if isinstance(content, Path) else None

    def content(self) -> bytes | BinaryIO:
        if self._file is None:
            assert self.upload is not None and isinstance(self.upload.content, bytes)
            return self.upload.content
        self._file.seek(0)
        return self._file


def _build(
    client: httpx.Client | httpx.AsyncClient,
    endpoint: Endpoint,
    wire: WireRequest,
    token: Mapping[str, str] | None = None,
    source: _Source | None = None,
) -> Any:
    headers = {"content-type": "application/json", "accept": _accept(wire.stream)}
    body: bytes | BinaryIO = b"" if wire.method in ("GET", "DELETE") else dumps(wire.body)
    files: Any = None
    upload = source.upload if source is not None else None
    if source is not None and upload is not None and upload.field is not None:
        # multipart: httpx writes the boundary; the JSON body's fields become form fields
        del headers["content-type"]
        files = {upload.field: (upload.filename, source.content(), upload.media_type)}
    elif source is not None and upload is not None:
        body = source.content()
        headers["content-type"] = upload.media_type
    headers.update(endpoint.headers)
    headers.update(wire.headers)
    url = endpoint.url(wire.path)
    if files is not None:
        data = {k: str(v) for k, v in wire.body.items()}
        request = client.build_request(wire.method, url, data=data, files=files, headers=headers)
        _authorize(endpoint, request.headers, token)
        return request
    if body == b"":
        del headers["content-type"]
    if endpoint.auth == "sigv4":
        if not isinstance(body, bytes):  # the signature covers the body: read it (no caller
            body = body.read()  # uploads a file through SigV4; Bedrock's input goes to S3)
        headers = _sigv4(endpoint, wire.method, url, body, headers)
    else:
        _authorize(endpoint, headers, token)
    # a file goes as httpx reads it, in 64 KiB pieces, with its size as Content-Length
    return client.build_request(wire.method, url, content=body or None, headers=headers)


def _authorize(endpoint: Endpoint, headers: Any, token: Mapping[str, str] | None) -> None:
    """Put the key where the provider wants it (not for SigV4, which signs the whole request)."""
    key = endpoint.api_key.reveal() if endpoint.api_key is not None else None
    if endpoint.auth == "bearer" and key:
        headers["authorization"] = f"Bearer {key}"
    elif endpoint.auth == "x-api-key" and key:
        headers["x-api-key"] = key
    elif endpoint.auth == "x-goog-api-key" and key:
        headers["x-goog-api-key"] = key
    elif endpoint.auth == "google":
        if token is None:
            raise AuthenticationError(
                f"{endpoint.provider} needs Google credentials and the endpoint has none",
                provider=endpoint.provider,
                fix="resolve the model through outform's registry, or give the Endpoint tokens=",
            )
        headers.update(token)


def _accept(stream: StreamFormat | None) -> str:
    if stream == "sse":
        return "text/event-stream"
    if stream == "aws-event-stream":
        return "application/vnd.amazon.eventstream"
    if stream == "ndjson":
        return "application/x-ndjson"
    return "application/json"


def _sigv4(
    endpoint: Endpoint, method: str, url: str, body: bytes, headers: dict[str, str]
) -> dict[str, str]:
    """Sign with AWS SigV4 through botocore; credentials come from the standard chain
    (environment, shared config and credentials files, SSO, instance roles)."""
    try:
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
    except ImportError:  # pragma: no cover - botocore is an optional extra
        raise ConnectionFailedError(
            "calling Bedrock needs botocore",
            provider=endpoint.provider,
            fix="pip install 'outform[bedrock]'",
        ) from None
    session = botocore.session.get_session()
    credentials = session.get_credentials()
    if credentials is None:
        raise AuthenticationError(
            "no AWS credentials found",
            provider=endpoint.provider,
            fix="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE",
        )
    region = endpoint.aws_region or session.get_config_variable("region") or "us-east-1"
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    SigV4Auth(credentials.get_frozen_credentials(), endpoint.aws_service, region).add_auth(request)
    return dict(request.headers.items())


# -- responses -----------------------------------------------------------------------------


def _json_body(endpoint: Endpoint, response: httpx.Response) -> Mapping[str, Any]:
    content = response.content
    if not content.strip():
        raise _no_body(endpoint, response.status_code)
    try:
        body = _json_value(content)
    except ValueError:
        raise ProviderError(
            f"{endpoint.provider} answered with a body that is not JSON",
            provider=endpoint.provider,
            body=_excerpt(content, endpoint),
        ) from None
    if not isinstance(body, dict):
        raise ProviderError(
            f"{endpoint.provider} answered with JSON that is not an object",
            provider=endpoint.provider,
            body=_excerpt(content, endpoint),
        )
    return body


_BOM = b"\xef\xbb\xbf"
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A `\\u` escape of a UTF-16 surrogate (D800 to DFFF), paired or not."""


def _json_value(data: bytes) -> Any:
    """The JSON value of a body or a stream event (raises ValueError when it is none).

    A UTF-8 byte order mark before it is no part of it, and is dropped. A lone surrogate
    written as an escape (`"\\ud800"`) is valid JSON grammar, which orjson refuses: such a
    text is read again by the standard library's reader (only then: orjson is the fast path),
    so that the reply it carries reaches the parse pipeline, which refuses the lone surrogate
    with its own error naming where it is. Invalid UTF-8 is not JSON, and is refused."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if not _SURROGATE_ESCAPE.search(data):
            raise
    try:
        return jsontext.loads_exact(data.decode("utf-8"))
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        raise ValueError("not JSON") from None


def _excerpt(content: bytes, endpoint: Endpoint | None = None) -> str:
    """The start of a body, scrubbed, then cut (scrubbed first, so that a cut cannot leave
    part of a key too short to be recognised: a margin past the cut holds any key whole)."""
    text = hide_secrets(content[: _BODY_EXCERPT + _KEY_MARGIN].decode("utf-8", "replace"), endpoint)
    return text[:_BODY_EXCERPT] + ("…" if len(content) > _BODY_EXCERPT else "")


_KEY_MARGIN = 512
"""Characters read past an excerpt's cut before scrubbing: longer than any API key."""


def hide_secrets(text: str, endpoint: Endpoint | None) -> str:
    """`text`, from a provider's reply, without a secret: the endpoint's key and every secret
    outform knows (`trace.redact`), which a provider may echo in an error ("Incorrect API key
    provided: Bearer sk-..."). A JSON text that escapes characters (`\\u0042` for `B`) is
    written out plainly first, so that no escape hides one."""
    if "\\u" in text or "\\/" in text:
        try:
            # (written again once: orjson writes no `\/`, and `\u` only for control characters)
            text = orjson.dumps(orjson.loads(text)).decode()
        except orjson.JSONDecodeError:
            # An excerpt cut short: its escapes are read one by one (`\/` is JSON's escape of
            # `/`, which keys of some providers hold).
            text = _UNICODE_ESCAPE.sub(_unescaped, text).replace("\\/", "/")
    key = endpoint.api_key.reveal() if endpoint is not None and endpoint.api_key else ""
    if len(key) >= 8 and key in text:
        text = text.replace(key, "***")
    return redact.scrub_text(text)


_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def _unescaped(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char.isprintable() and char not in '"\\' else match.group()


def _status_error(
    endpoint: Endpoint, status: int, body: bytes, headers: httpx.Headers
) -> ProviderError:
    excerpt = _excerpt(body, endpoint)
    what = f"{endpoint.provider} answered HTTP {status}: {hide_secrets(_message(body), endpoint)}"
    if status in (401, 403):
        return AuthenticationError(
            what,
            provider=endpoint.provider,
            status=status,
            body=excerpt,
            fix="check the API key (or AWS credentials) and its permissions",
        )
    if status == 429:
        return RateLimitError(
            what,
            provider=endpoint.provider,
            status=status,
            body=excerpt,
            retry_after=retry_after(headers),
            fix="slow down, or raise the retry budget; the provider's limit was reached",
        )
    if status >= 500:
        return ServerError(what, provider=endpoint.provider, status=status, body=excerpt)
    return BadRequestError(what, provider=endpoint.provider, status=status, body=excerpt)


def _past(asked: float | None, left: float) -> bool:
    """Whether the wait a provider asked for (Retry-After) ends past the call's deadline."""
    return asked is not None and asked > left


def _waits_past_deadline(
    error: ProviderError, asked: float, left: float, limits: Limits
) -> ProviderError:
    """The error of an answer that would have been retried but for its Retry-After, which
    ends past the call's deadline: raised at once, as what it is (a RateLimitError for a
    429), naming both; waiting would have ended in a timeout that never named the limit."""
    return type(error)(
        f"{error.what}; it asked to wait {asked:g} s (Retry-After), past the end of the "
        f"call's total timeout of {limits.total_timeout:g} s ({left:.3g} s left): not retried",
        provider=error.provider,
        status=error.status,
        body=error.body,
        where=error.where,
        retry_after=asked,
        fix=f"call again in {asked:g} s, or raise `total_timeout` (an argument of Transport) "
        "above the wait for the call to wait it out",
    )


def _message(body: bytes) -> str:
    """The provider's own error message, whichever of the usual shapes it comes in."""
    try:
        data = _json_value(body)
    except ValueError:
        return _excerpt(body)[:300] or "(empty body)"
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            for key in ("message", "Message", "detail", "error"):
                if isinstance(error.get(key), str):
                    return str(error[key])
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return str(data["message"])
    return _excerpt(body)[:300]


_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout)
"""Failures before a connection existed: the request cannot have reached the provider."""


def _connection_failed(
    endpoint: Endpoint,
    exc: httpx.TransportError,
    timeout: httpx.Timeout,
    reached: bool = True,
    *,
    retried: bool = True,
) -> ConnectionFailedError:
    where = baseurl.shown(endpoint.base_url)  # (no credentials or query in a message)
    if isinstance(exc, httpx.TimeoutException):
        limit = timeout.connect if isinstance(exc, httpx.ConnectTimeout) else timeout.read
        waited = "connect" if isinstance(exc, httpx.ConnectTimeout) else "send a byte"
        again = "; the call was retried before giving up" if retried else ""
        return ConnectionFailedError(
            f"{endpoint.provider} did not {waited} within the timeout of {limit:g} s "
            f"({type(exc).__name__}{again})",
            provider=endpoint.provider,
            where=where,
            fix="raise `timeout` (an argument of Transport), or check that the provider is up",
            reached=reached,
        )
    again = "; the call was retried before giving up" if retried else ""
    return ConnectionFailedError(
        f"the connection to {endpoint.provider} failed: {type(exc).__name__}",
        provider=endpoint.provider,
        where=where,
        fix=f"check the base URL and the network{again}",
        reached=reached,
    )


def _broken_stream(
    endpoint: Endpoint, exc: httpx.RequestError, timeout: httpx.Timeout
) -> StreamInterruptedError:
    """A stream that broke off; one the provider left silent past the idle limit says so."""
    if isinstance(exc, httpx.ReadTimeout):
        return StreamInterruptedError(
            f"the {endpoint.provider} stream sent nothing for {timeout.read:g} s (ReadTimeout: "
            "the idle timeout)",
            provider=endpoint.provider,
            fix="the reply so far is incomplete; retry the call, or raise `timeout` (an "
            "argument of Transport) if the provider thinks long between parts",
        )
    return StreamInterruptedError(
        f"the {endpoint.provider} stream broke off: {type(exc).__name__}",
        provider=endpoint.provider,
        fix="the reply so far is incomplete; retry the call",
    )


def _is_redirect(status: int) -> bool:
    return 300 <= status < 400


def _redirected(endpoint: Endpoint, wire: WireRequest, response: httpx.Response) -> ProviderError:
    """A redirect (301, 302, 303, 307, 308...): outform does not follow one, since following
    it would send the key to whatever address it names. The error names where it points
    (without credentials or query) and, when it points at the same API path elsewhere (http
    to https, a new host or prefix), the base URL that reaches it."""
    status = response.status_code
    location = response.headers.get("location", "").strip()
    where = baseurl.shown(endpoint.base_url)
    if not location:
        return ProviderError(
            f"{endpoint.provider} answered HTTP {status} (a redirect) without saying where to "
            "(no Location header)",
            provider=endpoint.provider,
            where=where,
            fix="check the base URL: it must be the provider's API itself (outform does not "
            "follow redirects, which would send the key elsewhere)",
        )
    target = urljoin(str(response.request.url), location)
    shown = hide_secrets(baseurl.shown(target), endpoint)
    suggested = _base_at(target, wire.path)
    fix = (
        f"set base_url to {suggested}"
        if suggested is not None
        else "set base_url to the provider's API at the address the redirect points at"
    )
    return ProviderError(
        f"{endpoint.provider} answered HTTP {status} (a redirect) to {shown}; outform does not "
        "follow redirects, which would send the key to another address",
        provider=endpoint.provider,
        where=where,
        fix=f"{fix}, once you have checked that it is the provider's",
    )


def _base_at(target: str, path: str) -> str | None:
    """The base URL that joined to `path` (a call's API path) gives `target` (where a redirect
    points), without credentials or query; None when `target` does not end with that path or
    is no base URL."""
    parts = urlsplit(target)
    own = "/" + path.split("?", maxsplit=1)[0].lstrip("/")
    if not parts.path.endswith(own) or parts.hostname is None:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    authority = host if port is None else f"{host}:{port}"
    base = f"{parts.scheme}://{authority}{parts.path[: -len(own)]}"
    return None if baseurl.problem(base) else hide_secrets(base, None)


def _no_body(endpoint: Endpoint, status: int) -> ProviderError:
    """A successful status (204 No Content, or any 2xx) with no body: no reply to read."""
    return ProviderError(
        f"{endpoint.provider} answered HTTP {status} with no body (no reply to read)",
        provider=endpoint.provider,
        where=baseurl.shown(endpoint.base_url),
        fix="check that the base URL points at the provider's API itself (a proxy or another "
        "server may answer so); if it does, retry the call",
    )


def _unreadable(endpoint: Endpoint, exc: httpx.RequestError) -> ProviderError:
    """An answer httpx could not read: a body its `Content-Encoding` does not decode, or
    redirects without end. The provider answered, so it is its error, not the network's."""
    return ProviderError(
        f"{endpoint.provider} answered with a body that cannot be read: "
        f"{type(exc).__name__}: {hide_secrets(str(exc), endpoint)}",
        provider=endpoint.provider,
        where=baseurl.shown(endpoint.base_url),
    )


# -- stream framing ------------------------------------------------------------------------

_STREAM_TYPES: dict[StreamFormat, frozenset[str]] = {
    "sse": frozenset({"text/event-stream"}),
    "ndjson": frozenset({"application/x-ndjson", "application/jsonl", "application/json-seq"}),
    "aws-event-stream": frozenset({"application/vnd.amazon.eventstream"}),
}
_SSE_LINE_END = re.compile(rb"\r\n|\r|\n")
"""How an SSE line may end: CRLF, LF, or a lone CR."""
_GENERIC_TYPES = frozenset({"", "text/plain", "application/octet-stream"})
"""Content types that say nothing either way: some servers label their streams so."""


def _is_stream(framing: StreamFormat | None, response: httpx.Response) -> bool:
    """Whether a successful answer to a streamed request declares the expected framing (or a
    type that does not say). A JSON or HTML document in its place is not read as a stream:
    it would yield no events, and an empty reply."""
    media = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    return media in _GENERIC_TYPES or media in _STREAM_TYPES[framing or "sse"]


def _not_a_stream(
    endpoint: Endpoint, framing: StreamFormat | None, response: httpx.Response, head: bytes
) -> ProviderError:
    if not head.strip():
        return _no_body(endpoint, response.status_code)
    expected = _accept(framing or "sse")  # (what the request's Accept asked for)
    got = response.headers.get("content-type", "")
    return ProviderError(
        f"{endpoint.provider} was asked for an event stream ({expected}) and answered HTTP "
        f"{response.status_code} with {got} instead",
        provider=endpoint.provider,
        body=_excerpt(head, endpoint),  # no `status`: the call did not fail, the answer is wrong
        where=baseurl.shown(endpoint.base_url),
        fix="check that the base URL points at the provider's API itself (a proxy may not "
        "stream), or call generate() instead of stream()",
    )


def _events(
    endpoint: Endpoint, framing: StreamFormat | None, chunks: Iterable[bytes], status: int
) -> Iterator[Mapping[str, Any]]:
    reader = _EventReader(endpoint, framing, status)
    for chunk in chunks:
        yield from reader.feed(chunk)
    yield from reader.finish()


class _EventReader:
    """Incremental reader of one stream framing: bytes in, JSON events out. A byte order mark
    that opens the stream is dropped (SSE's rule; for NDJSON, as for any JSON text), and a
    stream that sends nothing at all (no byte but whitespace) is an answer without a body."""

    def __init__(self, endpoint: Endpoint, framing: StreamFormat | None, status: int) -> None:
        self.endpoint = endpoint
        self.framing = framing or "sse"
        self.status = status
        self._empty = True
        """No byte but whitespace so far."""
        self._opening = self.framing != "aws-event-stream"
        """Before the first bytes that are no part of a byte order mark (a text framing)."""
        self._buffer = b""
        self._cr = False
        """SSE: the last line ended with a CR, whose LF (of a CRLF) may open the next chunk."""
        self._event_name: str | None = None
        self._data: list[bytes] = []
        self._aws: Any = None
        if self.framing == "aws-event-stream":
            from botocore.eventstream import EventStreamBuffer

            self._aws = EventStreamBuffer()

    def feed(self, chunk: bytes) -> list[Mapping[str, Any]]:
        if self._empty and chunk.strip():
            self._empty = False
        if self.framing == "aws-event-stream":
            return self._feed_aws(chunk)
        self._buffer += chunk
        if self._opening:
            if _BOM.startswith(self._buffer):
                return []  # (all or part of a byte order mark: the rest tells)
            self._opening = False
            self._buffer = self._buffer.removeprefix(_BOM)
        if self.framing == "sse":
            return self._sse_lines()
        events: list[Mapping[str, Any]] = []
        while True:
            newline = self._buffer.find(b"\n")
            if newline == -1:
                break
            line = self._buffer[:newline].rstrip(b"\r")
            self._buffer = self._buffer[newline + 1 :]
            if line.strip():
                events.append(self._decode(line))
        return events

    def _sse_lines(self) -> list[Mapping[str, Any]]:
        """The events of the SSE lines the buffer completes. A line ends with CRLF, LF or a
        lone CR (the SSE specification allows all three); a CR that ends the buffer ends its
        line, and an LF opening the next chunk is then the rest of that CRLF, no blank line."""
        buffer = self._buffer
        if self._cr and buffer:
            self._cr = False
            buffer = buffer.removeprefix(b"\n")
        events: list[Mapping[str, Any]] = []
        start = 0
        for end in _SSE_LINE_END.finditer(buffer):
            events.extend(self._sse_line(buffer[start : end.start()]))
            start = end.end()
        if start:
            self._cr = buffer[start - 1 : start] == b"\r"
        self._buffer = buffer[start:]
        return events

    def finish(self) -> list[Mapping[str, Any]]:
        if self._empty or self._opening:  # (opening still: no byte but a byte order mark)
            raise _no_body(self.endpoint, self.status)
        events: list[Mapping[str, Any]] = []
        if self.framing == "ndjson" and self._buffer.strip():
            events.append(self._decode(self._buffer))
        elif self.framing == "sse":
            if self._buffer.strip():
                events.extend(self._sse_line(self._buffer.rstrip(b"\r")))
            events.extend(self._sse_line(b""))
        self._buffer = b""
        return events

    def _sse_line(self, line: bytes) -> list[Mapping[str, Any]]:
        if not line:  # a blank line ends an event
            if not self._data:
                self._event_name = None
                return []
            data = b"\n".join(self._data)
            name, self._event_name, self._data = self._event_name, None, []
            if data.strip() == b"[DONE]":
                return []
            event = dict(self._decode(data))
            if name and "type" not in event:
                event["type"] = name
            if name == "error" or (event.get("type") == "error" and "error" in event):
                raise _stream_error(self.endpoint, event)
            return [event]
        if line.startswith(b":"):
            return []  # a comment (keep-alive)
        key, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        if key == b"data":
            self._data.append(value)
        elif key == b"event":
            self._event_name = value.decode("utf-8", "replace")
        return []

    def _decode(self, data: bytes) -> Mapping[str, Any]:
        try:
            event = _json_value(data)
        except ValueError:
            raise StreamInterruptedError(
                f"{self.endpoint.provider} sent a stream event that is not JSON",
                provider=self.endpoint.provider,
                body=_excerpt(data, self.endpoint),
            ) from None
        if not isinstance(event, dict):
            raise StreamInterruptedError(
                f"{self.endpoint.provider} sent a stream event that is not a JSON object",
                provider=self.endpoint.provider,
                body=_excerpt(data, self.endpoint),
            )
        return event

    def _feed_aws(self, chunk: bytes) -> list[Mapping[str, Any]]:
        self._aws.add_data(chunk)
        events: list[Mapping[str, Any]] = []
        for message in self._aws:
            headers = message.headers
            payload = self._decode(message.payload) if message.payload else {}
            if headers.get(":message-type") == "exception":
                kind = headers.get(":exception-type", "exception")
                raise _stream_error(self.endpoint, {"type": kind, "error": payload})
            events.append({str(headers.get(":event-type", "event")): payload})
        return events


def _stream_error(endpoint: Endpoint, event: Mapping[str, Any]) -> ProviderError:
    error = event.get("error", event)
    # A provider may quote the key it was sent ("Incorrect API key provided: sk-..."): the
    # message and the body are scrubbed as an error status's are.
    message = hide_secrets(
        str(error.get("message") if isinstance(error, dict) else error), endpoint
    )
    kind = str(event.get("type", "error"))
    if isinstance(error, dict) and isinstance(error.get("type"), str):
        kind = f"{kind}/{error['type']}"  # Anthropic: {"type": "error", "error": {"type": ...}}
    body = _excerpt(dumps(event), endpoint)
    lowered = f"{kind} {message}".lower()
    if any(word in lowered for word in ("throttl", "rate_limit", "rate limit", "overloaded")):
        return RateLimitError(
            f"{endpoint.provider} stream failed: {message}",
            provider=endpoint.provider,
            body=body,
        )
    return StreamInterruptedError(
        f"{endpoint.provider} stream failed ({hide_secrets(kind, endpoint)}): {message}",
        provider=endpoint.provider,
        body=body,
    )
