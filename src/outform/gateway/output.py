"""Chat Completions answer -> Responses `Response` object, as pure functions on dicts.

The Response carries every field the spec requires and echoes the request as OpenAI does:
`text` exactly as received (so a client sees the format that was applied), `tools`,
`tool_choice`, `parallel_tool_calls`, `instructions`, `metadata`, sampling parameters.

Output items, in order: a `reasoning` item when the backend sent reasoning text (kept out of
the message, so it never mixes with the structured output), one assistant `message` holding
an `output_text` part and/or a `refusal` part, then one `function_call` item per tool call.
A turn with tool calls and no text has no message item; a turn with nothing at all has one
message with empty text, so `output` is never empty. `finish_reason: "length"` gives
`status: "incomplete"` with `incomplete_details.reason: "max_output_tokens"`
(`content_filter` likewise).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from outform.gateway.chain import new_id
from outform.gateway.usage import read as read_usage
from outform.jsontext import dumps_text

_DEFAULT_TEXT = {"format": {"type": "text"}}
_DEFAULT_REASONING = {"effort": None, "summary": None}


class Shell:
    """The parts of one Response that do not depend on its output: id, timestamps, echoes."""

    __slots__ = ("background", "created_at", "echo", "id", "model")

    def __init__(self, req: Mapping[str, Any], response_id: str, created_at: int) -> None:
        self.id = response_id
        self.created_at = created_at
        self.model = req["model"]
        self.background = req.get("background") is True
        tools = req.get("tools") or []
        echo_tail: dict[str, Any] = {
            "parallel_tool_calls": _default(req, "parallel_tool_calls", True),
            "previous_response_id": req.get("previous_response_id"),
            "reasoning": req.get("reasoning") or _DEFAULT_REASONING,
            "store": _default(req, "store", True),
            "temperature": _default(req, "temperature", 1.0),
            "text": req["text"] if req.get("text") is not None else _DEFAULT_TEXT,
            "tool_choice": _default(req, "tool_choice", "auto"),
            "tools": [_echo_tool(tool) for tool in tools],
        }
        if req.get("top_logprobs") is not None:
            echo_tail["top_logprobs"] = req["top_logprobs"]
        echo_tail["top_p"] = _default(req, "top_p", 1.0)
        echo_tail["truncation"] = _default(req, "truncation", "disabled")
        self.echo = (
            req.get("instructions"),
            req.get("max_output_tokens"),
            req.get("max_tool_calls"),
            echo_tail,
            req.get("metadata") or {},
        )

    def build(
        self,
        status: str,
        output: list[dict[str, Any]],
        usage: dict[str, Any] | None = None,
        *,
        incomplete: str | None = None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        instructions, max_output_tokens, max_tool_calls, tail, metadata = self.echo
        response: dict[str, Any] = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "background": self.background,
            "completed_at": int(time.time()) if status == "completed" else None,
            "error": error,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
            "instructions": instructions,
            "max_output_tokens": max_output_tokens,
        }
        if max_tool_calls is not None:
            response["max_tool_calls"] = max_tool_calls
        response["model"] = self.model
        response["output"] = output
        response.update(tail)
        if usage is not None:
            response["usage"] = usage
        response["metadata"] = metadata
        return response


def _default(req: Mapping[str, Any], key: str, default: Any) -> Any:
    value = req.get(key)
    return default if value is None else value


def _echo_tool(tool: Mapping[str, Any]) -> Any:
    """A function tool as received; `strict` and `parameters`, which the spec's FunctionTool
    requires (nullable), are added as null when the client left them out."""
    if "strict" in tool and "parameters" in tool:
        return tool
    return {**tool, "strict": tool.get("strict"), "parameters": tool.get("parameters")}


# -- the pieces ----------------------------------------------------------------------------


def status_of(finish_reason: Any) -> tuple[str, str | None]:
    """Response status and incomplete reason for a Chat finish reason."""
    if finish_reason == "length":
        return "incomplete", "max_output_tokens"
    if finish_reason == "content_filter":
        return "incomplete", "content_filter"
    return "completed", None


def response_usage(usage: Any) -> dict[str, Any] | None:
    """Chat `usage` as the Responses `ResponseUsage`: None when the backend sent none, or one
    the gateway cannot read (`gateway.usage`: every count a non-negative integer)."""
    counts = read_usage(usage)
    return counts.response() if counts is not None else None


def content_text(content: Any) -> str:
    """Chat `content`: a string, or (some servers) a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "output_text")
        )
    return str(content)


def reasoning_text(message: Mapping[str, Any]) -> str:
    """Reasoning of vLLM / SGLang / llama.cpp / DeepSeek (`reasoning_content`) or newer vLLM
    and Groq (`reasoning`)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def arguments_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return dumps_text(value)  # a few servers send the arguments as an object


def output_text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def refusal_part(refusal: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": refusal}


def message_item(item_id: str, content: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def reasoning_item(item_id: str, text: str, status: str) -> dict[str, Any]:
    content = [{"type": "reasoning_text", "text": text}] if text else []
    return {"id": item_id, "type": "reasoning", "summary": [], "content": content, "status": status}


def function_call_item(
    item_id: str, call_id: str, name: str, arguments: str, status: str
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


# -- a whole answer ------------------------------------------------------------------------


def response_from_completion(shell: Shell, completion: Mapping[str, Any]) -> dict[str, Any]:
    """The Response for a non-streamed `chat.completion` body."""
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    message = choice.get("message") or {}
    status, incomplete = status_of(choice.get("finish_reason"))
    return shell.build(
        status,
        output_items(message, "incomplete" if incomplete else "completed"),
        response_usage(completion.get("usage")),
        incomplete=incomplete,
    )


def output_items(message: Mapping[str, Any], status: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    thinking = reasoning_text(message)
    if thinking:
        items.append(reasoning_item(new_id("rs"), thinking, "completed"))
    content: list[dict[str, Any]] = []
    text = content_text(message.get("content"))
    if text:
        content.append(output_text_part(text))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.append(refusal_part(refusal))
    calls = message.get("tool_calls") or []
    if content or not calls:
        items.append(message_item(new_id("msg"), content or [output_text_part("")], status))
    for call in calls:
        function = call.get("function") or {}
        items.append(
            function_call_item(
                new_id("fc"),
                str(call.get("id") or new_id("call")),
                str(function.get("name") or ""),
                arguments_text(function.get("arguments")),
                "completed",
            )
        )
    return items


__all__ = [
    "Shell",
    "arguments_text",
    "content_text",
    "function_call_item",
    "message_item",
    "output_items",
    "output_text_part",
    "reasoning_item",
    "reasoning_text",
    "refusal_part",
    "response_from_completion",
    "response_usage",
    "status_of",
]
