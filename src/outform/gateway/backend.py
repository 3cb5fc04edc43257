"""How requests reach a backend. Everything above this module speaks Chat Completions.

`HttpChatBackend` is an OpenAI-compatible Chat Completions server over HTTP (vLLM, Ollama,
LiteLLM, llama.cpp, SGLang, OpenAI itself) reached through the lean pooled client of
`gateway.client`; bodies go out as the bytes the gateway built or received. A native provider
(`anthropic`, `gemini`, ...) is `gateway.native.NativeBackend`, which puts outform's adapters
behind the same interface.

Errors: an answer with an HTTP error status raises `PassthroughError` (status and body go to
the client unchanged); no answer raises `GatewayError` 504 (timeout) or 502 (unreachable,
broken answer); a stream that breaks after it started raises `StreamFailure`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import orjson

from outform.gateway.client import (
    BackendHTTPError,
    BackendTimeoutError,
    BackendUnreachableError,
    HttpClient,
    StreamingResponse,
)
from outform.gateway.events import SSEDecoder
from outform.gateway.replies import JSON, SSE, GatewayError, PassthroughError
from outform.gateway.stream import StreamFailure, completion_chunks

Body = Mapping[str, Any] | bytes


class BackendReply:
    """A whole answer: the bytes as received, parsed on demand."""

    __slots__ = ("_data", "body", "content_type", "status")

    def __init__(
        self, status: int, body: bytes, content_type: bytes = JSON, data: Any = None
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self._data = data

    def json(self) -> dict[str, Any]:
        if self._data is None:
            try:
                self._data = orjson.loads(self.body)
            except orjson.JSONDecodeError:
                self._data = None
            if not isinstance(self._data, dict):
                raise GatewayError(
                    502,
                    "The backend answered with a body that is not a JSON object.",
                    type="server_error",
                    code="backend_error",
                )
        data: dict[str, Any] = self._data
        return data


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


def failure(exc: BackendHTTPError, backend: str) -> GatewayError:
    """An OpenAI-shaped error for a backend that did not answer."""
    if isinstance(exc, BackendTimeoutError):
        return GatewayError(504, f"{backend}: {exc}.", type="server_error", code="backend_timeout")
    code = "backend_unreachable" if isinstance(exc, BackendUnreachableError) else "backend_error"
    return GatewayError(502, f"{backend}: {exc}.", type="server_error", code=code)


class HttpChatBackend:
    """An OpenAI-compatible Chat Completions server at `base_url` (ending in `/v1` or not)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_connections: int = 512,
    ) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.name = "the backend"
        self._client = HttpClient(
            base_url, timeout=timeout, max_connections=max_connections, headers=headers
        )

    async def complete(self, body: Body) -> BackendReply:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            response = await self._client.request(b"POST", "/chat/completions", raw)
        except BackendHTTPError as exc:
            raise failure(exc, self.name) from None
        content_type = response.header(b"content-type", JSON)
        if response.status >= 400:
            raise PassthroughError(response.status, response.body, content_type)
        return BackendReply(response.status, response.body, content_type)

    async def stream(self, body: Body) -> ChatStream:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        try:
            response = await self._client.stream(b"POST", "/chat/completions", raw)
            if response.status >= 400:
                content_type = response.header(b"content-type", JSON)
                raise PassthroughError(response.status, await response.read(), content_type)
        except BackendHTTPError as exc:
            raise failure(exc, self.name) from None
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


class _HttpChatStream:
    def __init__(self, response: StreamingResponse, name: str) -> None:
        self._response = response
        self._name = name
        kind = response.header(b"content-type", SSE)
        self.is_sse = kind.startswith(SSE)
        self.content_type = kind

    async def raw(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response:
                yield chunk
        except BackendHTTPError as exc:
            raise StreamFailure(f"{self._name}: {exc}") from None

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        if not self.is_sse:  # a server that ignored `stream: true` and sent the whole answer
            body = b"".join([chunk async for chunk in self.raw()])
            for chunk in completion_chunks(BackendReply(200, body).json()):
                yield chunk
            return
        decoder = SSEDecoder()
        async for piece in self.raw():
            for data in decoder.feed(piece):
                event = _decode(data)
                if event is not None:
                    yield event
        for data in decoder.finish():
            event = _decode(data)
            if event is not None:
                yield event

    async def aclose(self) -> None:
        self._response.close()


def _decode(data: bytes) -> dict[str, Any] | None:
    if data.strip() == b"[DONE]":
        return None
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise StreamFailure("the backend sent a stream event that is not JSON") from None
    if not isinstance(event, dict):
        raise StreamFailure("the backend sent a stream event that is not a JSON object")
    return event


__all__ = ["Backend", "BackendReply", "ChatStream", "HttpChatBackend", "failure"]
