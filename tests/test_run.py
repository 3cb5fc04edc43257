"""generate() and agenerate(): the re-ask loop, over real HTTP, with a minimal test adapter.

The adapter here is deliberately trivial (the wire body is the neutral request itself), so
these tests are about the loop: modes, re-asks with bounded context, re-asking only the
failing fields, budgets, refusals, truncation, tool calls. Each real provider adapter has its
own tests in tests/providers/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel, Field

import outform
from outform.errors import UsageError
from outform.parse.pipeline import Pipeline
from outform.plan import _PROFILE_MODE, Mode, plan, thinking_table
from outform.providers import registry
from outform.providers.base import (
    Delta,
    ForcedTool,
    FreeText,
    JsonObject,
    NativeSchema,
    Request,
    Response,
    StreamDecoder,
    Thinking,
    Tool,
    ToolCall,
    Usage,
    WireRequest,
)
from outform.providers.profiles import PROFILES
from outform.run import GenerationError, RefusalError, agenerate, as_tool, generate
from outform.transport import AsyncTransport, RetryPolicy, Transport
from tests.providers.fake import FakeServer


class EchoAdapter:
    """Sends the neutral request as JSON; reads `{"text", "finish", "usage", ...}` back."""

    name = "echo"
    auth = "bearer"

    def build(self, request: Request) -> WireRequest:
        output = request.output
        return WireRequest(
            "/generate",
            {
                "model": request.model,
                "messages": [{"role": m.role, "text": m.text} for m in request.messages],
                "output": type(output).__name__,
                "schema": getattr(output, "schema", None),
                "thinking": request.thinking.enabled if request.thinking else None,
            },
        )

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in body.get("calls", ()))
        return Response(
            text=body.get("text", ""),
            finish_reason=body.get("finish", "stop"),
            usage=Usage(*body.get("usage", (10, 5))),
            tool_calls=calls,
            refusal=body.get("refusal"),
        )

    def decoder(self, request: Request) -> StreamDecoder:
        raise NotImplementedError


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    with FakeServer() as fake:
        spec = registry.ProviderSpec(
            "echo", "tests.test_run:EchoAdapter", fake.url, profile="openai", key_required=False
        )
        monkeypatch.setitem(registry.PROVIDERS, "echo", spec)
        yield fake


@pytest.fixture
def transport() -> Iterator[Transport]:
    with Transport(retry=RetryPolicy(retries=0)) as sender:
        yield sender


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    email: str


GOOD: dict[str, Any] = {"name": "Ada", "age": 36, "email": "ada@example.com"}


def reply(server: FakeServer, text: str | dict[str, Any], **fields: Any) -> None:
    body = text if isinstance(text, str) else orjson.dumps(text).decode()
    server.json({"text": body, **fields})


def test_a_valid_reply_comes_back_typed_after_one_call(
    server: FakeServer, transport: Transport
) -> None:
    reply(server, GOOD)
    result = generate("echo:gpt-5", "Extract: Ada, 36", Person, transport=transport)
    assert result.value == Person(**GOOD)
    assert len(result.attempts) == 1
    assert result.mode == "native_schema"
    sent = server.last.json
    assert sent["output"] == "NativeSchema"
    assert sent["schema"]["additionalProperties"] is False  # the openai_strict dialect


def test_an_invalid_reply_is_fixed_by_one_reask_with_the_hint(
    server: FakeServer, transport: Transport
) -> None:
    reply(server, {"name": "Ada", "age": "thirty-six", "email": "ada@example.com"})
    reply(server, {"age": 36})
    result = generate("echo:gpt-5", "Extract: Ada, 36", Person, transport=transport)
    assert result.value == Person(**GOOD)
    assert [a.fields for a in result.attempts] == [(), ("age",)]
    assert result.usage.total_tokens == 30
    second = server.requests[1].json
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert "at age: expected integer" in second["messages"][2]["text"]
    assert set(second["schema"]["properties"]) == {"age"}


def changes_of(result: Any) -> list[tuple[str, str, int]]:
    return [(c.path, c.transform, c.attempt) for c in result.parse.changes]


def test_a_field_reask_keeps_the_changes_behind_the_fields_it_keeps(
    server: FakeServer, transport: Transport
) -> None:
    """Every change of every attempt that contributed to the value is in the result, with its
    attempt: the email coerced in the first reply (kept), the age coerced in the answer."""
    reply(server, '```json\n{"name": "Ada", "age": -5, "email": 12345}\n```')
    reply(server, {"age": "36"})
    result = generate("echo:gpt-5", "Extract", Person, transport=transport)
    assert result.value == Person(name="Ada", age=36, email="12345")
    assert [a.fields for a in result.attempts] == [(), ("age",)]
    assert changes_of(result) == [
        ("", "strip_fence", 1),
        ("/email", "number_to_string", 1),
        ("/age", "string_to_integer", 2),
    ]
    assert result.parse is not None and result.parse.data == {
        "name": "Ada",
        "age": 36,
        "email": "12345",
    }


def test_a_field_reask_answered_with_the_whole_object_again_changes_nothing_unsaid(
    server: FakeServer, transport: Transport
) -> None:
    """Found by a new-user trial: a model that answers a re-ask for `age` with the whole object
    got a lossy `drop_unexpected_key` of `/name` recorded (and counted by health), though the
    value returned holds that very name. A kept field written again with another value is
    still a recorded loss."""
    reply(server, {"name": "Ada", "age": "thirty-six", "email": "ada@example.com"})
    reply(server, GOOD)
    result = generate("echo:gpt-5", "Extract", Person, transport=transport)
    assert result.value == Person(**GOOD)
    assert [c for c in changes_of(result) if c[1] == "drop_unexpected_key"] == []
    reply(server, {"name": "Ada", "age": "thirty-six", "email": "ada@example.com"})
    reply(server, {**GOOD, "name": "Grace"})
    again = generate("echo:gpt-5", "Extract", Person, transport=transport)
    assert again.value == Person(**GOOD)  # the kept name
    assert ("/name", "drop_unexpected_key", 2) in changes_of(again)


def test_a_failed_field_reask_keeps_the_fields_and_the_changes_for_the_next(
    server: FakeServer, transport: Transport
) -> None:
    reply(server, {"name": "Ada", "age": -5, "email": 12345})
    reply(server, {"age": "minus five"})
    reply(server, {"age": 36.0})
    result = generate("echo:gpt-5", "Extract", Person, transport=transport)
    assert result.value == Person(name="Ada", age=36, email="12345")
    assert [a.fields for a in result.attempts] == [(), ("age",), ("age",)]
    assert [set(r.json["schema"]["properties"]) for r in server.requests[1:]] == [{"age"}] * 2
    # (36.0 is the integer 36 an int field wants: recorded, as every such float is)
    assert changes_of(result) == [
        ("/email", "number_to_string", 1),
        ("/age", "number_to_integer", 3),
    ]


def test_a_whole_reask_numbers_the_changes_of_the_reply_it_keeps(
    server: FakeServer, transport: Transport
) -> None:
    reply(server, "no json here")
    reply(server, '{"name": "Ada", "age": "36", "email": "ada@example.com"}')
    result = generate("echo:gpt-5", "Extract", Person, transport=transport)
    assert changes_of(result) == [("/age", "string_to_integer", 2)]


def test_the_reask_context_stays_bounded(server: FakeServer, transport: Transport) -> None:
    for _ in range(4):
        reply(server, "no json here")
    with pytest.raises(GenerationError) as caught:
        generate("echo:gpt-5", "Extract", Person, transport=transport, retries=3)
    sizes = [len(r.json["messages"]) for r in server.requests]
    assert sizes == [1, 3, 3, 3]
    assert len(caught.value.attempts) == 4
    assert all(a.hint is not None and a.hint.is_syntax for a in caught.value.attempts)
    assert caught.value.usage.total_tokens == 60
    # Python callers are told the argument names (the CLI shows its flags instead).
    assert caught.value.fix is not None and "`retries` or `token_budget`" in caught.value.fix


def test_a_token_budget_stops_the_reasks(server: FakeServer, transport: Transport) -> None:
    for _ in range(3):
        reply(server, "no json", usage=(40, 30))
    with pytest.raises(GenerationError, match="token budget"):
        generate("echo:gpt-5", "Extract", Person, transport=transport, retries=5, token_budget=100)
    assert len(server.requests) == 2


def test_a_token_budget_holds_when_the_provider_reports_no_usage(
    server: FakeServer, transport: Transport
) -> None:
    """Found by a trial: without usage in the replies, a budget of 15 let every re-ask
    through. The tokens are then estimated from the characters sent and received."""
    for _ in range(6):
        reply(server, "no json here at all", usage=(0, 0))
    with pytest.raises(GenerationError, match="token budget") as caught:
        generate("echo:gpt-5", "Extract", Person, transport=transport, retries=5, token_budget=15)
    # The first call (26 characters: 7 tokens) is under the budget; the re-ask, which sends
    # the reply and the hint back, is over it. Without the estimate, all 6 were sent.
    assert len(server.requests) == 2
    assert caught.value.usage.total_tokens == 0  # (what the provider said is kept as said)


def test_a_refusal_is_raised_not_reasked(server: FakeServer, transport: Transport) -> None:
    server.json({"text": "", "refusal": "I can't help with that.", "finish": "refusal"})
    with pytest.raises(RefusalError, match="can't help"):
        generate("echo:gpt-5", "Extract", Person, transport=transport)
    assert len(server.requests) == 1


def test_a_reply_blocked_by_a_content_filter_is_a_refusal(
    server: FakeServer, transport: Transport
) -> None:
    server.json({"text": "", "finish": "content_filter"})
    with pytest.raises(RefusalError, match="content filter"):
        generate("echo:gpt-5", "Extract", Person, transport=transport)


def test_a_reply_cut_at_the_token_limit_is_not_accepted_after_repair(
    server: FakeServer, transport: Transport
) -> None:
    reply(server, '{"name": "Ada", "age": 36, "email": "ada@exa', finish="length")
    reply(server, GOOD)
    result = generate("echo:gpt-5", "Extract", Person, transport=transport, level="full")
    assert result.value == Person(**GOOD)
    assert result.attempts[0].finish_reason == "length"
    assert result.attempts[0].hint is not None
    assert "cut off" in result.attempts[0].hint.message()


def test_tool_calls_are_returned_to_the_caller(server: FakeServer, transport: Transport) -> None:
    server.json(
        {
            "text": "",
            "finish": "tool_calls",
            "calls": [{"id": "c1", "name": "lookup", "arguments": '{"q": "Ada"}'}],
        }
    )
    lookup = Tool("lookup", {"type": "object", "properties": {"q": {"type": "string"}}})
    result = generate("echo:gpt-5", "Who?", Person, transport=transport, tools=[lookup])
    assert result.value is None
    assert result.tool_calls[0].parsed_arguments() == {"q": "Ada"}


def test_json_mode_puts_the_schema_and_the_word_json_in_the_instructions(
    server: FakeServer, transport: Transport
) -> None:
    reply(server, GOOD)
    generate("echo:gpt-5", "Extract", Person, transport=transport, mode="json")
    sent = server.last.json
    assert sent["output"] == "JsonObject"
    assert sent["messages"][0]["role"] == "system"
    assert "JSON" in sent["messages"][0]["text"] and "email: string" in sent["messages"][0]["text"]


class Nicknamed(BaseModel):
    name: str
    nick: str | None = None


class Tally(BaseModel):
    counts: dict[str, int]


@pytest.fixture
def slow_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the pipeline parsed off its fast path (each stage run), in order."""
    slow: list[str] = []
    parse_slowly = Pipeline._slow

    def spy(pipeline: Pipeline[Any], text: str) -> Any:
        slow.append(text)
        return parse_slowly(pipeline, text)

    monkeypatch.setattr(Pipeline, "_slow", spy)
    return slow


def test_a_reply_valid_as_sent_takes_the_fast_path_when_the_dialect_only_narrows(
    server: FakeServer, transport: Transport, slow_parses: list[str]
) -> None:
    """The strict dialect closes Person's object: that changes no value, so a valid reply
    is read by the pipeline's fast path (no stage runs, no change recorded)."""
    reply(server, GOOD)
    result = generate("echo:gpt-5", "Ada", Person, transport=transport)
    assert server.last.json["schema"]["additionalProperties"] is False
    assert result.value == Person(**GOOD) and slow_parses == []
    assert result.parse is not None and result.parse.changes == ()


@pytest.mark.parametrize(
    ("output", "wire", "expected"),
    [
        (Nicknamed, {"name": "Ada", "nick": None}, {"name": "Ada"}),
        (list[int], {"value": [1, 2]}, [1, 2]),
        (Tally, {"counts": [{"key": "a", "value": 1}]}, {"counts": {"a": 1}}),
    ],
    ids=["absent-as-null", "wrapped-root", "map-as-pairs"],
)
def test_a_reply_in_a_reshaped_wire_form_is_mapped_back(
    server: FakeServer,
    transport: Transport,
    slow_parses: list[str],
    output: Any,
    wire: Any,
    expected: Any,
) -> None:
    """An optional field sent as required and nullable, a root wrapped in an object, a map
    sent as key/value pairs: the reply is valid on the wire and mapped back by a stage of
    its own, recorded as a change."""
    reply(server, wire)
    result = generate("echo:gpt-5", "Ada", output, transport=transport)
    assert result.data == expected and len(slow_parses) == 1
    assert result.parse is not None
    assert [(c.stage, c.transform) for c in result.parse.changes] == [
        ("dialect", "dialect_reverse")
    ]


def test_free_text_needs_no_schema(server: FakeServer, transport: Transport) -> None:
    reply(server, "Hello there")
    result = generate("echo:gpt-5", "Say hello", transport=transport)
    assert result.value == "Hello there"
    assert server.last.json["output"] == "FreeText"


def test_agenerate_behaves_like_generate(server: FakeServer) -> None:
    reply(server, {"name": "Ada", "age": -1, "email": "a@b.c"})
    reply(server, {"age": 36})

    async def main() -> Any:
        async with AsyncTransport(retry=RetryPolicy(retries=0)) as sender:
            return await agenerate("echo:gpt-5", "Extract", Person, transport=sender)

    result = asyncio.run(main())
    assert result.value == Person(name="Ada", age=36, email="a@b.c")


def test_an_agent_can_be_a_tool_whose_result_is_validated(
    server: FakeServer, transport: Transport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("outform.run._shared_transport", lambda: transport)
    reply(server, GOOD)

    class Query(BaseModel):
        who: str

    agent = as_tool("find_person", model="echo:gpt-5", output=Person, input=Query)
    assert agent.tool.parameters["properties"]["who"]["type"] == "string"
    message = agent(ToolCall("call-1", "find_person", '{"who": "Ada"}'))
    assert message.role == "tool" and message.tool_call_id == "call-1"
    assert orjson.loads(message.text) == GOOD


def test_unknown_provider_or_mode_fails_before_any_request(server: FakeServer) -> None:
    with pytest.raises(UsageError, match="unknown provider"):
        generate("nowhere:model", "hi", Person)
    with pytest.raises(UsageError, match="unknown mode"):
        generate("echo:gpt-5", "hi", Person, mode="psychic")
    assert server.requests == []


# -- planning (no I/O) ---------------------------------------------------------------------


FMT = outform.ResponseFormat.of(Person)


def test_auto_picks_the_native_schema_when_the_model_has_one() -> None:
    call = plan(FMT, provider="anthropic", model="claude-sonnet-4-5")
    assert call.mode == "native_schema"
    assert isinstance(call.output, NativeSchema)
    assert call.translation is not None
    assert call.translation.ledger.counts()["enforced"] > 0


def test_auto_with_thinking_on_claude_keeps_native_output_and_thinking() -> None:
    call = plan(
        FMT, provider="anthropic", model="claude-sonnet-4-5", thinking=Thinking(budget_tokens=2048)
    )
    assert isinstance(call.output, NativeSchema)
    assert call.thinking is not None and call.thinking.enabled
    assert call.thinking_note == ""  # native output was the choice anyway: nothing switched


def test_auto_passes_over_a_mode_refused_while_thinking_and_says_what_it_switched() -> None:
    thinking = Thinking(budget_tokens=4096)
    without = plan(FMT, provider="anthropic", model="claude-3-5-sonnet-20241022")
    assert isinstance(without.output, ForcedTool)
    call = plan(FMT, provider="anthropic", model="claude-3-5-sonnet-20241022", thinking=thinking)
    assert call.mode == "instructions" and isinstance(call.output, FreeText)
    assert call.thinking == thinking  # thinking is kept as asked
    assert call.thinking_note.startswith("switched from a forced tool to instructions")
    assert call.thinking_note in call.reason


def test_an_explicit_mode_refused_while_thinking_is_kept_and_thinking_turned_off() -> None:
    for provider, model in (
        ("anthropic", "claude-sonnet-4-5"),
        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("deepseek", "deepseek-chat"),
    ):
        call = plan(
            FMT, provider=provider, model=model, mode="tool", thinking=Thinking(effort="high")
        )
        assert isinstance(call.output, ForcedTool), provider
        assert call.thinking is not None and not call.thinking.enabled
        assert call.thinking_note.startswith("thinking turned off")
        assert "mode='tool'" in call.reason


def test_thinking_with_a_mode_the_provider_allows_changes_nothing() -> None:
    thinking = Thinking(effort="high")
    modes: tuple[Mode, ...] = ("native", "tool", "json", "prompted")
    for mode in modes:
        call = plan(FMT, provider="gemini", model="gemini-2.5-flash", mode=mode, thinking=thinking)
        assert (call.thinking, call.thinking_note) == (thinking, "")


def test_the_thinking_table_in_the_docs_is_the_one_the_code_follows() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "generate.md").read_text()
    assert thinking_table() in doc


def test_every_mode_in_the_thinking_table_is_planned_as_the_table_says() -> None:
    thinking = Thinking(budget_tokens=2048)
    for name, found in PROFILES.items():
        for rule in found.models:
            model = rule.patterns[0].replace("*", "x")  # a model name the rule matches
            caps = found.lookup(model)[0]
            available = {
                "native": caps.native_dialect is not None,
                "tool": caps.tool_forcing,
                "json": caps.json_object,
                "prompted": True,
            }
            for mode, profile_mode in _PROFILE_MODE.items():
                if not available[mode]:
                    continue
                call = plan(FMT, provider=name, model=model, mode=mode, thinking=thinking)
                refused = profile_mode in found.thinking_refuses
                assert call.thinking is not None, (name, model, mode)
                assert call.thinking.enabled is not refused, (name, model, mode)


def test_asking_for_a_mode_the_model_lacks_fails_with_the_alternatives() -> None:
    with pytest.raises(UsageError, match="no native schema mode") as caught:
        plan(FMT, provider="deepseek", model="deepseek-chat", mode="native")
    assert caught.value.fix is not None and "auto" in caught.value.fix


def test_deepseek_gets_json_object_mode_with_the_schema_in_the_instructions() -> None:
    call = plan(FMT, provider="deepseek", model="deepseek-chat")
    assert isinstance(call.output, JsonObject)
    assert call.instructions is not None and "JSON Schema" in call.instructions


def test_free_text_plans_no_constraint() -> None:
    call = plan(outform.ResponseFormat.text(), provider="openai", model="gpt-5")
    assert isinstance(call.output, FreeText) and call.instructions is None


def test_deltas_are_plain_data() -> None:
    assert Delta("text", "{").text == "{"


def test_a_schema_holding_an_integer_beyond_64_bits_reaches_the_provider(
    server: FakeServer, transport: Transport
) -> None:
    """The request body is written with every digit (orjson alone writes 64 bits at most)."""
    reply(server, {"n": 1})
    schema = {"type": "object", "properties": {"n": {"enum": [2**64, 1]}}, "required": ["n"]}
    result = generate("echo:gpt-5", "Pick", schema, transport=transport)
    assert result.data == {"n": 1}
    assert b"18446744073709551616" in server.last.body


# -- replies stopped short (found by a new-user trial) -----------------------------------------


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"finish": "refusal"}, "stop reason: refusal"),
        ({"finish": "content_filter"}, "content filter stopped the reply"),
        ({"finish": "stop", "refusal": "I can't continue."}, "can't continue"),
    ],
)
def test_a_reply_stopped_by_a_refusal_is_a_refusal_whatever_came_before(
    server: FakeServer, transport: Transport, fields: dict[str, Any], said: str
) -> None:
    """A refusal that came after some text was re-asked (minimal) or its cut value accepted
    (full). The text before the stop is the start of an answer cut short, never the value."""
    reply(server, '{"name": "Ada", "age": 36, "email": "ada@', **fields)
    with pytest.raises(RefusalError, match=said) as caught:
        generate("echo:gpt-5", "Extract", Person, transport=transport, level="full")
    assert len(server.requests) == 1
    assert caught.value.attempts[0].text.startswith('{"name"')


class Entry(BaseModel):
    a: int


def test_a_cut_reply_whose_gathered_values_lost_the_last_is_asked_again(
    server: FakeServer, transport: Transport
) -> None:
    """`{"a": 1}⏎{"a": 2}⏎{"a": ` at the token limit gave [1, 2] with the cut third dropped.
    A reply cut off is accepted only if nothing was lost in reading it."""
    reply(server, '{"a": 1}\n{"a": 2}\n{"a": ', finish="length")
    reply(server, [{"a": 1}, {"a": 2}, {"a": 3}])  # type: ignore[arg-type]
    result = generate("echo:gpt-5", "List", list[Entry], transport=transport, level="full")
    assert result.value is not None and [e.a for e in result.value] == [1, 2, 3]
    assert result.attempts[0].hint is not None and "cut off" in result.attempts[0].hint.message()
