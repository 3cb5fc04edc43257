"""A Chat Completions backend that fails on cue, for the gateway's fault tests and benchmark.

The fault is chosen by the request's `model` (the gateway forwards it unchanged), so any
number of concurrent requests can each ask for their own: `ok`, `status-500`, `status-429`,
`reset`, `stall`, `stall-mid`, `drop`, `malformed`, `html`, `truncated`, `truncated-close`,
`error-event`. Each fault has a whole-answer and a streamed form (the request's `stream`).
`stall` seconds (a constructor parameter) is how long the stalls last: tests pass more than
the gateway's short timeouts, so a stall always outlasts them.

It is a raw asyncio HTTP/1.1 server in a thread of its own, so it controls every byte: a
reset is a TCP RST (SO_LINGER 0), a drop closes the connection in the middle of a chunked
body, `truncated-close` frames the answer by `Connection: close` and stops early.

`expected(fault, stream, api)` says what the gateway must answer for each fault (status,
how a stream ends), so the tests and benchmarks/bench_gateway.py judge the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import orjson

FAULTS = (
    "ok",
    "status-500",
    "status-429",
    "reset",
    "stall",
    "stall-mid",
    "drop",
    "malformed",
    "html",
    "truncated",
    "truncated-close",
    "error-event",
)
TEXT = ("Hel", "lo, ", "world")
ERROR = {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}}


def completion(model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(TEXT), "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }


def events(model: str) -> list[bytes]:
    """The SSE frames of a whole, well-formed stream."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": "chatcmpl-fault",
            "object": "chat.completion.chunk",
            "created": 1_767_225_600,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(body) + b"\n\n"

    usage = {
        "id": "chatcmpl-fault",
        "object": "chat.completion.chunk",
        "created": 1_767_225_600,
        "model": model,
        "choices": [],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": piece}) for piece in TEXT),
        chunk({}, "stop"),
        b"data: " + orjson.dumps(usage) + b"\n\n",
        b"data: [DONE]\n\n",
    ]


# -- what the gateway must answer -----------------------------------------------------------

Api = Literal["responses", "chat"]
End = Literal["completed", "failed", "done", "error"]


@dataclass(frozen=True)
class Expected:
    status: int
    end: End | None = None
    """How a 200 stream ends: `response.completed` / `.failed` (Responses), `[DONE]` or an
    `error` event (Chat); None for whole answers and error statuses."""
    code: str | None = None
    """The error code of a gateway error (not of the backend's own)."""


def expected(fault: str, *, stream: bool, api: Api) -> Expected:
    if fault == "ok":
        end: End = "completed" if api == "responses" else "done"
        return Expected(200, end if stream else None)
    if fault.startswith("status-"):
        return Expected(int(fault.removeprefix("status-")))
    if fault == "reset":
        return Expected(502, code="backend_error")
    if fault == "html":
        return Expected(502, code="backend_error")
    if fault == "stall":  # nothing at all: idle limit for a stream, total for a whole answer
        return Expected(504, code="backend_idle_timeout" if stream else "backend_total_timeout")
    if not stream:
        if fault == "stall-mid":  # half the body came, then silence
            return Expected(504, code="backend_idle_timeout")
        return Expected(502, code="backend_error")
    return Expected(200, "failed" if api == "responses" else "error")


TERMINAL = ("response.completed", "response.incomplete", "response.failed")


class Stored(Protocol):
    def final(self, response_id: str) -> str | None: ...


def judge(
    fault: str,
    *,
    stream: bool,
    api: Api,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    store: Stored | None = None,
) -> list[str]:
    """What is wrong with the gateway's answer to a request for `fault` (empty: nothing)."""
    want = expected(fault, stream=stream, api=api)
    if status != want.status:
        return [f"status {status}, expected {want.status}: {body[:200]!r}"]
    if status >= 400:
        if want.code is None:  # the backend's own error, passed on with its back-off hint
            if body != orjson.dumps(ERROR) or headers.get("retry-after") != "7":
                return [f"the backend's {status} was not passed on as sent: {body[:200]!r}"]
            return []
        code = (orjson.loads(body).get("error") or {}).get("code")
        return [] if code == want.code else [f"error code {code!r}, expected {want.code!r}"]
    if api == "chat":
        return _judge_chat(want, stream=stream, body=body)
    if stream:
        events = [orjson.loads(data) for data in sse_data(body)]
        ends = [e for e in events if e.get("type") in TERMINAL]
        if len(ends) != 1 or events[-1] is not ends[0]:
            return [f"{len(ends)} terminal events, the last event {events[-1].get('type')!r}"]
        response = ends[0]["response"]
        if ends[0]["type"] != f"response.{want.end}":
            return [f"ended with {ends[0]['type']}, expected response.{want.end}"]
    else:
        response = orjson.loads(body)
    problems = []
    if response["status"] == "completed" and _output_text(response) != "".join(TEXT):
        problems.append(f"completed with the text {_output_text(response)!r}")
    if response["status"] == "failed" and not (response.get("error") or {}).get("message"):
        problems.append("failed without saying why")
    if store is not None and store.final(response["id"]) != response["status"]:
        stored = store.final(response["id"])
        problems.append(f"stored as {stored!r}, answered {response['status']!r}")
    return problems


def _judge_chat(want: Expected, *, stream: bool, body: bytes) -> list[str]:
    if not stream:
        content = orjson.loads(body)["choices"][0]["message"]["content"]
        return [] if content == "".join(TEXT) else [f"the text {content!r}"]
    frames = sse_data(body)
    ends = [f for f in frames if f == b"[DONE]" or f.startswith(b'{"error"')]
    if len(ends) != 1 or frames[-1] is not ends[0]:
        return [f"{len(ends)} stream ends ([DONE] or error), the last frame {frames[-1]!r}"]
    end = "done" if ends[0] == b"[DONE]" else "error"
    if end != want.end:
        return [f"ended with {end}, expected {want.end}"]
    if end == "done":
        chunks = [orjson.loads(f) for f in frames[:-1]]
        text = "".join(
            c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")
        )
        if text != "".join(TEXT):
            return [f"the streamed text {text!r}"]
    return []


def _output_text(response: Mapping[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in response.get("output") or ()
        if item.get("type") == "message"
        for part in item.get("content") or ()
    )


def sse_data(body: bytes) -> list[bytes]:
    """The `data` of each event of an SSE body."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data))
    return out


# -- the server ------------------------------------------------------------------------------


class FaultServer:
    """Use as a context manager; `base` is the URL to give the gateway as its backend."""

    def __init__(self, *, stall: float = 5.0) -> None:
        self.stall = stall
        self.requests = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._stopping: asyncio.Event | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        ready = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        self.port: int = ready.result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> int:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _stop(self) -> None:
        assert self._server is not None and self._stopping is not None
        self._stopping.set()  # stalls end at once
        self._server.close()
        for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
            task.cancel()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    return
                self.requests += 1
                path, body = request
                if not await self._answer(path, body, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _sleep(self) -> None:
        assert self._stopping is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), self.stall)

    async def _answer(self, path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection must not be used again."""
        if not path.endswith("/chat/completions"):
            writer.write(_whole(200, orjson.dumps({"object": "list", "data": []})))
            return True
        request = orjson.loads(body)
        fault, stream = str(request.get("model")), request.get("stream") is True
        model = fault
        if fault not in FAULTS:
            fault = "ok"
        if fault == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return False
        if fault == "stall":
            await self._sleep()
            fault = "ok"
        if fault.startswith("status-"):
            status = int(fault.removeprefix("status-"))
            writer.write(_whole(status, orjson.dumps(ERROR), b"retry-after: 7\r\n"))
            return True
        if fault == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            writer.write(_whole(200, page, content_type=b"text/html"))
            return True
        if stream:
            return await self._stream(fault, model, writer)
        return await self._whole(fault, model, writer)

    async def _whole(self, fault: str, model: str, writer: asyncio.StreamWriter) -> bool:
        raw = orjson.dumps(completion(model))
        if fault == "error-event":
            raw = orjson.dumps(ERROR)
        if fault == "malformed":
            raw = raw[: len(raw) // 2]
        if fault in ("ok", "malformed", "error-event"):
            writer.write(_whole(200, raw))
            return True
        if fault == "truncated":  # a complete HTTP body that holds half an answer
            writer.write(_whole(200, raw[: len(raw) // 2]))
            return True
        if fault == "truncated-close":
            writer.write(_head(200, b"connection: close\r\n") + raw[: len(raw) // 2])
            await writer.drain()
            return False
        writer.write(_head(200, b"content-length: %d\r\n" % len(raw)) + raw[: len(raw) // 2])
        await writer.drain()
        if fault == "stall-mid":
            await self._sleep()
            writer.write(raw[len(raw) // 2 :])
            return True
        return False  # drop

    async def _stream(self, fault: str, model: str, writer: asyncio.StreamWriter) -> bool:
        frames = events(model)
        close = fault == "truncated-close"
        framing = b"connection: close\r\n" if close else b"transfer-encoding: chunked\r\n"
        writer.write(_head(200, framing, content_type=b"text/event-stream"))
        for index, frame in enumerate(_faulty(fault, frames)):
            if frame is None:  # the fault's moment
                if fault == "stall-mid":
                    await writer.drain()
                    await self._sleep()
                    continue
                if fault in ("drop", "truncated-close"):
                    await writer.drain()
                    return False
                if fault == "truncated":
                    writer.write(b"0\r\n\r\n")
                    return True
            else:
                writer.write(frame if close else b"%x\r\n%s\r\n" % (len(frame), frame))
            if index % 2:
                await writer.drain()
        if close:
            await writer.drain()
            return False
        writer.write(b"0\r\n\r\n")
        return True


def _faulty(fault: str, frames: list[bytes]) -> Iterator[bytes | None]:
    """The frames of a stream with the fault put in: None marks where it strikes."""
    for index, frame in enumerate(frames):
        if index == 2:
            if fault == "malformed":
                yield b'data: {"choices": [{"delta": {"content": "x"\n\n'
                return
            if fault == "error-event":
                yield b"data: " + orjson.dumps(ERROR) + b"\n\n"
                return
            if fault in ("stall-mid", "drop", "truncated", "truncated-close"):
                yield None
                if fault != "stall-mid":
                    return
        yield frame


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.split(b"\r\n")
    path = lines[0].split(b" ")[1].decode()
    length = 0
    for line in lines[1:]:
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return path, await reader.readexactly(length) if length else b""


def _head(status: int, extra: bytes = b"", *, content_type: bytes = b"application/json") -> bytes:
    return b"HTTP/1.1 %d X\r\ncontent-type: %s\r\n%s\r\n" % (status, content_type, extra)


def _whole(
    status: int, body: bytes, extra: bytes = b"", *, content_type: bytes = b"application/json"
) -> bytes:
    length = b"content-length: %d\r\n" % len(body)
    return _head(status, length + extra, content_type=content_type) + body


__all__ = [
    "FAULTS",
    "Expected",
    "FaultServer",
    "completion",
    "events",
    "expected",
    "judge",
    "sse_data",
]
