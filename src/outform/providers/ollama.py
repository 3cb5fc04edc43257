"""Ollama's native chat API, `POST /api/chat` (the path `/chat` under the registry's base URL,
which ends in `/api`; the host comes from OLLAMA_HOST).

Shapes follow Ollama's own OpenAPI description (`ollama/ollama` docs/openapi.yaml) and its
capability guides (tool calling, thinking, streaming); tests/providers/ollama_wire.py holds the
shapes they describe. Points to know:

- `stream` is always sent: the server streams unless told `false` (the client does the same).
  A stream is NDJSON, one `ChatResponse`-like object per line; the last has `done: true`,
  `done_reason` and the token counts.
- `format` is the schema object (native schema) or `"json"` (JSON mode); there is no name and no
  strict flag. Ollama cannot force a tool call, so `ForcedTool`, `tool_choice="required"` and a
  named tool choice are refused with the alternative; `tool_choice="none"` sends no tools.
- `think` takes a bool or a level (`low`, `medium`, `high`); there is no token budget.
- Tool results are `role: tool` messages naming the tool in `tool_name` (the guide's form);
  tool-call arguments are JSON objects on the wire, JSON text in outform.
- Unlike the Python client, no empty `tools: []` is sent when there are no tools.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from outform.errors import UsageError
from outform.providers.base import (
    Auth,
    Delta,
    FinishReason,
    ForcedTool,
    ImagePart,
    JsonObject,
    Message,
    NamedTool,
    NativeSchema,
    Request,
    Response,
    Thinking,
    ToolCall,
    Usage,
    WireRequest,
    merge_extra,
)
from outform.providers.replies import (
    FLAG,
    NUMBER,
    OBJECT,
    TEXT,
    Arr,
    Either,
    Obj,
    check_body,
    check_event,
    error_message,
    reported,
)

GENERATED_ID_PREFIX: Final = "call_outform_"
"""Ollama's calls often come without ids; outform makes one up so results can refer to it."""

_LEVELS: Final[Mapping[str, str]] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "max": "high",
}

_NO_FORCING: Final = (
    "Ollama cannot force a tool call",
    "use the native schema mode (format=<schema>) for structured output, "
    "or tool_choice='auto' and describe the call in the prompt",
)


class OllamaChat:
    """Adapter for Ollama's `/api/chat`."""

    name = "ollama"
    auth: Auth = "none"

    def build(self, request: Request) -> WireRequest:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": _messages(request.messages),
            "stream": request.stream,
        }
        output = request.output
        if isinstance(output, ForcedTool):
            raise UsageError(
                f"{_NO_FORCING[0]} (output tool {output.name!r})",
                where="output mechanism",
                fix=_NO_FORCING[1],
            )
        if isinstance(output, NativeSchema):
            body["format"] = dict(output.schema)
        elif isinstance(output, JsonObject):
            body["format"] = "json"
        choice = request.tool_choice
        if choice == "required" or isinstance(choice, NamedTool):
            raise UsageError(
                f"{_NO_FORCING[0]} (tool_choice={choice!r})",
                where="tool_choice",
                fix=_NO_FORCING[1],
            )
        if request.tools and choice != "none":
            body["tools"] = [_tool(t.name, t.parameters, t.description) for t in request.tools]
        if request.thinking is not None:
            body["think"] = _think(request.thinking)
        options: dict[str, Any] = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options["num_predict"] = request.max_tokens
        if request.stop:
            options["stop"] = list(request.stop)
        if options:
            body["options"] = options
        body = merge_extra(body, request.extra)
        return WireRequest("/chat", body, stream="ndjson" if request.stream else None)

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        check_body(self.name, _REPLY, body)
        message = body.get("message") or {}
        calls = tuple(_tool_call(c) for c in message.get("tool_calls") or ())
        return Response(
            message.get("content") or "",
            _finish(body.get("done_reason"), bool(calls)),
            _usage(body),
            calls,
            thinking=message.get("thinking") or None,
            model=body.get("model") or request.model,
            raw=body,
        )

    def decoder(self, request: Request) -> OllamaStreamDecoder:
        return OllamaStreamDecoder()


class OllamaStreamDecoder:
    """NDJSON lines to deltas. Tool calls arrive whole, each in one line."""

    def __init__(self) -> None:
        self._calls = 0

    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        if "error" in event:
            message, kind = error_message(event["error"])
            raise reported("ollama", message, kind=kind, body=event)
        check_event("ollama", _REPLY, event)
        deltas: list[Delta] = []
        message = event.get("message") or {}
        if message.get("thinking"):
            deltas.append(Delta("thinking", message["thinking"]))
        if message.get("content"):
            deltas.append(Delta("text", message["content"]))
        for raw in message.get("tool_calls") or ():
            call = _tool_call(raw)
            deltas.append(
                Delta(
                    "tool_call",
                    call.arguments,
                    index=self._calls,
                    tool_call_id=call.id,
                    tool_name=call.name,
                )
            )
            self._calls += 1
        if event.get("done"):
            usage = _usage(event)
            if usage != Usage():
                deltas.append(Delta("usage", usage=usage))
            reason = _finish(event.get("done_reason"), self._calls > 0)
            deltas.append(Delta("finish", finish_reason=reason))
        return deltas


# -- request helpers -----------------------------------------------------------------------


def _messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        entry: dict[str, Any] = {"role": message.role, "content": message.text}
        images = [_image(p) for p in message.parts if isinstance(p, ImagePart)]
        if images:
            entry["images"] = images
        if message.tool_calls:
            entry["tool_calls"] = [
                {"function": {"name": c.name, "arguments": c.object_arguments("Ollama")}}
                for c in message.tool_calls
            ]
            names.update((c.id, c.name) for c in message.tool_calls)
        if message.role == "tool":
            name = message.name or names.get(message.tool_call_id or "")
            if name:
                entry["tool_name"] = name
        out.append(entry)
    return out


def _image(part: ImagePart) -> str:
    if part.data is not None:
        return part.base64
    inline = re.match(r"data:[^,]*;base64,(.*)", part.url or "", re.DOTALL)
    if inline:
        return inline.group(1)
    raise UsageError(
        "Ollama takes images as base64 data, not URLs",
        where=f"image {part.url!r}",
        fix="download the image and pass ImagePart(data=..., media_type=...)",
    )


def _tool(name: str, parameters: Mapping[str, Any], description: str | None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = dict(parameters)
    return {"type": "function", "function": function}


def _think(thinking: Thinking) -> bool | str:
    if not thinking.enabled:
        return False
    return _LEVELS[thinking.effort] if thinking.effort else True


# -- response helpers ----------------------------------------------------------------------

_REPLY = Obj(
    {
        "model": TEXT,
        "message": Obj(
            {
                "content": TEXT,
                "thinking": TEXT,
                "tool_calls": Arr(
                    Obj(
                        {
                            "id": TEXT,
                            "function": Obj({"name": TEXT, "arguments": Either(TEXT, OBJECT)}),
                        }
                    )
                ),
            }
        ),
        "done": FLAG,
        "done_reason": TEXT,
        "prompt_eval_count": NUMBER,
        "eval_count": NUMBER,
    }
)
"""What `parse` reads of a `ChatResponse`, and the decoder of each streamed line."""


def _tool_call(raw: Mapping[str, Any]) -> ToolCall:
    function = raw.get("function") or {}
    args = function.get("arguments")
    arguments = args if isinstance(args, str) else orjson.dumps(args or {}).decode()
    call_id = raw.get("id") or GENERATED_ID_PREFIX + uuid.uuid4().hex[:24]
    return ToolCall(str(call_id), str(function.get("name", "")), arguments)


def _finish(reason: str | None, calls: bool) -> FinishReason:
    """`stop` (or none, from servers older than `done_reason`), `length`; `load` and `unload`
    answer requests with no messages and map to "other"."""
    if reason in (None, "", "stop"):
        return "tool_calls" if calls else "stop"
    if reason == "length":
        return "length"
    return "other"


def _usage(body: Mapping[str, Any]) -> Usage:
    return Usage(int(body.get("prompt_eval_count") or 0), int(body.get("eval_count") or 0))


__all__ = ["GENERATED_ID_PREFIX", "OllamaChat", "OllamaStreamDecoder"]
