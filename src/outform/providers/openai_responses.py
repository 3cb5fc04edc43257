"""OpenAI Responses API (`POST /responses`).

The request is a list of `input` items rather than chat messages: user and system turns are
messages of `input_text` / `input_image` parts, an assistant turn is a plain role message
(its text as a string, which the spec's `EasyInputMessage` allows: an output message would
need the item id the API gave it) followed by one `function_call` item per call it made, and
a tool result is a `function_call_output` item. The schema goes flat in `text.format`
(`{"type": "json_schema", "name", "schema", "strict"}`), not nested as in Chat Completions.

Choices:

* **`store: false`** always (a caller can override through `extra`). outform sends the whole
  conversation on every call and never continues from a `previous_response_id`, so keeping
  each response on OpenAI's side would store the user's data for nothing.
* **System text** goes to `instructions`, except with `JsonObject`: the API's check for the
  word "json" scans the input messages only, not `instructions` (API reference), so there
  the system turns stay in `input` as system messages, where the check sees them.
* **Function tools** always carry `strict`, which the spec requires: a tool that does not ask
  for strict gets `false`, since the API's default of `true` would reject a schema that is
  not in the strict dialect.
* **Thinking**: `reasoning.effort` (`"none"` when disabled), and `reasoning.summary: "auto"`
  when enabled, because a summary is the only thinking text the API returns.
  `budget_tokens` has no field here and is ignored.
* **`stop`** does not exist in the Responses API: a request with stop sequences is refused
  rather than silently answered without them.
* **`status`**: a reply is read only when it finished: `completed`, or `incomplete` (cut
  short; `incomplete_details.reason` gives the finish reason). `failed` raises the provider's
  error with its message and code; `cancelled`, `in_progress` and `queued` (a `background`
  response) raise a ProviderError saying it did not complete, so that a cut value never
  passes for an answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    INDEX,
    NUMBER,
    OBJECT,
    STRING,
    TEXT,
    Arr,
    Either,
    Obj,
    Tagged,
    check_body,
    check_event,
    excerpt,
    reported,
)

_MIN_OUTPUT_TOKENS = 16
"""`max_output_tokens` has `minimum: 16` in OpenAI's spec."""


class OpenAIResponses:
    """The Responses API adapter."""

    name = "openai-responses"
    auth: Auth = "bearer"

    # -- request -----------------------------------------------------------------------------

    def build(self, request: Request) -> WireRequest:
        output = request.output
        in_input = isinstance(output, JsonObject)
        body: dict[str, Any] = {"model": request.model}
        system = [m.text for m in request.messages if m.role == "system"]
        if system and not in_input:
            body["instructions"] = "\n\n".join(system)
        body["input"] = [
            item for m in request.messages if in_input or m.role != "system" for item in _items(m)
        ]
        if isinstance(output, NativeSchema):
            fmt: dict[str, Any] = {"type": "json_schema", "name": output.name}
            if output.description:
                fmt["description"] = output.description
            fmt["schema"] = dict(output.schema)
            if output.strict is not None:
                fmt["strict"] = output.strict
            body["text"] = {"format": fmt}
        elif isinstance(output, JsonObject):
            body["text"] = {"format": {"type": "json_object"}}
        tools = [_tool(t.name, t.parameters, t.description, t.strict) for t in request.tools]
        if isinstance(output, ForcedTool):
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
            body["tool_choice"] = {"type": "function", "name": output.name}
            body["parallel_tool_calls"] = False
        elif request.tool_choice is not None:
            choice = request.tool_choice
            body["tool_choice"] = (
                {"type": "function", "name": choice.name}
                if isinstance(choice, NamedTool)
                else choice
            )
        if request.thinking is not None:
            body["reasoning"] = _reasoning(request.thinking)
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.max_tokens is not None:
            if request.max_tokens < _MIN_OUTPUT_TOKENS:
                raise UsageError(
                    f"the Responses API needs max_output_tokens of at least "
                    f"{_MIN_OUTPUT_TOKENS}, got {request.max_tokens}",
                    where="max_tokens",
                    fix=f"ask for {_MIN_OUTPUT_TOKENS} tokens or more",
                )
            body["max_output_tokens"] = request.max_tokens
        if request.stop:
            raise UsageError(
                "the Responses API has no stop sequences",
                where="stop",
                fix="drop stop=, or use the Chat Completions provider 'openai'",
            )
        body["store"] = False
        if request.stream:
            body["stream"] = True
        body = merge_extra(body, request.extra)
        return WireRequest("/responses", body, stream="sse" if request.stream else None)

    # -- response ----------------------------------------------------------------------------

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        check_body(self.name, _RESPONSE, body)
        _require_finished(self.name, body)
        forced = _forced_name(request)
        text: list[str] = []
        refusals: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        for item in body.get("output") or ():
            kind = item.get("type")
            if kind == "message":
                for part in item.get("content") or ():
                    if part.get("type") == "output_text":
                        text.append(part.get("text", ""))
                    elif part.get("type") == "refusal":
                        refusals.append(part.get("refusal", ""))
            elif kind == "function_call":
                calls.append(
                    ToolCall(
                        str(item.get("call_id") or item.get("id") or ""),
                        str(item.get("name") or ""),
                        _arguments(item.get("arguments")),
                    )
                )
            elif kind == "reasoning":
                thinking.extend(_reasoning_texts(item))
        reply = "".join(text)
        arguments = [c.arguments for c in calls if forced is not None and c.name == forced]
        if arguments:  # the reply is the forced tool's calls (providers/forced.py)
            calls = [c for c in calls if c.name != forced]
            reply = joined(arguments)
        refusal = "".join(refusals) or None
        return Response(
            text=reply,
            finish_reason=_finish(body, bool(calls), bool(refusal)),
            usage=_usage(body.get("usage")),
            tool_calls=tuple(calls),
            refusal=refusal,
            thinking="\n\n".join(thinking) or None,
            model=body.get("model"),
            raw=body,
        )

    def decoder(self, request: Request) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder(self.name, _forced_name(request))


class ResponsesStreamDecoder:
    """Responses streaming events to Deltas.

    A function call is announced by `response.output_item.added` (with its `call_id` and
    `name`) and its arguments follow as `response.function_call_arguments.delta` events that
    name only the item's `output_index`; the decoder numbers function calls 0, 1, ... in the
    order they are announced and reports that number as the Delta's `index`. The forced
    tool's calls come out as text, one per line, each ending with its
    `response.output_item.done`, and the text beside them is held back (providers/forced.py).
    Thinking comes from reasoning summaries (or raw reasoning text, for models that return
    it); separate summary parts are joined by a blank line, as `parse` joins them. The closing
    `response.completed` / `response.incomplete` event carries the usage and decides the
    finish reason; `response.failed`, like an `error` event, raises the error the response
    carries (a `StreamInterruptedError`, or a `RateLimitError` for a rate limit).
    """

    def __init__(self, provider: str, forced: str | None) -> None:
        self.provider = provider
        self.forced = forced
        self._calls: dict[int, int] = {}
        """output_index -> tool-call index."""
        self._output = ForcedStream()
        """The forced tool's calls, by output_index."""
        self._thinking_key: tuple[Any, ...] | None = None

    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        kind = event.get("type")
        if kind == "error":
            raise reported(self.provider, event.get("message"), kind=event.get("code"), body=event)
        check_event(self.provider, _EVENT, event)
        if kind == "response.output_text.delta":
            if self.forced is not None:
                return self._output.prose(event.get("delta") or "")
            return [Delta("text", event["delta"])] if event.get("delta") else []
        if kind == "response.refusal.delta":
            return [Delta("refusal", event["delta"])] if event.get("delta") else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._thinking(event)
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.function_call_arguments.delta":
            return self._arguments(event)
        if kind == "response.output_item.done":
            return self._output.end(int(event.get("output_index", -1)))
        if kind == "response.failed":
            raise _failure(self.provider, event.get("response") or {}, stream=True)
        if kind in ("response.completed", "response.incomplete"):
            return self._done(event.get("response") or {})
        return []

    def _thinking(self, event: Mapping[str, Any]) -> list[Delta]:
        fragment = event.get("delta") or ""
        if not fragment:
            return []
        key = (event.get("output_index"), event.get("summary_index", event.get("content_index")))
        if self._thinking_key is not None and key != self._thinking_key:
            fragment = "\n\n" + fragment
        self._thinking_key = key
        return [Delta("thinking", fragment)]

    def _item_added(self, event: Mapping[str, Any]) -> list[Delta]:
        item = event.get("item") or {}
        if item.get("type") != "function_call":
            return []
        output_index = int(event.get("output_index", -1))
        arguments = _arguments(item.get("arguments"))
        if self.forced is not None and item.get("name") == self.forced:
            return [*self._output.begin(output_index), *self._output.add(output_index, arguments)]
        index = self._calls.setdefault(output_index, len(self._calls))
        return [
            Delta(
                "tool_call",
                arguments,
                index=index,
                tool_call_id=item.get("call_id"),
                tool_name=item.get("name"),
            )
        ]

    def _arguments(self, event: Mapping[str, Any]) -> list[Delta]:
        fragment = event.get("delta") or ""
        output_index = int(event.get("output_index", -1))
        if not fragment:
            return []
        if self._output.knows(output_index):
            return self._output.add(output_index, fragment)
        index = self._calls.setdefault(output_index, len(self._calls))
        return [Delta("tool_call", fragment, index=index)]

    def _done(self, response: Mapping[str, Any]) -> list[Delta]:
        deltas = self._output.finish()
        if response.get("usage"):
            deltas.append(Delta("usage", usage=_usage(response["usage"])))
        refused = any(
            part.get("type") == "refusal"
            for item in response.get("output") or ()
            if item.get("type") == "message"
            for part in item.get("content") or ()
        )
        reason = _finish(response, bool(self._calls), refused)
        deltas.append(Delta("finish", finish_reason=reason))
        return deltas


# -- building ------------------------------------------------------------------------------


def _items(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        if not message.tool_call_id:
            raise UsageError(
                "a tool message needs the id of the call it answers",
                where="Message.tool_call_id",
                fix="build it with Message.tool_result(call_id, content)",
            )
        return [
            {
                "type": "function_call_output",
                "call_id": message.tool_call_id,
                "output": message.text,
            }
        ]
    if message.role == "assistant":
        items: list[dict[str, Any]] = []
        if message.text or not message.tool_calls:
            items.append({"role": "assistant", "content": message.text})
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
            for call in message.tool_calls
        )
        return items
    return [{"role": message.role, "content": [_part(p) for p in message.parts]}]


def _part(part: TextPart | ImagePart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    return {"type": "input_image", "image_url": part.data_url, "detail": "auto"}


def _tool(
    name: str, parameters: Mapping[str, Any], description: str | None, strict: bool | None
) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": name}
    if description:
        tool["description"] = description
    tool["parameters"] = dict(parameters)
    tool["strict"] = bool(strict)
    return tool


def _reasoning(thinking: Thinking) -> dict[str, Any]:
    if not thinking.enabled:
        return {"effort": "none"}
    reasoning: dict[str, Any] = {}
    if thinking.effort:
        reasoning["effort"] = thinking.effort
    reasoning["summary"] = "auto"
    return reasoning


def _forced_name(request: Request) -> str | None:
    return request.output.name if isinstance(request.output, ForcedTool) else None


# -- parsing -------------------------------------------------------------------------------

_PART = Tagged({"output_text": Obj({"text": STRING}), "refusal": Obj({"refusal": STRING})})
_ITEM = Tagged(
    {
        "message": Obj({"content": Arr(_PART)}),
        "function_call": Obj(
            {"call_id": TEXT, "id": TEXT, "name": TEXT, "arguments": Either(TEXT, OBJECT)}
        ),
        "reasoning": Obj(
            {
                "summary": Arr(Obj({"text": TEXT})),
                "content": Arr(Obj({"type": TEXT, "text": TEXT})),
            }
        ),
    }
)
_USAGE = Obj(
    {
        "input_tokens": NUMBER,
        "output_tokens": NUMBER,
        "input_tokens_details": Obj({"cached_tokens": NUMBER}),
        "output_tokens_details": Obj({"reasoning_tokens": NUMBER}),
    }
)
_RESPONSE = Obj(
    {
        "status": TEXT,
        "error": Obj({"code": TEXT, "message": TEXT}),
        "incomplete_details": Obj({"reason": TEXT}),
        "output": Arr(_ITEM),
        "usage": _USAGE,
        "model": TEXT,
    }
)
"""What `parse` (and the stream's closing event) reads of a `response` object."""
_DELTA = Obj({"delta": TEXT})
_EVENT = Tagged(
    {
        "response.output_text.delta": _DELTA,
        "response.refusal.delta": _DELTA,
        "response.reasoning_summary_text.delta": _DELTA,
        "response.reasoning_text.delta": _DELTA,
        "response.output_item.added": Obj({"output_index": INDEX, "item": _ITEM}),
        "response.output_item.done": Obj({"output_index": INDEX}),
        "response.function_call_arguments.delta": Obj({"output_index": INDEX, "delta": TEXT}),
        "response.completed": Obj({"response": _RESPONSE}),
        "response.incomplete": Obj({"response": _RESPONSE}),
        "response.failed": Obj({"response": _RESPONSE}),
    }
)
"""What the decoder reads of each stream event (other events are not read)."""

_UNFINISHED = {
    "cancelled": "the response was cancelled before it finished; retry the call",
    "in_progress": "the response is still being generated (a background response): outform "
    "needs the finished reply, so leave `background` out of `extra`",
    "queued": "the response is waiting to be generated (a background response): outform "
    "needs the finished reply, so leave `background` out of `extra`",
}
"""Statuses of a reply that holds no finished answer, and what to do about each."""


def _require_finished(provider: str, response: Mapping[str, Any]) -> None:
    """Raise unless the reply finished: `failed` raises the provider's error, `cancelled`,
    `in_progress` and `queued` say it did not complete. (`incomplete` is finished, cut short:
    its finish reason says why.)"""
    status = response.get("status")
    if status == "failed":
        raise _failure(provider, response, stream=False)
    if isinstance(status, str) and status in _UNFINISHED:
        raise ProviderError(
            f"{provider} answered with a response that did not complete (status {status!r})",
            provider=provider,
            body=excerpt(response),
            fix=_UNFINISHED[status],
        )


def _failure(provider: str, response: Mapping[str, Any], *, stream: bool) -> ProviderError:
    """The error of a failed response: its `error.message` and `error.code`, scrubbed."""
    error = response.get("error") or {}
    return reported(
        provider,
        error.get("message") or "the response failed without saying why",
        kind=error.get("code") or "failed",
        body=response,
        stream=stream,
        fix=None if stream else "the provider could not finish the response; retry the call",
    )


def _reasoning_texts(item: Mapping[str, Any]) -> list[str]:
    """Summary texts of a reasoning item; raw `reasoning_text` content when there is none."""
    summary = [s.get("text", "") for s in item.get("summary") or () if s.get("text")]
    if summary:
        return summary
    return [
        c.get("text", "")
        for c in item.get("content") or ()
        if c.get("type") == "reasoning_text" and c.get("text")
    ]


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _finish(response: Mapping[str, Any], other_calls: bool, refused: bool) -> FinishReason:
    """`status` and `incomplete_details` as a finish reason (`max_output_tokens`: length,
    `content_filter`: content filter, anything else: other). A forced tool's call is not
    among `other_calls`, so a completed forced call finishes with "stop"."""
    status = response.get("status")
    if status == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter":
            return "content_filter"
        return "other"
    if status != "completed":
        return "other"
    if other_calls:
        return "tool_calls"
    if refused:
        return "refusal"
    return "stop"


def _usage(usage: Any) -> Usage:
    if not isinstance(usage, Mapping):
        return Usage()
    output = usage.get("output_tokens_details") or {}
    input_ = usage.get("input_tokens_details") or {}
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        reasoning_tokens=int(output.get("reasoning_tokens") or 0),
        cached_tokens=int(input_.get("cached_tokens") or 0),
    )


__all__ = ["OpenAIResponses", "ResponsesStreamDecoder"]
