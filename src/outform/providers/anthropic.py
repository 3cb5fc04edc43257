"""Anthropic Messages API (`POST /v1/messages`): the neutral request in, a Message out.

Sources: Anthropic's Messages API docs, checked against the request and response
types of the official `anthropic` SDK (2.12). Where they disagree the SDK wins. The choices made
here:

* `NativeSchema` → `output_config.format = {"type": "json_schema", "schema": ...}`, the GA
  form: no beta header and no top-level `output_format`. The format has no name, strict flag or
  description, so `NativeSchema.name/strict/description` go nowhere; it is always enforced.
* `ForcedTool` → one tool plus `tool_choice = {"type": "tool", "name": ...,
  "disable_parallel_tool_use": true}`, so that one call comes back. That call's `input` (an
  object) is the reply text, encoded with orjson; several calls all the same are several
  values of the reply, one per line (providers/forced.py).
* `JsonObject` → `UsageError`: Anthropic has no schema-less JSON mode.
* Thinking. A budget gives `{"type": "enabled", "budget_tokens": N}`, with N at least 1024
  (the documented minimum; a smaller budget is refused here rather than by a 400). An effort
  without a budget gives `{"type": "adaptive"}` plus `output_config.effort`, which is the pair
  the SDK sends for adaptive thinking. `Thinking()` with neither gives the minimum budget,
  1024. `enabled=False` omits `thinking`: omitting it turns thinking off on every model but
  Mythos Preview, and that model refuses `{"type": "disabled"}` anyway. An effort is always
  sent as `output_config.effort` ("minimal" becomes "low", the lowest Anthropic effort).
* Thinking and a forced tool choice (`ForcedTool`, `"required"`, a `NamedTool`) cannot be
  combined: the API answers 400 (its extended-thinking docs). Adaptive thinking is included because
  sources disagree on it. The adapter raises `UsageError` instead of sending the request.
* `max_tokens` is required. When the request has none, the adapter sends 4096, plus the
  thinking budget when thinking is on (12288 more for adaptive thinking). 4096 is the smallest
  output ceiling of any Claude model (Claude 3 Haiku), so it is valid everywhere and still far
  more than a structured reply needs. The budget must stay below `max_tokens`.
* `temperature` is never sent. The SDK (2.x) has no sampling parameters at all, API version
  2026-10-21 refuses them on every model, Opus 4.7+ refuse them under any version, and older
  models refuse them while thinking. Callers who need it on an older model and API version can
  pass `extra={"temperature": ...}`.
* Auth (`x-api-key` or Bearer) and `anthropic-version` belong to the endpoint. The adapter
  sets neither, so it works with whichever the registry picks.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    TextPart,
    Thinking,
    ToolCall,
    ToolChoice,
    Usage,
    WireRequest,
    merge_extra,
)
from outform.providers.forced import ForcedStream, joined
from outform.providers.replies import (
    INDEX,
    NUMBER,
    OBJECT,
    STRING,
    TEXT,
    Arr,
    Obj,
    Tagged,
    check_body,
    check_event,
    error_message,
    reported,
)

PROVIDER: Final = "anthropic"
DEFAULT_MAX_TOKENS: Final = 4096
"""Sent when a request has no max_tokens: the smallest output ceiling of any Claude model."""
MIN_THINKING_BUDGET: Final = 1024
"""The smallest `budget_tokens` the API accepts, and the budget of a bare `Thinking()`."""
ADAPTIVE_THINKING_ALLOWANCE: Final = 12_288
"""Room left for adaptive thinking when max_tokens is defaulted (4096 + 12288 = 16384)."""
IMAGE_MEDIA_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
EFFORT: Final[Mapping[str, str]] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "max": "max",
}
_FINISH: Final[Mapping[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "other",
}


class AnthropicMessages:
    """Adapter for `POST /v1/messages`: the path `/messages`, under the registry's base URL
    (which ends in the version segment, `/v1`)."""

    name = PROVIDER
    auth: Auth = "x-api-key"

    def build(self, request: Request) -> WireRequest:
        if isinstance(request.output, JsonObject):
            raise UsageError(
                "Anthropic has no JSON-object mode",
                where="output",
                fix="use a schema (output_config.format) or a forced tool instead",
            )
        forced = request.output.name if isinstance(request.output, ForcedTool) else None
        thinking = claude_thinking(request.thinking, PROVIDER)
        tools = self._tools(request)
        choice = _tool_choice(request.tool_choice, forced, tools)
        refuse_forcing_with_thinking(
            PROVIDER, thinking, forced is not None or _forces(choice), where="thinking"
        )
        system, messages = _messages(request.messages)

        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": claude_max_tokens(request.max_tokens, thinking, PROVIDER),
        }
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = messages
        if tools:
            body["tools"] = tools
        if choice is not None:
            body["tool_choice"] = choice
        if thinking.config is not None:
            body["thinking"] = thinking.config
        output_config: dict[str, Any] = {}
        if thinking.effort is not None:
            output_config["effort"] = thinking.effort
        if isinstance(request.output, NativeSchema):
            output_config["format"] = {"type": "json_schema", "schema": dict(request.output.schema)}
        if output_config:
            body["output_config"] = output_config
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        if request.stream:
            body["stream"] = True
        body = merge_extra(body, request.extra)
        return WireRequest("/messages", body, stream="sse" if request.stream else None)

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        check_body(PROVIDER, _MESSAGE, body)
        forced = request.output.name if isinstance(request.output, ForcedTool) else None
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        forced_arguments: list[str] = []
        for block in body.get("content") or ():
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "thinking":
                thoughts.append(str(block.get("thinking", "")))
            elif kind == "tool_use":
                arguments = orjson.dumps(block.get("input") or {}).decode()
                if forced is not None and block.get("name") == forced:
                    forced_arguments.append(arguments)
                else:
                    call_id, name = str(block.get("id", "")), str(block.get("name", ""))
                    calls.append(ToolCall(call_id, name, arguments))
        stop = body.get("stop_reason")
        return Response(
            text=joined(forced_arguments) if forced_arguments else "".join(texts),
            finish_reason=finish_reason(stop, bool(forced_arguments), bool(calls)),
            usage=_usage(body.get("usage")),
            tool_calls=tuple(calls),
            refusal=_refusal(body.get("stop_details")) if stop == "refusal" else None,
            thinking="".join(thoughts) or None,
            model=body.get("model"),
            raw=body,
        )

    def decoder(self, request: Request) -> _Decoder:
        return _Decoder(request.output.name if isinstance(request.output, ForcedTool) else None)

    def _tools(self, request: Request) -> list[dict[str, Any]]:
        tools = [_tool(t.name, t.parameters, t.description, t.strict) for t in request.tools]
        output = request.output
        if isinstance(output, ForcedTool):
            if any(t.name == output.name for t in request.tools):
                raise UsageError(
                    f"the forced output tool {output.name!r} has the name of one of the tools",
                    where="tools",
                    fix="give the output tool a name no other tool uses",
                )
            tools.append(_tool(output.name, output.schema, output.description, output.strict))
        return tools


# -- thinking rules, shared with Claude on Bedrock -----------------------------------------


@dataclass(frozen=True, slots=True)
class ClaudeThinking:
    """A neutral `Thinking` in Claude's terms."""

    config: dict[str, Any] | None
    """The `thinking` object, or None to leave it out."""
    effort: str | None
    """`output_config.effort`."""
    reserve: int
    """Tokens that thinking may take out of a defaulted max_tokens."""

    @property
    def on(self) -> bool:
        return self.config is not None

    @property
    def budget(self) -> int | None:
        return self.config.get("budget_tokens") if self.config else None


def claude_thinking(thinking: Thinking | None, provider: str) -> ClaudeThinking:
    if thinking is None:
        return ClaudeThinking(None, None, 0)
    effort = EFFORT[thinking.effort] if thinking.effort else None
    if not thinking.enabled:
        return ClaudeThinking(None, effort, 0)
    if thinking.budget_tokens is not None:
        if thinking.budget_tokens < MIN_THINKING_BUDGET:
            raise UsageError(
                f"{provider}: a thinking budget of {thinking.budget_tokens} tokens is below "
                f"the minimum of {MIN_THINKING_BUDGET}",
                where="thinking.budget_tokens",
                fix=f"use budget_tokens >= {MIN_THINKING_BUDGET}, or an effort instead",
            )
        budget = thinking.budget_tokens
        return ClaudeThinking({"type": "enabled", "budget_tokens": budget}, effort, budget)
    if effort is not None:
        return ClaudeThinking({"type": "adaptive"}, effort, ADAPTIVE_THINKING_ALLOWANCE)
    config = {"type": "enabled", "budget_tokens": MIN_THINKING_BUDGET}
    return ClaudeThinking(config, None, MIN_THINKING_BUDGET)


def claude_max_tokens(requested: int | None, thinking: ClaudeThinking, provider: str) -> int:
    """The max_tokens to send: the request's, or the default plus what thinking needs."""
    if requested is None:
        return DEFAULT_MAX_TOKENS + thinking.reserve
    budget = thinking.budget
    if budget is not None and requested <= budget:
        raise UsageError(
            f"{provider}: max_tokens ({requested}) must be larger than the thinking budget "
            f"({budget})",
            where="max_tokens",
            fix=f"raise max_tokens above {budget}, or leave it unset",
        )
    return requested


def refuse_forcing_with_thinking(
    provider: str, thinking: ClaudeThinking, forced: bool, where: str
) -> None:
    """Claude answers 400 to thinking plus a forced tool choice (Anthropic's and Bedrock's
    extended-thinking docs)."""
    if forced and thinking.on:
        raise UsageError(
            f"{provider}: Claude refuses thinking together with a forced tool choice",
            where=where,
            fix="turn thinking off (Thinking(enabled=False)) to force a tool, or use the "
            "native schema output or tool_choice='auto' with thinking",
        )


# -- shared small helpers ------------------------------------------------------------------


def inline_image(part: ImagePart, provider: str, where: str) -> tuple[str, str] | None:
    """`(media_type, base64 data)` of an image given as bytes or as a `data:` URL; None for a
    plain URL."""
    if part.data is not None:
        return part.media_type, part.base64
    url = part.url or ""
    if not url:
        raise UsageError(
            f"{provider}: an image needs bytes or a URL", where=where, fix="ImagePart(data=...)"
        )
    if not url.startswith("data:"):
        return None
    header, comma, payload = url[len("data:") :].partition(",")
    if not comma or not header.endswith(";base64"):
        raise UsageError(
            f"{provider}: only base64 data: URLs are supported for images",
            where=where,
            fix="use data:<media type>;base64,<data>, or ImagePart(data=...)",
        )
    try:
        base64.b64decode(payload, validate=True)
    except binascii.Error:
        raise UsageError(
            f"{provider}: the image data: URL is not valid base64", where=where
        ) from None
    return header[: -len(";base64")] or "image/png", payload


def merge_turn(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Append content to the conversation; consecutive turns of one role become one (tool
    results must share one user turn, and both APIs want alternating roles)."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def system_texts(message: Message, provider: str, where: str) -> str:
    if any(isinstance(p, ImagePart) for p in message.parts):
        raise UsageError(
            f"{provider}: a system message can only hold text",
            where=where,
            fix="move the image to a user message",
        )
    return message.text


def empty_user_turn(provider: str, where: str) -> UsageError:
    return UsageError(
        f"{provider}: a user message has no content", where=where, fix="remove it or add text"
    )


# -- request pieces ------------------------------------------------------------------------


def _messages(messages: Sequence[Message]) -> tuple[list[str], list[dict[str, Any]]]:
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        if message.role == "system":
            text = system_texts(message, PROVIDER, where)
            if text:
                system.append(text)
            continue
        if message.role == "tool":
            merge_turn(turns, "user", [_tool_result(message, where)])
            continue
        parts = (_part(p, f"{where}.parts[{i}]") for i, p in enumerate(message.parts))
        blocks = [b for b in parts if b is not None]
        if message.role == "assistant":
            blocks += [
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.object_arguments(PROVIDER, f"{where}.tool_calls[{i}]"),
                }
                for i, call in enumerate(message.tool_calls)
            ]
            if blocks:
                merge_turn(turns, "assistant", blocks)
            continue
        if not blocks:
            raise empty_user_turn(PROVIDER, where)
        merge_turn(turns, "user", blocks)
    return system, turns


def _part(part: TextPart | ImagePart, where: str) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    inline = inline_image(part, PROVIDER, where)
    if inline is None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    media_type, data = inline
    if media_type not in IMAGE_MEDIA_TYPES:
        raise UsageError(
            f"anthropic: images must be one of {', '.join(sorted(IMAGE_MEDIA_TYPES))}, "
            f"got {media_type}",
            where=where,
            fix="convert the image to PNG or JPEG",
        )
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _tool_result(message: Message, where: str) -> dict[str, Any]:
    if not message.tool_call_id:
        raise UsageError(
            "anthropic: a tool message needs the id of the call it answers",
            where=where,
            fix="Message.tool_result(call_id, content)",
        )
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    blocks = [_part(p, f"{where}.parts[{i}]") for i, p in enumerate(message.parts)]
    content = [b for b in blocks if b is not None]
    if content:
        result["content"] = content
    return result


def _tool(
    name: str, schema: Mapping[str, Any], description: str | None, strict: bool | None
) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name}
    if description:
        tool["description"] = description
    tool["input_schema"] = dict(schema)
    if strict is not None:
        tool["strict"] = strict
    return tool


def _tool_choice(
    choice: ToolChoice | None, forced: str | None, tools: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    if forced is not None:
        return {"type": "tool", "name": forced, "disable_parallel_tool_use": True}
    if choice is None or not tools:
        return None
    if isinstance(choice, NamedTool):
        if not any(t["name"] == choice.name for t in tools):
            raise UsageError(
                f"anthropic: tool_choice names {choice.name!r}, which is not among the tools",
                where="tool_choice",
                fix="name one of the tools passed in tools",
            )
        return {"type": "tool", "name": choice.name}
    return {"type": {"auto": "auto", "none": "none", "required": "any"}[choice]}


def _forces(choice: Mapping[str, Any] | None) -> bool:
    return choice is not None and choice["type"] in ("any", "tool")


# -- response pieces -----------------------------------------------------------------------

_USAGE = Obj(
    {
        "input_tokens": NUMBER,
        "output_tokens": NUMBER,
        "cache_read_input_tokens": NUMBER,
        "cache_creation_input_tokens": NUMBER,
        "output_tokens_details": Obj({"thinking_tokens": NUMBER}),
    }
)
_STOP_DETAILS = Obj({"explanation": TEXT, "category": TEXT})
_MESSAGE = Obj(
    {
        "content": Arr(
            Tagged(
                {
                    "text": Obj({"text": STRING}),
                    "thinking": Obj({"thinking": STRING}),
                    "tool_use": Obj({"id": STRING, "name": STRING, "input": OBJECT}),
                }
            )
        ),
        "stop_reason": TEXT,
        "stop_details": _STOP_DETAILS,
        "usage": _USAGE,
        "model": TEXT,
    }
)
"""What `parse` reads of a Message."""
_EVENT = Tagged(
    {
        "message_start": Obj({"message": Obj({"usage": _USAGE})}),
        "content_block_start": Obj(
            {
                "index": INDEX,
                "content_block": Tagged(
                    {
                        "tool_use": Obj({"id": TEXT, "name": TEXT}),
                        "text": Obj({"text": TEXT}),
                        "thinking": Obj({"thinking": TEXT}),
                    }
                ),
            }
        ),
        "content_block_delta": Obj(
            {
                "index": INDEX,
                "delta": Tagged(
                    {
                        "text_delta": Obj({"text": TEXT}),
                        "thinking_delta": Obj({"thinking": TEXT}),
                        "input_json_delta": Obj({"partial_json": TEXT}),
                    }
                ),
            }
        ),
        "content_block_stop": Obj({"index": INDEX}),
        "message_delta": Obj(
            {"delta": Obj({"stop_reason": TEXT, "stop_details": _STOP_DETAILS}), "usage": _USAGE}
        ),
    }
)
"""What the decoder reads of each stream event (ping and message_stop are not read)."""


def finish_reason(stop: object, forced_done: bool, other_calls: bool) -> FinishReason:
    """Anthropic's stop_reason in the neutral vocabulary; a forced call that ends the turn is
    a normal stop."""
    if stop == "tool_use":
        return "stop" if forced_done and not other_calls else "tool_calls"
    return _FINISH.get(str(stop), "other")


def _refusal(details: object) -> str:
    """What a refusal says: the explanation of `stop_details` if any, else its category."""
    if isinstance(details, Mapping):
        if details.get("explanation"):
            return str(details["explanation"])
        if details.get("category"):
            return f"refused ({details['category']})"
    return "refused"


def _usage(usage: object) -> Usage:
    """Anthropic counts cache reads and writes apart from `input_tokens`; the neutral
    `input_tokens` is their sum, `cached_tokens` the reads."""
    if not isinstance(usage, Mapping):
        return Usage()
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    details = usage.get("output_tokens_details") or {}
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0) + read + written,
        output_tokens=int(usage.get("output_tokens") or 0),
        reasoning_tokens=int(details.get("thinking_tokens") or 0),
        cached_tokens=read,
    )


# -- streaming -----------------------------------------------------------------------------


class _Decoder:
    """Turns SSE events (message_start … message_stop) into Deltas.

    Content blocks are tracked by index: the forced tool's calls become text, one per line,
    each ending with its `content_block_stop`, and the text beside them is held back
    (providers/forced.py); other tool calls get their own ordinal (0, 1, ...). Usage is
    reported once, as totals, with `message_delta`; the finish follows it. An `error` event
    raises (scrubbed of secrets): a `RateLimitError` when the API is overloaded, else a
    `StreamInterruptedError`.
    """

    def __init__(self, forced: str | None) -> None:
        self._forced = forced
        self._blocks: dict[int, int] = {}
        """Block index -> ordinal of the caller's tool calls."""
        self._calls = 0
        self._output = ForcedStream()
        """The forced tool's calls, by block index."""
        self._usage: dict[str, Any] = {}

    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        kind = event.get("type")
        if kind == "error":
            message, error_kind = error_message(event.get("error") or {})
            raise reported(PROVIDER, message, kind=error_kind, body=event)
        check_event(PROVIDER, _EVENT, event)
        if kind == "message_start":
            self._usage.update((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            return self._start(int(event.get("index", 0)), event.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(int(event.get("index", 0)), event.get("delta") or {})
        elif kind == "content_block_stop":
            return self._output.end(int(event.get("index", 0)))
        elif kind == "message_delta":
            return self._end(event)
        return []  # ping, message_stop

    def _start(self, index: int, block: Mapping[str, Any]) -> list[Delta]:
        kind = block.get("type")
        if kind == "tool_use":
            if self._forced is not None and block.get("name") == self._forced:
                return self._output.begin(index)
            ordinal = self._blocks[index] = self._calls
            self._calls += 1
            return [
                Delta(
                    "tool_call",
                    index=ordinal,
                    tool_call_id=block.get("id"),
                    tool_name=block.get("name"),
                )
            ]
        if kind == "text" and block.get("text"):
            return self._text(str(block["text"]))
        if kind == "thinking" and block.get("thinking"):
            return [Delta("thinking", str(block["thinking"]))]
        return []

    def _text(self, text: str) -> list[Delta]:
        if self._forced is not None:
            return self._output.prose(text)
        return [Delta("text", text)]

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[Delta]:
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            return self._text(str(delta["text"]))
        if kind == "thinking_delta" and delta.get("thinking"):
            return [Delta("thinking", str(delta["thinking"]))]
        if kind == "input_json_delta" and delta.get("partial_json"):
            fragment = str(delta["partial_json"])
            if self._output.knows(index):
                return self._output.add(index, fragment)
            target = self._blocks.get(index)
            if target is not None:
                return [Delta("tool_call", fragment, index=target)]
        return []  # signature_delta, citations_delta

    def _end(self, event: Mapping[str, Any]) -> list[Delta]:
        delta = event.get("delta") or {}
        self._usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
        stop = delta.get("stop_reason")
        deltas = self._output.finish() if stop is not None else []
        if stop == "refusal":
            deltas.append(Delta("refusal", _refusal(delta.get("stop_details"))))
        deltas.append(Delta("usage", usage=_usage(self._usage)))
        if stop is not None:
            reason = finish_reason(stop, self._output.seen, self._calls > 0)
            deltas.append(Delta("finish", finish_reason=reason))
        return deltas


__all__ = ["AnthropicMessages"]
