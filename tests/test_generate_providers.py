"""generate() end to end against each provider's fake, over real HTTP on 127.0.0.1.

For every provider: a first invalid reply fixed by one re-ask, a refusal, a reply cut at the
token limit, and a thinking model. Every request the fake receives is checked against the
provider's official artifact (OpenAI's OpenAPI document, the anthropic and google-genai SDK
types, botocore's service model, Ollama's documented schema), and so is every reply it sends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import openai
import orjson
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel, Field

import outform
from outform.errors import UsageError
from outform.providers.base import Thinking
from outform.providers.registry import PROVIDERS as REGISTRY
from outform.run import GenerationError, RefusalError
from outform.transport import RetryPolicy, Transport
from tests.providers import anthropic_wire, bedrock_wire, gemini_wire, ollama_wire, openai_wire
from tests.providers.fake import FakeServer
from tests.providers.openapi import OpenAPI


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    email: str


GOOD: dict[str, Any] = {"name": "Ada", "age": 36, "email": "ada@example.com"}
BAD_AGE: dict[str, Any] = {"name": "Ada", "age": "thirty-six", "email": "ada@example.com"}
CUT = '{"name": "Ada", "age": 36, "email": "ada@exa'
PROMPT = "Extract the person: Ada, 36, ada@example.com"


THINK = Thinking(budget_tokens=2048)


@dataclass
class Provider:
    model: str
    reply: Callable[[str, str], dict[str, Any]]
    """(text, finish) -> a non-streamed reply body, `finish` in the neutral vocabulary."""
    thinking_reply: Callable[[str, str], dict[str, Any]]
    refusal: Callable[[str], dict[str, Any]] | None
    check_request: Callable[[str, Any], object]
    check_reply: Callable[[Any], Any]
    thinking: Thinking = THINK


# -- OpenAI Chat Completions and Responses ---------------------------------------------------

_SPEC: list[OpenAPI] = []


def _spec() -> openai_wire.Conformance:
    if not _SPEC:
        from tests.providers.openapi import load

        _SPEC.append(load())
    return openai_wire.Conformance(_SPEC[0])


_CHAT_FINISH = {"stop": "stop", "length": "length"}


def _chat_reply(text: str, finish: str) -> dict[str, Any]:
    return openai_wire.chat_completion(finish=_CHAT_FINISH[finish], content=text)


def _chat_thinking(thinking: str, text: str) -> dict[str, Any]:
    usage = openai_wire.chat_usage(reasoning=40)
    return openai_wire.chat_completion(usage=usage, content=text)


def _chat_refusal(text: str) -> dict[str, Any]:
    return openai_wire.chat_completion(refusal=text)


def _responses_reply(text: str, finish: str) -> dict[str, Any]:
    if finish == "length":
        return openai_wire.response_body(
            openai_wire.message_item(openai_wire.output_text(text), status="incomplete"),
            status="incomplete",
            incomplete="max_output_tokens",
        )
    return openai_wire.response_body(openai_wire.message_item(openai_wire.output_text(text)))


def _responses_thinking(thinking: str, text: str) -> dict[str, Any]:
    return openai_wire.response_body(
        openai_wire.reasoning_item(thinking),
        openai_wire.message_item(openai_wire.output_text(text)),
    )


def _responses_refusal(text: str) -> dict[str, Any]:
    item = openai_wire.message_item({"type": "refusal", "refusal": text})
    return openai_wire.response_body(item)


# -- Anthropic ------------------------------------------------------------------------------

_STOP = {"stop": "end_turn", "length": "max_tokens"}


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 412, "output_tokens": 28},
    }


def _anthropic_reply(text: str, finish: str) -> dict[str, Any]:
    return _message([{"type": "text", "text": text}], _STOP[finish])


def _anthropic_thinking(thinking: str, text: str) -> dict[str, Any]:
    blocks = [
        {"type": "thinking", "thinking": thinking, "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
        {"type": "text", "text": text},
    ]
    return _message(blocks, "end_turn")


def _anthropic_refusal(text: str) -> dict[str, Any]:
    body = _message([{"type": "text", "text": ""}], "refusal")
    body["content"] = []
    body["stop_details"] = {"type": "refusal", "category": "cyber", "explanation": text}
    return body


# -- Gemini ---------------------------------------------------------------------------------

_GEMINI_FINISH = {"stop": "STOP", "length": "MAX_TOKENS"}


def _gemini_body(parts: list[dict[str, Any]], finish: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 51,
            "candidatesTokenCount": 19,
            "totalTokenCount": 70,
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mP0oafKUJfPjz7IP0NaEsAY",
    }


def _gemini_reply(text: str, finish: str) -> dict[str, Any]:
    return _gemini_body([{"text": text}], _GEMINI_FINISH[finish])


def _gemini_thinking(thinking: str, text: str) -> dict[str, Any]:
    return _gemini_body([{"text": thinking, "thought": True}, {"text": text}], "STOP")


# -- Bedrock Converse -----------------------------------------------------------------------

BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def _converse(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 389, "outputTokens": 27, "totalTokens": 416},
        "metrics": {"latencyMs": 812},
    }


def _bedrock_reply(text: str, finish: str) -> dict[str, Any]:
    return _converse([{"text": text}], _STOP[finish])


def _bedrock_thinking(thinking: str, text: str) -> dict[str, Any]:
    reasoning = {"reasoningContent": {"reasoningText": {"text": thinking, "signature": "c2ln"}}}
    return _converse([reasoning, {"text": text}], "end_turn")


def _bedrock_request(path: str, body: Any) -> None:
    bedrock_wire.check_request(path, body, unquote(path.split("/")[2]))


# -- Ollama ---------------------------------------------------------------------------------


def _ollama_body(message: dict[str, Any], done_reason: str) -> dict[str, Any]:
    return {
        "model": "llama3.2",
        "created_at": "2026-11-21T17:21:00.000Z",
        "message": {"role": "assistant", **message},
        "done": True,
        "done_reason": done_reason,
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_count": 26,
        "prompt_eval_duration": 342546000,
        "eval_count": 21,
        "eval_duration": 4535599000,
    }


def _ollama_reply(text: str, finish: str) -> dict[str, Any]:
    return _ollama_body({"content": text}, finish)


def _ollama_thinking(thinking: str, text: str) -> dict[str, Any]:
    return _ollama_body({"content": text, "thinking": thinking}, "stop")


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(
        "openai:gpt-5.2",
        _chat_reply,
        _chat_thinking,
        _chat_refusal,
        lambda path, body: _spec()("CreateChatCompletionRequest", body),
        lambda body: _spec()("CreateChatCompletionResponse", body),
        Thinking(effort="high"),
    ),
    "openai-responses": Provider(
        "openai-responses:gpt-5.2",
        _responses_reply,
        _responses_thinking,
        _responses_refusal,
        lambda path, body: _spec()("CreateResponse", body),
        lambda body: _spec()("Response", body),
        Thinking(effort="high"),
    ),
    "anthropic": Provider(
        "anthropic:claude-sonnet-4-5",
        _anthropic_reply,
        _anthropic_thinking,
        _anthropic_refusal,
        lambda path, body: anthropic_wire.check_request(body),
        anthropic_wire.check_message,
    ),
    "gemini": Provider(
        "gemini:gemini-2.5-flash",
        _gemini_reply,
        _gemini_thinking,
        None,
        lambda path, body: gemini_wire.validate_request(body),
        gemini_wire.validate_response,
    ),
    "bedrock": Provider(
        f"bedrock:{BEDROCK_MODEL}",
        _bedrock_reply,
        _bedrock_thinking,
        None,
        _bedrock_request,
        bedrock_wire.check_response,
    ),
    "ollama": Provider(
        "ollama:llama3.2",
        _ollama_reply,
        _ollama_thinking,
        None,
        lambda path, body: ollama_wire.validate_request(body),
        ollama_wire.validate_response,
        Thinking(),
    ),
}


class Call:
    """One provider's fake, and generate() pointed at it."""

    def __init__(self, name: str, server: FakeServer, transport: Transport) -> None:
        self.name = name
        self.provider = PROVIDERS[name]
        self.server = server
        self.transport = transport

    def reply(self, body: dict[str, Any]) -> None:
        self.provider.check_reply(body)
        self.server.json(body)

    def generate(
        self,
        output: Any = Person,
        model: str | None = None,
        messages: Any = None,
        **options: Any,
    ) -> outform.Generation[Any]:
        options.setdefault("base_url", self.server.url)
        try:
            return outform.generate(
                model or self.provider.model,
                messages or [{"role": "user", "content": PROMPT}],
                output,
                api_key="test-key-not-secret",
                transport=self.transport,
                **options,
            )
        finally:
            for request in self.server.requests:
                self.provider.check_request(request.path, request.json)

    @property
    def sent(self) -> Any:
        return self.server.last.json


@contextmanager
def calling(name: str) -> Iterator[Call]:
    with FakeServer() as server, Transport(retry=RetryPolicy(retries=0)) as transport:
        yield Call(name, server, transport)


@pytest.fixture(params=sorted(PROVIDERS))
def call(request: pytest.FixtureRequest, aws: None) -> Iterator[Call]:
    with calling(request.param) as one:
        yield one


@pytest.fixture(params=sorted(name for name, p in PROVIDERS.items() if p.refusal is not None))
def refusing(request: pytest.FixtureRequest) -> Iterator[Call]:
    """The providers whose API has a refusal of its own (the others report a content filter
    as a finish reason, tested in tests/providers/)."""
    with calling(request.param) as one:
        yield one


def test_an_invalid_first_reply_is_fixed_by_one_reask(call: Call) -> None:
    call.reply(call.provider.reply(orjson.dumps(BAD_AGE).decode(), "stop"))
    call.reply(call.provider.reply(orjson.dumps({"age": 36}).decode(), "stop"))
    result = call.generate()
    assert result.value == Person(**GOOD)
    assert len(result.attempts) == 2
    assert result.attempts[0].hint is not None
    assert result.attempts[1].fields == ("age",)
    assert result.usage.total_tokens > result.attempts[0].usage.total_tokens


def test_a_refusal_is_raised_with_its_text(refusing: Call) -> None:
    refusal = refusing.provider.refusal
    assert refusal is not None
    refusing.reply(refusal("I can't help with that request."))
    with pytest.raises(RefusalError, match="can't help"):
        refusing.generate()
    assert len(refusing.server.requests) == 1


def test_a_reply_cut_at_the_token_limit_is_asked_again(call: Call) -> None:
    call.reply(call.provider.reply(CUT, "length"))
    call.reply(call.provider.reply(orjson.dumps(GOOD).decode(), "stop"))
    result = call.generate(level="full")
    assert result.value == Person(**GOOD)
    assert result.attempts[0].finish_reason == "length"


def test_a_thinking_model_answers_after_its_thoughts(call: Call) -> None:
    call.reply(
        call.provider.thinking_reply("The user wants Ada's record.", orjson.dumps(GOOD).decode())
    )
    result = call.generate(thinking=call.provider.thinking)
    assert result.value == Person(**GOOD)
    if call.name != "openai":  # Chat Completions returns no reasoning text
        assert result.response.thinking is not None
        assert "Ada" in result.response.thinking


def test_retries_exhausted_carry_every_attempt(call: Call) -> None:
    for _ in range(2):
        call.reply(call.provider.reply("Sorry, I am not sure.", "stop"))
    with pytest.raises(GenerationError) as caught:
        call.generate(retries=1)
    assert [a.text for a in caught.value.attempts] == ["Sorry, I am not sure."] * 2
    assert caught.value.usage.total_tokens > 0


# -- what the caller asked for reaches the wire ------------------------------------------------

GOOD_TEXT = orjson.dumps(GOOD).decode()
LOOSE = outform.ResponseFormat.of(Person, strict=False)


def _anthropic_tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": name}
    return _message([{**block, "input": arguments}], "tool_use")


def _bedrock_tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    use = {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": name, "input": arguments}
    return _converse([{"toolUse": use}], "tool_use")


def _no_enforcement(result: outform.Generation[Any]) -> bool:
    assert result.ledger is not None
    counts = result.ledger.counts()
    return counts["enforced"] == 0 and counts["checked_locally"] > 0


@pytest.mark.parametrize("name", ["openai", "openai-responses"])
def test_strict_false_reaches_openai_as_strict_false_with_a_plain_schema(name: str) -> None:
    with calling(name) as call:
        call.reply(call.provider.reply(GOOD_TEXT, "stop"))
        result = call.generate(LOOSE)
        sent = call.sent
        fmt = sent["response_format"]["json_schema"] if name == "openai" else sent["text"]["format"]
        assert fmt["strict"] is False
        assert "additionalProperties" not in fmt["schema"]  # not rewritten for strict mode
        assert result.value == Person(**GOOD)
        assert _no_enforcement(result)
        assert "strict=False" in result.mode_reason


def test_unset_strict_sends_what_the_openai_sdk_sends_and_at_the_same_path() -> None:
    with calling("openai") as call:
        call.reply(_chat_reply(GOOD_TEXT, "stop"))
        result = call.generate()
        ours = call.sent["response_format"]
        call.reply(_chat_reply(GOOD_TEXT, "stop"))
        client = openai.OpenAI(
            base_url=call.server.url + "/v1", api_key="test-key-not-secret", max_retries=0
        )
        client.chat.completions.parse(
            model="gpt-5.2", messages=[{"role": "user", "content": PROMPT}], response_format=Person
        )
        sdk = call.server.last.json["response_format"]
        assert call.server.requests[0].path == call.server.requests[1].path
        assert ours["type"] == sdk["type"] == "json_schema"
        assert ours["json_schema"]["name"] == sdk["json_schema"]["name"] == "Person"
        assert ours["json_schema"]["strict"] is sdk["json_schema"]["strict"] is True
        assert ours["json_schema"]["schema"]["additionalProperties"] is False
        assert result.ledger is not None and result.ledger.counts()["enforced"] > 0


def test_strict_false_on_claude_sends_a_tool_that_is_not_strict() -> None:
    with calling("anthropic") as call:
        call.reply(_anthropic_tool_use("Person", GOOD))
        result = call.generate(LOOSE)
        sent = call.sent
        assert "output_config" not in sent  # always constrains decoding: passed over
        (tool,) = sent["tools"]
        assert tool["strict"] is False
        assert tool["input_schema"] == LOOSE.schema  # as given, not rewritten for strict mode
        assert sent["tool_choice"]["name"] == "Person"
        assert (result.mode, result.value) == ("forced_tool", Person(**GOOD))
        assert _no_enforcement(result)


def test_unset_strict_on_a_claude_tool_is_strict_with_the_schema_rewritten() -> None:
    with calling("anthropic") as call:
        call.reply(_anthropic_tool_use("Person", GOOD))
        call.generate(mode="tool")
        (tool,) = call.sent["tools"]
        assert tool["strict"] is True
        assert tool["input_schema"]["additionalProperties"] is False


def test_strict_false_on_bedrock_sends_a_tool_spec_that_is_not_strict(aws: None) -> None:
    with calling("bedrock") as call:
        call.reply(_bedrock_tool_use("Person", GOOD))
        call.reply(_bedrock_tool_use("Person", GOOD))
        result = call.generate(LOOSE)
        loose = call.sent
        call.generate(mode="tool")
        strict = call.sent
    assert "outputConfig" not in loose
    spec = loose["toolConfig"]["tools"][0]["toolSpec"]
    assert spec["strict"] is False and spec["inputSchema"]["json"] == LOOSE.schema
    assert loose["toolConfig"]["toolChoice"] == {"tool": {"name": "Person"}}
    assert _no_enforcement(result)
    spec = strict["toolConfig"]["tools"][0]["toolSpec"]
    assert spec["strict"] is True and spec["inputSchema"]["json"]["additionalProperties"] is False


def test_strict_false_with_a_native_mode_that_always_enforces_fails_before_any_request() -> None:
    with calling("anthropic") as call:
        with pytest.raises(UsageError, match="always constrains decoding") as caught:
            call.generate(LOOSE, mode="native")
        assert call.server.requests == []
        assert caught.value.fix is not None and "mode=" in caught.value.fix


def test_gemini_2_0_gets_the_openapi_form_in_response_schema_as_the_sdk_sends_it() -> None:
    with calling("gemini") as call:
        call.reply(_gemini_reply(GOOD_TEXT, "stop"))
        result = call.generate(model="gemini:gemini-2.0-flash")
        config = call.sent["generationConfig"]
        call.reply(_gemini_reply(GOOD_TEXT, "stop"))
        client = genai.Client(
            api_key="test-key-not-secret",
            http_options=genai_types.HttpOptions(base_url=call.server.url, api_version="v1beta"),
        )
        client.models.generate_content(
            model="gemini-2.0-flash",
            contents=PROMPT,
            config={"response_schema": Person, "response_mime_type": "application/json"},
        )
        sdk_config = call.server.last.json["generationConfig"]
        assert call.server.requests[0].path == call.server.requests[1].path
    assert result.value == Person(**GOOD)
    assert "responseJsonSchema" not in config and "responseJsonSchema" not in sdk_config
    assert config["responseSchema"]["type"] == "OBJECT"
    assert config["responseSchema"]["propertyOrdering"] == ["name", "age", "email"]
    ours = gemini_wire.as_sdk_types({"generationConfig": config})["generationConfig"]
    sdk = gemini_wire.as_sdk_types({"generationConfig": sdk_config})["generationConfig"]
    mine, theirs = ours.response_schema, sdk.response_schema
    assert (mine.type, mine.property_ordering, mine.required) == (
        theirs.type,
        theirs.property_ordering,
        theirs.required,
    )
    assert {k: v.type for k, v in mine.properties.items()} == {
        k: v.type for k, v in theirs.properties.items()
    }


def test_gemini_2_5_gets_json_schema_in_response_json_schema() -> None:
    with calling("gemini") as call:
        call.reply(_gemini_reply(GOOD_TEXT, "stop"))
        call.generate(model="gemini:gemini-2.5-flash")
        config = call.sent["generationConfig"]
    assert "responseSchema" not in config
    assert config["responseJsonSchema"]["type"] == "object"


def test_thinking_on_a_claude_that_gets_instructions_keeps_thinking_and_says_so() -> None:
    with calling("anthropic") as call:
        call.reply(_anthropic_thinking("The user wants Ada's record.", GOOD_TEXT))
        result = call.generate(
            model="anthropic:claude-3-5-sonnet-20241022", thinking=Thinking(budget_tokens=4096)
        )
        sent = call.sent
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "tools" not in sent and "tool_choice" not in sent
    assert "JSON Schema" in sent["system"]
    assert result.mode == "instructions" and result.value == Person(**GOOD)
    assert result.thinking.startswith("switched from a forced tool to instructions")
    assert result.mode_reason.endswith(result.thinking)
    assert result.response.thinking == "The user wants Ada's record."


@pytest.mark.parametrize("name", ["anthropic", "bedrock"])
def test_a_forced_tool_asked_for_by_name_turns_thinking_off_on_claude(name: str, aws: None) -> None:
    tool_use = _anthropic_tool_use if name == "anthropic" else _bedrock_tool_use
    with calling(name) as call:
        call.reply(tool_use("Person", GOOD))
        result = call.generate(mode="tool", thinking=Thinking(budget_tokens=4096))
        sent = call.sent
    assert "thinking" not in sent and "additionalModelRequestFields" not in sent
    assert "tool_choice" in sent or "toolChoice" in sent["toolConfig"]
    assert result.value == Person(**GOOD)
    assert result.thinking.startswith("thinking turned off")
    assert result.mode_reason.endswith(result.thinking)


@pytest.mark.parametrize(("name", "mode"), [("openai", "json"), ("ollama", "auto")])
def test_a_field_reask_keeps_one_system_turn_first_and_asks_in_a_user_turn(
    name: str, mode: str
) -> None:
    messages = [
        {"role": "system", "content": "You extract people from text."},
        {"role": "user", "content": PROMPT},
    ]
    with calling(name) as call:
        call.reply(call.provider.reply(orjson.dumps(BAD_AGE).decode(), "stop"))
        call.reply(call.provider.reply(orjson.dumps({"age": 36}).decode(), "stop"))
        result = call.generate(mode=mode, messages=messages)
        first, second = (r.json["messages"] for r in call.server.requests)
    assert result.value == Person(**GOOD)
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[0] == first[0]
    assert second[0]["content"].startswith("You extract people from text.")
    assert "JSON Schema" in second[0]["content"]
    hint = second[3]["content"]
    assert "at age" in hint and "corrected field(s): age" in hint
    assert '"email"' not in hint.partition("JSON Schema")[2]  # the schema of the asked field only


def test_vllm_gets_the_response_format_and_no_claim_of_enforcement() -> None:
    with calling("openai") as call:  # vLLM serves the Chat Completions wire
        call.reply(_chat_reply(GOOD_TEXT, "stop"))
        result = call.generate(model="vllm:Qwen/Qwen3-8B")
        sent = call.sent
    assert "structured_outputs" not in sent
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["strict"] is True  # asked for, all the same
    assert result.value == Person(**GOOD)
    assert _no_enforcement(result)
    assert "the provider enforces" not in result.mode_reason
    assert "which outform cannot see" in result.mode_reason


def test_a_base_url_with_or_without_its_version_segment_reaches_the_same_path(
    call: Call,
) -> None:
    spec = REGISTRY[call.provider.model.partition(":")[0]]
    for _ in range(3):
        call.reply(call.provider.reply(GOOD_TEXT, "stop"))
    for base in (call.server.url, call.server.url + "/", f"{call.server.url}/{spec.version}"):
        call.generate(base_url=base)
    paths = {r.path for r in call.server.requests}
    assert len(paths) == 1, paths
    (path,) = paths
    assert path.startswith(f"/{spec.version}/" if spec.version else "/model/")
