"""generate() / agenerate(): a validated value from any provider.

The loop is written once, without I/O (`_Loop`): it turns the caller's arguments into a
neutral `Request`, and each neutral `Response` into either the result or the next request (a
re-ask). The sync and async drivers only move those through an adapter and a transport, so
both behave identically.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast, overload

import orjson

from outform import arguments
from outform.errors import (
    GenerationError,
    OutformError,
    OutputError,
    RefusalError,
    StreamAbortedError,
    UsageError,
    sealed,
)
from outform.format import JsonSchemaFormat, ResponseFormat, TextFormat
from outform.jsontext import dumps_text
from outform.parse.hint import CUT, RetryHint, Violation, clip, preview
from outform.parse.incremental import DEFAULT_DEGENERATION, Degeneration
from outform.parse.pipeline import Pipeline
from outform.parse.result import Change, ParseResult
from outform.plan import Mode, Plan, plan
from outform.profile import active, alabelled, labelled, step
from outform.providers.assemble import Assembler
from outform.providers.base import (
    Delta,
    FinishReason,
    ForcedTool,
    Message,
    Output,
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
    FieldAsk,
    complete_at_cut,
    cut_off,
    field_ask,
    reask_messages,
    refusal_of,
    with_instructions,
)
from outform.schema import pointer
from outform.schema.dialects.result import DialectResult
from outform.schema.ledger import Ledger
from outform.streaming import Snapshot, StreamParser, typed_builder
from outform.trace import redact
from outform.trace.caller import Labels
from outform.trace.events import (
    Event,
    FormatChoice,
    Observer,
    Reask,
    RunOutcomeName,
    StreamAbort,
    Validation,
)
from outform.trace.tracer import RunTrace, elapsed_ms
from outform.transport import AsyncTransport, CallStats, Endpoint, Transport, hide_secrets

T = TypeVar("T")

_MODE_FOR_PLAN: dict[str, Mode] = {
    "native_schema": "native",
    "forced_tool": "tool",
    "json_object": "json",
    "instructions": "prompted",
    "unconstrained": "off",
}

MAX_RETRIES = 10
"""The most re-asks a call may allow (`retries`, `[defaults] retries`, `--retries`)."""


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
    precheck: Any = None
    """With a precheck: its outcome before this attempt (`outform.agent.PrecheckOutcome`)."""


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
    profile: str | None = None
    """The `[profiles.NAME]` the call ran under."""


# -- the loop, without I/O -----------------------------------------------------------------

_CHARS_PER_TOKEN = 4
"""For a reply without usage: a token estimated as this many characters (English text with
common tokenizers; JSON and many languages take more tokens per character, so there the
estimate is low, and a budget stops a call or so late)."""


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
    trace: RunTrace
    """The run's events (docs/observability.md): what each step below records."""
    text_fallback: bool = True
    """Keep a reply that ignored the format as text, for output types that allow it."""
    profile: str | None = None
    given: list[Message] = field(default_factory=list)
    """The caller's messages, before outform's instructions and the context join them."""
    context: Mapping[str, Any] | None = None
    gate: Any = None
    """The precheck (`outform.agent.precheck.Gate`), when one is on."""
    checked: Any = None
    """The precheck outcome of the attempt in flight."""
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    spent: int = 0
    """Tokens counted against `token_budget`: the providers' usage, estimated for a reply
    that came without one (see `_cost`)."""
    ask: FieldAsk | None = None
    ask_pipeline: Pipeline[Any] | None = None
    ask_translation: DialectResult | None = None
    kept_changes: tuple[Change, ...] = ()
    """During a field re-ask: the changes of earlier replies behind the fields it keeps."""
    output: Output | None = None
    """What the request in flight asks for on the wire (a field re-ask's own forced tool)."""
    endpoint: Endpoint | None = None
    """Where the call goes, with its key: what an error must not show of a reply echoing it."""
    reply: str = ""
    """The text of the last reply read."""
    echoed: bool = False
    """Whether a reply recorded as an attempt showed a secret (`_hide` masked one)."""

    def first(self) -> Request:
        self.output = self.template.output
        return replace(self.template, messages=tuple(self.base))

    def gated(self, request: Request) -> Request:
        """After the precheck of an attempt: its cost counted, its outcome kept for the
        attempt, and the attempt's own context (feedback included) in the conversation."""
        outcome = self.gate.outcomes[-1]
        self.checked = outcome
        self.usage = self.usage + outcome.usage
        self.spent += outcome.usage.total_tokens
        context = self.gate.context
        if not context and not self.context:
            return request
        base = with_instructions(self.given, _joined(self.plan.instructions, context))
        return replace(request, messages=(*base, *request.messages[len(self.base) :]))

    @property
    def current_pipeline(self) -> Pipeline[Any]:
        """The pipeline the next reply is parsed with (a field re-ask has its own)."""
        return self.ask_pipeline or self.pipeline

    @property
    def current_translation(self) -> DialectResult | None:
        """The dialect translation the provider enforces for the next reply."""
        return self.ask_translation if self.ask is not None else self.plan.translation

    def abort(self, response: Response, aborted: StreamAbortedError) -> Request | Generation[Any]:
        """A streamed reply stopped early: record it and ask again (or give up)."""
        self.reply = response.text
        self.usage = self.usage + response.usage
        self.spent += self._cost(response)
        self.trace.emit("stream.abort", data=StreamAbort(aborted.offset, aborted.reason))
        return self._retry(response, aborted.hint, None, aborted_at=aborted.offset)

    def called(
        self,
        stats: CallStats,
        sent: float,
        response: Response | None = None,
        *,
        error: BaseException | None = None,
        first_text: float | None = None,
    ) -> None:
        """Record one exchange with the provider: `sent` when the call began (the transport's
        `stats` say when its last attempt went out), `first_text` when a stream's first text
        arrived."""
        began = stats.sent_at or sent
        status = stats.status if stats.status is not None else getattr(error, "status", None)
        self.trace.call(
            elapsed_ms(began),
            status=status,
            retries=stats.retries,
            ttft_ms=None if first_text is None else elapsed_ms(began, first_text),
            tokens=response.usage if response is not None else None,
            finish_reason=response.finish_reason if response is not None else None,
            error=error,
        )

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Around a driver: an exception that did not end the run ends it as an error; and an
        error of outform's leaves it showing none of the call's credentials, which a model may
        echo: not in its message, hint, attempts or partial result, nor anywhere in its chain
        (`errors.sealed`)."""
        with self.trace.recording(lambda: self.usage):
            try:
                yield
            except OutformError as error:
                # What an error carries comes from the replies: when none showed a secret,
                # there is none to mask (and a large reply's result is not walked for it).
                if self.echoed or self._hide(self.reply) is not self.reply:
                    sealed(error, self._hide)
                raise

    def start(self) -> None:
        """The run begins: `run.start`, and how the format is enforced."""
        self.trace.start()
        format_event(self.trace, self.plan)

    def _cost(self, response: Response) -> int:
        """The tokens of one call: the provider's count, or, when it reported none (many
        compatible servers, streams without usage), an estimate of 4 characters a token of
        the conversation sent (the messages, and the reply and hint a re-ask adds) and of
        the reply, so that a token budget holds there too."""
        if response.usage.total_tokens:
            return response.usage.total_tokens
        sent = sum(len(m.text) for m in self.base)
        if self.attempts:
            last = self.attempts[-1]
            sent += len(last.text) + (len(last.hint.message()) if last.hint is not None else 0)
        return -(-(sent + len(response.text)) // _CHARS_PER_TOKEN)

    def step(self, response: Response) -> Request | Generation[Any]:
        self.reply = response.text
        self.usage = self.usage + response.usage
        self.spent += self._cost(response)
        refusal = refusal_of(response)
        if refusal is not None:
            # A reply stopped by a refusal or a content filter is never the value, whatever
            # text came before the stop (it may be the start of an answer cut short).
            self.attempts.append(
                Attempt(
                    self._hide(response.text),
                    response.finish_reason,
                    response.usage,
                    precheck=self._checked(),
                )
            )
            self._end("refused")
            raise RefusalError(self._hide(refusal), attempts=tuple(self.attempts), usage=self.usage)
        if response.tool_calls and self.caller_tools and not response.text.strip():
            self.attempts.append(
                Attempt("", response.finish_reason, response.usage, precheck=self._checked())
            )
            return self._finish(response, None, tool_calls=response.tool_calls)
        stray = self._stray_calls(response)
        if stray is not None:
            return self._retry(response, stray, None)
        try:
            result = self._parse(response)
        except OutputError as error:
            return self._retry(response, error.hint, error.result)
        return self._finish(response, result)

    def _stray_calls(self, response: Response) -> RetryHint | None:
        """The hint for a reply that is only calls of tools the request did not offer (it gave
        no tools; or, in tool mode, the model called another tool than the output tool), or
        None. Its text is empty, yet it is no empty reply: the model is told, and then the
        caller, what came back, rather than "the reply is empty"."""
        if not response.tool_calls or self.caller_tools or response.text.strip():
            return None
        names = list(dict.fromkeys(call.name for call in response.tool_calls))
        quoted = ", ".join(repr(clip(name, 60)) for name in names)
        calls = f"a call of tool {quoted}" if len(names) == 1 else f"calls of tools {quoted}"
        output = self.output
        if isinstance(output, ForcedTool):
            found = (
                f"the reply is {calls}, not of the output tool {output.name!r} (the request "
                "offered no other tool)"
            )
        else:
            found = f"the reply is {calls}, and the request offered no tools"
        expected = "a text reply" if isinstance(self.fmt, TextFormat) else _ONE_VALUE
        return RetryHint((Violation("", "syntax", expected, found, _STRAY_CALL),))

    def _parse(self, response: Response) -> ParseResult[Any]:
        """The reply's value, with every change that contributed to it: for a field re-ask,
        those behind the fields kept from earlier replies, then the answer's, each numbered
        with its attempt (an OutputError's result carries them too)."""
        number = len(self.attempts) + 1
        unended = response.finish_reason != "length" and not response.end_stated
        cut = response.finish_reason == "length" or unended
        try:
            result, read = self._parsed(response, number)
        except OutputError as error:
            if not cut:
                raise
            # What is missing or wrong at the cut is the cut's doing: the model is told so.
            hint = cut_off(response.text, error.hint, unended=unended)
            raise OutputError("the reply was cut off", hint=hint, result=error.result) from error
        own = [c for c in result.changes if c.attempt == number]  # this reply's
        if cut and not complete_at_cut(response.text, read.data, own):
            hint = cut_off(response.text, unended=unended)
            raise OutputError("the reply was cut off", hint=hint, result=result)
        return result

    def _parsed(self, response: Response, number: int) -> tuple[ParseResult[Any], ParseResult[Any]]:
        """`_parse` before the cut is judged: the value and its changes, this reply's numbered
        `number`; and what was read of this reply's text (for a field re-ask, the answer, else
        the value itself)."""
        try:
            if self.ask is not None and self.ask_pipeline is not None:
                ask, earlier = self.ask, self.kept_changes
                try:
                    answer = self._run(self.ask_pipeline, response.text)
                except OutputError as error:
                    if error.result is not None and isinstance(error.result.data, dict):
                        # The fields kept stay part of the value a next re-ask starts from.
                        merged = ask.merge(error.result.data)
                        error.result = replace(error.result, value=merged, _data=merged)
                    raise
                earlier += _numbered(_repeats_left_out(answer.changes, ask), number)
                result = self._run(self.pipeline, dumps_text(ask.merge(answer.data)))
            else:
                earlier = ()
                result = answer = self._run(self.pipeline, response.text)
        except OutputError as error:
            if error.result is not None:
                error.result = _with_earlier(error.result, earlier, number)
            raise
        return _with_earlier(result, earlier, number), answer

    def _run(self, pipeline: Pipeline[Any], text: str) -> ParseResult[Any]:
        """Parse with a pipeline of this run; its events go out as this run's."""
        try:
            result = pipeline.run(text, record=False)
        except OutputError as error:
            if error.result is not None:
                self.trace.forward(error.result.events)
            raise
        self.trace.forward(result.events)
        return result

    def _retry(
        self,
        response: Response,
        hint: RetryHint,
        result: ParseResult[Any] | None,
        aborted_at: int | None = None,
    ) -> Request | Generation[Any]:
        shown = hint.rewritten(self._hide)  # the record's and the error's; the re-ask's is `hint`
        self.attempts.append(
            Attempt(
                self._hide(response.text),
                response.finish_reason,
                response.usage,
                shown,
                self.ask.fields if self.ask else (),
                aborted_at,
                self._checked(),
            )
        )
        over_budget = self.token_budget is not None and self.spent >= self.token_budget
        self.trace.validation_failed(hint.violations)
        reason = reask_reason(hint, aborted_at)
        if len(self.attempts) > self.retries or over_budget:
            why = (
                f"the token budget ({self.token_budget}) is spent"
                if over_budget
                else f"{len(self.attempts)} attempt(s) failed"
            )
            kept = self._text_fallback(response, hint, aborted_at)
            if kept is not None:
                return kept
            asked = self.ask.fields if self.ask else ()
            self.trace.emit("output.reask.fail", detail=why, data=reask_record(reason, asked, hint))
            self._end("invalid")
            raise GenerationError(
                f"no valid reply: {why}",
                hint=shown,
                attempts=tuple(self.attempts),
                usage=self.usage,
                result=result,
                fix=self._advice(hint, response),
            ) from None  # (the reply's error, summarised here: its hint, result and attempts)
        value = result.data if result is not None else None
        self.ask, self.ask_pipeline, self.ask_translation, request = self._next_request(
            response.text, hint, value
        )
        self.output = request.output
        self.kept_changes = (
            _kept(result.changes, self.ask) if self.ask is not None and result is not None else ()
        )
        fields = self.ask.fields if self.ask else ()
        self.trace.emit("output.reask.attempt", data=reask_record(reason, fields, hint))
        self.trace.attempt = len(self.attempts) + 1
        return request

    def _advice(self, hint: RetryHint, response: Response) -> str:
        """What to change once no attempt is left (the GenerationError's fix), as true of this
        call: a reply cut off wants room, not repair; and at level full repair is on."""
        if any(v.keyword == _STRAY_CALL for v in hint.violations):
            fix = _STRAY_FIX
        elif hint.is_cut and response.finish_reason == "length":
            fix = (
                "the reply was cut off at the token limit: raise `max_tokens`, or ask for a "
                "shorter value (fewer items, shorter texts)"
            )
        elif hint.is_cut:
            fix = (
                "the reply stream stopped without a stop reason (a proxy or the network may "
                "have cut it): raise `retries`, or call without streaming"
            )
        elif self.pipeline.options.level == "full":
            fix = (
                "raise `retries` or `token_budget`, simplify the schema, or try another mode "
                "or model (level 'full', the most tolerant, is in use)"
            )
        else:
            fix = "raise `retries` or `token_budget`, use level='full', or simplify the schema"
        return fix

    def _hide(self, text: str) -> str:
        """`text` (a reply, or what an error says of it) without the call's credentials, which
        a model may echo: the key outform sent, and every secret outform knows, masked as the
        transport masks them in a provider's error. A text without one is kept as it is."""
        hidden = hide_secrets(text, self.endpoint)
        if _masks(hidden) > _masks(text):
            self.echoed = True
            return hidden
        return text

    def _text_fallback(
        self, response: Response, hint: RetryHint, aborted_at: int | None
    ) -> Generation[Any] | None:
        """The last reply ignored the format (no JSON in it at all) and the output type keeps
        such a reply as text (`outform_from_text`, as the envelope does): the reply becomes the
        value, recorded as a change and an event, instead of a GenerationError. A streamed
        reply cut short is not complete text, and is never kept."""
        build = getattr(self.fmt, "output_type", None)
        build = getattr(build, "outform_from_text", None)
        text = response.text
        if not self.text_fallback or build is None or aborted_at is not None:
            return None
        if not _no_value(hint) or not text.strip() or self.ask is not None:
            return None
        value = build(text)
        data = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
        detail = f"the reply held no JSON value after {len(self.attempts)} attempt(s)"
        event = Event("output.fallback.text", "fallback", self.pipeline.schema_hash, detail=detail)
        change = Change("", "fallback", "text_fallback", clip(text), preview(data), detail)
        result: ParseResult[Any] = ParseResult(
            value=value,
            text=text,
            changes=(change,),
            events=(event,),
            schema_hash=self.pipeline.schema_hash,
            level=self.pipeline.options.level,
            _data=data,
        )
        self.trace.forward(result.events)
        return self._finish(response, result, recorded=True)

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
        pipeline = _pipeline(ask.format, sub_plan, self.level, self.parse_options)
        return ask, pipeline, sub_plan.translation, request

    def _finish(
        self,
        response: Response,
        result: ParseResult[Any] | None,
        tool_calls: tuple[ToolCall, ...] = (),
        *,
        recorded: bool = False,
    ) -> Generation[Any]:
        if result is not None and not recorded:
            fields = self.ask.fields if self.ask else ()
            self.attempts.append(
                Attempt(
                    response.text,
                    response.finish_reason,
                    response.usage,
                    fields=fields,
                    precheck=self._checked(),
                )
            )
            self.trace.changes(result.changes)
            if len(self.attempts) > 1:
                previous = self.attempts[-2]
                asked = reask_record(reask_reason(previous.hint, previous.aborted_at), fields, None)
                detail = f"valid after {len(self.attempts)} attempts"
                self.trace.emit("output.reask.success", detail=detail, data=asked)
        elif result is not None:  # the text fallback: its attempt is kept as a failed one
            self.trace.changes(result.changes)
        if self.gate is not None:
            self.gate.merge()
        self._end(
            "valid" if result is not None else "tool_calls",
            changes=len(result.changes) if result is not None else 0,
            value=result.data if result is not None else None,
        )
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
            profile=self.profile,
        )

    def _checked(self) -> Any:
        checked, self.checked = self.checked, None
        return checked

    def _end(self, outcome: RunOutcomeName, *, changes: int = 0, value: Any = None) -> None:
        self.trace.end(outcome, changes=changes, tokens=self.usage, value=value)


def _masks(text: str) -> int:
    """How many secrets `text` shows masked (`hide_secrets` masks the call's key as `***`, other
    secrets as `[redacted]`)."""
    return text.count("***") + text.count(redact.REDACTED)


def _no_value(hint: RetryHint) -> bool:
    """Whether no JSON value could be read from the reply: a syntax violation but the cut's
    (a reply cut off in its JSON holds a value, however short)."""
    return any(v.kind == "syntax" and v.keyword != CUT for v in hint.violations)


_ONE_VALUE = "a single JSON value matching the schema"
_STRAY_CALL = "tool_call"
"""The keyword of the violation of a reply that is only calls of tools nobody offered."""
_STRAY_FIX = (
    "the model called a tool the request did not offer (some models, and some servers' chat "
    "templates, call tools on their own): ask again (raise `retries`), or try another mode or "
    "model; to receive such calls, give the tool (`tools=` of generate(); its calls come back "
    "in Generation.tool_calls)"
)


def reask_reason(hint: RetryHint | None, aborted_at: int | None) -> str:
    """Why a reply is asked for again: `stream_aborted`, `cut_off`, `syntax` or `schema`."""
    if aborted_at is not None:
        return "stream_aborted"
    if hint is not None and hint.is_cut:
        return "cut_off"
    return "syntax" if hint is not None and hint.is_syntax else "schema"


def reask_record(reason: str, fields: tuple[str, ...], hint: RetryHint | None) -> Reask:
    """What was asked again: the fields (top-level names) as JSON pointers."""
    violations = Validation.of(hint.violations).violations if hint is not None else ()
    return Reask(reason, tuple(pointer.join("", name) for name in fields), violations)


def format_event(trace: RunTrace, call_plan: Plan) -> None:
    """`format.native` when the provider is asked to hold the reply to the schema (a native
    schema mode or a forced tool), else `format.skipped` with the reason; nothing for free
    text, where there is no format to enforce."""
    if call_plan.mode == "text":
        return
    choice = call_plan.choice
    if call_plan.mode in ("native_schema", "forced_tool"):
        data = FormatChoice(
            call_plan.mode,
            dialect=choice.dialect if choice is not None else None,
            enforced=call_plan.enforced,
        )
        trace.emit("format.native", data=data)
        return
    passed = dict(choice.skipped) if choice is not None else {}
    reason = passed.get("native_schema") or call_plan.reason
    trace.emit("format.skipped", data=FormatChoice(call_plan.mode, reason=reason))


def _numbered(changes: Iterable[Change], attempt: int) -> tuple[Change, ...]:
    return tuple(c if c.attempt == attempt else replace(c, attempt=attempt) for c in changes)


def _with_earlier(
    result: ParseResult[Any], earlier: tuple[Change, ...], attempt: int
) -> ParseResult[Any]:
    """`result` of attempt `attempt`, its changes after those of earlier replies."""
    if attempt == 1 and not earlier:
        return result
    return replace(result, changes=earlier + _numbered(result.changes, attempt))


def _repeats_left_out(changes: Iterable[Change], ask: FieldAsk) -> tuple[Change, ...]:
    """The changes of a field re-ask's answer, but for a field the ask keeps that the answer
    wrote again with the same value (a model sending the whole object back): dropping it from
    the answer changes nothing of the value returned, which holds that very value."""
    return tuple(
        c
        for c in changes
        if not (
            c.transform == "drop_unexpected_key"
            and len(pointer.parts(c.path)) == 1
            and pointer.parts(c.path)[0] in ask.kept
            and c.before == ask.kept[pointer.parts(c.path)[0]]
        )
    )


def _kept(changes: Iterable[Change], ask: FieldAsk) -> tuple[Change, ...]:
    """The changes behind the fields a field re-ask keeps: those inside a kept field, and
    those made to the whole reply the kept fields were read from (extraction, repair)."""
    return tuple(c for c in changes if not c.path or pointer.parts(c.path)[0] in ask.kept)


def _pipeline(
    fmt: ResponseFormat,
    call_plan: Plan,
    level: str | None,
    options: Mapping[str, Any],
) -> Pipeline[Any]:
    """A pipeline of one call: its events go out through the run (`_Loop._run`). The
    dialect's reverse step is given only when the translation reshapes values (a
    wrapped root, a map as pairs, an absent key sent as null...): it takes the pipeline off
    its fast path, which a reply valid as sent should keep."""
    translation = call_plan.translation
    reverse = translation.reverse if translation is not None and translation.reshapes else None
    return Pipeline(fmt, level=level, reverse=reverse, **options)


def _joined(instructions: str | None, context: Mapping[str, Any] | None) -> str | None:
    """outform's instructions and the call's context, as one system text."""
    if not context:
        return instructions
    block = "Context (JSON):\n" + orjson.dumps(dict(context), default=str).decode()
    return f"{instructions}\n\n{block}" if instructions else block


def _loop(
    resolved: Resolved,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any,
    *,
    mode: Mode | None,
    retries: int | None,
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
    labels: Labels | Mapping[str, Any] | None,
    text_fallback: bool = True,
    profile: str | None = None,
    context: Mapping[str, Any] | None = None,
    precheck: Any = None,
    streaming: bool = False,
) -> _Loop:
    chosen = step(profile)
    mode = mode if mode is not None else cast(Mode, chosen.mode)
    retries = retries if retries is not None else chosen.retries
    level = level or chosen.level
    parse_options = {**chosen.parse_options(), **parse_options}
    if type(retries) is not int or not 0 <= retries <= MAX_RETRIES:
        raise arguments.refused(
            "retries",
            f"a whole number from 0 to {MAX_RETRIES} (as [defaults] retries)",
            retries,
            fix="each re-ask is a paid call: a reply still invalid after 10 needs another "
            "level, mode or model",
        )
    if temperature is not None and (
        type(temperature) not in (int, float) or not math.isfinite(temperature) or temperature < 0
    ):
        raise arguments.refused("temperature", "a finite number of 0 or more", temperature)
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
    given, base = base, with_instructions(base, _joined(call_plan.instructions, context))
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
    pipeline = _pipeline(fmt, call_plan, level, parse_options)
    trace = RunTrace.begin(
        labels=labels,
        profile=profile,
        provider=spec.name,
        model=resolved.model,
        mode=call_plan.mode,
        mode_reason=call_plan.reason,
        streaming=streaming,
        schema_hash=pipeline.schema_hash,
        observers=tuple(observers),
        start=False,
    )
    gate = None
    if chosen.enabled and precheck is not False:
        from outform.agent.precheck import Gate, resolve

        settings = resolve(precheck, chosen.precheck)
        if settings is not None:
            gate = Gate(settings, fmt, context, trace)
    return _Loop(
        fmt=fmt,
        plan=call_plan,
        provider=spec.profile_name,
        base=base,
        template=template,
        pipeline=pipeline,
        retries=retries,
        token_budget=token_budget,
        level=level,
        parse_options=parse_options,
        caller_tools=bool(tools),
        trace=trace,
        text_fallback=text_fallback,
        profile=profile,
        given=given,
        context=context,
        gate=gate,
        endpoint=resolved.endpoint,
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
    mode: Mode | None = None,
    retries: int | None = None,
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
    labels: Labels | Mapping[str, Any] | None = None,
    text_fallback: bool = True,
    profile: str | None = None,
    context: Mapping[str, Any] | None = None,
    precheck: Any = None,
    **parse_options: Any,
) -> Generation[Any]:
    """Ask `model` ("provider:name") and return a value of `output` (a type, a JSON Schema
    dict or a ResponseFormat; None for free text), re-asking with a precise hint when the
    reply does not validate. `profile`: a `[profiles.NAME]` of outform.toml, whose settings
    apply and whose name is the run's `step` (docs/profiles.md); `labels`: the call's own
    `step`, `agent` and `tags` in the trace (docs/observability.md). See docs/generate.md."""
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
        labels=labels,
        text_fallback=text_fallback,
        profile=profile,
        context=context,
        precheck=precheck,
    )
    sender = transport or _shared_transport()
    ask = _asker(model, base_url, api_key, sender)
    request = loop.first()
    loop.start()
    with active(profile), loop.recording():
        while True:
            if loop.gate is not None:
                request = loop.gated(loop.gate.before(request, ask))
            stats, sent = CallStats(), time.perf_counter()
            wire = resolved.adapter.build(request)
            try:
                body = sender.send(resolved.endpoint, wire, stats=stats)
                response = resolved.adapter.parse(request, body)
            except BaseException as error:
                loop.called(stats, sent, error=error)
                raise
            loop.called(stats, sent, response)
            outcome = loop.step(response)
            if isinstance(outcome, Generation):
                return outcome
            request = outcome


async def agenerate(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    mode: Mode | None = None,
    retries: int | None = None,
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
    labels: Labels | Mapping[str, Any] | None = None,
    text_fallback: bool = True,
    profile: str | None = None,
    context: Mapping[str, Any] | None = None,
    precheck: Any = None,
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
        labels=labels,
        text_fallback=text_fallback,
        profile=profile,
        context=context,
        precheck=precheck,
    )
    own = transport is None
    sender = transport or AsyncTransport()
    try:
        ask = _aasker(model, base_url, api_key, sender)
        request = loop.first()
        loop.start()
        with active(profile), loop.recording():
            while True:
                if loop.gate is not None:
                    request = loop.gated(await loop.gate.abefore(request, ask))
                stats, sent = CallStats(), time.perf_counter()
                wire = resolved.adapter.build(request)
                try:
                    body = await sender.send(resolved.endpoint, wire, stats=stats)
                    response = resolved.adapter.parse(request, body)
                except BaseException as error:
                    loop.called(stats, sent, error=error)
                    raise
                loop.called(stats, sent, response)
                outcome = loop.step(response)
                if isinstance(outcome, Generation):
                    return outcome
                request = outcome
    finally:
        if own:
            await sender.aclose()


def _asker(
    model: str, base_url: str | None, api_key: str | None, transport: Transport
) -> Callable[[str | None, list[Message], Any, int], Generation[Any]]:
    """The precheck's short calls: the call's own model (None) or another, one attempt, no
    precheck of their own. A model of the call's provider goes to the same base URL with the
    same key."""

    def ask(name: str | None, messages: list[Message], output: Any, tokens: int) -> Generation[Any]:
        target, options = _short_call(model, name, base_url, api_key, tokens)
        return generate(target, messages, output, transport=transport, **options)

    return ask


def _aasker(
    model: str, base_url: str | None, api_key: str | None, transport: AsyncTransport
) -> Callable[[str | None, list[Message], Any, int], Awaitable[Generation[Any]]]:
    async def ask(
        name: str | None, messages: list[Message], output: Any, tokens: int
    ) -> Generation[Any]:
        target, options = _short_call(model, name, base_url, api_key, tokens)
        return await agenerate(target, messages, output, transport=transport, **options)

    return ask


def _short_call(
    model: str, name: str | None, base_url: str | None, api_key: str | None, tokens: int
) -> tuple[str, dict[str, Any]]:
    own = name is None or name.split(":", 1)[0] == model.split(":", 1)[0]
    options: dict[str, Any] = {
        "max_tokens": tokens,
        "retries": 0,
        "text_fallback": False,
        "precheck": False,
        "base_url": base_url if own else None,
        "api_key": api_key if own else None,
    }
    return name or model, options


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


def _parser(loop: _Loop, every: int, degeneration: Degeneration | None) -> StreamParser[Any]:
    return StreamParser(
        pipeline=loop.current_pipeline,
        wire=loop.current_translation,
        every=every,
        record=False,
        degeneration=degeneration,
    )


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


class _Exchange:
    """One streamed call as the trace sees it: when it was sent, the transport's stats, when
    the first text arrived."""

    __slots__ = ("first_text", "sent", "stats")

    def __init__(self) -> None:
        self.stats = CallStats()
        self.sent = time.perf_counter()
        self.first_text: float | None = None

    def seen(self, deltas: list[Delta]) -> list[Delta]:
        if self.first_text is None and any(d.kind == "text" and d.text for d in deltas):
            self.first_text = time.perf_counter()
        return deltas

    def record(
        self, loop: _Loop, response: Response | None = None, error: BaseException | None = None
    ) -> None:
        loop.called(self.stats, self.sent, response, error=error, first_text=self.first_text)

    def finished(
        self, loop: _Loop, parts: Assembler, text: str, model: str
    ) -> Request | Generation[Any]:
        """The stream ended: record the call, and take the reply (a result, or a re-ask)."""
        response = parts.response(text, model=model)
        self.record(loop, response)
        return loop.step(response)

    def aborted(
        self, loop: _Loop, parts: Assembler, aborted: StreamAbortedError
    ) -> Request | Generation[Any]:
        """The reply was cut: record the call, and ask again (or give up)."""
        response = parts.response(aborted.text)
        self.record(loop, response)
        return loop.abort(response, aborted)


def stream(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    every: int = 0,
    degeneration: Degeneration | None = DEFAULT_DEGENERATION,
    mode: Mode | None = None,
    retries: int | None = None,
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
    labels: Labels | Mapping[str, Any] | None = None,
    text_fallback: bool = True,
    profile: str | None = None,
    context: Mapping[str, Any] | None = None,
    precheck: Any = None,
    **parse_options: Any,
) -> Stream[Any]:
    """generate(), streamed: typed snapshots while the reply arrives, the validated value last.
    A reply that can no longer become valid is cut off at once and asked for again.
    `every`: characters to gather between snapshots (0: every chunk). `degeneration`: the loop
    guard's limits (`Degeneration(inside=True)` also stops a model looping inside the value;
    None turns the guard off). See docs/streaming.md."""
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
        labels=labels,
        text_fallback=text_fallback,
        profile=profile,
        context=context,
        precheck=precheck,
        streaming=True,
    )
    sender = transport or _shared_transport()

    def drive(owner: Stream[Any]) -> Iterator[Snapshot[Any]]:
        request = loop.first()
        ask = _asker(model, base_url, api_key, sender)
        loop.start()  # when iterated: a stream never read is no run
        with loop.recording():
            while True:
                if loop.gate is not None:
                    request = loop.gated(loop.gate.before(request, ask))
                parser, parts, shown = (
                    _parser(loop, every, degeneration),
                    Assembler(),
                    _Attempt(loop),
                )
                decoder = resolved.adapter.decoder(request)
                call = _Exchange()
                wire = resolved.adapter.build(request)
                events = sender.stream(resolved.endpoint, wire, stats=call.stats)
                try:
                    with contextlib.closing(events):  # leaving early closes the provider's stream
                        for event in events:
                            deltas = call.seen(decoder.feed(event))
                            yield from shown(_route(deltas, parser, parts))
                            if parser.stopped:
                                break
                    yield from shown(parser.flush())
                except StreamAbortedError as aborted:
                    outcome: Request | Generation[Any] = call.aborted(loop, parts, aborted)
                except BaseException as error:
                    call.record(loop, error=error)
                    raise
                else:
                    outcome = call.finished(loop, parts, parser.text, resolved.model)
                if isinstance(outcome, Generation):
                    yield from shown.final(owner, outcome)
                    return
                request = outcome

    return Stream(lambda owner: labelled(drive(owner), profile))


def astream(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    output: Any = None,
    *,
    every: int = 0,
    degeneration: Degeneration | None = DEFAULT_DEGENERATION,
    mode: Mode | None = None,
    retries: int | None = None,
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
    labels: Labels | Mapping[str, Any] | None = None,
    text_fallback: bool = True,
    profile: str | None = None,
    context: Mapping[str, Any] | None = None,
    precheck: Any = None,
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
        labels=labels,
        text_fallback=text_fallback,
        profile=profile,
        context=context,
        precheck=precheck,
        streaming=True,
    )

    async def drive(owner: Stream[Any]) -> AsyncIterator[Snapshot[Any]]:
        own = transport is None
        sender = transport or AsyncTransport()
        try:
            request = loop.first()
            ask = _aasker(model, base_url, api_key, sender)
            loop.start()  # when iterated: a stream never read is no run
            with loop.recording():
                while True:
                    if loop.gate is not None:
                        request = loop.gated(await loop.gate.abefore(request, ask))
                    parser, parts, shown = (
                        _parser(loop, every, degeneration),
                        Assembler(),
                        _Attempt(loop),
                    )
                    decoder = resolved.adapter.decoder(request)
                    call = _Exchange()
                    wire = resolved.adapter.build(request)
                    events = sender.stream(resolved.endpoint, wire, stats=call.stats)
                    try:
                        async with contextlib.aclosing(events):
                            async for event in events:
                                deltas = call.seen(decoder.feed(event))
                                for snapshot in shown(_route(deltas, parser, parts)):
                                    yield snapshot
                                if parser.stopped:
                                    break
                        for snapshot in shown(parser.flush()):
                            yield snapshot
                    except StreamAbortedError as aborted:
                        outcome: Request | Generation[Any] = call.aborted(loop, parts, aborted)
                    except BaseException as error:
                        call.record(loop, error=error)
                        raise
                    else:
                        outcome = call.finished(loop, parts, parser.text, resolved.model)
                    if isinstance(outcome, Generation):
                        for snapshot in shown.final(owner, outcome):
                            yield snapshot
                        return
                    request = outcome
        finally:
            if own:
                await sender.aclose()

    return Stream(lambda owner: alabelled(drive(owner), profile))


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
