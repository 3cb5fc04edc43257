"""generate() end to end against each provider's fake, over real HTTP on 127.0.0.1.

For every provider: a first invalid reply fixed by one re-ask, a refusal, a reply cut at the
token limit, and a thinking model. Every request the fake receives is checked against the
provider's official artifact (OpenAI's OpenAPI document, the anthropic and google-genai SDK
types, botocore's service model, Ollama's documented schema), and so is every reply it sends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pytest
from pydantic import BaseModel, Field

import outform
from outform.providers.base import Thinking
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


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Credentials from the environment only, so no real AWS configuration is read."""
    for name in ("config", "credentials"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


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

    def generate(self, **options: Any) -> outform.Generation[Person]:
        try:
            return outform.generate(
                self.provider.model,
                [{"role": "user", "content": "Extract the person: Ada, 36, ada@example.com"}],
                Person,
                base_url=self.server.url,
                api_key="test-key-not-secret",
                transport=self.transport,
                **options,
            )
        finally:
            for request in self.server.requests:
                self.provider.check_request(request.path, request.json)


@pytest.fixture(params=sorted(PROVIDERS))
def call(request: pytest.FixtureRequest, aws: None) -> Iterator[Call]:
    with FakeServer() as server, Transport(retry=RetryPolicy(retries=0)) as transport:
        yield Call(request.param, server, transport)


def test_an_invalid_first_reply_is_fixed_by_one_reask(call: Call) -> None:
    call.reply(call.provider.reply(orjson.dumps(BAD_AGE).decode(), "stop"))
    call.reply(call.provider.reply(orjson.dumps({"age": 36}).decode(), "stop"))
    result = call.generate()
    assert result.value == Person(**GOOD)
    assert len(result.attempts) == 2
    assert result.attempts[0].hint is not None
    assert result.attempts[1].fields == ("age",)
    assert result.usage.total_tokens > result.attempts[0].usage.total_tokens


def test_a_refusal_is_raised_with_its_text(call: Call) -> None:
    if call.provider.refusal is None:
        pytest.skip(f"{call.name} has no refusal in its API")
    call.reply(call.provider.refusal("I can't help with that request."))
    with pytest.raises(RefusalError, match="can't help"):
        call.generate()
    assert len(call.server.requests) == 1


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
