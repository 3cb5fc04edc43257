"""Server-Sent Events: encoding the gateway's Responses events, decoding a backend's chunks.

Every Responses event gets a `sequence_number` from one `Sequence` per response (0, 1, 2...,
no gaps) and an `event:` line equal to its `type`, as OpenAI's own stream has. The gateway's
Responses stream ends with the terminal event and no `[DONE]` (the spec's example has none);
a Chat Completions stream keeps its `data: [DONE]`.
"""

from __future__ import annotations

from typing import Any

import orjson

DONE = b"data: [DONE]\n\n"


class Sequence:
    """Numbers the events of one response and encodes them as SSE frames."""

    __slots__ = ("next",)

    def __init__(self) -> None:
        self.next = 0

    def event(self, kind: str, fields: dict[str, Any]) -> bytes:
        """`fields` gains `type` and `sequence_number` (it is the caller's fresh dict)."""
        payload = {"type": kind, "sequence_number": self.next, **fields}
        self.next += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def data_frame(payload: Any) -> bytes:
    """A `data:` frame (a Chat Completions chunk)."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


class SSEDecoder:
    """Bytes of an SSE stream in, the `data` of each event out (comments and `event:` lines
    dropped; multi-line data joined with newlines, as the SSE spec says)."""

    __slots__ = ("_buffer", "_data")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer + chunk if self._buffer else chunk
        out: list[bytes] = []
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end == -1:
                break
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data:
                    out.append(b"\n".join(self._data))
                    self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
        self._buffer = buffer[start:]
        return out

    def finish(self) -> list[bytes]:
        """Whatever the stream left unterminated."""
        out = self.feed(b"\n\n") if self._buffer or self._data else []
        self._buffer = b""
        return out


__all__ = ["DONE", "SSEDecoder", "Sequence", "data_frame"]
