"""The crash scenario: many concurrent stored requests, `kill -9` in the middle, a restart on
the same store, and a check that every acknowledged response is there, whole.

Used by tests/gateway/test_durability.py (small, for CI) and by
benchmarks/bench_durability.py (2,000 requests, small and 1 MB inputs).

* `EchoBackend`: a Chat Completions server (raw asyncio, in a thread) whose reply names the
  SHA-256 of the request's last user message, so a stored response proves which input it
  answered; it streams when asked.
* `load`: the requests, each `store: true`, streamed or not, small or large, all at once;
  an answer counts as *acknowledged* when a whole 200 body (or a `response.completed` event)
  arrived. When `kill_after` answers have been acknowledged, the gateway gets SIGKILL.
* `verify`: against a gateway restarted on the same store, every acknowledged response must
  be served back equal to what the client received, with its input items whole.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

MB = 1024 * 1024


# -- the backend -----------------------------------------------------------------------------


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def echo_text(text: str) -> str:
    return f"echo {digest(text)}"


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-echo",
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": "echo",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def _stream(content: str) -> bytes:
    head = {"id": "chatcmpl-echo", "object": "chat.completion.chunk", "created": 1, "model": "echo"}
    half = len(content) // 2
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    deltas = [
        ({"role": "assistant", "content": content[:half]}, None),
        ({"content": content[half:]}, None),
        ({}, "stop"),
    ]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
        for delta, reason in deltas
    ]
    chunks.append({**head, "choices": [], "usage": usage})
    return b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def answer(body: bytes) -> bytes:
    """The HTTP response to one Chat Completions request."""
    request = orjson.loads(body)
    users = [m for m in request["messages"] if m.get("role") == "user"]
    content = users[-1]["content"] if users else ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    text = echo_text(content)
    if request.get("stream"):
        payload, kind = _stream(text), b"text/event-stream"
    else:
        payload, kind = orjson.dumps(_completion(text)), b"application/json"
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n" % (kind, len(payload))
        + payload
    )


class _Protocol(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            if head.startswith(b"get"):
                payload = b'{"object": "list", "data": []}'
                self.transport.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
                )
            else:
                self.transport.write(answer(body))


class EchoBackend:
    """`with EchoBackend() as backend:` serves on `backend.base` from a thread of its own."""

    def __init__(self) -> None:
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.AbstractServer | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            self._server = await self._loop.create_server(_Protocol, "127.0.0.1", 0, backlog=4096)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        self._loop.run_until_complete(main())
        self._loop.run_forever()

    def __enter__(self) -> EchoBackend:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


# -- the load --------------------------------------------------------------------------------


@dataclass
class Outcome:
    index: int
    text: str
    stream: bool
    response_id: str | None = None
    acknowledged: dict[str, Any] | None = None
    """The Response the client received whole (the 200 body, or `response.completed`'s)."""


def requests(count: int, *, large_every: int, large: int = MB) -> list[Outcome]:
    """`count` requests: every `large_every`-th one with a `large`-byte input, every other
    one streamed."""
    out = []
    for index in range(count):
        size = large if large_every and index % large_every == large_every - 1 else 64
        head = f"request {index}: "
        out.append(Outcome(index, head + "x" * (size - len(head)), stream=index % 2 == 1))
    return out


async def load(
    url: str, outcomes: list[Outcome], *, kill_after: int, kill: Callable[[], None]
) -> None:
    """Send every request at once; call `kill` when `kill_after` have been acknowledged."""
    acknowledged = 0
    killed = False
    limits = httpx.Limits(max_connections=len(outcomes), max_keepalive_connections=0)
    timeout = httpx.Timeout(300, connect=60)

    def acked() -> None:
        nonlocal acknowledged, killed
        acknowledged += 1
        if acknowledged >= kill_after and not killed:
            killed = True
            kill()

    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:

        async def one(outcome: Outcome) -> None:
            body = {"model": "echo", "input": outcome.text, "stream": outcome.stream}
            try:
                if outcome.stream:
                    await _streamed(client, body, outcome)
                else:
                    answer = await client.post("/v1/responses", json=body)
                    if answer.status_code == 200:
                        response = answer.json()
                        outcome.response_id = response["id"]
                        outcome.acknowledged = response
            except (httpx.HTTPError, orjson.JSONDecodeError):
                return  # the gateway died under it: not acknowledged
            if outcome.acknowledged is not None:
                acked()

        await asyncio.gather(*(one(outcome) for outcome in outcomes))


async def _streamed(client: httpx.AsyncClient, body: dict[str, Any], outcome: Outcome) -> None:
    async with client.stream("POST", "/v1/responses", json=body) as answer:
        if answer.status_code != 200:
            return
        buffer = b""
        async for chunk in answer.aiter_bytes():
            buffer += chunk
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                for line in frame.split(b"\n"):
                    if not line.startswith(b"data:"):
                        continue
                    event = orjson.loads(line[5:])
                    if event["type"] == "response.created":
                        outcome.response_id = event["response"]["id"]
                    elif event["type"] == "response.completed":
                        outcome.acknowledged = event["response"]


# -- the check -------------------------------------------------------------------------------


@dataclass
class Report:
    sent: int
    acknowledged: int
    intact: int = 0
    missing: list[str] = field(default_factory=list)
    half_written: list[str] = field(default_factory=list)
    """Served, but not as acknowledged: another status, other output, or other input."""
    unacknowledged: dict[str, int] = field(default_factory=dict)
    """What the restarted gateway says of responses whose id a client saw, unacknowledged."""

    @property
    def lost(self) -> int:
        return len(self.missing) + len(self.half_written)


async def verify(url: str, outcomes: list[Outcome]) -> Report:
    report = Report(len(outcomes), sum(o.acknowledged is not None for o in outcomes))
    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        semaphore = asyncio.Semaphore(32)

        async def check(outcome: Outcome) -> None:
            if outcome.response_id is None:
                return
            async with semaphore:
                got = await client.get(f"/v1/responses/{outcome.response_id}")
                if outcome.acknowledged is None:
                    status = got.json()["status"] if got.status_code == 200 else "404"
                    report.unacknowledged[status] = report.unacknowledged.get(status, 0) + 1
                    return
                if got.status_code == 404:
                    report.missing.append(outcome.response_id)
                    return
                items = await client.get(f"/v1/responses/{outcome.response_id}/input_items")
            stored = got.json()
            texts = [p["text"] for i in items.json()["data"] for p in i["content"]]
            whole = (
                stored == outcome.acknowledged
                and stored["output"][0]["content"][0]["text"] == echo_text(outcome.text)
                and [digest(t) for t in texts] == [digest(outcome.text)]
            )
            if whole:
                report.intact += 1
            else:
                report.half_written.append(outcome.response_id)

        await asyncio.gather(*(check(outcome) for outcome in outcomes))
    return report


__all__ = ["MB", "EchoBackend", "Outcome", "Report", "load", "requests", "verify"]
