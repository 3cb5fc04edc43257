"""A client that leaves before the first byte of a streamed answer: the gateway stops reading
the backend at once, the stored response ends `failed` (the reason in its `error`), and the
request's run ends as an error. The same whether the server stays silent about the
disconnect (uvicorn today: `send` does nothing) or raises `OSError` from `send` (what the
ASGI spec lets a server do once the client is gone)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest

from outform.gateway.keeper import CLIENT_GONE
from outform.gateway.settings import GatewaySettings
from outform.trace.events import RunEnd
from tests.gateway.harness import ChatFake, GatedReply, RecordingStore, Running, running
from tests.providers.openai_wire import text_stream
from tests.trace.sinks import ListSink

BODIES = {
    "/v1/responses": {"model": "m", "input": "x", "stream": True},
    "/v1/chat/completions": {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
    },
}


def sends_raise(app: Any) -> Any:
    """The app as a server sees it that raises `OSError` from `send` once the client is gone;
    in these tests the client of every POST is gone before the gateway's first `send`."""

    async def served(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return

        async def gone(message: Any) -> None:
            raise OSError("the client disconnected")

        await app(scope, receive, gone)

    return served


@pytest.fixture(params=[None, sends_raise], ids=["send-silent", "send-raises"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[ChatFake, Running, RecordingStore]]:
    wrap: Callable[[Any], Any] | None = request.param
    store = RecordingStore()
    backend = ChatFake()
    with backend:
        settings = GatewaySettings(backend=backend.base, store="memory", access_log=False)
        with running(settings, store=store, wrap=wrap) as gw:
            yield backend, gw, store


def leave_before_the_first_byte(gw: Running, path: str) -> None:
    """Send a streamed request and hang up before anything came back (the backend's
    headers come later than the client waits)."""
    client = httpx.Client(timeout=httpx.Timeout(10, read=0.2))
    with client, pytest.raises(httpx.ReadTimeout):
        client.post(gw.url + path, content=orjson.dumps(BODIES[path]))


def wait_for(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 10
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def run_ends(recorded: ListSink) -> list[RunEnd]:
    return [e.data for e in recorded.flushed() if isinstance(e.data, RunEnd)]


@pytest.mark.parametrize("path", list(BODIES))
def test_a_client_gone_before_the_first_byte_ends_the_stream_and_its_stored_response(
    served: tuple[ChatFake, Running, RecordingStore], path: str, recorded: ListSink
) -> None:
    backend, gw, store = served
    gated = GatedReply(events=text_stream(*["word "] * 200), gate_after=1, delay=0.6)
    backend.reply(gated)
    try:
        leave_before_the_first_byte(gw, path)
        assert gated.reached.wait(10)  # the backend answered, after the client left
        assert wait_for(lambda: bool(run_ends(recorded)))
    finally:
        gated.gate.set()
    assert gated.broken.wait(10), "the gateway kept reading the backend for nobody"
    (end,) = run_ends(recorded)
    assert (end.outcome, end.error_class) == ("error", "the client went away")
    if path == "/v1/responses":
        assert wait_for(lambda: bool(store.saves) and not store.left_unfinished())
        (response_id,) = store.saves
        assert store.saves[response_id] == ["in_progress", "failed"]
        stored = httpx.get(f"{gw.url}/v1/responses/{response_id}").json()
        assert stored["status"] == "failed"
        assert stored["error"] == {"code": "server_error", "message": CLIENT_GONE}
    else:
        assert store.saves == {}  # the pass-through stores nothing
