"""Amazon Bedrock Converse (`POST /model/{modelId}/converse` and `/converse-stream`).

Sources: Bedrock's Converse API docs and botocore, checked against the `bedrock-runtime`
service model shipped with botocore (1.44.5, API 2023-09-30). Where they disagree the service
model wins. The choices made here:

* The model (a model id, an inference profile id or an ARN) goes only in the path,
  percent-encoded with nothing left safe: `:` and `/` too, as botocore encodes it. It is not
  in the body.
* `NativeSchema` → `outputConfig.textFormat = {"type": "json_schema", "structure":
  {"jsonSchema": {"schema": "<JSON text>", "name", "description"?}}}`. The schema travels as
  a JSON *string*, which this adapter encodes. A tool's `inputSchema.json` stays an object.
* `ForcedTool` → one more tool plus `toolChoice = {"tool": {"name"}}`. Its `input` object
  becomes the reply text; several calls of it are several values of the reply, one per line
  (providers/forced.py). `JsonObject` → `UsageError`: Converse has no JSON-object mode.
* `tool_choice="none"` has no Converse form. It is sent as no `toolConfig` at all, which only
  works while the conversation holds no tool calls. With tool calls in it, Bedrock wants
  `toolConfig`, so the adapter raises.
* Thinking goes in `additionalModelRequestFields` (Bedrock's thinking docs), with the same rules as
  the Anthropic adapter for Claude: a budget gives `{"thinking": {"type": "enabled",
  "budget_tokens": N}}` (N >= 1024); an effort alone gives `{"thinking": {"type":
  "adaptive"}}`; a bare `Thinking()` gives the minimum budget. An effort is sent as the service
  model's own `outputConfig.effort`, next to `textFormat`. Claude refuses thinking with a
  forced tool choice, so the adapter raises. Temperature is dropped while Claude thinks, since
  Claude accepts only the default then. OpenAI gpt-oss takes `reasoning_effort`, and Qwen3
  takes `reasoning_config` ("low" | "high"). For other models, or an ARN that hides which
  model it is, thinking raises unless the caller gives `additionalModelRequestFields` in
  `extra`. `enabled=False` sends nothing: none of these models has a documented off switch.
* `maxTokens` is sent only when asked, or when Claude thinks with a budget: then it is the
  budget plus 4096, so that the budget fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal
from urllib.parse import quote

import orjson

from outform.errors import UsageError
from outform.jsontext import dumps_text
from outform.providers.anthropic import (
    EFFORT,
    ClaudeThinking,
    claude_max_tokens,
    claude_thinking,
    empty_user_turn,
    inline_image,
    merge_turn,
    refuse_forcing_with_thinking,
    system_texts,
)
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
    ToolCall,
    Usage,
    WireRequest,
    merge_extra,
)
from outform.providers.forced import ForcedStream, joined
from outform.providers.replies import (
    ANY,
    INDEX,
    NUMBER,
    STRING,
    TEXT,
    Arr,
    Obj,
    check_body,
    check_event,
)

PROVIDER: Final = "bedrock"
IMAGE_FORMATS: Final[Mapping[str, str]] = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_FINISH: Final[Mapping[str, FinishReason]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
    "malformed_model_output": "other",
    "malformed_tool_use": "other",
}
Family = Literal["claude", "gpt-oss", "qwen3", "other"]


def family(model: str) -> Family:
    """Which request dialect a model id speaks for reasoning (ARNs may not say: "other")."""
    lowered = model.lower()
    if "anthropic." in lowered or "claude" in lowered:
        return "claude"
    if "gpt-oss" in lowered:
        return "gpt-oss"
    if "qwen3" in lowered:
        return "qwen3"
    return "other"


class BedrockConverse:
    """Adapter for the Converse API; the model id is the request's `model`."""

    name = PROVIDER
    auth: Auth = "sigv4"

    def build(self, request: Request) -> WireRequest:
        if not request.model:
            raise UsageError(
                "bedrock: the request names no model",
                where="model",
                fix="pass a model id, inference profile id or ARN",
            )
        if isinstance(request.output, JsonObject):
            raise UsageError(
                "Bedrock Converse has no JSON-object mode",
                where="output",
                fix="use a schema (outputConfig.textFormat) or a forced tool instead",
            )
        kind = family(request.model)
        forced = request.output.name if isinstance(request.output, ForcedTool) else None
        thinking = claude_thinking(request.thinking, PROVIDER) if kind == "claude" else None
        messages, system, tool_blocks = _messages(request.messages)
        tool_config = _tool_config(request, forced, tool_blocks)
        if thinking is not None:
            choice = (tool_config or {}).get("toolChoice") or {}
            forcing = "any" in choice or "tool" in choice
            refuse_forcing_with_thinking(PROVIDER, thinking, forcing, where="thinking")

        body: dict[str, Any] = {}
        if system:
            body["system"] = [{"text": text} for text in system]
        body["messages"] = messages
        inference = _inference(request, thinking)
        if inference:
            body["inferenceConfig"] = inference
        if tool_config is not None:
            body["toolConfig"] = tool_config
        output_config: dict[str, Any] = {}
        if isinstance(request.output, NativeSchema):
            schema: dict[str, Any] = {
                "schema": dumps_text(request.output.schema),
                "name": request.output.name,
            }
            if request.output.description:
                schema["description"] = request.output.description
            structure = {"jsonSchema": schema}
            output_config["textFormat"] = {"type": "json_schema", "structure": structure}
        effort = _effort(request, kind)
        if effort is not None:
            output_config["effort"] = effort
        if output_config:
            body["outputConfig"] = output_config
        fields = _reasoning_fields(request, kind, thinking)
        if fields:
            body["additionalModelRequestFields"] = fields
        body = merge_extra(body, request.extra)
        operation = "converse-stream" if request.stream else "converse"
        path = f"/model/{quote(request.model, safe='')}/{operation}"
        return WireRequest(path, body, stream="aws-event-stream" if request.stream else None)

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        check_body(PROVIDER, _REPLY, body)
        forced = request.output.name if isinstance(request.output, ForcedTool) else None
        message = (body.get("output") or {}).get("message") or {}
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        forced_arguments: list[str] = []
        for block in message.get("content") or ():
            if "text" in block:
                texts.append(str(block["text"]))
            elif "toolUse" in block:
                use = block["toolUse"]
                arguments = orjson.dumps(use.get("input") or {}).decode()
                if forced is not None and use.get("name") == forced:
                    forced_arguments.append(arguments)
                else:
                    call_id, name = str(use.get("toolUseId", "")), str(use.get("name", ""))
                    calls.append(ToolCall(call_id, name, arguments))
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"].get("reasoningText") or {}
                thoughts.append(str(reasoning.get("text", "")))
        return Response(
            text=joined(forced_arguments) if forced_arguments else "".join(texts),
            finish_reason=finish_reason(
                body.get("stopReason"), bool(forced_arguments), bool(calls)
            ),
            usage=_usage(body.get("usage")),
            tool_calls=tuple(calls),
            thinking="".join(thoughts) or None,
            model=request.model,
            raw=body,
        )

    def decoder(self, request: Request) -> _Decoder:
        return _Decoder(request.output.name if isinstance(request.output, ForcedTool) else None)


# -- request pieces ------------------------------------------------------------------------


def _messages(
    messages: Sequence[Message],
) -> tuple[list[dict[str, Any]], list[str], bool]:
    """The turns, the system texts, and whether any turn holds a tool call or result."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    tool_blocks = False
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        if message.role == "system":
            text = system_texts(message, PROVIDER, where)
            if text:
                system.append(text)
            continue
        parts = (_part(p, f"{where}.parts[{i}]") for i, p in enumerate(message.parts))
        blocks = [b for b in parts if b is not None]
        if message.role == "tool":
            if not message.tool_call_id:
                raise UsageError(
                    "bedrock: a tool message needs the id of the call it answers",
                    where=where,
                    fix="Message.tool_result(call_id, content)",
                )
            result = {"toolUseId": message.tool_call_id, "content": blocks}
            merge_turn(turns, "user", [{"toolResult": result}])
            tool_blocks = True
        elif message.role == "assistant":
            for i, call in enumerate(message.tool_calls):
                arguments = call.object_arguments(PROVIDER, f"{where}.tool_calls[{i}]")
                use = {"toolUseId": call.id, "name": call.name, "input": arguments}
                blocks.append({"toolUse": use})
                tool_blocks = True
            if blocks:
                merge_turn(turns, "assistant", blocks)
        elif blocks:
            merge_turn(turns, "user", blocks)
        else:
            raise empty_user_turn(PROVIDER, where)
    return turns, system, tool_blocks


def _part(part: TextPart | ImagePart, where: str) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"text": part.text} if part.text else None
    url = part.url or ""
    if part.data is None and url.startswith("s3://"):
        media_type = part.media_type
        source: dict[str, Any] = {"s3Location": {"uri": url}}
    else:
        inline = inline_image(part, PROVIDER, where)
        if inline is None:
            raise UsageError(
                "bedrock: Converse takes images as bytes or S3 locations, not web URLs",
                where=where,
                fix="download the image and pass ImagePart(data=..., media_type=...)",
            )
        media_type, data = inline
        source = {"bytes": data}
    image_format = IMAGE_FORMATS.get(media_type)
    if image_format is None:
        raise UsageError(
            f"bedrock: images must be PNG, JPEG, GIF or WebP, got {media_type}",
            where=where,
            fix="convert the image, or set ImagePart.media_type",
        )
    return {"image": {"format": image_format, "source": source}}


def _tool_spec(
    name: str, schema: Mapping[str, Any], description: str | None, strict: bool | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name}
    if description:
        spec["description"] = description
    spec["inputSchema"] = {"json": dict(schema)}
    if strict is not None:
        spec["strict"] = strict
    return {"toolSpec": spec}


def _tool_config(request: Request, forced: str | None, tool_blocks: bool) -> dict[str, Any] | None:
    tools = [_tool_spec(t.name, t.parameters, t.description, t.strict) for t in request.tools]
    output = request.output
    if isinstance(output, ForcedTool):
        if any(t.name == output.name for t in request.tools):
            raise UsageError(
                f"the forced output tool {output.name!r} has the name of one of the tools",
                where="tools",
                fix="give the output tool a name no other tool uses",
            )
        tools.append(_tool_spec(output.name, output.schema, output.description, output.strict))
    choice = request.tool_choice
    if forced is not None:
        return {"tools": tools, "toolChoice": {"tool": {"name": forced}}}
    if not tools or choice == "none":
        if tool_blocks:
            raise UsageError(
                "bedrock: the conversation holds tool calls, and Converse then needs the tools "
                "defined" + (" (it has no tool_choice 'none')" if choice == "none" else ""),
                where="tools",
                fix="pass the tools the conversation used, with tool_choice='auto'",
            )
        return None
    config: dict[str, Any] = {"tools": tools}
    if isinstance(choice, NamedTool):
        if not any(t.name == choice.name for t in request.tools):
            raise UsageError(
                f"bedrock: tool_choice names {choice.name!r}, which is not among the tools",
                where="tool_choice",
                fix="name one of the tools passed in tools",
            )
        config["toolChoice"] = {"tool": {"name": choice.name}}
    elif choice == "required":
        config["toolChoice"] = {"any": {}}
    elif choice == "auto":
        config["toolChoice"] = {"auto": {}}
    return config


def _inference(request: Request, thinking: ClaudeThinking | None) -> dict[str, Any]:
    inference: dict[str, Any] = {}
    claude_thinks = thinking is not None and thinking.on
    if thinking is not None and (request.max_tokens is not None or thinking.budget is not None):
        inference["maxTokens"] = claude_max_tokens(request.max_tokens, thinking, PROVIDER)
    elif request.max_tokens is not None:
        inference["maxTokens"] = request.max_tokens
    if request.temperature is not None and not claude_thinks:
        inference["temperature"] = request.temperature
    if request.stop:
        inference["stopSequences"] = list(request.stop)
    return inference


def _effort(request: Request, kind: Family) -> str | None:
    thinking = request.thinking
    if thinking is None or thinking.effort is None or kind != "claude":
        return None
    return EFFORT[thinking.effort]


def _reasoning_fields(
    request: Request, kind: Family, thinking: ClaudeThinking | None
) -> dict[str, Any] | None:
    neutral = request.thinking
    if neutral is None or not neutral.enabled:
        return None
    if thinking is not None:
        return {"thinking": thinking.config} if thinking.config is not None else None
    if kind == "gpt-oss":
        if neutral.effort is None:
            return None  # gpt-oss always reasons; its default effort stands
        effort = {"minimal": "low", "max": "high"}.get(neutral.effort, neutral.effort)
        return {"reasoning_effort": effort}
    if kind == "qwen3":
        low = neutral.effort in ("minimal", "low")
        return {"reasoning_config": "low" if low else "high"}
    if "additionalModelRequestFields" in request.extra:
        return None
    raise UsageError(
        f"bedrock: outform does not know how to ask {request.model!r} for thinking on Converse",
        where="thinking",
        fix="pass the model's own fields as extra={'additionalModelRequestFields': {...}}, "
        "or leave thinking unset",
    )


# -- response pieces -----------------------------------------------------------------------

_USAGE = Obj(
    {
        "inputTokens": NUMBER,
        "outputTokens": NUMBER,
        "cacheReadInputTokens": NUMBER,
        "cacheWriteInputTokens": NUMBER,
    }
)
_BLOCK = Obj(
    {
        "text": STRING,
        "toolUse": Obj({"toolUseId": TEXT, "name": TEXT, "input": ANY}, nullable=False),
        "reasoningContent": Obj({"reasoningText": Obj({"text": TEXT})}, nullable=False),
    }
)
_REPLY = Obj(
    {
        "output": Obj({"message": Obj({"content": Arr(_BLOCK)})}),
        "stopReason": TEXT,
        "usage": _USAGE,
    }
)
"""What `parse` reads of a Converse reply."""
_EVENT = Obj(
    {
        "contentBlockStart": Obj(
            {
                "contentBlockIndex": INDEX,
                "start": Obj({"toolUse": Obj({"toolUseId": TEXT, "name": TEXT})}),
            }
        ),
        "contentBlockDelta": Obj(
            {
                "contentBlockIndex": INDEX,
                "delta": Obj(
                    {
                        "text": TEXT,
                        "reasoningContent": Obj({"text": TEXT}),
                        "toolUse": Obj({"input": TEXT}),
                    }
                ),
            }
        ),
        "contentBlockStop": Obj({"contentBlockIndex": INDEX}),
        "messageStop": Obj({"stopReason": TEXT}),
        "metadata": Obj({"usage": _USAGE}),
    }
)
"""What the decoder reads of each ConverseStream event (`{eventName: payload}`)."""


def finish_reason(stop: object, forced_done: bool, other_calls: bool) -> FinishReason:
    if stop == "tool_use":
        return "stop" if forced_done and not other_calls else "tool_calls"
    return _FINISH.get(str(stop), "other")


def _usage(usage: object) -> Usage:
    """Bedrock counts cache reads and writes apart from `inputTokens`; the neutral
    `input_tokens` is their sum, `cached_tokens` the reads."""
    if not isinstance(usage, Mapping):
        return Usage()
    read = int(usage.get("cacheReadInputTokens") or 0)
    written = int(usage.get("cacheWriteInputTokens") or 0)
    return Usage(
        input_tokens=int(usage.get("inputTokens") or 0) + read + written,
        output_tokens=int(usage.get("outputTokens") or 0),
        cached_tokens=read,
    )


# -- streaming -----------------------------------------------------------------------------


class _Decoder:
    """Turns ConverseStream events (`{eventName: payload}`) into Deltas.

    Only tool-use blocks announce themselves with `contentBlockStart`; text and reasoning
    deltas arrive without one. The forced tool's calls become text, one per line, each ending
    with its `contentBlockStop`, and the text beside them is held back (providers/forced.py).
    The finish comes with `messageStop`, the usage with the `metadata` event that follows it.
    """

    def __init__(self, forced: str | None) -> None:
        self._forced = forced
        self._blocks: dict[int, int] = {}
        """Block index -> ordinal of the caller's tool calls."""
        self._calls = 0
        self._output = ForcedStream()
        """The forced tool's calls, by block index."""

    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        check_event(PROVIDER, _EVENT, event)
        deltas: list[Delta] = []
        for name, payload in event.items():
            if not isinstance(payload, Mapping):
                continue
            if name == "contentBlockStart":
                deltas += self._start(payload)
            elif name == "contentBlockDelta":
                deltas += self._delta(payload)
            elif name == "contentBlockStop":
                deltas += self._output.end(int(payload.get("contentBlockIndex", 0)))
            elif name == "messageStop":
                deltas += self._output.finish()
                stop = payload.get("stopReason")
                reason = finish_reason(stop, self._output.seen, self._calls > 0)
                deltas.append(Delta("finish", finish_reason=reason))
            elif name == "metadata":
                deltas.append(Delta("usage", usage=_usage(payload.get("usage"))))
        return deltas

    def _start(self, payload: Mapping[str, Any]) -> list[Delta]:
        use = (payload.get("start") or {}).get("toolUse")
        if not isinstance(use, Mapping):
            return []
        index = int(payload.get("contentBlockIndex", 0))
        if self._forced is not None and use.get("name") == self._forced:
            return self._output.begin(index)
        ordinal = self._blocks[index] = self._calls
        self._calls += 1
        return [
            Delta(
                "tool_call",
                index=ordinal,
                tool_call_id=use.get("toolUseId"),
                tool_name=use.get("name"),
            )
        ]

    def _delta(self, payload: Mapping[str, Any]) -> list[Delta]:
        delta = payload.get("delta") or {}
        if delta.get("text"):
            if self._forced is not None:
                return self._output.prose(str(delta["text"]))
            return [Delta("text", str(delta["text"]))]
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, Mapping):
            text = reasoning.get("text")
            return [Delta("thinking", str(text))] if text else []  # signatures are dropped
        use = delta.get("toolUse")
        if isinstance(use, Mapping) and use.get("input"):
            fragment = str(use["input"])
            index = int(payload.get("contentBlockIndex", 0))
            if self._output.knows(index):
                return self._output.add(index, fragment)
            target = self._blocks.get(index)
            if target is not None:
                return [Delta("tool_call", fragment, index=target)]
        return []


__all__ = ["BedrockConverse"]
