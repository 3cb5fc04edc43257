"""How requests reach a backend. Everything above this module speaks Chat Completions.

`HttpChatBackend` is an OpenAI-compatible Chat Completions server over HTTP (vLLM, Ollama,
LiteLLM, llama.cpp, SGLang, OpenAI itself) reached through the lean pooled client of
`gateway.client`; bodies go out as the bytes the gateway built or received. A native provider
(`anthropic`, `gemini`, ...) is `gateway.native.NativeBackend`, which puts outform's adapters
behind the same interface.

Errors: an answer with an HTTP error status raises `PassthroughError` (status, body and
`Retry-After` go to the client unchanged); no answer raises `GatewayError` 504 (a timeout,
its code naming the limit) or 502 (unreachable, broken or not a Chat Completions answer); a
stream that breaks after it started raises `StreamFailure`.

A stream is whole only when the backend says so: a `finish_reason` or `data: [DONE]`. One
that ends without either (a clean chunked end, or a connection closed under `Connection:
close` framing) was cut off, and raises `StreamFailure` rather than pass for complete. A
200 to a streamed request that is not Server-Sent Events is read whole before anything is
sent to the client: a Chat Completions answer (a server that ignored `stream: true`) is
streamed from it; anything else (an HTML error page) is a 502.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import orjson

from outform.gateway.answers import Malformed, check_completion
from outform.gateway.client import (
    BackendHTTPError,
    BackendTimeoutError,
    BackendUnreachableError,
    HttpClient,
    StreamingResponse,
    header_value,
)
from outform.gateway.events import DONE, SSEDecoder, data_frame
from outform.gateway.replies import JSON, SSE, GatewayError, Headers, PassthroughError
from outform.gateway.settings import DEFAULT_TIMEOUTS, Timeouts
from outform.gateway.stream import StreamEnd, StreamFailure, completion_chunks

Body = Mapping[str, Any] | bytes


class BackendReply:
    """A whole answer: the bytes as received, parsed on demand. `plan`: how a native
    backend had the provider enforce the format (`outform.plan.Plan`), for the run."""

    __slots__ = ("_data", "body", "content_type", "plan", "status")

    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: bytes = JSON,
        data: Any = None,
        plan: Any = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self._data = data
        self.plan = plan

    def json(self) -> dict[str, Any]:
        """The body as a `chat.completion` (a 502 when it is not one)."""
        if self._data is None:
            try:
                data = orjson.loads(self.body)
            except orjson.JSONDecodeError:
                data = None
            self._data = completion(data, self.content_type)
        result: dict[str, Any] = self._data
        return result


def completion(data: Any, content_type: bytes = JSON) -> dict[str, Any]:
    """`data` if it is a `chat.completion` (its first choice has a `message` object, and the
    fields the gateway reads hold their types: `gateway.answers`), else a 502: an answer of
    another shape must not pass for an empty reply, nor be read as what it did not say."""
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    if isinstance(first, dict) and isinstance(first.get("message"), dict):
        try:
            check_completion(data)
        except Malformed as exc:
            raise GatewayError(
                502,
                f"The backend's answer is not a valid Chat Completions answer: {exc}.",
                type="server_error",
                code="backend_error",
            ) from None
        return data  # type: ignore[no-any-return]
    what = "JSON without a choices[0].message" if isinstance(data, dict) else "not a JSON object"
    kind = content_type.decode("latin-1").split(";")[0].strip() or "no content type"
    raise GatewayError(
        502,
        f"The backend's answer is not a Chat Completions answer ({kind}, {what}).",
        type="server_error",
        code="backend_error",
    )


class ChatStream(Protocol):
    content_type: bytes

    def chunks(self) -> AsyncIterator[dict[str, Any]]:
        """The backend's `chat.completion.chunk` objects."""
        ...

    def raw(self) -> AsyncIterator[bytes]:
        """The stream as SSE bytes (for the Chat Completions pass-through)."""
        ...

    async def aclose(self) -> None: ...


class Backend(Protocol):
    name: str

    async def complete(self, body: Body) -> BackendReply: ...

    async def stream(self, body: Body) -> ChatStream: ...

    async def models(self) -> list[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


def failure(exc: BackendHTTPError) -> GatewayError:
    """An OpenAI-shaped error for a backend that did not answer: 504 with the code of the
    timeout (`backend_connect_timeout`, `backend_idle_timeout`, `backend_total_timeout`), or
    502 (`backend_unreachable`, `backend_error`)."""
    message = _sentence(str(exc))
    if isinstance(exc, BackendTimeoutError):
        return timeout_error(exc.limit, message)
    code = "backend_unreachable" if isinstance(exc, BackendUnreachableError) else "backend_error"
    return GatewayError(502, message, type="server_error", code=code)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def timeout_error(limit: str, message: str) -> GatewayError:
    return GatewayError(504, message, type="server_error", code=f"backend_{limit}_timeout")


_FORWARDED = (b"retry-after", b"retry-after-ms")
"""Headers of a backend's error answer that reach the client with it (back-off hints)."""


def passthrough(status: int, headers: Headers, body: bytes) -> PassthroughError:
    kept = [(name, value) for name, value in headers if name in _FORWARDED]
    return PassthroughError(status, body, header_value(headers, b"content-type", JSON), kept)


class HttpChatBackend:
    """An OpenAI-compatible Chat Completions server at `base_url` (ending in `/v1` or not)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        max_connections: int = 512,
    ) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.name = "the backend"
        self._client = HttpClient(
            base_url, timeouts=timeouts, max_connections=max_connections, headers=headers
        )

    async def complete(self, body: Body) -> BackendReply:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            response = await self._client.request(b"POST", "/chat/completions", raw)
        except BackendHTTPError as exc:
            raise failure(exc) from None
        if response.status >= 400:
            raise passthrough(response.status, response.headers, response.body)
        return BackendReply(response.status, response.body, response.header(b"content-type", JSON))

    async def stream(self, body: Body) -> ChatStream:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            response = await self._client.stream(b"POST", "/chat/completions", raw)
            if response.status >= 400:
                raise passthrough(response.status, response.headers, await response.read())
            kind = response.header(b"content-type", SSE)
            if not kind.startswith(SSE):  # a whole answer: read it before the client is told
                whole = BackendReply(response.status, await response.read(), kind).json()
                return WholeStream(whole)
        except BackendHTTPError as exc:
            raise failure(exc) from None
        return _HttpChatStream(response, self.name)

    async def models(self) -> list[dict[str, Any]]:
        try:
            response = await self._client.request(b"GET", "/models")
            data = orjson.loads(response.body) if response.status < 400 else None
        except (BackendHTTPError, orjson.JSONDecodeError):
            return []
        models = data.get("data") if isinstance(data, dict) else None
        return [m for m in models or () if isinstance(m, dict) and isinstance(m.get("id"), str)]

    async def aclose(self) -> None:
        await self._client.aclose()


class WholeStream:
    """A whole `chat.completion` served as a stream (a backend that ignored `stream: true`,
    enforcement mode, a native provider on the Chat endpoint)."""

    content_type = SSE

    def __init__(self, completion: dict[str, Any]) -> None:
        self._chunks = completion_chunks(completion)

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        for chunk in self._chunks:
            yield chunk

    async def raw(self) -> AsyncIterator[bytes]:
        yield b"".join(data_frame(chunk) for chunk in self._chunks) + DONE

    async def aclose(self) -> None:
        return None


class _HttpChatStream:
    content_type = SSE

    def __init__(self, response: StreamingResponse, name: str) -> None:
        self._response = response
        self._name = name

    async def _pieces(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response:
                yield chunk
        except BackendHTTPError as exc:
            raise _BrokenOff(_sentence(str(exc)), timeout_limit(exc)) from None

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        decoder = SSEDecoder()
        end = StreamEnd(self._name)
        try:
            async for piece in self._pieces():
                for data in decoder.feed(piece):
                    event = end.see(data)
                    if event is not None:
                        yield event
        except _BrokenOff:
            if not end.whole:
                raise
            return  # broke after the backend said the answer was whole: nothing is lost
        for data in decoder.finish():
            event = end.see(data)
            if event is not None:
                yield event
        end.check()

    async def raw(self) -> AsyncIterator[bytes]:
        """The backend's own bytes, one whole SSE event at a time, each checked first; the
        end is checked as in `chunks()`, and a missing `[DONE]` after a finish is added."""
        decoder = SSEDecoder()
        end = StreamEnd(self._name)
        try:
            async for piece in self._pieces():
                frames = decoder.frames(piece)
                for _, data in frames:
                    if data is not None:
                        end.see(data)
                if frames:
                    yield b"".join(frame for frame, _ in frames)
        except _BrokenOff:
            if not end.whole:
                raise
            if not end.done_seen:  # broke after the answer was whole: it ends as a whole one
                yield DONE
            return
        tail = decoder.finish_frames()
        for _, data in tail:
            if data is not None:
                end.see(data)
        end.check()
        if tail:
            yield b"".join(frame for frame, _ in tail)
        if not end.done_seen and not end.failed:
            yield DONE

    async def aclose(self) -> None:
        self._response.close()


class _BrokenOff(StreamFailure):
    """The connection broke (or a timeout ran out) while the stream was read: the end of
    the answer when the backend had already said it was whole (`StreamEnd.whole`)."""


def timeout_limit(exc: Exception) -> str | None:
    return exc.limit if isinstance(exc, BackendTimeoutError) else None


__all__ = [
    "Backend",
    "BackendReply",
    "ChatStream",
    "HttpChatBackend",
    "WholeStream",
    "completion",
    "failure",
    "passthrough",
    "timeout_error",
]
