"""JSON Schemas of Ollama's `POST /api/chat`: the request, the reply, and one NDJSON stream line.

The official Python client is not installed, so the authority is Ollama's own description of
its API, transcribed here by hand:

- `ollama/ollama` docs/openapi.yaml @ 017eb8ae4895fc6aea58b62f3793baa478586b6d:
  `ChatRequest`, `ChatMessage`, `ToolCall`, `ToolDefinition`, `ModelOptions`, `ChatResponse`,
  `ChatStreamEvent` (field names, types, `required`, the `format` and `think` unions).
- Fields the OpenAPI file leaves out but the guides document:
  `message.thinking` in history (docs/capabilities/streaming.mdx appends
  `{role: assistant, thinking, content}`), `tool_name` on tool results and `type` / `function.index`
  on replayed tool calls (docs/capabilities/tool-calling.mdx), and the final stream line's
  `done_reason` and counts (docs/api.md, "Chat Request (Streaming)", final response).
- `options` keys: docs/api.md, "Generate request (With options)", which lists every option.

Stricter than the source on purpose: every object here is closed (`additionalProperties: false`,
where the OpenAPI file leaves objects open and `ModelOptions` explicitly open), so a misspelt
key in what outform sends, or an invented field in a test's fake reply, fails validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

_DURATIONS = {
    "total_duration": {"type": "integer"},
    "load_duration": {"type": "integer"},
    "prompt_eval_count": {"type": "integer"},
    "prompt_eval_duration": {"type": "integer"},
    "eval_count": {"type": "integer"},
    "eval_duration": {"type": "integer"},
}

_DEFS: dict[str, Any] = {
    "ModelOptions": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            **{
                key: {"type": "integer"}
                for key in (
                    "num_keep",
                    "seed",
                    "num_predict",
                    "top_k",
                    "repeat_last_n",
                    "mirostat",
                    "num_ctx",
                    "num_batch",
                    "num_gpu",
                    "main_gpu",
                    "num_thread",
                )
            },
            **{
                key: {"type": "number"}
                for key in (
                    "top_p",
                    "min_p",
                    "typical_p",
                    "temperature",
                    "repeat_penalty",
                    "presence_penalty",
                    "frequency_penalty",
                    "mirostat_tau",
                    "mirostat_eta",
                )
            },
            **{
                key: {"type": "boolean"}
                for key in (
                    "penalize_newline",
                    "numa",
                    "low_vram",
                    "vocab_only",
                    "use_mmap",
                    "use_mlock",
                )
            },
            "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        },
    },
    "ToolCall": {
        "type": "object",
        "additionalProperties": False,
        "required": ["function"],
        "properties": {
            "type": {"const": "function"},
            "function": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name"],
                "properties": {
                    "index": {"type": "integer"},
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "arguments": {"type": "object"},
                },
            },
        },
    },
    "ToolDefinition": {
        "type": "object",
        "additionalProperties": False,
        "required": ["type", "function"],
        "properties": {
            "type": {"enum": ["function"]},
            "function": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "parameters"],
                "properties": {
                    "name": {"type": "string"},
                    "description": {"type": "string"},
                    "parameters": {"type": "object"},
                },
            },
        },
    },
    "ChatMessage": {
        "type": "object",
        "additionalProperties": False,
        "required": ["role", "content"],
        "properties": {
            "role": {"enum": ["system", "user", "assistant", "tool"]},
            "content": {"type": "string"},
            "thinking": {"type": "string"},
            "images": {"type": "array", "items": {"type": "string"}},
            "tool_calls": {"type": "array", "items": {"$ref": "#/$defs/ToolCall"}},
            "tool_name": {"type": "string"},
        },
    },
}

CHAT_REQUEST: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": _DEFS,
    "type": "object",
    "additionalProperties": False,
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string"},
        "messages": {"type": "array", "items": {"$ref": "#/$defs/ChatMessage"}},
        "tools": {"type": "array", "items": {"$ref": "#/$defs/ToolDefinition"}},
        "format": {"oneOf": [{"type": "string", "enum": ["json"]}, {"type": "object"}]},
        "options": {"$ref": "#/$defs/ModelOptions"},
        "stream": {"type": "boolean"},
        "think": {
            "oneOf": [{"type": "boolean"}, {"type": "string", "enum": ["high", "medium", "low"]}]
        },
        "keep_alive": {"oneOf": [{"type": "string"}, {"type": "number"}]},
        "logprobs": {"type": "boolean"},
        "top_logprobs": {"type": "integer"},
    },
}

_REPLY_MESSAGE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "role": {"type": "string"},
        "content": {"type": "string"},
        "thinking": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"$ref": "#/$defs/ToolCall"}},
        "images": {"type": "array", "items": {"type": "string"}},
    },
}

CHAT_RESPONSE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": _DEFS,
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string"},
        "created_at": {"type": "string"},
        "message": {
            **_REPLY_MESSAGE,
            "properties": {**_REPLY_MESSAGE["properties"], "role": {"enum": ["assistant"]}},
        },
        "done": {"type": "boolean"},
        "done_reason": {"type": "string"},
        **_DURATIONS,
        "logprobs": {"type": "array"},
    },
}

CHAT_STREAM_EVENT: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": _DEFS,
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "model": {"type": "string"},
        "created_at": {"type": "string"},
        "message": _REPLY_MESSAGE,
        "done": {"type": "boolean"},
        "done_reason": {"type": "string"},
        **_DURATIONS,
    },
}

_VALIDATORS = {
    name: Draft202012Validator(schema)
    for name, schema in (
        ("request", CHAT_REQUEST),
        ("response", CHAT_RESPONSE),
        ("stream event", CHAT_STREAM_EVENT),
    )
}


def _check(kind: str, value: Mapping[str, Any]) -> None:
    errors = sorted(_VALIDATORS[kind].iter_errors(value), key=lambda e: list(e.path))
    if errors:
        lines = [f"  at /{'/'.join(map(str, e.path))}: {e.message}" for e in errors]
        raise AssertionError(f"not a valid Ollama /api/chat {kind}:\n" + "\n".join(lines))


def validate_request(body: Mapping[str, Any]) -> None:
    _check("request", body)


def validate_response(body: Mapping[str, Any]) -> None:
    _check("response", body)


def validate_stream_event(event: Mapping[str, Any]) -> None:
    _check("stream event", event)
