"""A native provider (Anthropic, Gemini, Bedrock, ...) behind the gateway's Chat interface.

The Chat Completions body the gateway built (or received on `/v1/chat/completions`) becomes
outform's neutral `Request`; `outform.plan` decides how the provider enforces the response
format (its native schema mode, a forced tool, JSON mode or instructions) and translates the
schema into the provider's dialect; the provider's adapter builds the wire request, and its
reply comes back as a `chat.completion` (or `chat.completion.chunk`s), the reply's JSON mapped
back from the dialect's shape when the dialect reshapes values. The model is
`provider:model` from outform's registry: `backend = "anthropic"` serves `claude-sonnet-4-5`
as `anthropic:claude-sonnet-4-5`; a client may name another registry provider only when the
operator allowed it (`allowed_providers`, `gateway.routing`). Every credential a call sends
(the key, a Vertex AI token) is learned by the gateway's scrubber before it is sent.

Provider errors reach the client in OpenAI's error shape with the provider's status (the
client speaks the OpenAI API, not the provider's), the provider's message inside.

Nothing of the Chat body is dropped silently: a field the neutral request cannot carry, and
that would change the answer (`top_p`, `seed`, penalties, `logprobs`, `n` > 1...), is a 400
naming it; fields that only label a request (`user`, `metadata`, `prompt_cache_key`...) are
not sent. A stream is whole only when the provider's stop reason came; the three timeouts are
those of the HTTP backend (connect, idle between bytes, total).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from typing import Any

import httpx
import orjson

from outform import jsontext
from outform.errors import (
    ConnectionFailedError,
    OutformError,
    ProviderError,
    StreamInterruptedError,
)
from outform.format import ResponseFormat, TextFormat
from outform.gateway.backend import BackendReply, Body, timeout_error
from outform.gateway.chain import new_id
from outform.gateway.events import DONE, data_frame
from outform.gateway.replies import SSE, GatewayError, Headers, PassthroughError, bad_request
from outform.gateway.routing import provider_model
from outform.gateway.settings import DEFAULT_TIMEOUTS, Timeouts
from outform.gateway.stream import StreamFailure
from outform.plan import Plan, plan
from outform.providers.base import (
    FinishReason,
    Message,
    NamedTool,
    Request,
    Response,
    Thinking,
    Tool,
    ToolChoice,
    Usage,
    as_message,
)
from outform.providers.credentials import application_default
from outform.providers.registry import Resolved, resolve
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
        self,
        provider: str,
        *,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        env: Mapping[str, str] = os.environ,
        allowed: Collection[str] = (),
        learn: Callable[[str], None] | None = None,
    ) -> None:
        """`allowed`: the other providers clients may name (`allowed_providers`); `learn`
        is told every credential a call will send (the gateway's scrubber learns it)."""
        self.provider = provider
        self.name = provider
        self._env = env
        self._allowed = frozenset(allowed)
        self._learn = learn
        self._timeouts = timeouts
        # A whole answer's first byte comes when the model is done: only `total` bounds it.
        # A stream's silences are bounded by `idle` from the start.
        self._whole = _transport(timeouts, read=timeouts.total)
        self._streams = _transport(timeouts, read=timeouts.idle)
        self._resolved: dict[str, Resolved] = {}

    # -- the interface -------------------------------------------------------------------------

    async def complete(self, body: Body) -> BackendReply:
        resolved, request, call_plan = self._request(body, stream=False)
        translation = _reshaping(call_plan)
        try:
            async with asyncio.timeout(self._timeouts.total):
                data = await self._whole.send(resolved.endpoint, resolved.adapter.build(request))
            response = resolved.adapter.parse(request, data)
        except TimeoutError:
            raise _total_timeout(self.provider, self._timeouts) from None
        except ProviderError as exc:
            raise _provider_error(exc) from None
        except OutformError as exc:
            raise GatewayError(400, exc.render(), code="invalid_request") from None
        completion = _completion(response, resolved.model, translation)
        return BackendReply(200, orjson.dumps(completion), data=completion, plan=call_plan)

    async def stream(self, body: Body) -> _NativeStream:
        resolved, request, call_plan = self._request(body, stream=True)
        total_at = asyncio.get_running_loop().time() + self._timeouts.total
        try:
            events = self._streams.stream(resolved.endpoint, resolved.adapter.build(request))
            iterator = aiter(events)
            try:
                async with asyncio.timeout_at(total_at):
                    first = await anext(iterator)
            except StopAsyncIteration:
                first = None
        except TimeoutError:
            raise _total_timeout(self.provider, self._timeouts) from None
        except ProviderError as exc:
            raise _provider_error(exc) from None
        except OutformError as exc:
            raise GatewayError(400, exc.render(), code="invalid_request") from None
        return _NativeStream(resolved, request, call_plan, first, iterator, total_at=total_at)

    async def models(self) -> list[dict[str, Any]]:
        return []

    async def aclose(self) -> None:
        await self._whole.aclose()
        await self._streams.aclose()

    # -- Chat body -> neutral request ------------------------------------------------------------

    def _resolve(self, model: str) -> Resolved:
        cached = self._resolved.get(model)
        if cached is not None:
            return cached
        target = provider_model(model, self.provider, self._allowed)  # (a 403 for another)
        tokens = _LearnedTokens(self._learn) if self._learn is not None else None
        try:
            resolved = resolve(target, env=self._env, credentials=tokens)
        except OutformError as exc:
            raise GatewayError(400, exc.render(), param="model", code="model_not_found") from None
        key = resolved.endpoint.api_key
        if key is not None and self._learn is not None:
            self._learn(key.reveal())
        self._resolved[model] = resolved
        return resolved

    def _request(self, body: Body, *, stream: bool) -> tuple[Resolved, Request, Plan]:
        chat = orjson.loads(body) if isinstance(body, bytes) else body
        resolved = self._resolve(str(chat.get("model") or ""))
        _check_fields(chat, self.provider)
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
                thinking=_thinking(chat.get("reasoning_effort")),
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
            thinking=call_plan.thinking,
            stream=stream,
        )
        return resolved, request, call_plan


class _LearnedTokens:
    """The process's Google credentials (Vertex AI), each access token they give learned
    before it is sent: a provider that echoes it is scrubbed like one echoing a key."""

    def __init__(self, learn: Callable[[str], None]) -> None:
        self._learn = learn
        self._last: str | None = None
        """The token learned last: learning takes a process-wide lock, and a token lives
        about an hour, so each one is learned once."""

    @property
    def project(self) -> str | None:
        return application_default().project

    def headers(self) -> dict[str, str]:
        return self._seen(application_default().headers())

    def cached(self) -> dict[str, str] | None:
        headers = application_default().cached()
        return None if headers is None else self._seen(headers)

    def _seen(self, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if name.lower() == "authorization":
                token = value.partition(" ")[2] or value
                if token != self._last:
                    self._learn(token)
                    self._last = token
        return headers


def _reshaping(call_plan: Plan) -> DialectResult | None:
    """The plan's dialect translation when replies must be mapped back (else None)."""
    translation = call_plan.translation
    return translation if translation is not None and translation.reshapes else None


def _transport(timeouts: Timeouts, *, read: float) -> AsyncTransport:
    limits = httpx.Timeout(connect=timeouts.connect, read=read, write=timeouts.idle, pool=None)
    return AsyncTransport(client=httpx.AsyncClient(timeout=limits), retry=RetryPolicy(retries=0))


_CARRIED = frozenset(
    {
        "model",
        "messages",
        "response_format",
        "tools",
        "tool_choice",
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "stream",
        "stream_options",
        "reasoning_effort",
    }
)
_LABELS = frozenset(
    {"user", "safety_identifier", "prompt_cache_key", "metadata", "store", "service_tier"}
)
"""Fields that name or file a request and leave its answer unchanged: not sent."""
_NO_OPS: dict[str, Any] = {
    "top_p": 1,
    "presence_penalty": 0,
    "frequency_penalty": 0,
    "n": 1,
    "logprobs": False,
    "parallel_tool_calls": True,
}
"""Fields accepted at these values (what every provider does anyway), refused at others."""


def _check_fields(chat: Mapping[str, Any], provider: str) -> None:
    """A 400 naming the first field that the neutral request cannot carry and whose loss
    would change the answer."""
    for key, value in chat.items():
        if key in _CARRIED or key in _LABELS or value is None:
            continue
        if key in _NO_OPS and value == _NO_OPS[key]:
            continue
        raise bad_request(
            f"'{key}' cannot be sent to {provider} through outform's adapters (the neutral "
            "request has no such field); leave it out, or use a Chat Completions backend "
            "URL for it.",
            key,
            "unsupported_parameter",
        )


_EFFORTS = frozenset({"minimal", "low", "medium", "high", "xhigh", "max"})


def _thinking(effort: Any) -> Thinking | None:
    """Chat's `reasoning_effort` as outform's thinking settings."""
    if effort is None:
        return None
    if effort == "none":
        return Thinking(enabled=False)
    if effort in _EFFORTS:
        return Thinking(effort=effort)
    raise bad_request(
        f"Invalid 'reasoning_effort': {effort!r}; expected none, minimal, low, medium or high.",
        "reasoning_effort",
        "invalid_value",
    )


def _total_timeout(provider: str, timeouts: Timeouts) -> GatewayError:
    return timeout_error(
        "total",
        f"{provider} did not finish its answer within {timeouts.total:g} s "
        "(total timeout, backend_timeout).",
    )


_HTTPX_LIMITS = {"ConnectTimeout": "connect", "ReadTimeout": "idle", "WriteTimeout": "idle"}


def _timeout_limit(what: str) -> str | None:
    """Which of the gateway's timeouts an httpx timeout (named in the transport's message)
    stands for."""
    for name, limit in _HTTPX_LIMITS.items():
        if name in what:
            return limit
    return None


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
        limit = _timeout_limit(exc.what)
        if limit is not None:
            return timeout_error(limit, f"{exc.what} ({limit} timeout, backend_{limit}_timeout).")
        # As for a URL backend: unreachable when no attempt got through, else its answer
        # broke off (a reset, a body cut short).
        code = "backend_error" if exc.reached else "backend_unreachable"
        return GatewayError(502, exc.what, type="server_error", code=code)
    status = exc.status or 502
    body = GatewayError(
        status,
        exc.what,
        type="invalid_request_error" if status < 500 else "server_error",
        code=f"{exc.provider}_error",
    ).body()
    headers: Headers = []
    if exc.retry_after is not None:  # the provider's back-off, as a URL backend's goes
        headers.append((b"retry-after", str(max(0, math.ceil(exc.retry_after))).encode()))
    return PassthroughError(status, orjson.dumps(body), headers=headers)


# -- neutral response -> Chat ------------------------------------------------------------------


def _reverse(text: str, translation: DialectResult | None) -> str:
    if translation is None or not text:
        return text
    try:
        value = jsontext.loads(text)  # every digit of an integer beyond 64 bits
    except ValueError:
        return text  # not JSON: left for the client (or enforcement mode) to judge
    return jsontext.dumps_text(translation.reverse(value))


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
        plan: Plan,
        first: Mapping[str, Any] | None,
        rest: AsyncIterator[Mapping[str, Any]],
        *,
        total_at: float,
    ) -> None:
        self._total_at = total_at
        self._resolved = resolved
        self._request = request
        self.plan = plan
        """How the provider was asked to enforce the format (for the request's run)."""
        self._translation = _reshaping(plan)
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
        while True:
            try:
                async with asyncio.timeout_at(self._total_at):
                    event = await anext(self._rest)
            except StopAsyncIteration:
                return
            except TimeoutError:
                raise StreamFailure(
                    f"{self._resolved.endpoint.provider} did not finish its answer in time "
                    "(total timeout, backend_timeout).",
                    "total",
                ) from None
            yield event

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        decoder = self._resolved.adapter.decoder(self._request)
        usage = Usage()
        finish: FinishReason | None = None
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
        except StreamFailure:
            if finish is None:
                raise
        except (StreamInterruptedError, ProviderError) as exc:
            if finish is None:  # (after the stop reason, a break loses nothing of the answer)
                limit = _timeout_limit(exc.what)
                named = f" ({limit} timeout, backend_{limit}_timeout)" if limit else ""
                raise StreamFailure(exc.what + named, limit) from None
        if finish is None:
            raise StreamFailure(
                f"{self._resolved.model}'s stream ended before its stop reason: the answer "
                "was cut off",
                code="backend_stream_truncated",
            )
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
