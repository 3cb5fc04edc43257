"""outform.stream() end to end against each provider's streaming fake, over real HTTP.

For every provider: snapshots grow while the reply arrives and end with the validated value;
a reply that goes wrong at 10% of its length is cut there and asked for again, and the
characters it would have cost are reported. Every stream event the fakes send is checked
against the provider's official artifact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, Field, field_validator

import outform
from outform.errors import ProviderError
from outform.parse.partial import plain
from outform.run import Stream, astream, stream
from outform.transport import AsyncTransport, RetryPolicy, Transport
from tests.providers import anthropic_wire, bedrock_wire, gemini_wire, ollama_wire, openai_wire
from tests.providers.fake import FakeServer


class Item(BaseModel):
    id: int
    name: str
    price: float = Field(ge=0)


class Order(BaseModel):
    customer: str
    items: list[Item]


ORDER: dict[str, Any] = {
    "customer": "Ada",
    "items": [{"id": i, "name": f"Widget {i}", "price": 2.5 + i} for i in range(30)],
}
GOOD = orjson.dumps(ORDER).decode()
# Goes wrong near 10% of its length: a price no repair can turn into a number.
BAD = GOOD.replace('"price":4.5', '"price":"about four dollars and fifty cents, give or take"')


def pieces(text: str, size: int = 16) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- wire-accurate streams, per provider ---------------------------------------------------


def _openai(text: str) -> tuple[list[Any], str]:
    events = openai_wire.text_stream(*pieces(text))
    return events, "sse"


def _responses(text: str) -> tuple[list[Any], str]:
    ev = openai_wire.Events()
    done = openai_wire.response_body(openai_wire.message_item(openai_wire.output_text(text)))
    events = [*ev.text_message(0, *pieces(text)), ev("response.completed", response=done)]
    return [(e["type"], e) for e in events], "sse"


def _anthropic(text: str) -> tuple[list[Any], str]:
    message: dict[str, Any] = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in pieces(text)
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 230},
        },
        {"type": "message_stop"},
    ]
    return [(e["type"], e) for e in events], "sse"


def _gemini(text: str) -> tuple[list[Any], str]:
    chunks = pieces(text)
    events = [
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": p}]},
                    "index": 0,
                    **({"finishReason": "STOP"} if i == len(chunks) - 1 else {}),
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 51,
                "candidatesTokenCount": i + 1,
                "totalTokenCount": 52 + i,
            },
            "modelVersion": "gemini-2.5-flash",
            "responseId": "mP0oafKUJfPjz7IP0NaEsAY",
        }
        for i, p in enumerate(chunks)
    ]
    return events, "sse"


def _bedrock(text: str) -> tuple[list[Any], str]:
    events: list[dict[str, Any]] = [
        {"messageStart": {"role": "assistant"}},
        *(
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": p}}}
            for p in pieces(text)
        ),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {
            "metadata": {
                "usage": {"inputTokens": 389, "outputTokens": 230, "totalTokens": 619},
                "metrics": {"latencyMs": 812},
            }
        },
    ]
    return events, "aws-event-stream"


def _ollama(text: str) -> tuple[list[Any], str]:
    lines: list[dict[str, Any]] = [
        {
            "model": "llama3.2",
            "created_at": "2026-11-21T17:21:00.000Z",
            "message": {"role": "assistant", "content": p},
            "done": False,
        }
        for p in pieces(text)
    ]
    lines.append(
        {
            "model": "llama3.2",
            "created_at": "2026-11-21T17:21:01.000Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "total_duration": 4883583458,
            "load_duration": 1334875,
            "prompt_eval_count": 26,
            "prompt_eval_duration": 342546000,
            "eval_count": 230,
            "eval_duration": 4535599000,
        }
    )
    return lines, "ndjson"


def _spec() -> openai_wire.Conformance:
    from tests.providers.openapi import load

    return openai_wire.Conformance(load())


def _check_openai(events: list[Any]) -> None:
    _spec().all("CreateChatCompletionStreamResponse", events)


def _check_responses(events: list[Any]) -> None:
    _spec().all("ResponseStreamEvent", [e for _, e in events])


def _check_anthropic(events: list[Any]) -> None:
    for _, event in events:
        anthropic_wire.check_event(event)


def _check_gemini(events: list[Any]) -> None:
    for event in events:
        gemini_wire.validate_response(event)


def _check_bedrock(events: list[Any]) -> None:
    for event in events:
        bedrock_wire.check_event(event)


def _check_ollama(events: list[Any]) -> None:
    for event in events:
        ollama_wire.validate_stream_event(event)


@dataclass
class Provider:
    model: str
    events: Callable[[str], tuple[list[Any], str]]
    check: Callable[[list[Any]], None]


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("openai:gpt-5.2", _openai, _check_openai),
    "openai-responses": Provider("openai-responses:gpt-5.2", _responses, _check_responses),
    "anthropic": Provider("anthropic:claude-sonnet-4-5", _anthropic, _check_anthropic),
    "gemini": Provider("gemini:gemini-2.5-flash", _gemini, _check_gemini),
    "bedrock": Provider(
        "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0", _bedrock, _check_bedrock
    ),
    "ollama": Provider("ollama:llama3.2", _ollama, _check_ollama),
}


class Case:
    def __init__(self, name: str, server: FakeServer) -> None:
        self.name = name
        self.provider = PROVIDERS[name]
        self.server = server

    def send(self, text: str) -> int:
        """Queue a streamed reply of `text`; returns the number of events."""
        events, framing = self.provider.events(text)
        self.provider.check(events)
        self.server.stream(events, framing=framing)  # type: ignore[arg-type]
        return len(events)

    def options(self) -> dict[str, Any]:
        return {"base_url": self.server.url, "api_key": "test-key-not-secret"}


@pytest.fixture(params=sorted(PROVIDERS))
def case(request: pytest.FixtureRequest, aws: None) -> Iterator[Case]:
    with FakeServer() as server:
        yield Case(request.param, server)


MESSAGES = [{"role": "user", "content": "List the order."}]


def test_snapshots_grow_and_end_with_the_validated_value(case: Case) -> None:
    case.send(GOOD)
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run: Stream[Any] = stream(
            case.provider.model, MESSAGES, Order, transport=transport, **case.options()
        )
        snapshots = list(run)
    shown = [plain(s.data) for s in snapshots[:-1]]
    assert len(shown) > 10
    counts = [len(s.get("items", [])) for s in shown if isinstance(s, dict)]
    assert counts == sorted(counts)  # items only ever added
    final = snapshots[-1]
    assert final.final and final.value == Order(**ORDER)
    assert run.generation is not None
    assert run.generation.usage.output_tokens > 0
    assert server_sent_stream(case)


def server_sent_stream(case: Case) -> bool:
    body = case.server.last.json
    return bool(
        body.get("stream") is True
        or "stream" in case.server.last.path
        or "converse-stream" in case.server.last.path
    )


def test_a_reply_that_goes_wrong_is_cut_there_and_asked_again(case: Case) -> None:
    sent = case.send(BAD)
    case.send(GOOD)
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run: Stream[Any] = stream(
            case.provider.model, MESSAGES, Order, transport=transport, **case.options()
        )
        final = list(run)[-1]
    assert final.value == Order(**ORDER)
    assert run.generation is not None
    first = run.generation.attempts[0]
    assert first.aborted_at is not None
    wrong_at = BAD.index("about four")
    assert wrong_at <= first.aborted_at <= wrong_at + 64  # within a few chunks of the mistake
    saved = len(BAD) - first.aborted_at
    print(
        f"{case.name}: cut at {first.aborted_at}/{len(BAD)} characters, {saved} saved "
        f"({saved / len(BAD):.0%}); the fake had {sent} events queued"
    )
    assert saved / len(BAD) > 0.8
    reask = case.server.requests[1].json
    assert "price" in orjson.dumps(reask).decode()


def test_the_async_stream_behaves_the_same(case: Case) -> None:
    case.send(GOOD)

    async def main() -> list[Any]:
        async with AsyncTransport(retry=RetryPolicy(retries=0)) as transport:
            run: Stream[Any] = astream(
                case.provider.model, MESSAGES, Order, transport=transport, **case.options()
            )
            return [s async for s in run]

    snapshots = asyncio.run(main())
    assert snapshots[-1].value == Order(**ORDER)
    assert len(snapshots) > 10


def test_stream_is_exported_at_the_top() -> None:
    assert outform.stream is stream and outform.astream is astream


# -- a stream that is not one, and streams across re-asks -------------------------------------


def test_a_plain_json_answer_to_a_stream_request_is_a_provider_error_not_retried(
    case: Case,
) -> None:
    case.server.json({"id": "not-a-stream", "object": "chat.completion"})
    case.server.json({"id": "not-a-stream", "object": "chat.completion"})
    with Transport(retry=RetryPolicy(retries=2)) as transport:
        run: Stream[Any] = stream(
            case.provider.model, MESSAGES, Order, transport=transport, **case.options()
        )
        with pytest.raises(ProviderError, match="event stream") as caught:
            list(run)
    error = caught.value
    assert "HTTP 200" in error.what and "application/json" in error.what
    assert error.body is not None and "not-a-stream" in error.body
    assert len(case.server.requests) == 1  # neither transport nor the re-ask loop tried again


class Adult(BaseModel):
    name: str
    age: int

    @field_validator("age")
    @classmethod
    def grown_up(cls, age: int) -> int:
        if age < 18:
            raise ValueError("must be 18 or more")
        return age


def test_snapshots_say_their_attempt_and_a_field_reask_keeps_the_fields_shown(
    case: Case,
) -> None:
    # The first reply is well-formed; its age, written as a string, is converted for the
    # partial value, and only the final validation (a validator) finds it wrong.
    case.send('{"name": "Ada Lovelace", "age": "12"}')
    case.send('{"age": 36}')
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run: Stream[Any] = stream(
            case.provider.model, MESSAGES, Adult, transport=transport, **case.options()
        )
        snapshots = list(run)
    assert run.generation is not None and run.generation.attempts[1].fields == ("age",)
    first = [s for s in snapshots if s.attempt == 1]
    second = [s for s in snapshots if s.attempt == 2]
    assert first and second and len(first) + len(second) == len(snapshots)
    assert [s.first for s in snapshots] == [
        s is first[0] or s is second[0] for s in snapshots
    ]  # `first` marks where each attempt starts
    aged = [s for s in first if s.value.age is not None]
    assert aged and all(s.value.age == 12 for s in aged)  # an int, never the string "12"
    assert [(c.path, c.transform, c.before, c.after) for c in aged[-1].changes] == [
        ("/age", "string_to_integer", "12", 12)
    ]
    for snapshot in second:  # the kept name stays shown while the age is asked for again
        assert snapshot.value.name == "Ada Lovelace"
    assert second[-1].final and second[-1].value == Adult(name="Ada Lovelace", age=36)
    assert [s.value.age for s in second[:-1]] in ([], [None], [36], [None, 36])


def test_the_async_stream_refuses_a_plain_json_answer_the_same_way(case: Case) -> None:
    case.server.json({"id": "not-a-stream"})

    async def main() -> None:
        async with AsyncTransport(retry=RetryPolicy(retries=2)) as transport:
            run: Stream[Any] = astream(
                case.provider.model, MESSAGES, Order, transport=transport, **case.options()
            )
            [s async for s in run]

    with pytest.raises(ProviderError, match="event stream"):
        asyncio.run(main())
    assert len(case.server.requests) == 1


def test_a_model_looping_inside_the_value_is_cut_and_asked_again_only_when_asked() -> None:
    """A repeated item is valid JSON, so by default the stream reads it to the end; with
    `Degeneration(inside=True)` the loop is cut where it is found and the reply asked again."""
    item = orjson.dumps(ORDER["items"][0]).decode()
    looping = '{"customer": "Ada", "items": [' + ", ".join([item] * 120) + "]}"
    with FakeServer() as server:
        case = Case("openai", server)
        case.send(looping)
        with Transport(retry=RetryPolicy(retries=0)) as transport:
            kept = list(
                stream(case.provider.model, MESSAGES, Order, transport=transport, **case.options())
            )
        assert kept[-1].final and len(kept[-1].value.items) == 120

        case.send(looping)
        case.send(GOOD)
        with Transport(retry=RetryPolicy(retries=0)) as transport:
            run: Stream[Any] = stream(
                case.provider.model,
                MESSAGES,
                Order,
                degeneration=outform.Degeneration(inside=True),
                transport=transport,
                **case.options(),
            )
            final = list(run)[-1]
    assert final.value == Order(**ORDER)
    assert run.generation is not None
    first = run.generation.attempts[0]
    assert first.aborted_at is not None and first.aborted_at < len(looping)


# -- a stream that stops without a stop reason (found by a new-user trial) -------------------


def _unended(name: str, text: str) -> list[Any]:
    """The provider's stream of `text` without the events that say it ended."""
    events, _ = PROVIDERS[name].events(text)
    if name == "openai":
        return events[:-2]  # no finish chunk, no usage chunk, no [DONE]
    return [e for e in events if e[0] not in ("message_delta", "message_stop")]  # Anthropic


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_stream_that_stops_without_a_stop_reason_is_accepted_only_if_complete(
    name: str,
) -> None:
    """The connection closed cleanly after the first item (no finish_reason, no [DONE], no
    message_stop): the repaired value, an order of one item, was taken at level full. Such
    a reply may be cut anywhere, so it is taken only as complete as sent; else it is asked
    for again, as a reply cut at the token limit is."""
    with FakeServer() as server:
        case = Case(name, server)
        server.stream(_unended(name, GOOD[: GOOD.index("},{") + 1]), framing="sse")
        case.send(GOOD)
        with Transport(retry=RetryPolicy(retries=0)) as transport:
            run: Stream[Any] = stream(
                case.provider.model, MESSAGES, Order, transport=transport, level="full",
                **case.options(),
            )  # fmt: skip
            snapshots = list(run)
        assert snapshots[-1].final and snapshots[-1].value == Order(**ORDER)
        assert run.generation is not None
        first = run.generation.attempts[0]
        assert first.hint is not None and "without the provider saying" in first.hint.message()

        server.stream(_unended(name, GOOD), framing="sse")  # whole, though unended: taken
        with Transport(retry=RetryPolicy(retries=0)) as transport:
            run = stream(case.provider.model, MESSAGES, Order, transport=transport,
                         **case.options())  # fmt: skip
            assert list(run)[-1].value == Order(**ORDER)
        assert run.generation is not None and len(run.generation.attempts) == 1
