"""Every stream ends with exactly one terminal event, stored in that state, whatever fails.

The trial behind these tests: a backend's `usage` with `prompt_tokens_details: 5` made the
translation raise while it finished the stream, and the failure path built the failed Response
with the same code, which raised again: the stream was cut without its end, the row stayed
`in_progress` for the process's lifetime, and every `previous_response_id` on it was a 400.
The usage is now read by one tolerant rule (`gateway.usage`), and, whatever raises while a
stream is served (a fault injected here into the translation, into what gathers the output of
a failed stream, into the store), its end is reached by code that does not depend on what
failed: `response.failed`, stored as failed.

The stores are SQLite's and PostgreSQL's (when a server can be started: tests/postgres.py).

Also here: a stream that breaks in the middle of its answer says so, and a stream cut right
after the backend's `finish_reason` (no usage chunk, no `[DONE]`) is whole: the finish reason
is the backend saying so.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import openai
import orjson
import pytest

from outform.gateway.sqlite_store import SqliteStore
from outform.gateway.store import StoredResponse
from outform.gateway.stream import StreamTranslator
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import response_events, sse_events
from tests.providers.openai_wire import chat_completion, chat_usage, chunk, text_stream

if TYPE_CHECKING:
    from tests.gateway.postgres import Backend

INTERNAL = "Internal error in the gateway while streaming (see its log)."

MALFORMED_USAGES: dict[str, Any] = {
    "prompt_tokens_details is a number": {**chat_usage(5, 3), "prompt_tokens_details": 5},
    "completion_tokens_details is a string": {**chat_usage(5, 3), "completion_tokens_details": "x"},
    "a count is a string": {**chat_usage(5, 3), "prompt_tokens": "a"},
    "a count is negative": {**chat_usage(5, 3), "completion_tokens": -5},
    "a count is an object": {**chat_usage(5, 3), "prompt_tokens": {"a": 1}},
    "a count is beyond 64 bits": {**chat_usage(5, 3), "total_tokens": 10**30},
    "usage is a list": [1, 2],
}


pytest_plugins = ["tests.gateway.postgres"]
persistent = pytest.mark.parametrize("backend", ("sqlite", "postgres"), indirect=True)


@pytest.fixture
def gw(make_gateway: MakeGateway, backend: Backend) -> Harness:
    """The gateway over a store that persists (SQLite, and PostgreSQL when a server can be
    started: tests/postgres.py)."""
    return make_gateway(store=backend.open())


def stored_status(gw: Harness, response_id: str) -> str:
    status: str = gw.client.responses.retrieve(response_id).status or ""
    return status


def streamed(gw: Harness, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a streamed /v1/responses, read to the end of the body."""
    with httpx.Client(timeout=30) as http:
        answer = http.post(gw.url + "/v1/responses", json={**body, "stream": True})
    assert answer.status_code == 200
    return response_events(answer.content)


# -- a usage the gateway cannot read is left out, never a broken answer -------------------------


@persistent
@pytest.mark.parametrize("usage", MALFORMED_USAGES.values(), ids=MALFORMED_USAGES.keys())
def test_a_malformed_usage_leaves_the_usage_out_of_a_whole_streamed_and_background_answer(
    gw: Harness, usage: Any
) -> None:
    gw.backend.stream(text_stream("Hel", "lo", usage=usage))
    with gw.client.responses.stream(model="m", input="hi") as events:
        final = events.get_final_response()
    assert final.status == "completed" and final.output_text == "Hello"
    assert final.usage is None  # unknown: neither zeros nor -5
    assert stored_status(gw, final.id) == "completed"

    gw.backend.json(chat_completion(content="Hello", usage=usage))
    whole = gw.client.responses.create(model="m", input="hi")
    assert whole.status == "completed" and whole.usage is None

    gw.backend.json(chat_completion(content="Hello", usage=usage))
    queued = gw.client.responses.create(model="m", input="hi", background=True)
    answered = gw.client.responses.retrieve(queued.id)
    for _ in range(500):
        if answered.status not in ("queued", "in_progress"):
            break
        time.sleep(0.02)
        answered = gw.client.responses.retrieve(queued.id)
    assert answered.status == "completed" and answered.usage is None

    # the stored streamed response can be continued (it is not left in_progress)
    gw.backend.json(chat_completion(content="again"))
    follow = gw.client.responses.create(model="m", input="more", previous_response_id=final.id)
    assert follow.output_text == "again"


@persistent
def test_a_readable_usage_is_the_backends_own_counts(gw: Harness) -> None:
    gw.backend.stream(text_stream("Hi", usage=chat_usage(7, 2, reasoning=1, cached=3)))
    with gw.client.responses.stream(model="m", input="hi") as events:
        usage = events.get_final_response().usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (7, 2, 9)
    assert usage.input_tokens_details.cached_tokens == 3
    assert usage.output_tokens_details.reasoning_tokens == 1


# -- whatever raises while streaming, the stream ends and is stored failed ------------------------


@persistent
def test_a_fault_while_finishing_the_stream_ends_it_failed_and_stored_so(
    gw: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: StreamTranslator) -> bytes:
        raise RuntimeError("injected fault in finish()")

    monkeypatch.setattr(StreamTranslator, "finish", broken)
    gw.backend.stream(text_stream("Hel", "lo"))
    events = streamed(gw, {"model": "m", "input": "hi"})
    assert [e["type"] for e in events].count("response.failed") == 1
    failed = events[-1]["response"]
    assert events[-1]["type"] == "response.failed"
    assert failed["error"]["message"] == INTERNAL
    assert failed["output"][0]["content"][0]["text"] == "Hello"  # what had arrived is kept
    assert stored_status(gw, failed["id"]) == "failed"


@persistent
def test_a_fault_that_breaks_the_failure_path_too_still_ends_the_stream(
    gw: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`_open` is what both finishing a stream and gathering the output of a failed one
    read: broken, the stream still ends with `response.failed`, without output."""

    def broken(self: StreamTranslator) -> list[Any]:
        raise RuntimeError("injected fault in the open items")

    monkeypatch.setattr(StreamTranslator, "_open", broken)
    gw.backend.stream(text_stream("Hel", "lo"))
    events = streamed(gw, {"model": "m", "input": "hi"})
    assert events[-1]["type"] == "response.failed"
    assert sum(e["type"].startswith("response.failed") for e in events) == 1
    failed = events[-1]["response"]
    assert failed["output"] == []
    assert failed["error"]["message"] == INTERNAL
    assert stored_status(gw, failed["id"]) == "failed"
    gw.backend.json(chat_completion(content="on"))
    follow = gw.client.responses.create(model="m", input="x", previous_response_id=failed["id"])
    assert follow.output_text == "on"


class _RefusingFinalStates(SqliteStore):
    """A store that cannot take a stream's final Response (raising as a bug would, not as an
    unavailable store), but takes the failed one."""

    async def update(self, record: StoredResponse) -> bool:
        if record.response.get("status") == "completed":
            raise TypeError("injected fault: this record cannot be written")
        return await super().update(record)


def test_a_fault_while_storing_the_end_stores_it_failed_and_says_so(
    make_gateway: MakeGateway, tmp_path: Path
) -> None:
    gw = make_gateway(store=_RefusingFinalStates(tmp_path / "responses.sqlite"))
    gw.backend.stream(text_stream("Hel", "lo"))
    events = streamed(gw, {"model": "m", "input": "hi"})
    assert events[-1]["type"] == "response.failed"
    failed = events[-1]["response"]
    assert failed["error"]["message"] == INTERNAL
    assert stored_status(gw, failed["id"]) == "failed"


# -- the end of a stream, as the backend said it -----------------------------------------------


@persistent
def test_a_stream_broken_in_the_middle_of_its_answer_says_so(gw: Harness) -> None:
    gw.backend.stream(text_stream("Hel", "lo", "!"), drop_after=2)
    events = streamed(gw, {"model": "m", "input": "hi"})
    failed = events[-1]["response"]
    assert events[-1]["type"] == "response.failed"
    assert failed["error"]["message"] == (
        "The backend closed the connection in the middle of its answer."
    )
    assert failed["output"][0]["content"][0]["text"] == "Hel"


def _cut_after_finish() -> list[Any]:
    """Content, then the finish chunk, then the connection is cut: no usage, no [DONE]."""
    return [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hello"}),
        chunk({}, finish="stop"),
        chunk({"content": "never sent"}),
    ]


@persistent
def test_a_stream_cut_right_after_its_finish_reason_is_whole(gw: Harness) -> None:
    gw.backend.stream(_cut_after_finish(), drop_after=3)
    with gw.client.responses.stream(model="m", input="hi") as events:
        final = events.get_final_response()
    assert final.status == "completed" and final.output_text == "Hello"
    assert final.usage is None
    assert stored_status(gw, final.id) == "completed"

    gw.backend.stream(_cut_after_finish(), drop_after=3)
    with httpx.Client(timeout=30) as http:
        answer = http.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        )
    frames = [data for _, data in sse_events(answer.content)]
    assert frames[-1] == b"[DONE]"  # added, as after any finish without it
    assert not any(b'"error"' in frame for frame in frames)

    gw.backend.stream(_cut_after_finish(), drop_after=3)
    pieces = gw.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in pieces if c.choices) == "Hello"


@persistent
def test_a_stream_cut_before_its_finish_reason_is_still_cut_off(gw: Harness) -> None:
    gw.backend.stream(_cut_after_finish(), drop_after=2)
    with httpx.Client(timeout=30) as http:
        answer = http.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        )
    last = orjson.loads(sse_events(answer.content)[-1][1])
    assert last["error"]["code"] == "backend_error"
    assert last["error"]["message"] == (
        "The backend closed the connection in the middle of its answer."
    )

    gw.backend.stream(_cut_after_finish(), drop_after=2)
    sdk = openai.OpenAI(base_url=gw.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.APIError) as caught:
        list(
            sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
    assert "in the middle of its answer" in str(caught.value)
