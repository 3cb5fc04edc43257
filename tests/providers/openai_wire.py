"""Wire-accurate OpenAI bodies and events for tests, and the check that they are.

Builders here produce what OpenAI's servers send (every field the spec requires, ids and
timestamps of the real shapes). `Conformance` checks a payload twice: against OpenAI's OpenAPI
document (`tests.providers.openapi`) and, for replies, through the official `openai` SDK's
pydantic types, which is how most clients will read them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response as SdkResponse
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from tests.providers.openapi import OpenAPI

CREATED = 1_767_225_600
MODEL = "gpt-5.2-2025-12-11"

_SDK: dict[str, Callable[[Any], Any]] = {
    "CreateChatCompletionResponse": ChatCompletion.model_validate,
    "CreateChatCompletionStreamResponse": ChatCompletionChunk.model_validate,
    "Response": SdkResponse.model_validate,
    "ResponseStreamEvent": TypeAdapter(ResponseStreamEvent).validate_python,
}


class Conformance:
    """`conforms(name, payload)` asserts the payload matches `#/components/schemas/<name>`
    (and, for replies, the SDK type). `minus` names documented non-OpenAI fields (vLLM's
    `structured_outputs`, DeepSeek's `thinking`, ...) left out of the spec check; the test
    asserts those separately."""

    def __init__(self, spec: OpenAPI) -> None:
        self.spec = spec

    def __call__(self, name: str, payload: Mapping[str, Any], minus: Iterable[str] = ()) -> None:
        dropped = set(minus)
        instance = {k: v for k, v in payload.items() if k not in dropped}
        problems = self.spec.validate(name, instance)
        assert problems == [], f"{name}: " + "; ".join(problems)
        if name in _SDK:
            _SDK[name](dict(payload))

    def all(self, name: str, payloads: Iterable[Mapping[str, Any]]) -> None:
        for payload in payloads:
            self(name, payload)


# -- Chat Completions ----------------------------------------------------------------------


def chat_usage(prompt: int = 31, completion: int = 12, reasoning: int = 0, cached: int = 0) -> Any:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def chat_completion(
    finish: str = "stop",
    usage: Any = None,
    model: str = MODEL,
    **message: Any,
) -> dict[str, Any]:
    """A `chat.completion` body; `message` fields override the assistant message."""
    return {
        "id": "chatcmpl-CzT1a9Qm2kYbXw",
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "annotations": [],
                    **message,
                },
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage if usage is not None else chat_usage(),
        "service_tier": "default",
        "system_fingerprint": "fp_4c2851f862",
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def chunk(
    delta: Mapping[str, Any] | None = None,
    finish: str | None = None,
    usage: Any = None,
    model: str = MODEL,
) -> dict[str, Any]:
    """One `chat.completion.chunk`; without `delta` it is the trailing usage chunk (empty
    `choices`), as OpenAI sends it after the finish when `include_usage` is on."""
    choices = (
        []
        if delta is None
        else [{"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": "chatcmpl-CzT1a9Qm2kYbXw",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
        "service_tier": "default",
        "system_fingerprint": "fp_4c2851f862",
        "choices": choices,
        "usage": usage,
    }


def text_stream(*fragments: str, usage: Any = None, finish: str = "stop") -> list[dict[str, Any]]:
    """OpenAI's order: a role chunk, content chunks, a finish chunk, then the usage chunk."""
    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += [chunk({"content": f}) for f in fragments]
    events.append(chunk({}, finish=finish))
    events.append(chunk(usage=usage if usage is not None else chat_usage()))
    return events


# -- Responses -----------------------------------------------------------------------------


def response_usage(
    input_tokens: int = 36, output_tokens: int = 22, reasoning: int = 0, cached: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input_tokens + output_tokens,
    }


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(
    *parts: Mapping[str, Any], item_id: str = "msg_0a1b2c", status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [dict(p) for p in parts],
    }


def function_call_item(
    call_id: str,
    name: str,
    arguments: str,
    item_id: str = "fc_0a1b2c",
    status: str = "completed",
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


def reasoning_item(*summary: str, item_id: str = "rs_0a1b2c") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": s} for s in summary],
    }


def response_body(
    *output: Mapping[str, Any],
    status: str = "completed",
    incomplete: str | None = None,
    usage: Any = None,
    model: str = MODEL,
    **fields: Any,
) -> dict[str, Any]:
    """A `response` object with every field the spec requires."""
    body: dict[str, Any] = {
        "id": "resp_68af4030592c81938ec0a5fbab4a3e9f",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "completed_at": CREATED + 2 if status == "completed" else None,
        "error": None,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage if usage is not None else response_usage(),
        "metadata": {},
    }
    body.update(fields)
    return body


class Events:
    """Responses stream events with increasing `sequence_number`s, as the API numbers them."""

    def __init__(self) -> None:
        self._numbers = itertools.count()

    def __call__(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(self._numbers), **fields}

    def text_message(
        self, output_index: int, *fragments: str, item_id: str = "msg_0a1b2c"
    ) -> list[dict[str, Any]]:
        """A message item streamed: added, part added, deltas, text done, part done, done."""
        full = "".join(fragments)
        where = {"item_id": item_id, "output_index": output_index, "content_index": 0}
        return [
            self(
                "response.output_item.added",
                output_index=output_index,
                item=message_item(item_id=item_id, status="in_progress"),
            ),
            self("response.content_part.added", **where, part=output_text("")),
            *(self("response.output_text.delta", **where, delta=f, logprobs=[]) for f in fragments),
            self("response.output_text.done", **where, text=full, logprobs=[]),
            self("response.content_part.done", **where, part=output_text(full)),
            self(
                "response.output_item.done",
                output_index=output_index,
                item=message_item(output_text(full), item_id=item_id),
            ),
        ]

    def function_call(
        self, output_index: int, call_id: str, name: str, *fragments: str, item_id: str
    ) -> list[dict[str, Any]]:
        arguments = "".join(fragments)
        where = {"item_id": item_id, "output_index": output_index}
        return [
            self(
                "response.output_item.added",
                output_index=output_index,
                item=function_call_item(call_id, name, "", item_id=item_id, status="in_progress"),
            ),
            *(self("response.function_call_arguments.delta", **where, delta=f) for f in fragments),
            self("response.function_call_arguments.done", **where, name=name, arguments=arguments),
            self(
                "response.output_item.done",
                output_index=output_index,
                item=function_call_item(call_id, name, arguments, item_id=item_id),
            ),
        ]
