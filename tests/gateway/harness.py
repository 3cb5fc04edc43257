"""The gateway under test: a real uvicorn server on 127.0.0.1 in front of a recording fake Chat
Completions backend, and clients whose every exchange is checked against OpenAI's spec.

* `ChatFake` is `tests.providers.fake.FakeServer` (scripted replies, recorded requests, error
  statuses, delays, connections dropped mid-stream) plus streams that stop at a gate until the
  test opens it (for shutdown and idle-timeout tests), and whole answers held at a gate that
  notice when the gateway hangs up (for cancellation tests).
* `running(settings)` serves `create_app(settings, store=...)` with uvicorn in a thread.
* `Recorder` is an httpx transport that keeps every request and response body a client sees;
  `check_exchange` validates each against the OpenAPI document (`Response`,
  `ResponseStreamEvent`, `ResponseItemList`, Chat bodies and chunks, `Error`) and the SDK's
  types, and checks the stream invariants clients depend on.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import orjson
import uvicorn

from outform.gateway.app import GatewayApp, create_app
from outform.gateway.server import uvicorn_config
from outform.gateway.settings import GatewaySettings
from outform.gateway.store import MemoryStore, ResponseStore, StoredResponse
from tests.providers.fake import FakeServer, Reply, _frames
from tests.providers.openai_wire import Conformance

# -- the fake backend ----------------------------------------------------------------------


@dataclass
class GatedReply(Reply):
    """A stream that sends `gate_after` events, waits for `gate`, then sends the rest."""

    gate: threading.Event = field(default_factory=threading.Event)
    gate_after: int = 1
    reached: threading.Event = field(default_factory=threading.Event)
    """Set once the events before the gate were sent."""
    broken: threading.Event = field(default_factory=threading.Event)
    """Set when the gateway had closed the connection by the time the rest was sent."""


@dataclass
class HeldReply(Reply):
    """A whole answer held back until `gate` opens; `abandoned` is set if the gateway hung
    up while it waited (it stopped calling the backend)."""

    gate: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)
    abandoned: threading.Event = field(default_factory=threading.Event)


def _hung_up(conn: socket.socket) -> bool:
    readable, _, _ = select.select([conn], [], [], 0)
    return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""


class ChatFake(FakeServer):
    """A Chat Completions backend at `url + "/v1"`."""

    @property
    def base(self) -> str:
        return self.url + "/v1"

    def chat_requests(self) -> list[Any]:
        return [r.json for r in self.requests if r.path.endswith("/chat/completions")]

    def _handler(self) -> Any:
        base: Any = super()._handler()

        class Handler(base):  # type: ignore[misc]
            def _body(self, reply: Reply) -> None:
                if isinstance(reply, HeldReply):
                    reply.reached.set()
                    while not reply.gate.wait(0.02):
                        if _hung_up(self.connection):
                            reply.abandoned.set()
                            self.close_connection = True
                            return
                super()._body(reply)

            def _stream(self, reply: Reply) -> None:
                if not isinstance(reply, GatedReply):
                    super()._stream(reply)
                    return
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                try:
                    for index, frame in enumerate(_frames(reply)):
                        if index == reply.gate_after:
                            reply.reached.set()
                            reply.gate.wait(10)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    reply.broken.set()
                    self.close_connection = True

        return Handler


# -- the gateway ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Running:
    url: str
    app: GatewayApp
    server: uvicorn.Server
    thread: threading.Thread
    store: ResponseStore

    def stop(self) -> None:
        self.server.should_exit = True  # what uvicorn's SIGTERM / SIGINT handler does
        self.thread.join(15)


@contextmanager
def running(
    settings: GatewaySettings,
    *,
    store: ResponseStore | None = None,
    env: dict[str, str] | None = None,
    wrap: Callable[[Any], Any] | None = None,
) -> Iterator[Running]:
    """`wrap(app)`: the ASGI app uvicorn serves in its place (a test's view of the server)."""
    port = free_port()
    settings = settings.replace(host="127.0.0.1", port=port)
    store = store if store is not None else MemoryStore()
    app = create_app(settings, store=store, env=env or {})
    served = wrap(app) if wrap is not None else app
    server = uvicorn.Server(uvicorn_config(served, settings, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the gateway did not start")
        time.sleep(0.01)
    gateway = Running(f"http://127.0.0.1:{port}", app, server, thread, store)
    try:
        yield gateway
    finally:
        gateway.stop()


@contextmanager
def in_front_of_fake(**settings: Any) -> Iterator[tuple[ChatFake, Running]]:
    """A `ChatFake` backend and the gateway in front of it (memory store, no access log),
    `settings` added; for tests that need no spec-checked client."""
    backend = ChatFake()
    with backend:
        options: dict[str, Any] = {"store": "memory", "access_log": False, **settings}
        with running(GatewaySettings(backend=backend.base, **options)) as gw:
            yield backend, gw


class RecordingStore(MemoryStore):
    """A MemoryStore that remembers the status of every save, per response id, in order: a
    test can check that each stored response ended in a final state."""

    FINAL = frozenset({"completed", "incomplete", "failed", "cancelled"})

    def __init__(self) -> None:
        super().__init__()
        self.saves: dict[str, list[str]] = {}

    async def save(self, record: StoredResponse) -> None:
        await super().save(record)
        self.saves.setdefault(record.id, []).append(str(record.response.get("status")))

    async def update(self, record: StoredResponse) -> bool:
        replaced = await super().update(record)
        if replaced:
            self.saves.setdefault(record.id, []).append(str(record.response.get("status")))
        return replaced

    def final(self, response_id: str) -> str | None:
        """The status of the last save of `response_id` (None if never saved)."""
        statuses = self.saves.get(response_id)
        return statuses[-1] if statuses else None

    def left_unfinished(self) -> dict[str, str]:
        """Stored responses whose last saved state is not final."""
        return {i: s[-1] for i, s in self.saves.items() if s[-1] not in self.FINAL}


# -- recording clients ---------------------------------------------------------------------


@dataclass
class Exchange:
    method: str
    path: str
    request: bytes
    status: int
    content_type: str
    chunks: list[bytes] = field(default_factory=list)
    complete: bool = False
    """The client read the body to its end (a client may hang up in the middle)."""

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class _Tee(httpx2.SyncByteStream):
    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner = inner
        self._exchange = exchange

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._exchange.chunks.append(chunk)
            yield chunk
        self._exchange.complete = True

    def close(self) -> None:
        self._inner.close()


class Recorder(httpx2.BaseTransport):
    """An httpx transport (httpx2: the one the `openai` SDK uses) that keeps what went out and
    what came back."""

    def __init__(self) -> None:
        self._inner = httpx2.HTTPTransport()
        self.exchanges: list[Exchange] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        response = self._inner.handle_request(request)
        exchange = Exchange(
            request.method,
            request.url.path,
            body,
            response.status_code,
            response.headers.get("content-type", ""),
        )
        self.exchanges.append(exchange)
        response.stream = _Tee(response.stream, exchange)
        return response

    def close(self) -> None:
        self._inner.close()


# -- checks --------------------------------------------------------------------------------


def sse_events(body: bytes) -> list[tuple[str | None, bytes]]:
    """(event name, data) of each SSE frame."""
    frames = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        name, data = None, []
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                name = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].strip())
        if data:
            frames.append((name, b"\n".join(data)))
    return frames


def response_events(body: bytes) -> list[dict[str, Any]]:
    events = []
    for name, data in sse_events(body):
        event = orjson.loads(data)
        assert name == event["type"], f"event: line {name!r} but type {event['type']!r}"
        events.append(event)
    return events


def check_exchange(conforms: Conformance, exchange: Exchange) -> int:
    """Validate one exchange; returns how many payloads were checked."""
    path, body = exchange.path, exchange.body
    if exchange.status >= 400:
        data = orjson.loads(body) if body else None
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            conforms("Error", data["error"])
            return 1
        return 0
    if path == "/v1/chat/completions":
        if exchange.content_type.startswith("text/event-stream"):
            chunks = [orjson.loads(d) for _, d in sse_events(body) if d != b"[DONE]"]
            conforms.all("CreateChatCompletionStreamResponse", chunks)
            return len(chunks)
        conforms("CreateChatCompletionResponse", orjson.loads(body))
        return 1
    if path == "/v1/models":
        conforms("ListModelsResponse", orjson.loads(body))
        return 1
    if not path.startswith("/v1/responses"):
        return 0
    if path.endswith("/input_items"):
        conforms("ResponseItemList", orjson.loads(body))
        return 1
    if exchange.method == "DELETE":
        assert orjson.loads(body)["deleted"] is True
        return 1
    if exchange.content_type.startswith("text/event-stream"):
        events = response_events(body)
        conforms.all("ResponseStreamEvent", events)
        if exchange.complete:
            check_stream(events)
        return len(events)
    response = orjson.loads(body)
    conforms("Response", _without_unknown_format(response))
    return 1


_SPEC_FORMATS = ("text", "json_object", "json_schema")


def _without_unknown_format(response: dict[str, Any]) -> dict[str, Any]:
    """The response, less a `text` that echoes a format type the spec does not define (one
    the gateway forwarded on purpose): the one field left out of the checks."""
    fmt = (response.get("text") or {}).get("format") or {}
    if fmt.get("type", "text") in _SPEC_FORMATS:
        return response
    return {k: v for k, v in response.items() if k != "text"}


def check_stream(events: list[dict[str, Any]]) -> None:
    """The invariants of a Responses stream that the SDK's helpers rely on."""
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    terminal = events[-1]
    assert terminal["type"] in ("response.completed", "response.incomplete", "response.failed")
    assert all(e["type"] not in ("response.completed", "response.failed") for e in events[:-1])
    added: dict[int, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    texts: dict[tuple[int, int], str] = {}
    arguments: dict[int, str] = {}
    for event in events[2:-1]:
        kind = event["type"]
        index = event.get("output_index")
        if kind == "response.output_item.added":
            assert index == len(added), "output_index values must be consecutive and unique"
            added[index] = event["item"]
            continue
        assert index in added, f"{kind} before its output_item.added"
        if "item_id" in event:
            assert event["item_id"] == added[index]["id"]
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            key = (index, event["content_index"])
            texts[key] = texts.get(key, "") + event["delta"]
        elif kind == "response.output_text.done":
            assert event["text"] == texts.get((index, event["content_index"]), "")
        elif kind == "response.refusal.done":
            assert event["refusal"] == texts.get((index, event["content_index"]), "")
        elif kind == "response.function_call_arguments.delta":
            arguments[index] = arguments.get(index, "") + event["delta"]
        elif kind == "response.function_call_arguments.done":
            assert event["name"] == added[index]["name"]
            assert event["arguments"] == arguments.get(index, "")
        elif kind == "response.output_item.done":
            assert event["item"]["id"] == added[index]["id"]
            done[index] = event["item"]
    if terminal["type"] != "response.failed":
        assert sorted(done) == sorted(added), "every added item must be done"
        output = terminal["response"]["output"]
        assert [item["id"] for item in output] == [added[i]["id"] for i in sorted(added)]
        assert output == [done[i] for i in sorted(done)]


__all__ = [
    "ChatFake",
    "Exchange",
    "GatedReply",
    "HeldReply",
    "Recorder",
    "RecordingStore",
    "Running",
    "check_exchange",
    "check_stream",
    "free_port",
    "in_front_of_fake",
    "response_events",
    "running",
    "sse_events",
]
