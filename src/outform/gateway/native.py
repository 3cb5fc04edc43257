"""A native provider (Anthropic, Gemini, Bedrock, ...) behind the gateway's Chat interface.

The Chat Completions body the gateway built (or received on `/v1/chat/completions`) becomes
outform's neutral `Request`; `outform.plan` decides how the provider enforces the response
format (its native schema mode, a forced tool, JSON mode or instructions) and translates the
schema into the provider's dialect; the provider's adapter builds the wire request, and its
reply comes back as a `chat.completion` (or `chat.completion.chunk`s), the reply's JSON mapped
back from the dialect's shape when the dialect reshapes values. The model is
`provider:model` from outform's registry: `backend = "anthropic"` serves `claude-sonnet-4-5`
as `anthropic:claude-sonnet-4-5`, and a client may name another registry provider itself.

Provider errors reach the client in OpenAI's error shape with the provider's status (the
client speaks the OpenAI API, not the provider's), the provider's message inside.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from outform.errors import (
    ConnectionFailedError,
    OutformError,
    ProviderError,
    StreamInterruptedError,
)
from outform.format import ResponseFormat, TextFormat
from outform.gateway.backend import BackendReply, Body
from outform.gateway.chain import new_id
from outform.gateway.events import DONE, data_frame
from outform.gateway.replies import SSE, GatewayError, PassthroughError
from outform.gateway.stream import StreamFailure
from outform.plan import plan
from outform.providers.base import (
    FinishReason,
    Message,
    NamedTool,
    Request,
    Response,
    Tool,
    ToolChoice,
    Usage,
    as_message,
)
from outform.providers.registry import PROVIDERS, Resolved, resolve
from outform.schema.dialects.result import DialectResult
from outform.transport import AsyncTransport, RetryPolicy

_FINISH: dict[FinishReason, str] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "stop",
    "other": "stop",
}


class NativeBackend:
    """Provider `provider` of outform's registry, keys and URLs from its usual variables."""

    def __init__(
        self, provider: str, *, timeout: float = 600.0, env: Mapping[str, str] = os.environ
    ) -> None:
        self.provider = provider
        self.name = provider
        self._env = env
        self._transport = AsyncTransport(timeout=timeout, retry=RetryPolicy(retries=0))
        self._resolved: dict[str, Resolved] = {}

    # -- the interface -------------------------------------------------------------------------

    async def complete(self, body: Body) -> BackendReply:
        resolved, request, translation = self._request(body, stream=False)
        try:
            data = await self._transport.send(resolved.endpoint, resolved.adapter.build(request))
            response = resolved.adapter.parse(request, data)
        except ProviderError as exc:
            raise _provider_error(exc) from None
        except OutformError as exc:
            raise GatewayError(400, exc.render(), code="invalid_request") from None
        completion = _completion(response, resolved.model, translation)
        return BackendReply(200, orjson.dumps(completion), data=completion)

    async def stream(self, body: Body) -> _NativeStream:
        resolved, request, translation = self._request(body, stream=True)
        try:
            events = self._transport.stream(resolved.endpoint, resolved.adapter.build(request))
            iterator = aiter(events)
            try:
                first = await anext(iterator)
            except StopAsyncIteration:
                first = None
        except ProviderError as exc:
            raise _provider_error(exc) from None
        except OutformError as exc:
            raise GatewayError(400, exc.render(), code="invalid_request") from None
        return _NativeStream(resolved, request, translation, first, iterator)

    async def models(self) -> list[dict[str, Any]]:
        return []

    async def aclose(self) -> None:
        await self._transport.aclose()

    # -- Chat body -> neutral request ------------------------------------------------------------

    def _resolve(self, model: str) -> Resolved:
        cached = self._resolved.get(model)
        if cached is not None:
            return cached
        prefix, sep, _ = model.partition(":")
        target = model if sep and prefix in PROVIDERS else f"{self.provider}:{model}"
        try:
            resolved = resolve(target, env=self._env)
        except OutformError as exc:
            raise GatewayError(400, exc.render(), param="model", code="model_not_found") from None
        self._resolved[model] = resolved
        return resolved

    def _request(
        self, body: Body, *, stream: bool
    ) -> tuple[Resolved, Request, DialectResult | None]:
        chat = orjson.loads(body) if isinstance(body, bytes) else body
        resolved = self._resolve(str(chat.get("model") or ""))
        try:
            messages = [as_message(m) for m in chat.get("messages") or ()]
            tools = tuple(
                Tool(
                    f["name"],
                    f.get("parameters") or {"type": "object", "properties": {}},
                    description=f.get("description"),
                    strict=f.get("strict"),
                )
                for f in (t.get("function") or {} for t in chat.get("tools") or ())
            )
            fmt = _format(chat.get("response_format"))
            call_plan = plan(
                fmt,
                provider=resolved.spec.profile_name,
                model=resolved.model,
                tools=bool(tools),
                streaming=stream,
            )
        except OutformError as exc:
            raise GatewayError(400, exc.render(), code="invalid_request") from None
        except (KeyError, TypeError, AttributeError) as exc:
            raise GatewayError(400, f"malformed request: {exc}", code="invalid_request") from None
        if call_plan.instructions:
            messages.insert(0, Message.system(call_plan.instructions))
        stop = chat.get("stop")
        request = Request(
            model=resolved.model,
            messages=tuple(messages),
            output=call_plan.output,
            tools=tools,
            tool_choice=_tool_choice(chat.get("tool_choice")),
            temperature=chat.get("temperature"),
            max_tokens=chat.get("max_completion_tokens") or chat.get("max_tokens"),
            stop=(stop,) if isinstance(stop, str) else tuple(stop or ()),
            stream=stream,
        )
        translation = call_plan.translation
        return resolved, request, translation if translation and translation.reshapes else None


def _format(response_format: Any) -> ResponseFormat:
    if not isinstance(response_format, Mapping):
        return TextFormat()
    kind = response_format.get("type")
    if kind == "json_schema":
        nested = response_format.get("json_schema") or {}
        return ResponseFormat.from_dict({"type": "json_schema", **nested})
    return ResponseFormat.from_dict(response_format)


def _tool_choice(choice: Any) -> ToolChoice | None:
    if choice in ("auto", "none", "required"):
        return choice  # type: ignore[no-any-return]
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        return NamedTool(str((choice.get("function") or {}).get("name")))
    return None


def _provider_error(exc: ProviderError) -> Exception:
    if isinstance(exc, ConnectionFailedError):
        timed_out = "timed out" in exc.what
        return GatewayError(
            504 if timed_out else 502,
            exc.what,
            type="server_error",
            code="backend_timeout" if timed_out else "backend_unreachable",
        )
    status = exc.status or 502
    body = GatewayError(
        status,
        exc.what,
        type="invalid_request_error" if status < 500 else "server_error",
        code=f"{exc.provider}_error",
    ).body()
    return PassthroughError(status, orjson.dumps(body))


# -- neutral response -> Chat ------------------------------------------------------------------


def _reverse(text: str, translation: DialectResult | None) -> str:
    if translation is None or not text:
        return text
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text  # not JSON: left for the client (or enforcement mode) to judge
    return orjson.dumps(translation.reverse(value)).decode()


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def _completion(
    response: Response, model: str, translation: DialectResult | None
) -> dict[str, Any]:
    text = _reverse(response.text, translation)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text if text or not response.tool_calls else None,
        "refusal": response.refusal,
    }
    if response.thinking:
        message["reasoning_content"] = response.thinking
    if response.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in response.tool_calls
        ]
    return {
        "id": new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model or model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _FINISH[response.finish_reason],
            }
        ],
        "usage": _usage(response.usage),
    }


class _NativeStream:
    content_type = SSE

    def __init__(
        self,
        resolved: Resolved,
        request: Request,
        translation: DialectResult | None,
        first: Mapping[str, Any] | None,
        rest: AsyncIterator[Mapping[str, Any]],
    ) -> None:
        self._resolved = resolved
        self._request = request
        self._translation = translation
        self._first = first
        self._rest = rest
        self._head = {
            "id": new_id("chatcmpl"),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": resolved.model,
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**self._head, "choices": [choice]}

    async def _events(self) -> AsyncIterator[Mapping[str, Any]]:
        if self._first is not None:
            yield self._first
        async for event in self._rest:
            yield event

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        decoder = self._resolved.adapter.decoder(self._request)
        usage = Usage()
        finish: FinishReason = "stop"
        held: list[str] = []  # text of a reshaping dialect, mapped back as a whole at the end
        seen: set[int] = set()
        yield self._chunk({"role": "assistant", "content": ""})
        try:
            async for event in self._events():
                for delta in decoder.feed(event):
                    if delta.kind == "text":
                        if self._translation is not None:
                            held.append(delta.text)
                        else:
                            yield self._chunk({"content": delta.text})
                    elif delta.kind == "thinking":
                        yield self._chunk({"reasoning_content": delta.text})
                    elif delta.kind == "refusal":
                        yield self._chunk({"refusal": delta.text})
                    elif delta.kind == "tool_call":
                        call: dict[str, Any] = {"index": delta.index}
                        function: dict[str, Any] = {"arguments": delta.text}
                        if delta.index not in seen:
                            seen.add(delta.index)
                            call["id"] = delta.tool_call_id or new_id("call")
                            call["type"] = "function"
                            function["name"] = delta.tool_name or ""
                        call["function"] = function
                        yield self._chunk({"tool_calls": [call]})
                    elif delta.kind == "usage" and delta.usage is not None:
                        usage = usage + delta.usage
                    elif delta.kind == "finish" and delta.finish_reason is not None:
                        finish = delta.finish_reason
        except (StreamInterruptedError, ProviderError) as exc:
            raise StreamFailure(exc.what) from None
        if held:
            yield self._chunk({"content": _reverse("".join(held), self._translation)})
        yield self._chunk({}, _FINISH[finish])
        yield {**self._head, "choices": [], "usage": _usage(usage)}

    async def raw(self) -> AsyncIterator[bytes]:
        async for chunk in self.chunks():
            yield data_frame(chunk)
        yield DONE

    async def aclose(self) -> None:
        close = getattr(self._rest, "aclose", None)
        if close is not None:
            await close()


__all__ = ["NativeBackend"]
