"""Google Gemini `generateContent` / `streamGenerateContent` (REST, camelCase).

The body follows what the official `google-genai` SDK sends (tests/providers/gemini_wire.py):
`contents` (roles `user` and `model`), a top-level `systemInstruction` (labelled role `user`,
as the SDK does), `generationConfig`, `tools` and `toolConfig`. The path is relative to the
registry's base URL (`.../v1beta`): `/models/{model}:generateContent`, or
`/models/{model}:streamGenerateContent?alt=sse` for a stream of full `GenerateContentResponse`
chunks. Keys are camelCase everywhere; the SDK itself sends some nested keys in snake_case
(`thinking_budget`, `mime_type`), which the API also reads, but camelCase is the REST spelling.

Decisions where the sources leave a choice (each also said where it is made):

- A native schema goes in the field of its language: JSON Schema (`NativeSchema.form ==
  "json_schema"`, the `gemini` dialect) in `responseJsonSchema`, which the SDK forwards verbatim
  and which takes every schema shape (as google-genai does); the OpenAPI form (`"openapi"`, the
  `gemini_openapi` dialect the profile picks for Gemini 2.0 and 1.5) in `responseSchema`.
  Neither has a name or a strict flag.
- Vertex AI takes the same body under `projects/{project}/locations/{location}/publishers/
  google`; the registry puts that in the base URL, so this adapter serves both.
- Tools are declared with `parametersJsonSchema` (standard JSON Schema, the `gemini` tool
  dialect). Strict tools ask for `mode: VALIDATED` (Gemini's function-calling docs).
- Tool results travel as `functionResponse` parts in a `user` turn with
  `response: {"result": <text>}`, as the SDK's automatic function calling does.
- Gemini 3 rejects a replayed `functionCall` part without its `thoughtSignature`. The neutral
  model has no place for that opaque signature, so replayed calls carry the documented
  placeholder `skip_thought_signature_validator` (ai.google.dev/gemini-api/docs/thought-signatures,
  FAQ) on the first call of each model turn.
- Streamed usage: `usageMetadata` is cumulative, and the chunk with `finishReason` carries the
  totals. The decoder emits usage once, right before `finish`; should a later chunk revise the
  totals, it emits only the increase. Summing every usage delta gives the final totals.
"""

from __future__ import annotations

import mimetypes
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

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
    Part,
    Request,
    Response,
    SchemaForm,
    TextPart,
    Thinking,
    Tool,
    ToolCall,
    Usage,
    WireRequest,
    merge_extra,
)
from outform.providers.forced import ForcedStream, joined
from outform.providers.replies import (
    FLAG,
    NUMBER,
    OBJECT,
    TEXT,
    Arr,
    Obj,
    check_body,
    check_event,
    reported,
)

SCHEMA_FIELDS: Final[Mapping[SchemaForm, str]] = {
    "json_schema": "responseJsonSchema",
    "openapi": "responseSchema",
}
GENERATED_ID_PREFIX: Final = "call_outform_"
"""Ids outform makes up for calls that came without one; they are never sent back."""
SKIP_SIGNATURE: Final = "skip_thought_signature_validator"

_FINISH: Final[Mapping[str, FinishReason]] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
}
"""Everything else (MALFORMED_FUNCTION_CALL, LANGUAGE, OTHER, ...) is "other"."""

_LEVELS: Final[Mapping[str, str]] = {
    "minimal": "MINIMAL",
    "low": "LOW",
    "medium": "MEDIUM",
    "high": "HIGH",
    "max": "HIGH",  # the SDK lists XHIGH, but which models take it is not documented
}
_BUDGETS: Final[Mapping[str, int]] = {
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
    "max": 24576,
}
"""Effort as a token budget for models that only take `thinkingBudget` (2.5): outform's
choice; 24576 is the largest budget Gemini 2.5 Flash accepts."""


class Gemini:
    """Adapter for the Gemini API (`generativelanguage.googleapis.com/v1beta`) and Vertex AI."""

    name = "gemini"
    auth: Auth = "x-goog-api-key"

    # -- request ---------------------------------------------------------------------------

    def build(self, request: Request) -> WireRequest:
        body: dict[str, Any] = {
            "contents": _contents(request.messages, _needs_signature(request.model))
        }
        system = [m for m in request.messages if m.role == "system"]
        if system:
            body["systemInstruction"] = {
                "role": "user",
                "parts": [_part(p) for m in system for p in m.parts],
            }
        declarations, tool_config = _tools(request)
        if declarations:
            body["tools"] = [{"functionDeclarations": declarations}]
        if tool_config:
            body["toolConfig"] = {"functionCallingConfig": tool_config}
        config = self._generation_config(request)
        if config:
            body["generationConfig"] = config
        body = merge_extra(body, request.extra)
        model = _model_path(request.model)
        if request.stream:
            return WireRequest(f"/{model}:streamGenerateContent?alt=sse", body, stream="sse")
        return WireRequest(f"/{model}:generateContent", body)

    def _generation_config(self, request: Request) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.max_tokens is not None:
            config["maxOutputTokens"] = request.max_tokens
        if request.stop:
            config["stopSequences"] = list(request.stop)
        output = request.output
        if isinstance(output, NativeSchema):
            config["responseMimeType"] = "application/json"
            config[SCHEMA_FIELDS[output.form]] = dict(output.schema)
        elif isinstance(output, JsonObject):
            config["responseMimeType"] = "application/json"
        if request.thinking is not None:
            config["thinkingConfig"] = _thinking(request.model, request.thinking)
        return config

    # -- response --------------------------------------------------------------------------

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response:
        check_body(self.name, _RESPONSE, body)
        usage = _usage(body.get("usageMetadata"))
        model = body.get("modelVersion") or request.model
        candidates = body.get("candidates") or []
        if not candidates:
            blocked = (body.get("promptFeedback") or {}).get("blockReason")
            reason: FinishReason = "content_filter" if blocked else "other"
            return Response("", reason, usage, model=model, raw=body)
        candidate = candidates[0]
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        for part in (candidate.get("content") or {}).get("parts") or ():
            if "functionCall" in part:
                calls.append(_tool_call(part["functionCall"]))
            elif isinstance(part.get("text"), str):
                (thoughts if part.get("thought") else texts).append(part["text"])
        text = "".join(texts)
        forced = _forced_name(request)
        arguments = [c.arguments for c in calls if forced is not None and c.name == forced]
        if arguments:  # the reply is the forced tool's calls (providers/forced.py)
            calls = [c for c in calls if c.name != forced]
            text = joined(arguments)
        return Response(
            text,
            _finish(candidate.get("finishReason"), bool(calls)),
            usage,
            tuple(calls),
            thinking="".join(thoughts) or None,
            model=model,
            raw=body,
        )

    def decoder(self, request: Request) -> GeminiStreamDecoder:
        return GeminiStreamDecoder(_forced_name(request))


class GeminiStreamDecoder:
    """Turns `streamGenerateContent?alt=sse` chunks into deltas. Each function call arrives
    whole in one chunk, so its arguments are one fragment. The forced tool's calls come out as
    text, one per line, and the text beside them is held back (providers/forced.py)."""

    def __init__(self, forced: str | None) -> None:
        self.forced = forced
        self._output = ForcedStream()
        self._forced_calls = 0
        self._calls = 0
        self._usage: Usage | None = None
        self._sent = Usage()
        self._finished = False

    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        if "error" in event:
            raise _stream_error(event["error"])
        check_event("gemini", _RESPONSE, event)
        deltas: list[Delta] = []
        if event.get("usageMetadata"):
            self._usage = _usage(event["usageMetadata"])
        candidates = event.get("candidates") or []
        reason: FinishReason | None = None
        if candidates:
            candidate = candidates[0]
            for part in (candidate.get("content") or {}).get("parts") or ():
                deltas.extend(self._part(part))
            if candidate.get("finishReason"):
                reason = _finish(candidate["finishReason"], self._calls > 0)
        elif (event.get("promptFeedback") or {}).get("blockReason"):
            reason = "content_filter"
        if reason is not None and not self._finished:
            self._finished = True
            deltas.extend(self._output.finish())
            deltas.extend(self._usage_delta())
            deltas.append(Delta("finish", finish_reason=reason))
        elif self._finished:
            deltas.extend(self._usage_delta())
        return deltas

    def _part(self, part: Mapping[str, Any]) -> list[Delta]:
        if "functionCall" in part:
            call = _tool_call(part["functionCall"])
            if self.forced is not None and call.name == self.forced:
                key, self._forced_calls = self._forced_calls, self._forced_calls + 1
                return self._output.whole(key, call.arguments)
            index, self._calls = self._calls, self._calls + 1
            return [
                Delta(
                    "tool_call",
                    call.arguments,
                    index=index,
                    tool_call_id=call.id,
                    tool_name=call.name,
                )
            ]
        text = part.get("text")
        if isinstance(text, str) and text:
            if part.get("thought"):
                return [Delta("thinking", text)]
            return self._output.prose(text) if self.forced is not None else [Delta("text", text)]
        return []

    def _usage_delta(self) -> list[Delta]:
        if self._usage is None:
            return []
        now, before = self._usage, self._sent
        increase = Usage(
            max(now.input_tokens - before.input_tokens, 0),
            max(now.output_tokens - before.output_tokens, 0),
            max(now.reasoning_tokens - before.reasoning_tokens, 0),
            max(now.cached_tokens - before.cached_tokens, 0),
        )
        if increase == Usage():
            return []
        self._sent = before + increase
        return [Delta("usage", usage=increase)]


# -- messages ------------------------------------------------------------------------------


def _contents(messages: Sequence[Message], signature: bool) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> function name, for tool results
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            part = _function_response(message, names)
            last = contents[-1] if contents else None
            if (
                last
                and last["role"] == "user"
                and all("functionResponse" in p for p in last["parts"])
            ):
                last["parts"].append(part)  # parallel results go back in one turn
            else:
                contents.append({"role": "user", "parts": [part]})
            continue
        parts = [_part(p) for p in message.parts if not (isinstance(p, TextPart) and not p.text)]
        if message.role == "assistant":
            for index, call in enumerate(message.tool_calls):
                names[call.id] = call.name
                function: dict[str, Any] = {
                    "name": call.name,
                    "args": call.object_arguments("Gemini"),
                }
                if not call.id.startswith(GENERATED_ID_PREFIX):
                    function["id"] = call.id
                part = {"functionCall": function}
                if signature and index == 0:
                    part["thoughtSignature"] = SKIP_SIGNATURE
                parts.append(part)
        if parts:
            contents.append(
                {"role": "model" if message.role == "assistant" else "user", "parts": parts}
            )
    return contents


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"text": part.text}
    return _image(part)


def _image(part: ImagePart) -> dict[str, Any]:
    if part.data is not None:
        return {"inlineData": {"mimeType": part.media_type, "data": part.base64}}
    url = part.url or ""
    inline = re.match(r"data:([^;,]+)(?:;[^,]*)?;base64,(.*)", url, re.DOTALL)
    if inline:
        return {"inlineData": {"mimeType": inline.group(1), "data": inline.group(2)}}
    mime = mimetypes.guess_type(url)[0] or part.media_type
    return {"fileData": {"mimeType": mime, "fileUri": url}}


def _function_response(message: Message, names: Mapping[str, str]) -> dict[str, Any]:
    call_id = message.tool_call_id
    name = message.name or (names.get(call_id) if call_id else None)
    if not name:
        raise UsageError(
            "Gemini needs the name of the function a tool result answers",
            where=f"tool message for call {call_id!r}",
            fix="pass name= to Message.tool_result, or keep the assistant message that "
            "made the call earlier in the conversation",
        )
    response: dict[str, Any] = {"name": name, "response": {"result": message.text}}
    if call_id and not call_id.startswith(GENERATED_ID_PREFIX):
        response["id"] = call_id
    return {"functionResponse": response}


# -- tools and thinking --------------------------------------------------------------------


def _declaration(name: str, schema: Mapping[str, Any], description: str | None) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": name}
    if description:
        declaration["description"] = description
    declaration["parametersJsonSchema"] = dict(schema)
    return declaration


def _tools(request: Request) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    declarations = [_declaration(t.name, t.parameters, t.description) for t in request.tools]
    output = request.output
    if isinstance(output, ForcedTool):
        if any(t.name == output.name for t in request.tools):
            raise UsageError(
                f"the forced output tool {output.name!r} has the name of one of the tools",
                where="request.tools",
                fix="give the output tool a name no other tool uses",
            )
        declarations.append(_declaration(output.name, output.schema, output.description))
        return declarations, {"mode": "ANY", "allowedFunctionNames": [output.name]}
    if not declarations:
        return [], {}
    return declarations, _tool_choice(request.tool_choice, request.tools)


def _tool_choice(choice: object, tools: Sequence[Tool]) -> dict[str, Any]:
    if isinstance(choice, NamedTool):
        return {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    if choice == "none":
        return {"mode": "NONE"}
    if choice == "required":
        return {"mode": "ANY"}
    if any(t.strict for t in tools):
        return {"mode": "VALIDATED"}  # calls or text, calls checked against the schema
    if choice == "auto":
        return {"mode": "AUTO"}
    return {}


def _generation(model: str) -> int | None:
    found = re.search(r"gemini-(\d+)", model)
    return int(found.group(1)) if found else None


def _needs_signature(model: str) -> bool:
    """Gemini 3 validates thought signatures on replayed calls; aliases get it too."""
    generation = _generation(model)
    return generation is None or generation >= 3


def _thinking(model: str, thinking: Thinking) -> dict[str, Any]:
    """Gemini 3 takes `thinkingLevel` (and still `thinkingBudget`); 2.5 takes the budget
    (0 turns it off, except on 2.5 Pro, whose smallest budget is 128). Gemini 3 cannot turn
    thinking off: the lowest level that every 3.x model takes is LOW."""
    generation = _generation(model)
    levels = generation is not None and generation >= 3
    if not thinking.enabled:
        if levels:
            return {"thinkingLevel": "LOW", "includeThoughts": False}
        return {"thinkingBudget": 128 if "2.5-pro" in model else 0}
    config: dict[str, Any] = {"includeThoughts": True}
    if levels and thinking.effort:
        config["thinkingLevel"] = _LEVELS[thinking.effort]
    elif thinking.budget_tokens is not None:
        config["thinkingBudget"] = thinking.budget_tokens
    elif thinking.effort:
        config["thinkingBudget"] = _BUDGETS[thinking.effort]
    return config


# -- response helpers ----------------------------------------------------------------------

_PART = Obj(
    {
        "text": TEXT,
        "thought": FLAG,
        "functionCall": Obj({"id": TEXT, "name": TEXT, "args": OBJECT}, nullable=False),
    }
)
_USAGE = Obj(
    {
        "promptTokenCount": NUMBER,
        "toolUsePromptTokenCount": NUMBER,
        "candidatesTokenCount": NUMBER,
        "thoughtsTokenCount": NUMBER,
        "cachedContentTokenCount": NUMBER,
    }
)
_RESPONSE = Obj(
    {
        "candidates": Arr(Obj({"content": Obj({"parts": Arr(_PART)}), "finishReason": TEXT})),
        "promptFeedback": Obj({"blockReason": TEXT}),
        "usageMetadata": _USAGE,
        "modelVersion": TEXT,
    }
)
"""What `parse` reads of a `GenerateContentResponse`, and the decoder of each streamed one."""


def _tool_call(function: Mapping[str, Any]) -> ToolCall:
    call_id = function.get("id") or GENERATED_ID_PREFIX + uuid.uuid4().hex[:24]
    args = function.get("args")
    return ToolCall(str(call_id), str(function.get("name", "")), orjson.dumps(args or {}).decode())


def _finish(reason: str | None, calls: bool) -> FinishReason:
    if reason == "STOP" and calls:
        return "tool_calls"
    return _FINISH.get(reason or "", "other")


def _usage(meta: Mapping[str, Any] | None) -> Usage:
    if not meta:
        return Usage()
    thoughts = int(meta.get("thoughtsTokenCount") or 0)
    return Usage(
        input_tokens=int(meta.get("promptTokenCount") or 0)
        + int(meta.get("toolUsePromptTokenCount") or 0),
        output_tokens=int(meta.get("candidatesTokenCount") or 0) + thoughts,
        reasoning_tokens=thoughts,
        cached_tokens=int(meta.get("cachedContentTokenCount") or 0),
    )


def _forced_name(request: Request) -> str | None:
    return request.output.name if isinstance(request.output, ForcedTool) else None


def _model_path(model: str) -> str:
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


def _stream_error(error: Any) -> ProviderError:
    details = error if isinstance(error, Mapping) else {"message": str(error)}
    return reported(
        "gemini",
        details.get("message", "error"),
        kind=details.get("status") or details.get("code") or "error",
        body=details,
        limited=details.get("code") == 429,
    )


__all__ = ["GENERATED_ID_PREFIX", "SKIP_SIGNATURE", "Gemini", "GeminiStreamDecoder"]
