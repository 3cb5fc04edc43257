"""OpenAI Chat Completions (`POST /chat/completions`) and the servers that speak its dialect.

One adapter, ten flavors. OpenAI's own API is the reference (its OpenAPI document and the
official SDK); the flavors differ only where the provider documents a difference
(each server's own structured-output docs):

=========  ==================================  ==================================================
flavor     schema output (`NativeSchema`)      thinking (`Thinking`)
=========  ==================================  ==================================================
openai     `response_format` json_schema       `reasoning_effort` (`none` when disabled)
deepseek   none: UsageError (JSON mode/tools)  `thinking: {type}` + `reasoning_effort` low|high|max
mistral    `response_format` json_schema       ignored (not documented for the API)
groq       `response_format` json_schema       `reasoning_effort` + `reasoning_format: parsed`
together   `response_format` json_schema       ignored (not documented)
fireworks  `response_format` json_schema       ignored (not documented)
xai        `response_format` json_schema       `reasoning_effort` low|high (grok-3-mini family)
vllm       `response_format` json_schema       `chat_template_kwargs: {enable_thinking}`
llamacpp   `response_format` json_schema       `chat_template_kwargs: {enable_thinking}`
sglang     `response_format` json_schema       `chat_template_kwargs: {enable_thinking}`
=========  ==================================  ==================================================

Choices made where sources leave room:

* **vLLM** and **SGLang** get OpenAI's `response_format` json_schema, the form both document
  for their OpenAI-compatible servers (as llama.cpp does). vLLM's own extra field has changed
  name across versions (`guided_json`, removed in v0.12, then `structured_outputs`), and
  outform cannot see a server's version; `response_format` is read by every version. Whether
  the server then constrains decoding depends on its structured-output backend, so the vLLM
  profile does not count the schema as enforced (outform validates every reply).
* **llama.cpp** gets the nested OpenAI form `{"type": "json_schema", "json_schema": {"schema":
  ...}}`: its server code reads `json_schema.schema` (tools/server/README.md), while the flat
  `{"type": "json_schema", "schema": ...}` shown in its README silently degrades to "any
  object". The nested form is also what OpenAI's spec defines, so one shape serves all.
* **`max_tokens`**: OpenAI's spec marks it deprecated in favour of `max_completion_tokens`
  (and o-series models refuse it), so flavor `openai` sends `max_completion_tokens`; the
  compatible servers keep `max_tokens`, the field they all read.
* **`stream_options.include_usage`** is sent where the server accepts it. Mistral rejects
  unknown fields and reports usage in its last chunk anyway, so it gets none.
* **`parallel_tool_calls: false`** accompanies a forced tool (one call, not several) where the
  flavor documents the field; DeepSeek does not, so it is left out there. Several calls that
  come all the same are several values of the reply (providers/forced.py).
* `Thinking.budget_tokens` has no Chat Completions field on any flavor and is ignored; where a
  flavor has no documented thinking switch the whole setting is ignored rather than guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from outform.errors import ProviderError, UsageError
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
    Usage,
    WireRequest,
    merge_extra,
)
from outform.providers.forced import ForcedStream, joined
from outform.providers.replies import (
    ANY,
    INDEX,
    INTEGER,
    NUMBER,
    OBJECT,
    TEXT,
    Arr,
    Either,
    Obj,
    check_body,
    check_event,
    error_message,
    excerpt,
    reported,
)

ThinkingStyle = Literal["openai", "deepseek", "groq", "xai", "template", "none"]


@dataclass(frozen=True, slots=True)
class Flavor:
    """What one OpenAI-compatible server does differently."""

    name: str
    native_schema: Literal["response_format", "none"] = "response_format"
    thinking: ThinkingStyle = "none"
    max_tokens_field: str = "max_tokens"
    stream_usage: bool = True
    """Accepts `stream_options: {"include_usage": true}`."""
    parallel_tool_calls: bool = True
    """Documents `parallel_tool_calls`."""


FLAVORS: dict[str, Flavor] = {
    flavor.name: flavor
    for flavor in (
        Flavor("openai", thinking="openai", max_tokens_field="max_completion_tokens"),
        Flavor("deepseek", native_schema="none", thinking="deepseek", parallel_tool_calls=False),
        Flavor("mistral", stream_usage=False),
        Flavor("groq", thinking="groq"),
        Flavor("together"),
        Flavor("fireworks"),
        Flavor("xai", thinking="xai"),
        Flavor("vllm", thinking="template"),
        Flavor("llamacpp", thinking="template"),
        Flavor("sglang", thinking="template"),
    )
}

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "length": "length",
    "model_length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class OpenAIChat:
    """The Chat Completions adapter; `flavor` names the server (see the module doc)."""

    auth: Auth = "bearer"

    def __init__(self, flavor: str = "openai") -> None:
        if flavor not in FLAVORS:
            raise UsageError(
                f"unknown OpenAI-compatible flavor {flavor!r}",
                where="OpenAIChat(flavor=...)",
                fix="use one of: " + ", ".join(FLAVORS),
            )
        self.flavor = FLAVORS[flavor]
        self.name = flavor

    # -- request -----------------------------------------------------------------------------

    def build(self, request: Request) -> WireRequest:
        body: dict[str, Any] = {
            "model": request.model,
            "messages": [_message(m) for m in request.messages],
        }
        tools = [_tool(t.name, t.parameters, t.description, t.strict) for t in request.tools]
        output = request.output
        if isinstance(output, NativeSchema):
            self._native_schema(body, output)
        elif isinstance(output, JsonObject):
            body["response_format"] = {"type": "json_object"}
        elif isinstance(output, ForcedTool):
            if any(t.name == output.name for t in request.tools):
                raise UsageError(
                    f"the output tool {output.name!r} has the name of one of the call's tools",
                    where="ForcedTool.name",
                    fix="give the output tool a name no other tool uses",
                )
            tools.append(_tool(output.name, output.schema, output.description, output.strict))
        if tools:
            body["tools"] = tools
        if isinstance(output, ForcedTool):
            body["tool_choice"] = _named(output.name)
            if self.flavor.parallel_tool_calls:
                body["parallel_tool_calls"] = False
        elif request.tool_choice is not None:
            choice = request.tool_choice
            body["tool_choice"] = _named(choice.name) if isinstance(choice, NamedTool) else choice
        if request.thinking is not None:
            body.update(self._thinking(request.thinking))
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            body[self.flavor.max_tokens_field] = request.max_tokens
        if request.stop:
            body["stop"] = list(request.stop)
        if request.stream:
            body["stream"] = True
            if self.flavor.stream_usage:
                body["stream_options"] = {"include_usage": True}
        body = merge_extra(body, request.extra)
        return WireRequest("/chat/completions", body, stream="sse" if request.stream else None)

    def _native_schema(self, body: dict[str, Any], output: NativeSchema) -> None:
        if self.flavor.native_schema == "none":
            raise UsageError(
                f"{self.name} has no JSON-schema response format",
                where="output",
                fix="use a forced tool or JSON-object mode with the schema in the prompt "
                "(mode='auto' picks one for this provider)",
            )
        spec: dict[str, Any] = {"name": output.name, "schema": dict(output.schema)}
        if output.strict is not None:
            spec["strict"] = output.strict
        if output.description:
            spec["description"] = output.description
        body["response_format"] = {"type": "json_schema", "json_schema": spec}

    def _thinking(self, thinking: Thinking) -> dict[str, Any]:
        style, effort = self.flavor.thinking, thinking.effort
        if style == "openai":
            if not thinking.enabled:
                return {"reasoning_effort": "none"}
            return {"reasoning_effort": effort} if effort else {}
        if style == "deepseek":
            fields: dict[str, Any] = {
                "thinking": {"type": "enabled" if thinking.enabled else "disabled"}
            }
            if thinking.enabled and effort:
                fields["reasoning_effort"] = _DEEPSEEK_EFFORT[effort]
            return fields
        if style == "groq":
            if not thinking.enabled:
                return {"reasoning_effort": "none"}
            fields = {"reasoning_format": "parsed"}
            if effort:
                fields["reasoning_effort"] = _GRADED_EFFORT[effort]
            return fields
        if style == "xai":
            if thinking.enabled and effort:
                return {"reasoning_effort": "low" if effort in ("minimal", "low") else "high"}
            return {}
        if style == "template":
            return {"chat_template_kwargs": {"enable_thinking": thinking.enabled}}
        return {}

    # -- response ----------------------------------------------------------------------------

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        check_body(self.name, _REPLY, body)
        choices = body.get("choices") or []
        if not choices:
            raise ProviderError(
                f"{self.name} answered without choices",
                provider=self.name,
                body=excerpt(body),
                fix="the provider reported no completion; retry the call",
            )
        choice = choices[0]
        message = choice.get("message") or {}
        calls = [_call(c) for c in message.get("tool_calls") or ()]
        text = _content_text(message.get("content"))
        forced = _forced_name(request)
        arguments = [c.arguments for c in calls if forced is not None and c.name == forced]
        if arguments:  # the reply is the forced tool's calls (providers/forced.py)
            calls = [c for c in calls if c.name != forced]
            text = joined(arguments)
        refusal = message.get("refusal") or None
        return Response(
            text=text,
            finish_reason=_finish(
                choice.get("finish_reason"), bool(arguments), bool(calls), bool(refusal)
            ),
            usage=_usage(body.get("usage")),
            tool_calls=tuple(calls),
            refusal=refusal,
            thinking=_reasoning(message),
            model=body.get("model"),
            raw=body,
        )

    def decoder(self, request: Request) -> ChatStreamDecoder:
        return ChatStreamDecoder(self.name, _forced_name(request))


class ChatStreamDecoder:
    """`chat.completion.chunk` events to Deltas.

    Tool-call fragments carry an `index`; the first fragment of each also carries the call's
    `id` and `function.name`, which the Delta repeats once. The forced tool's calls come out
    as text, one per line, and the text beside them is held back (providers/forced.py); a
    call ends when the next one starts or the reply finishes. Usage arrives in a trailing
    chunk with empty `choices` (OpenAI with `include_usage`), beside the last choice
    (Mistral), or in `x_groq.usage` (Groq); it is emitted whenever it changes, so a consumer
    keeps the last one.
    """

    def __init__(self, provider: str, forced: str | None) -> None:
        self.provider = provider
        self.forced = forced
        self._seen: dict[int, str | None] = {}
        self._output = ForcedStream()
        self._other_calls = False
        self._refused = False
        self._usage = Usage()

    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        if event.get("error") and not event.get("choices"):
            message, kind = error_message(event["error"])
            raise reported(self.provider, message, kind=kind, body=event)
        check_event(self.provider, _CHUNK, event)
        deltas: list[Delta] = []
        finish: str | None = None
        for choice in event.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            thinking = _reasoning(delta)
            if thinking:
                deltas.append(Delta("thinking", thinking))
            content = _content_text(delta.get("content"))
            if content and self.forced is not None:
                deltas += self._output.prose(content)
            elif content:
                deltas.append(Delta("text", content))
            if delta.get("refusal"):
                self._refused = True
                deltas.append(Delta("refusal", delta["refusal"]))
            for position, call in enumerate(delta.get("tool_calls") or ()):
                deltas.extend(self._tool_fragment(position, call))
            finish = choice.get("finish_reason") or finish
        usage = event.get("usage") or (event.get("x_groq") or {}).get("usage")
        if usage:
            current = _usage(usage)
            if current != self._usage:
                # Deltas carry increments; some servers repeat a growing total in every chunk.
                deltas.append(Delta("usage", usage=current - self._usage))
                self._usage = current
        if finish:
            deltas += self._output.finish()
            reason = _finish(finish, self._output.seen, self._other_calls, self._refused)
            deltas.append(Delta("finish", finish_reason=reason))
        return deltas

    def _tool_fragment(self, position: int, call: Mapping[str, Any]) -> list[Delta]:
        index = int(call.get("index", position))
        function = call.get("function") or {}
        arguments = _arguments(function.get("arguments"))
        first = index not in self._seen
        if first:
            name = function.get("name")
            self._seen[index] = name
            if self.forced is not None and name == self.forced:
                return [*self._output.begin(index), *self._output.add(index, arguments)]
            self._other_calls = True
        if self._output.knows(index):
            return self._output.add(index, arguments)
        if not first and not arguments:
            return []
        return [
            Delta(
                "tool_call",
                arguments,
                index=index,
                tool_call_id=call.get("id") if first else None,
                tool_name=function.get("name") if first else None,
            )
        ]


# -- building ------------------------------------------------------------------------------


_DEEPSEEK_EFFORT = {"minimal": "low", "low": "low", "medium": "high", "high": "high", "max": "max"}
"""DeepSeek documents low, high and max; the neutral levels round to the nearest."""
_GRADED_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "max": "high"}


def _message(message: Message) -> dict[str, Any]:
    role = message.role
    if role == "tool":
        if not message.tool_call_id:
            raise UsageError(
                "a tool message needs the id of the call it answers",
                where="Message.tool_call_id",
                fix="build it with Message.tool_result(call_id, content)",
            )
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ]
        elif out["content"] is None:
            out["content"] = ""
        return out
    if role == "system":
        if any(isinstance(p, ImagePart) for p in message.parts):
            raise UsageError(
                "a system message cannot carry an image in Chat Completions",
                where="Message.parts",
                fix="put the image in a user message",
            )
        return {"role": "system", "content": message.text}
    parts = message.parts
    if all(isinstance(p, TextPart) for p in parts) and len(parts) <= 1:
        return {"role": "user", "content": message.text}
    return {"role": "user", "content": [_part(p) for p in parts]}


def _part(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    return {"type": "image_url", "image_url": {"url": part.data_url}}


def _tool(
    name: str, parameters: Mapping[str, Any], description: str | None, strict: bool | None
) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = dict(parameters)
    if strict is not None:
        function["strict"] = strict
    return {"type": "function", "function": function}


def _named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def _forced_name(request: Request) -> str | None:
    return request.output.name if isinstance(request.output, ForcedTool) else None


# -- parsing -------------------------------------------------------------------------------

_USAGE = Obj(
    {
        "prompt_tokens": NUMBER,
        "completion_tokens": NUMBER,
        "prompt_cache_hit_tokens": NUMBER,
        "prompt_tokens_details": Obj({"cached_tokens": NUMBER}),
        "completion_tokens_details": Obj({"reasoning_tokens": NUMBER}),
    }
)
_CONTENT = Either(TEXT, Arr(Obj({"type": TEXT, "text": TEXT})))
"""A string on the wire; a few servers send a list of text parts."""
_ARGUMENTS = Either(TEXT, OBJECT)
"""A JSON text on the wire; a few servers send the arguments as an object."""
_TOOL_CALL = Obj({"id": TEXT, "function": Obj({"name": TEXT, "arguments": _ARGUMENTS})})
_MESSAGE = Obj(
    {
        "content": _CONTENT,
        "refusal": TEXT,
        "tool_calls": Arr(_TOOL_CALL),
        "reasoning_content": ANY,  # read only when it is a string (`_reasoning`)
        "reasoning": ANY,
    }
)
_REPLY = Obj(
    {
        "choices": Arr(Obj({"message": _MESSAGE, "finish_reason": TEXT})),
        "usage": _USAGE,
        "model": TEXT,
    }
)
"""What `parse` reads of a `chat.completion`."""
_DELTA = Obj(
    {
        "content": _CONTENT,
        "refusal": TEXT,
        "tool_calls": Arr(Obj({"index": INDEX, **_TOOL_CALL.fields})),
        "reasoning_content": ANY,
        "reasoning": ANY,
    }
)
_CHUNK = Obj(
    {
        "choices": Arr(Obj({"index": INTEGER, "delta": _DELTA, "finish_reason": TEXT})),
        "usage": _USAGE,
        "x_groq": Obj({"usage": _USAGE}),
    }
)
"""What the decoder reads of a `chat.completion.chunk`."""


def _content_text(content: Any) -> str:
    """`content` is a string on the wire; a few servers send a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"
    )


def _reasoning(message: Mapping[str, Any]) -> str | None:
    """Thinking text: `reasoning_content` (DeepSeek, older vLLM, SGLang, llama.cpp) or
    `reasoning` (newer vLLM, Groq `parsed`). Servers in transition send both alike."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()  # a few servers send the arguments as an object


def _call(call: Mapping[str, Any]) -> ToolCall:
    function = call.get("function") or {}
    return ToolCall(
        str(call.get("id") or ""),
        str(function.get("name") or ""),
        _arguments(function.get("arguments")),
    )


def _finish(reason: Any, forced: bool, other_calls: bool, refused: bool) -> FinishReason:
    mapped = _FINISH.get(str(reason), "other") if reason else "other"
    if mapped == "tool_calls" and forced and not other_calls:
        return "stop"
    if mapped == "stop" and refused:
        return "refusal"
    return mapped


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    completion = usage.get("completion_tokens_details") or {}
    prompt = usage.get("prompt_tokens_details") or {}
    cached = prompt.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
    return Usage(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        reasoning_tokens=int(completion.get("reasoning_tokens") or 0),
        cached_tokens=int(cached),
    )


__all__ = ["FLAVORS", "ChatStreamDecoder", "Flavor", "OpenAIChat"]
