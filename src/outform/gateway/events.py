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
        frame = b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"
        self.next += 1  # (after the encoding: an event that fails to encode takes no number)
        return frame


def data_frame(payload: Any) -> bytes:
    """A `data:` frame (a Chat Completions chunk)."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


class SSEDecoder:
    """Bytes of an SSE stream in, the `data` of each event out (comments and `event:` lines
    dropped; multi-line data joined with newlines, as the SSE spec says). `frames()` also
    gives each event's own bytes, for a relay that passes only whole, checked events on."""

    __slots__ = ("_buffer", "_data", "_scan")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self._scan = 0  # where, in the buffer, the next unread line starts

    def feed(self, chunk: bytes) -> list[bytes]:
        return [data for _, data in self.frames(chunk) if data is not None]

    def finish(self) -> list[bytes]:
        """Whatever the stream left unterminated."""
        return [data for _, data in self.finish_frames() if data is not None]

    def frames(self, chunk: bytes) -> list[tuple[bytes, bytes | None]]:
        """(the event's bytes, its data or None for a comment-only event) of each event that
        `chunk` completes."""
        buffer = self._buffer + chunk if self._buffer else chunk
        out: list[tuple[bytes, bytes | None]] = []
        event_start = 0
        start = self._scan
        while True:
            end = buffer.find(b"\n", start)
            if end == -1:
                break
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                data = b"\n".join(self._data) if self._data else None
                self._data = []
                out.append((buffer[event_start:start], data))
                event_start = start
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
        self._buffer = buffer[event_start:]
        self._scan = start - event_start
        return out

    def finish_frames(self) -> list[tuple[bytes, bytes | None]]:
        if not self._buffer.strip() and not self._data:
            self._buffer, self._scan = b"", 0
            return []
        out = self.frames(b"\n" if self._buffer.endswith(b"\n") else b"\n\n")
        self._buffer, self._scan, self._data = b"", 0, []
        return out


__all__ = ["DONE", "SSEDecoder", "Sequence", "data_frame"]
