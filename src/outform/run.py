"""generate() / agenerate(): a validated value from any provider.

The loop is written once, without I/O (`_Loop`): it turns the caller's arguments into a
neutral `Request`, and each neutral `Response` into either the result or the next request (a
re-ask). The sync and async drivers only move those through an adapter and a transport, so
both behave identically.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, overload

import orjson

from outform.errors import OutformError, OutputError, StreamAbortedError, UsageError
from outform.format import JsonSchemaFormat, ResponseFormat, TextFormat
from outform.jsontext import dumps_text
from outform.parse.hint import RetryHint
from outform.parse.pipeline import Pipeline, Processor
from outform.parse.result import Change, ParseResult
from outform.plan import Mode, Plan, plan
from outform.providers.assemble import Assembler
from outform.providers.base import (
    Delta,
    FinishReason,
    Message,
    Request,
    Response,
    Thinking,
    Tool,
    ToolCall,
    ToolChoice,
    Usage,
    as_message,
)
from outform.providers.registry import Resolved, resolve
from outform.reask import (
    CUT_OFF,
    FieldAsk,
    field_ask,
    reask_messages,
    repaired_after_cut,
    with_instructions,
)
from outform.schema import pointer
from outform.schema.dialects.result import DialectResult
from outform.schema.ledger import Ledger
from outform.streaming import Snapshot, StreamParser, typed_builder
from outform.trace.events import Event, EventName, Observer, dispatch
from outform.transport import AsyncTransport, Transport

T = TypeVar("T")

_MODE_FOR_PLAN: dict[str, Mode] = {
    "native_schema": "native",
    "forced_tool": "tool",
    "json_object": "json",
    "instructions": "prompted",
}


@dataclass(frozen=True)
class Attempt:
    """One call and what became of its reply."""

    text: str
    finish_reason: FinishReason
    usage: Usage
    hint: RetryHint | None = None
    fields: tuple[str, ...] = ()
    """For a re-ask of some fields only: the fields asked for."""
    aborted_at: int | None = None
    """For a streamed reply stopped early: the characters received before it was cut."""


@dataclass(frozen=True)
class Generation(Generic[T]):
    """The outcome of generate(): a validated value, or the tool calls the model made."""

    value: T | None
    data: Any
    text: str
    usage: Usage
    """Summed over every attempt."""
    attempts: tuple[Attempt, ...]
    mode: str
    mode_reason: str
    response: Response
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str = ""
    """Empty when thinking was left as asked; else how the thinking rule changed it."""
    parse: ParseResult[Any] | None = None
    ledger: Ledger | None = None
    """Per keyword of the schema: enforced by the provider, or checked by outform (every
    keyword, in a mode where the provider enforces none). None for free text."""


class GenerationError(OutputError):
    """No valid reply within the retries or the token budget; carries every attempt."""

    def __init__(
        self,
        what: str,
        *,
        hint: RetryHint,
        attempts: tuple[Attempt, ...],
        usage: Usage,
        result: ParseResult[Any] | None = None,
        fix: str | None = None,
    ) -> None:
        self.attempts = attempts
        self.usage = usage
        super().__init__(what, hint=hint, result=result, fix=fix)


class RefusalError(OutformError):
    """The model refused to answer (its refusal is in `refusal`)."""

    def __init__(self, refusal: str, *, attempts: tuple[Attempt, ...], usage: Usage) -> None:
        self.refusal = refusal
        self.attempts = attempts
        self.usage = usage
        super().__init__(
            f"the model refused: {refusal[:300]}",
            fix="rephrase the request; a refusal is not re-asked",
        )


# -- the loop, without I/O -----------------------------------------------------------------


@dataclass
class _Loop:
    fmt: ResponseFormat
    plan: Plan
    provider: str
    base: list[Message]
    template: Request
    pipeline: Pipeline[Any]
    retries: int
    token_budget: int | None
    level: str | None
    parse_options: Mapping[str, Any]
    caller_tools: bool
    observers: tuple[Observer, ...]
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    ask: FieldAsk | None = None
    ask_pipeline: Pipeline[Any] | None = None
    ask_translation: DialectResult | None = None
    kept_changes: tuple[Change, ...] = ()
    """During a field re-ask: the changes of earlier replies behind the fields it keeps."""

    def first(self) -> Request:
        return replace(self.template, messages=tuple(self.base))

    @property
    def current_pipeline(self) -> Pipeline[Any]:
        """The pipeline the next reply is parsed with (a field re-ask has its own)."""
        return self.ask_pipeline or self.pipeline

    @property
    def current_translation(self) -> DialectResult | None:
        """The dialect translation the provider enforces for the next reply."""
        return self.ask_translation if self.ask is not None else self.plan.translation

    def abort(self, response: Response, aborted: StreamAbortedError) -> Request:
        """A streamed reply stopped early: record it and ask again (or give up)."""
        self.usage = self.usage + response.usage
        return self._retry(response, aborted.hint, None, aborted_at=aborted.offset)

    def step(self, response: Response) -> Request | Generation[Any]:
        self.usage = self.usage + response.usage
        blocked = response.finish_reason == "content_filter" and not response.text.strip()
        if (response.refusal or blocked) and not response.text.strip():
            self.attempts.append(Attempt("", response.finish_reason, response.usage))
            refusal = response.refusal or "the provider's content filter blocked the reply"
            raise RefusalError(refusal, attempts=tuple(self.attempts), usage=self.usage)
        if response.tool_calls and self.caller_tools and not response.text.strip():
            self.attempts.append(Attempt("", response.finish_reason, response.usage))
            return self._finish(response, None, tool_calls=response.tool_calls)
        try:
            result = self._parse(response)
        except OutputError as error:
            return self._retry(response, error.hint, error.result)
        return self._finish(response, result)

    def _parse(self, response: Response) -> ParseResult[Any]:
        """The reply's value, with every change that contributed to it: for a field re-ask,
        those behind the fields kept from earlier replies, then the answer's, each numbered
        with its attempt (an OutputError's result carries them too)."""
        number = len(self.attempts) + 1
        try:
            if self.ask is not None and self.ask_pipeline is not None:
                ask, earlier = self.ask, self.kept_changes
                try:
                    answer = self.ask_pipeline.run(response.text)
                except OutputError as error:
                    if error.result is not None and isinstance(error.result.data, dict):
                        # The fields kept stay part of the value a next re-ask starts from.
                        merged = ask.merge(error.result.data)
                        error.result = replace(error.result, value=merged, _data=merged)
                    raise
                earlier += _numbered(answer.changes, number)
                result = self.pipeline.run(dumps_text(ask.merge(answer.data)))
            else:
                earlier = ()
                result = self.pipeline.run(response.text)
        except OutputError as error:
            if error.result is not None:
                error.result = _with_earlier(error.result, earlier, number)
            raise
        result = _with_earlier(result, earlier, number)
        own = [c for c in result.changes if c.attempt == number]  # this reply's
        if response.finish_reason == "length" and repaired_after_cut(own):
            raise OutputError("the reply was cut off", hint=CUT_OFF, result=result)
        return result

    def _retry(
        self,
        response: Response,
        hint: RetryHint,
        result: ParseResult[Any] | None,
        aborted_at: int | None = None,
    ) -> Request:
        self.attempts.append(
            Attempt(
                response.text,
                response.finish_reason,
                response.usage,
                hint,
                self.ask.fields if self.ask else (),
                aborted_at,
            )
        )
        over_budget = self.token_budget is not None and self.usage.total_tokens >= self.token_budget
        if len(self.attempts) > self.retries or over_budget:
            why = (
                f"the token budget ({self.token_budget}) is spent"
                if over_budget
                else f"{len(self.attempts)} attempt(s) failed"
            )
            self._emit("output.reask.fail", why)
            raise GenerationError(
                f"no valid reply: {why}",
                hint=hint,
                attempts=tuple(self.attempts),
                usage=self.usage,
                result=result,
                fix="raise `retries` or `token_budget`, use level='full', or simplify the schema",
            )
        value = result.data if result is not None else None
        self.ask, self.ask_pipeline, self.ask_translation, request = self._next_request(
            response.text, hint, value
        )
        self.kept_changes = (
            _kept(result.changes, self.ask) if self.ask is not None and result is not None else ()
        )
        self._emit("output.reask.attempt", ", ".join(self.ask.fields) if self.ask else "whole")
        return request

    def _next_request(
        self, text: str, hint: RetryHint, value: Any
    ) -> tuple[FieldAsk | None, Pipeline[Any] | None, DialectResult | None, Request]:
        ask = None
        if isinstance(self.fmt, JsonSchemaFormat) and not hint.is_syntax:
            ask = field_ask(self.fmt, self.pipeline.compiled, value, hint)
        if ask is None:
            messages = reask_messages(self.base, text, hint, None)
            return None, None, None, replace(self.template, messages=tuple(messages))
        sub_plan = plan(
            ask.format,
            provider=self.provider,
            model=self.template.model,
            mode=_MODE_FOR_PLAN.get(self.plan.mode, "prompted"),
            thinking=self.template.thinking,
            tools=self.caller_tools,
            streaming=self.template.stream,
        )
        messages = reask_messages(self.base, text, hint, ask, sub_plan.instructions)
        request = replace(self.template, messages=tuple(messages), output=sub_plan.output)
        pipeline = _pipeline(ask.format, sub_plan, self.level, self.parse_options, self.observers)
        return ask, pipeline, sub_plan.translation, request

    def _finish(
        self,
        response: Response,
        result: ParseResult[Any] | None,
        tool_calls: tuple[ToolCall, ...] = (),
    ) -> Generation[Any]:
        if result is not None:
            fields = self.ask.fields if self.ask else ()
            self.attempts.append(
                Attempt(response.text, response.finish_reason, response.usage, fields=fields)
            )
            if len(self.attempts) > 1:
                self._emit("output.reask.success", f"valid after {len(self.attempts)} attempts")
        return Generation(
            value=result.value if result is not None else None,
            data=result.data if result is not None else None,
            text=response.text,
            usage=self.usage,
            attempts=tuple(self.attempts),
            mode=self.plan.mode,
            mode_reason=self.plan.reason,
            response=response,
            tool_calls=tool_calls,
            thinking=self.plan.thinking_note,
            parse=result,
            ledger=self.plan.ledger,
        )

    def _emit(self, name: EventName, detail: str) -> None:
        event = Event(name, "validate", self.pipeline.schema_hash, detail=detail)
        dispatch((event,), self.observers)


def _numbered(changes: Iterable[Change], attempt: int) -> tuple[Change, ...]:
    return tuple(c if c.attempt == attempt else replace(c, attempt=attempt) for c in changes)


def _with_earlier(
    result: ParseResult[Any], earlier: tuple[Change, ...], attempt: int
) -> ParseResult[Any]:
    """`result` of attempt `attempt`, its changes after those of earlier replies."""
    if attempt == 1 and not earlier:
        return result
    return replace(result, changes=earlier + _numbered(result.changes, attempt))


def _kept(changes: Iterable[Change], ask: FieldAsk) -> tuple[Change, ...]:
    """The changes behind the fields a field re-ask keeps: those inside a kept field, and
    those made to the whole reply the kept fields were read from (extraction, repair)."""
    return tuple(c for c in changes if not c.path or pointer.parts(c.path)[0] in ask.kept)


def _pipeline(
    fmt: ResponseFormat,
    call_plan: Plan,
    level: str | None,
    options: Mapping[str, Any],
    observers: tuple[Observer, ...],
) -> Pipeline[Any]:
    processors: list[Processor] = []
    translation = call_plan.translation
    if translation is not None:
        processors.append(Processor("after_decode", translation.reverse, "dialect_reverse"))
    return Pipeline(fmt, level=level, processors=processors, observers=observers, **options)


def _loop(
    resolved: Resolved,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any,
    *,
    mode: Mode,
    retries: int,
    token_budget: int | None,
    level: str | None,
    tools: Sequence[Tool],
    tool_choice: ToolChoice | None,
    thinking: Thinking | None,
    temperature: float | None,
    max_tokens: int | None,
    stop: Sequence[str],
    extra: Mapping[str, Any] | None,
    observers: Iterable[Observer],
    parse_options: Mapping[str, Any],
    streaming: bool = False,
) -> _Loop:
    if retries < 0:
        raise UsageError("retries must be 0 or more", where="retries")
    fmt = _as_format(output)
    spec = resolved.spec
    call_plan = plan(
        fmt,
        provider=spec.profile_name,
        model=resolved.model,
        mode=mode,
        thinking=thinking,
        tools=bool(tools),
        streaming=streaming,
    )
    base = [
        as_message(m)
        for m in (
            [{"role": "user", "content": messages}] if isinstance(messages, str) else messages
        )
    ]
    if not base:
        raise UsageError("generate() needs at least one message", where="messages")
    base = with_instructions(base, call_plan.instructions)
    template = Request(
        model=resolved.model,
        messages=(),
        output=call_plan.output,
        tools=tuple(tools),
        tool_choice=tool_choice,
        thinking=call_plan.thinking,
        temperature=temperature,
        max_tokens=max_tokens,
        stop=tuple(stop),
        stream=streaming,
        extra=dict(extra or {}),
    )
    observer_tuple = tuple(observers)
    return _Loop(
        fmt=fmt,
        plan=call_plan,
        provider=spec.profile_name,
        base=base,
        template=template,
        pipeline=_pipeline(fmt, call_plan, level, parse_options, observer_tuple),
        retries=retries,
        token_budget=token_budget,
        level=level,
        parse_options=parse_options,
        caller_tools=bool(tools),
        observers=observer_tuple,
    )


def _as_format(output: Any) -> ResponseFormat:
    if output is None:
        return TextFormat()
    if isinstance(output, ResponseFormat):
        return output
    if isinstance(output, Mapping):
        return ResponseFormat.json_schema(output)
    return ResponseFormat.of(output)


# -- drivers -------------------------------------------------------------------------------

_default_transport: Transport | None = None


def _shared_transport() -> Transport:
    """One pooled client for every call that does not bring its own."""
    global _default_transport  # noqa: PLW0603 - a lazily created process-wide pool
    if _default_transport is None:
        _default_transport = Transport()
    return _default_transport


@overload
def generate(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: type[T],
    **kwargs: Any,
) -> Generation[T]: ...


@overload
def generate(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: ResponseFormat | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> Generation[Any]: ...


def generate(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    mode: Mode = "auto",
    retries: int = 2,
    token_budget: int | None = None,
    level: str | None = None,
    tools: Sequence[Tool] = (),
    tool_choice: ToolChoice | None = None,
    thinking: Thinking | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    transport: Transport | None = None,
    observers: Iterable[Observer] = (),
    **parse_options: Any,
) -> Generation[Any]:
    """Ask `model` ("provider:name") and return a value of `output` (a type, a JSON Schema
    dict or a ResponseFormat; None for free text), re-asking with a precise hint when the
    reply does not validate. See docs/generate.md."""
    resolved = resolve(model, base_url=base_url, api_key=api_key)
    loop = _loop(
        resolved,
        messages,
        output,
        mode=mode,
        retries=retries,
        token_budget=token_budget,
        level=level,
        tools=tools,
        tool_choice=tool_choice,
        thinking=thinking,
        temperature=temperature,
        max_tokens=max_tokens,
        stop=stop,
        extra=extra,
        observers=observers,
        parse_options=parse_options,
    )
    sender = transport or _shared_transport()
    request = loop.first()
    while True:
        body = sender.send(resolved.endpoint, resolved.adapter.build(request))
        outcome = loop.step(resolved.adapter.parse(request, body))
        if isinstance(outcome, Generation):
            return outcome
        request = outcome


async def agenerate(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    mode: Mode = "auto",
    retries: int = 2,
    token_budget: int | None = None,
    level: str | None = None,
    tools: Sequence[Tool] = (),
    tool_choice: ToolChoice | None = None,
    thinking: Thinking | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    transport: AsyncTransport | None = None,
    observers: Iterable[Observer] = (),
    **parse_options: Any,
) -> Generation[Any]:
    """generate(), on asyncio/anyio."""
    resolved = resolve(model, base_url=base_url, api_key=api_key)
    loop = _loop(
        resolved,
        messages,
        output,
        mode=mode,
        retries=retries,
        token_budget=token_budget,
        level=level,
        tools=tools,
        tool_choice=tool_choice,
        thinking=thinking,
        temperature=temperature,
        max_tokens=max_tokens,
        stop=stop,
        extra=extra,
        observers=observers,
        parse_options=parse_options,
    )
    own = transport is None
    sender = transport or AsyncTransport()
    try:
        request = loop.first()
        while True:
            body = await sender.send(resolved.endpoint, resolved.adapter.build(request))
            outcome = loop.step(resolved.adapter.parse(request, body))
            if isinstance(outcome, Generation):
                return outcome
            request = outcome
    finally:
        if own:
            await sender.aclose()


# -- streaming -----------------------------------------------------------------------------


class Stream(Generic[T]):
    """Snapshots of a streamed generate(): iterate (or `async for`) over them; the last one is
    the validated value, and `generation` then holds the usage, attempts and mode."""

    def __init__(self, source: Callable[[Stream[T]], Any]) -> None:
        self._source = source
        self.generation: Generation[T] | None = None

    def __iter__(self) -> Iterator[Snapshot[T]]:
        iterator: Iterator[Snapshot[T]] = self._source(self)
        return iterator

    def __aiter__(self) -> AsyncIterator[Snapshot[T]]:
        iterator: AsyncIterator[Snapshot[T]] = self._source(self)
        return iterator


def _parser(loop: _Loop, every: int) -> StreamParser[Any]:
    return StreamParser(pipeline=loop.current_pipeline, wire=loop.current_translation, every=every)


class _Attempt:
    """The snapshots of one call as the caller sees them: numbered with the attempt they belong
    to (`first` on the first of each), and, for a re-ask of some fields, the fields kept from
    the last reply shown with the partial answer, typed as the caller's output."""

    def __init__(self, loop: _Loop) -> None:
        self.number = len(loop.attempts) + 1
        self.ask = loop.ask
        fmt = loop.fmt
        output_type = fmt.output_type if isinstance(fmt, JsonSchemaFormat) else None
        self.build = typed_builder(output_type) if self.ask is not None else None
        self.first = True

    def __call__(self, snapshots: Iterable[Snapshot[Any]]) -> list[Snapshot[Any]]:
        shown: list[Snapshot[Any]] = []
        for snapshot in snapshots:
            data = snapshot.data
            if self.ask is not None and isinstance(data, Mapping):
                data = self.ask.merge(data)
            shown.append(
                snapshot.in_attempt(
                    attempt=self.number, first=self.first, data=data, build=self.build
                )
            )
            self.first = False
        return shown

    def final(self, owner: Stream[Any], outcome: Generation[Any]) -> list[Snapshot[Any]]:
        owner.generation = outcome
        if outcome.parse is None:
            return []
        last = Snapshot(
            outcome.parse.data,
            len(outcome.text),
            complete=True,
            result=outcome.parse,
            attempt=self.number,
            first=self.first,
        )
        return [last]


def _route(
    deltas: Iterable[Delta], parser: StreamParser[Any], parts: Assembler
) -> list[Snapshot[Any]]:
    """Text deltas to the stream parser (snapshots out), everything else to the assembler."""
    snapshots: list[Snapshot[Any]] = []
    for delta in deltas:
        if delta.kind == "text":
            snapshots += parser.feed(delta.text)
        else:
            parts.add(delta)
    return snapshots


def stream(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    every: int = 0,
    mode: Mode = "auto",
    retries: int = 2,
    token_budget: int | None = None,
    level: str | None = None,
    tools: Sequence[Tool] = (),
    tool_choice: ToolChoice | None = None,
    thinking: Thinking | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    transport: Transport | None = None,
    observers: Iterable[Observer] = (),
    **parse_options: Any,
) -> Stream[Any]:
    """generate(), streamed: typed snapshots while the reply arrives, the validated value last.
    A reply that can no longer become valid is cut off at once and asked for again.
    `every`: characters to gather between snapshots (0: every chunk). See docs/streaming.md."""
    resolved = resolve(model, base_url=base_url, api_key=api_key)
    loop = _loop(
        resolved,
        messages,
        output,
        mode=mode,
        retries=retries,
        token_budget=token_budget,
        level=level,
        tools=tools,
        tool_choice=tool_choice,
        thinking=thinking,
        temperature=temperature,
        max_tokens=max_tokens,
        stop=stop,
        extra=extra,
        observers=observers,
        parse_options=parse_options,
        streaming=True,
    )
    sender = transport or _shared_transport()

    def drive(owner: Stream[Any]) -> Iterator[Snapshot[Any]]:
        request = loop.first()
        while True:
            parser, parts, shown = _parser(loop, every), Assembler(), _Attempt(loop)
            decoder = resolved.adapter.decoder(request)
            events = sender.stream(resolved.endpoint, resolved.adapter.build(request))
            try:
                with contextlib.closing(events):  # leaving early closes the provider's stream
                    for event in events:
                        yield from shown(_route(decoder.feed(event), parser, parts))
                        if parser.stopped:
                            break
                yield from shown(parser.flush())
                outcome = loop.step(parts.response(parser.text, model=resolved.model))
            except StreamAbortedError as aborted:
                outcome = loop.abort(parts.response(aborted.text), aborted)
            if isinstance(outcome, Generation):
                yield from shown.final(owner, outcome)
                return
            request = outcome

    return Stream(drive)


def astream(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    every: int = 0,
    mode: Mode = "auto",
    retries: int = 2,
    token_budget: int | None = None,
    level: str | None = None,
    tools: Sequence[Tool] = (),
    tool_choice: ToolChoice | None = None,
    thinking: Thinking | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    stop: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    transport: AsyncTransport | None = None,
    observers: Iterable[Observer] = (),
    **parse_options: Any,
) -> Stream[Any]:
    """stream(), for `async for`."""
    resolved = resolve(model, base_url=base_url, api_key=api_key)
    loop = _loop(
        resolved,
        messages,
        output,
        mode=mode,
        retries=retries,
        token_budget=token_budget,
        level=level,
        tools=tools,
        tool_choice=tool_choice,
        thinking=thinking,
        temperature=temperature,
        max_tokens=max_tokens,
        stop=stop,
        extra=extra,
        observers=observers,
        parse_options=parse_options,
        streaming=True,
    )

    async def drive(owner: Stream[Any]) -> AsyncIterator[Snapshot[Any]]:
        own = transport is None
        sender = transport or AsyncTransport()
        try:
            request = loop.first()
            while True:
                parser, parts, shown = _parser(loop, every), Assembler(), _Attempt(loop)
                decoder = resolved.adapter.decoder(request)
                events = sender.stream(resolved.endpoint, resolved.adapter.build(request))
                try:
                    async with contextlib.aclosing(events):
                        async for event in events:
                            for snapshot in shown(_route(decoder.feed(event), parser, parts)):
                                yield snapshot
                            if parser.stopped:
                                break
                    for snapshot in shown(parser.flush()):
                        yield snapshot
                    outcome = loop.step(parts.response(parser.text, model=resolved.model))
                except StreamAbortedError as aborted:
                    outcome = loop.abort(parts.response(aborted.text), aborted)
                if isinstance(outcome, Generation):
                    for snapshot in shown.final(owner, outcome):
                        yield snapshot
                    return
                request = outcome
        finally:
            if own:
                await sender.aclose()

    return Stream(drive)


# -- agents as tools -----------------------------------------------------------------------


@dataclass(frozen=True)
class AgentTool:
    """A sub-call exposed as a tool: the model calls it with arguments, outform runs
    generate() with the tool's result format and returns the validated JSON as the result."""

    tool: Tool
    model: str
    output: ResponseFormat
    instructions: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def _messages(self, call: ToolCall) -> list[Message]:
        messages = [Message.user(call.arguments)]
        if self.instructions:
            messages.insert(0, Message.system(self.instructions))
        return messages

    def __call__(self, call: ToolCall) -> Message:
        result = generate(self.model, self._messages(call), self.output, **self.options)
        return Message.tool_result(call.id, orjson.dumps(result.data).decode(), self.tool.name)

    async def acall(self, call: ToolCall) -> Message:
        result = await agenerate(self.model, self._messages(call), self.output, **self.options)
        return Message.tool_result(call.id, orjson.dumps(result.data).decode(), self.tool.name)


def as_tool(
    name: str,
    *,
    model: str,
    output: Any,
    input: Any = None,
    description: str | None = None,
    instructions: str | None = None,
    **options: Any,
) -> AgentTool:
    """Expose a generate() call as a tool another model can call."""
    from outform.schema.derive import schema_of

    parameters = (
        schema_of(input)
        if input is not None
        else {
            "type": "object",
            "properties": {"request": {"type": "string"}},
            "required": ["request"],
        }
    )
    tool = Tool(name, parameters, description=description)
    return AgentTool(tool, model, _as_format(output), instructions, options)


__all__ = [
    "AgentTool",
    "Attempt",
    "Generation",
    "GenerationError",
    "RefusalError",
    "Stream",
    "agenerate",
    "as_tool",
    "astream",
    "generate",
    "stream",
]
