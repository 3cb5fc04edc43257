"""What a gateway handler returns: a whole body, a stream of bytes, or an OpenAI-shaped error.

Handlers never touch ASGI; the app turns these into messages (and the FastAPI routes into
Starlette responses), so the fast path and the documented routes serve the same bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

JSON = b"application/json"
SSE = b"text/event-stream"

Headers = list[tuple[bytes, bytes]]


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes
    content_type: bytes = JSON
    headers: Headers = field(default_factory=list)


@dataclass(slots=True)
class StreamReply:
    status: int
    chunks: AsyncIterator[bytes]
    content_type: bytes = SSE
    headers: Headers = field(default_factory=list)
    close: Callable[[], Awaitable[None]] | None = None
    """Ends the stream's work (its run, its stored state, the backend's stream) whatever
    happened to it; the app awaits it once the answer is over, sent whole or not, since a
    stream whose client left before its first byte may never have started."""


class GatewayError(Exception):
    """A request the gateway answers with an error of its own (not the backend's)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        headers: Headers | None = None,
    ) -> None:
        self.headers = headers or []
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        """`{"error": {message, type, param, code}}`, the shape of the spec's `Error`."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def reply(self) -> Reply:
        headers: Headers = list(self.headers)
        if self.status == 401:
            headers.append((b"www-authenticate", b'Bearer realm="outform"'))
        return Reply(self.status, orjson.dumps(self.body()), headers=headers)


class PassthroughError(Exception):
    """The backend's own error answer, to be returned with its status, body and back-off
    headers (`Retry-After`) unchanged."""

    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: bytes = JSON,
        headers: Headers | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers or []
        super().__init__(f"backend answered HTTP {status}")

    def reply(self) -> Reply:
        return Reply(self.status, self.body, self.content_type, list(self.headers))


def bad_request(message: str, param: str | None = None, code: str | None = None) -> GatewayError:
    return GatewayError(400, message, param=param, code=code)


def not_found(message: str, param: str | None = None) -> GatewayError:
    return GatewayError(404, message, param=param, code="not_found")


__all__ = [
    "JSON",
    "SSE",
    "GatewayError",
    "Headers",
    "PassthroughError",
    "Reply",
    "StreamReply",
    "bad_request",
    "not_found",
]
