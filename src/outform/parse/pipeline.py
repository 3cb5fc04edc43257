"""The output pipeline: reply text in, a value that matches the schema out.

Stages, in order: extract → decode (strict, then tolerant tiers) → unescape → custom
processors → coerce → validate. A reply that is already valid JSON matching the schema takes a
fast path (one orjson call and one validator call) and records nothing (the trace store only
counts it). Everything else goes through the stages, and every change they make is recorded
with its JSON path. (The fast path records one kind of change: defaults the schema declares
for properties the reply left out.)
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Literal, TypeVar, cast, overload

import orjson
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from outform import arguments
from outform.errors import (
    InputError,
    InternalError,
    OutformError,
    OutputError,
    UsageError,
    guarded,
)
from outform.format import (
    JsonObjectFormat,
    JsonSchemaFormat,
    ResponseFormat,
    TextFormat,
)
from outform.parse import (
    allowlist,
    as_read,
    by_name,
    decimals,
    duplicates,
    extract,
    folded,
    ignored,
    loss,
    strictness,
    unescape,
    values,
)
from outform.parse import decode as decoding
from outform.parse import typed as typed_reading
from outform.parse.coerce import Coercer
from outform.parse.context import (
    Deadline,
    Options,
    Run,
    refuse_surrogates,
    too_deep,
    too_long,
)
from outform.parse.defaults import Defaults
from outform.parse.hint import JSON_UNENDED, RetryHint, Violation, clip, preview
from outform.parse.literals import Spellings
from outform.parse.result import FROM_TEXT, Change, ParseResult
from outform.parse.validate import pydantic_violations, violations
from outform.schema import pointer
from outform.schema.canonical import schema_hash
from outform.schema.check import boolean_root
from outform.schema.compiled import CompiledSchema, compile_schema
from outform.schema.derive import adapter_for
from outform.schema.types import ALL_TYPES, accepted_types
from outform.schema.types import choices as enum_choices
from outform.trace import runtime as _trace
from outform.trace.events import EventName, Observer, dispatch
from outform.trace.tracer import record_parse

T = TypeVar("T")

ProcessorPoint = Literal["before_extract", "after_decode", "after_coerce"]
PROCESSOR_POINTS: tuple[ProcessorPoint, ...] = ("before_extract", "after_decode", "after_coerce")


@dataclass(frozen=True, slots=True)
class Processor:
    """A user step inserted at a named point of the chain.

    `before_extract` receives and returns the reply text; `after_decode` and `after_coerce`
    receive and return the JSON value. What a processor changes is recorded as a `custom` change.
    """

    at: ProcessorPoint
    fn: Callable[[Any], Any]
    name: str = ""

    def __post_init__(self) -> None:
        if self.at not in PROCESSOR_POINTS:
            raise UsageError(
                f"unknown processor point {self.at!r}",
                fix=f"use one of: {', '.join(PROCESSOR_POINTS)}",
            )
        if not callable(self.fn):
            raise arguments.refused("Processor fn", "a function", self.fn)
        arguments.text("Processor name", self.name)

    @property
    def label(self) -> str:
        return self.name or getattr(self.fn, "__name__", "processor")


@dataclass(slots=True)
class _Attempt:
    """One candidate carried through decode → validate.

    `valid` is the validator's verdict (`is_valid`, as cheap as the value is large). The
    reasons an invalid value fails are collected only for the attempt that is reported (see
    `Pipeline._reasons`): jsonschema-rs copies the value at each error's location into the
    error, so a full collection costs the number of errors times the size of the value, and
    paying it for every candidate multiplied that by the candidates."""

    candidate: extract.Candidate
    value: Any
    run: Run
    valid: bool
    blocked: list[tuple[str, str]]
    """Conversions the coercer refused, (path, reason): told beside the violations there."""
    violations: tuple[Violation, ...] = ()
    """The typed output's own checks failing on a schema-valid value (Pydantic validators)."""
    typed: Any = None


_TEXT_STAGE_PREVIEW = 48
_MAX_UNMATCHED_FOR_REPAIR = 256
"""Unmatched brackets beyond which the json-repair tier is skipped (see _attempts)."""


class Pipeline(Generic[T]):
    """A compiled pipeline for one output format; reuse it for every reply of that format."""

    @overload
    def __init__(
        self: Pipeline[T],
        output: type[T],
        *,
        level: str | None = None,
        processors: Iterable[Processor] = (),
        observers: Iterable[Observer] = (),
        reverse: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> None: ...

    @overload
    def __init__(
        self: Pipeline[Any],
        output: ResponseFormat | Mapping[str, Any] | Any = None,
        *,
        level: str | None = None,
        processors: Iterable[Processor] = (),
        observers: Iterable[Observer] = (),
        reverse: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> None: ...

    @guarded("compile")
    def __init__(
        self,
        output: ResponseFormat | Mapping[str, Any] | type[T] | Any = None,
        *,
        level: str | None = None,
        processors: Iterable[Processor] = (),
        observers: Iterable[Observer] = (),
        reverse: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> None:
        """`reverse`: the dialect's mapping of a value in the provider's shape back to the
        schema's (generate() passes it when the translation reshapes values), applied where
        `after_decode` processors run; its changes are recorded under the `dialect` stage, no
        intervention on the reply (see outform.trace.events.EventStage)."""
        from outform.config import settings

        configured = settings().parse
        self.options = Options.for_level(
            level or configured.level, **{**configured.overrides, **options}
        )
        self.format = _as_format(output)
        self.processors: tuple[Processor, ...] = arguments.items(
            "processors",
            processors,
            lambda p: isinstance(p, Processor),
            "an outform.Processor",
            fix='wrap each function: Processor("after_decode", fn)',
        )
        self.observers: tuple[Observer, ...] = arguments.items(
            "observers", observers, callable, "a callable (it receives each Event)"
        )
        self._text_mode = isinstance(self.format, TextFormat)
        schema: Mapping[str, Any]
        if isinstance(self.format, JsonSchemaFormat):
            schema = self.format.schema
            output_type = self.format.output_type
        elif isinstance(self.format, JsonObjectFormat):
            schema, output_type = {"type": "object"}, None
        else:
            schema, output_type = {}, None
        self.adapter: TypeAdapter[Any] | None = (
            adapter_for(output_type) if output_type is not None else None
        )
        published = schema
        # Decimals read through a float otherwise than the reply wrote them: found by this.
        self._decimals = decimals.decimal_validator(self.adapter) if self.adapter else None
        # Integers past 2**53 a float would hold as others, or read from a float's spelling:
        # told apart by this (see typed.py).
        self._floats = typed_reading.float_validator(self.adapter) if self.adapter else None
        # A decimal's string is checked as what the type reads: a decimal literal (see
        # strictness.py); other strings are coerced as for a number, or refused. A field the
        # type reads by its name as well as its alias is checked under either (by_name.py).
        checked = (
            strictness.checked_schema(self.adapter, schema, decimals=self._decimals is not None)
            if self.adapter is not None
            else None
        )
        if checked is not None:
            schema = checked
        # Sets, frozensets and maps whose keys are not strings may hold fewer items than the
        # reply wrote: found, and recorded, by this (see folded.py).
        self._folding = folded.folding_validator(self.adapter) if self.adapter else None
        if self._folding is not None:
            # The type's schema says `uniqueItems` for a set; the type itself folds equal items
            # (recorded), so the check is left to it.
            schema = folded.without_unique_items(schema)
        self.compiled: CompiledSchema = compile_schema(schema)
        self._fast_validator = self.compiled.validator
        # The schema's hash is that of the schema the format publishes, whatever outform
        # checks beside it.
        self._hash = self.compiled.hash if schema is published else schema_hash(published)
        # Where the type's strict reading of JSON takes a value its schema refuses (`True` for
        # `Literal[1]`, `" 1.5"` for a decimal, what a before validator of its own reads), the
        # fast path checks the plain JSON too.
        self._loose = self.adapter is not None and (
            (checked is not None and self._decimals is not None)
            or strictness.compares_numbers(self.compiled.root)
            or strictness.own_readers(self.adapter)
        )
        # Keys the type ignores (Pydantic's default) are found, and recorded, by this; a
        # field's name written beside its alias is one (by_name.py).
        self._closed = by_name.closed_validator(self.adapter) if self.adapter is not None else None
        closing: Any = self.compiled.root
        if checked is not None and self.adapter is not None and self._closed is not None:
            # The fast path's first check for them takes each field under one spelling only.
            decimal = self._decimals is not None
            one = strictness.checked_schema(self.adapter, published, decimals=decimal, one=True)
            if one is not None:
                closing = folded.without_unique_items(one) if self._folding is not None else one
        self._closed_check = (
            compile_schema(ignored.closed_schema(closing)).validator
            if self._closed is not None
            else None
        )
        self._coercer = Coercer(
            self.compiled,
            lenient=self.options.lenient,
            max_depth=self.options.max_depth,
            tolerance=self.options.tolerance,
            max_repair_chars=self.options.max_repair_chars,
            max_repair_string=self.options.max_repair_string,
            anyof_strategy=self.options.anyof_strategy,
            allowlist=self.options.coercions,
        )
        accepted = accepted_types(self.compiled)
        self._wanted = frozenset(
            cast(Any, kind) for kind in ("object", "array") if kind in accepted
        ) or frozenset({"object", "array"})
        self._string_root = "string" in accepted
        self._unconstrained = accepted == ALL_TYPES
        root = self.compiled.resolve("")[1]
        self._verbatim = (
            "string" in accepted
            and accepted <= {"string", "null"}
            and not (isinstance(root, dict) and enum_choices(root) is not None)
        )
        self._null_root = "null" in accepted
        # Typed results get their defaults from Pydantic; plain JSON results from this plan.
        defaults = Defaults(self.compiled, self.options.max_depth)
        wanted = self.options.fill_defaults and self.adapter is None
        self._defaults = defaults if wanted and defaults.any else None
        # A reply valid as sent that leaves no default to fill, checked in one call.
        self._fast_complete = (
            _with_presence(self.compiled.root, defaults) if self._defaults is not None else None
        )
        # Several JSON values in one reply are gathered into an array when the schema wants an
        # array at the root (or says nothing); an object schema picks one of them instead.
        self._collect = ("array" in accepted and "object" not in accepted) or (
            accepted == ALL_TYPES
        )
        # Whether the reply text itself may be the value: first when the schema only takes
        # scalars, last when it names string among other types, never when unconstrained.
        # When it wants a list of scalars, a reply holding no JSON at all is its one item
        # ("words": the words, read as a scalar, wrapped in a list).
        self._text_root: Literal["first", "last", "words", "never"] = (
            "never"
            if accepted == ALL_TYPES
            else "first"
            if not accepted & {"object", "array"}
            else "last"
            if "string" in accepted
            else "words"
            if _lists_scalars(self.compiled, accepted)
            else "never"
        )
        self._at = {
            point: [p for p in self.processors if p.at == point] for point in PROCESSOR_POINTS
        }
        self._reverse = reverse
        self._try_fast = not self.options.shadow and not self.processors and reverse is None
        # Whether coercion has the last word on a value's keys (no processor after it).
        self._coercer_decides = "coerce" in self.options.stages and not self._at["after_coerce"]
        self._level = self.options.level
        self._max_chars = self.options.max_chars
        self._max_depth = self.options.max_depth
        self._depth_chars = 2 * self._max_depth
        """A reply this long or shorter cannot nest deeper than `max_depth` (see within_depth)."""

    @property
    def schema_hash(self) -> str:
        return self._hash

    @property
    def gathers(self) -> bool:
        """Whether the values of a reply are gathered into an array (the schema wants one at
        the root, or says nothing): a value that is no array is then an item of the reply's
        value, which later values extend (what the stream parser needs to know before it stops
        a stream)."""
        return self._collect

    def reads_text(self, starts_with_bracket: bool) -> bool:
        """Whether the reply's own text may be the value (see `_attempts`): when the schema
        takes a string at the root, and for a scalar root when the reply (less its reasoning)
        does not start with a bracket. No reading of the reply's JSON can then doom it (what
        the stream parser needs to know before it stops a stream)."""
        if self._verbatim or self._text_root == "last":
            return True
        return self._text_root == "first" and not starts_with_bracket

    # -- entry point -----------------------------------------------------------------------

    def run(
        self, reply: str | bytes, *, record: bool = True, streaming: bool = False
    ) -> ParseResult[T]:
        """Parse one reply. Raises OutputError (with a RetryHint) when it cannot be made valid,
        InputError when it cannot be parsed at all (binary, not Unicode, over the size, depth or
        time limit). No other exception leaves: a fault of outform's own is an InternalError
        naming the stage.

        `record`: give the events to the observers and record the reply as a run of its own
        in the trace store (a reply valid as sent is only counted); off when the caller does
        both itself (generate(), stream(), the gateway). Shadow-mode parses are not
        recorded. `streaming`: the reply was streamed (a `StreamParser`'s): its run is
        recorded as streamed, with its events even when valid as sent."""
        try:
            text = self._guard(reply)
            if self._text_mode:
                return ParseResult(
                    value=cast(T, text), text=text, level=self.options.level, _data=text
                )
            if self._try_fast:
                fast = self._fast_verbatim(text) if self._verbatim else self._fast(text)
                if fast is not None:
                    if record and (tally := _trace.tally) is not None:
                        if fast.changes or streaming:  # defaults filled in, or a stream
                            self._record(lambda: fast, streaming)
                        else:
                            tally()
                    return fast
            if not record:
                return self._slow(text)
            observed = partial(self._observed, partial(self._slow, text))
            return observed() if self.options.shadow else self._record(observed, streaming)
        except OutformError:
            raise
        except Exception as exc:
            raise InternalError.wrap(exc, "parse") from exc

    def _observed(self, parse: Callable[[], ParseResult[T]]) -> ParseResult[T]:
        """`parse()`, its events (a failure's too) given to the observers."""
        try:
            result = parse()
        except OutputError as error:
            if error.result is not None:
                dispatch(error.result.events, self.observers)
            raise
        dispatch(result.events, self.observers)
        return result

    def _record(
        self, parse: Callable[[], ParseResult[T]], streaming: bool = False
    ) -> ParseResult[T]:
        """`parse()`, recorded as a run of its own when recording is on."""
        recorder = _trace.active()
        if recorder is None:
            return parse()
        result: ParseResult[T] = record_parse(
            parse, recorder, schema_hash=self._hash, streaming=streaming
        )
        return result

    # -- fast path ------------------------------------------------------------------------

    def _fast(self, text: str) -> ParseResult[T] | None:
        # A reply the strict reader takes is checked for what it passes over silently, on the
        # text's `number_marks` (one translation in C, then a search or a count per check):
        # a number it misreads, nesting deeper than `max_depth` (a limit holds on every path;
        # the slow path refuses it), a key written twice, or one a type ignores.
        if self.adapter is not None:
            # Typed: Pydantic parses and validates in one pass; strict, so that nothing is
            # converted without being recorded (anything else goes the slow way).
            marks = values.number_marks(text)
            try:
                if len(text) > self._depth_chars and not values.within_depth(
                    text, self._max_depth, marks=marks
                ):
                    return None
                typed = self.adapter.validate_json(text, strict=True)
            except (PydanticValidationError, orjson.JSONDecodeError):
                return None
            except Exception:
                # The type's own code failed (a validator reading `info.data["a"]` where `a`
                # was refused): on a reply the schema refuses, the slow path reports the
                # schema's violation, and the type's code never sees it (docs/pipeline.md).
                if not self._schema_takes(text):
                    return None
                raise
            if values.nonfinite_literal(text) is not None:
                return None  # Pydantic reads NaN and Infinity; the slow path refuses them
            if values.may_round(marks):
                return None  # `9007199254740993.0` read through a float: read exactly there
            if self._floats is not None and marks.find(typed_reading.LONG) >= 0:
                return None  # an integer a float field holds as another: refused there
            if values.out_of_range(text, integers=True, marks=marks) is not None:
                return None  # Pydantic reads 1e400 as infinity: the slow path refuses it
            if self._decimals is not None and decimals.FRACTION.search(text):
                return None  # a decimal Pydantic may have read through a float: read there
            data: Any = FROM_TEXT
            if self._loose:
                # The type matches by `==` (`true` is 1 for `Literal[1]`) or reads strings
                # the schema refuses (`" 1.5"` for a decimal): the reply's plain JSON must be
                # valid too, or the slow path refuses it, or records the coercion it needs.
                try:
                    data = orjson.loads(text)  # (no long number: `may_round` said so)
                except ValueError:
                    return None
                if not self._fast_validator.is_valid(data):
                    return None
            if self._may_drop_keys(text, typed, marks.count(b":"), data):
                return None  # a key written twice, or one the type ignores: recorded there
            if self._folding is not None and self._may_fold(text):
                return None  # equal items folded by a set (or keys by a map): recorded there
            return ParseResult(
                value=typed,
                text=text,
                schema_hash=self._hash,
                level=self.options.level,
                _data=data,
            )
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        written = as_read.writing(data)
        if written is not None and as_read.written_as_read(text, written):
            # The reply is orjson's writing of its reading: no key written twice, every number
            # read as written (see as_read.py). Nesting is bounded by the containers opened,
            # and only measured when there are more than `max_depth`.
            if (
                len(text) > self._depth_chars
                and as_read.opening_brackets(written) > self._max_depth
                and not values.within_depth(text, self._max_depth, data)
            ):
                return None
            return self._fast_valid(text, data)
        marks = values.number_marks(text)
        long_run = values.may_round(marks)
        if (long_run or marks.find(values.LONG_EXPONENT) >= 0) and values.out_of_range(
            text, precise=True, marks=marks
        ) is not None:
            return None  # orjson reads 1e-400 as 0: the slow path refuses it
        if long_run:
            # orjson reads an integer beyond 64 bits as a float, which loses digits (2**64 + 1
            # reads as 2**64) and, under a schema, may be judged otherwise than the integer:
            # read every digit and judge what was written.
            try:
                data = values.decode_exact(text)
            except ValueError:
                return None  # over 4300 digits: the slow path says so
        if len(text) > self._depth_chars and not values.within_depth(
            text, self._max_depth, data, marks
        ):
            return None
        if duplicates.may_repeat(text, data, marks.count(b":"), written):
            return None  # the slow path says which key was written twice
        return self._fast_valid(text, data)

    def _schema_takes(self, text: str) -> bool:
        """Whether `text` is JSON that the schema takes (read exactly: every digit kept)."""
        try:
            data = values.decode_exact(text)
        except (ValueError, RecursionError):
            return False
        return bool(self._fast_validator.is_valid(data))

    def _fast_valid(self, text: str, data: Any) -> ParseResult[T] | None:
        """The fast path's value for a reply read without loss: valid as sent (its declared
        defaults filled in), or None (the slow path says why)."""
        complete = self._fast_complete
        if complete is not None and complete.is_valid(data):
            # Positional: this call is a tenth of the fast path's own cost for a small reply.
            return ParseResult(
                data, text, (), (), self._hash, self._level, False, None, None, None, data
            )
        if not self._fast_validator.is_valid(data):
            return None
        changes: list[Change] = []
        if self._defaults is not None:
            data = self._fill_defaults(self._defaults, data, changes)
        return ParseResult(
            value=data,
            text=text,
            changes=tuple(changes),
            schema_hash=self._hash,
            level=self.options.level,
            _data=data,
        )

    def _may_drop_keys(self, text: str, typed: Any, written: int, data: Any = FROM_TEXT) -> bool:
        """Whether the typed reading of `text`, which writes `written` colons, may have dropped
        a key (written twice, or not declared by a type that ignores such keys). Every key is
        followed by a `:`, so a text with no more colons than the root model was given fields
        drops none; else the reply is read once more by orjson (unless `data` is its reading
        already) and checked for both (see duplicates.py and ignored.py)."""
        given = getattr(typed, "__pydantic_fields_set__", None)
        if not written or (given is not None and written <= len(given)):
            return False
        if data is FROM_TEXT:
            data = orjson.loads(text)
        if duplicates.may_repeat(text, data, written):
            return True
        closed = self._closed_check
        if closed is None:
            return False
        if not closed.is_valid(data):
            return True
        # The schema check passes when any branch of a union takes the object closed; the
        # type may have chosen another, which ignores keys: asked precisely (see ignored.py).
        assert self._closed is not None
        return bool(self._closed.branches) and bool(ignored.ignored_keys(self._closed, data, typed))

    def _may_fold(self, text: str) -> bool:
        """Whether the typed reading of `text` folded equal items (see folded.py); a text
        orjson cannot read alike (an integer beyond 64 bits) is left to the slow path too."""
        assert self._folding is not None
        try:
            return bool(folded.folds(self._folding, orjson.loads(text)))
        except (orjson.JSONDecodeError, ValueError, TypeError):
            return True

    def _fast_verbatim(self, text: str) -> ParseResult[T] | None:
        """A plain string is wanted and the reply, as written, is one."""
        if "<" in text and extract.strip_reasoning(text)[1]:
            return None
        if self._null_root and text.strip() == "null":
            return None
        try:
            if not self.compiled.validator.is_valid(text):
                return None
        except UnicodeEncodeError:
            return None  # a lone surrogate: the slow path says where
        value: Any = text
        if self.adapter is not None:
            try:
                value = self.adapter.validate_python(text)
            except PydanticValidationError:
                # A type Pydantic reads from a string (a date, a UUID) that the text as written
                # is not: the slow path reads the JSON string it may spell, or says why not.
                return None
        return ParseResult(
            value=value,
            text=text,
            _data=text,
            schema_hash=self._hash,
            level=self.options.level,
        )

    def _fill_defaults(
        self,
        defaults: Defaults,
        value: Any,
        changes: list[Change],
        deadline: Deadline | None = None,
    ) -> Any:
        """Declared defaults for absent properties, unless adding them breaks validity."""
        added: list[Change] = []
        filled = defaults.fill(value, added, deadline)
        if added and self.compiled.is_valid(filled):
            changes.extend(added)
            return filled
        return value

    # -- slow path ------------------------------------------------------------------------

    def _slow(self, original: str) -> ParseResult[T]:
        options = self.options
        refuse_surrogates(original)
        run = Run.start(self._hash, options, len(original))
        text = self._process_text(original, run)
        if not text.strip() and not self._verbatim:
            return self._fail(original, None, run, (_syntax("the reply is empty"),))
        attempts: list[_Attempt] = []
        failures: list[tuple[extract.Candidate, decoding.DecodeFailure]] = []
        for attempt in self._attempts(text, run, failures):
            if attempt.valid and not attempt.violations:
                return self._succeed(original, attempt)
            attempts.append(attempt)
        # Tolerant readings refused or skipped are told to the caller (not to the model: the
        # reply's own fault is in the violations).
        notes = [f.message for _, f in failures if f.refused or f.skipped or f.unreadable]
        # Without the extract stage a byte order mark opening the reply stays: no JSON text
        # opens with one, and the reply's words read as a value would hold it (`"\ufeff42"` is
        # no integer). Whatever the root, the failure names the mark, as for an object.
        kept_bom = text.startswith(extract.BOM) and "extract" not in options.stages
        if attempts and not kept_bom:
            best = _judged(attempts)
            best.run.settle().changes.extend(best.run.later_changes())
            return self._fail(original, best.value, best.run, self._reasons(best), notes)
        fix = None
        if any(f.nonfinite for _, f in failures):
            fix = "no level reads NaN or Infinity: JSON has no such numbers"
        elif numbers := [f.number for _, f in failures if f.number is not None]:
            fix = f"no level reads {numbers[0].kind}: the model must write it again"
        elif text.startswith(extract.BOM):
            fix = (
                "remove the byte order mark (U+FEFF) before the reply; the 'extract' stage "
                "(levels 'minimal' and 'full') removes it"
            )
        return self._fail(original, None, run, (self._syntax_violation(failures),), notes, fix=fix)

    def _attempts(
        self,
        text: str,
        run: Run,
        failures: list[tuple[extract.Candidate, decoding.DecodeFailure]],
    ) -> Iterable[_Attempt]:
        """Candidates carried through the stages, in order of preference: every candidate at
        tier 0, then the ones not yet decoded at tier 1, then at tier 2. When the schema wants a
        scalar, the reply text itself is tried right after the whole reply as JSON; when it
        merely allows a string among other types, the text is the last resort."""
        options = self.options
        deadline = run.deadline
        extraction = self._extract(text, deadline)
        candidates = extraction.candidates
        whole = candidates[0]
        # The reply's own text, as written (less its reasoning, which is recorded), when it
        # may be the value itself.
        reasoning = ("strip_reasoning",) if extraction.reasoning else ()
        if extraction.bom and self._verbatim:
            # A plain string wanted: the byte order mark the reply opens with is a character
            # of it as written, as on the fast path.
            body = extract.BOM + extraction.body
        else:
            body = extraction.body  # (words read as a value are read without one: recorded)
            reasoning = ("strip_bom", *reasoning) if extraction.bom else reasoning
        as_text = extract.Candidate(body, "text", "other", reasoning)
        # The tolerant tiers are the `decode` stage's: without it, strict JSON only.
        tiers = range((options.tolerance if "decode" in options.stages else 0) + 1)
        # A reply that is one (broken) JSON document, and the gathered values of a reply that
        # holds several, are read whole at every tier before any piece of them is tried.
        collected = [c for c in candidates if c.kind == "collected"]
        # A gathering of the regions closed inside a value written broken, without the rest of
        # it, covers only part of the reply's JSON: it comes after every reading that holds
        # that value (the document, the gathering that holds it whole), at every tier.
        partial = [c for c in collected if c.partial]
        full = [c for c in collected if not c.partial]
        leading = [whole] if extraction.document else []
        order: list[tuple[int, extract.Candidate]] = []
        if self._verbatim and not (self._null_root and whole.text == "null"):
            # A plain string is wanted: the reply as written (minus reasoning) is the value.
            order.append((-1, as_text))
        order.append((0, whole))
        if self._text_root == "first" and whole.root == "other":
            # A scalar is wanted: the reply's own words may be it ("**two**"). A reply that
            # starts with a bracket is JSON, perhaps broken, and is never read as a sentence
            # (its keys would be taken for words).
            order.append((-1, as_text))
        if not self._unconstrained or any("collect_fences" in c.transforms for c in collected):
            leading += full
        elif extraction.document:
            # Nothing constrains the root: read a JSON-shaped reply as a tolerant decoder does,
            # then gather its pieces; in prose, the pieces come first and gathering last.
            order += [(tier, c) for c in leading for tier in tiers]
            leading += full
        else:
            partial = []
        order += [(tier, c) for tier in tiers for c in leading]
        order += [(tier, c) for tier in tiers for c in partial]
        leading += partial
        # The values that read as JSON as written, gathered without the prose brackets beside
        # them: only when the gathering of every region could be read at no tier.
        written = [c for c in candidates if c.kind == "written"]
        order += [(0, c) for c in written]
        pieces = [
            c for c in candidates if c not in leading and c is not whole and c.kind != "written"
        ]
        # For a root that wants a list, several values of the reply are its items: once they
        # are read gathered, one of them is never the list alone (its siblings would be
        # dropped); a list the reply wrote whole may be, the other values recorded as lost.
        gathering = self._collect and not self._unconstrained and bool(collected)
        # The first gathering read, and its JSON (written before coercion may change it).
        gathered: list[tuple[extract.Candidate, str]] = []
        # A region found inside one that stops reading as JSON is a part of that value: it is
        # tried after the value's repair (which must keep it whole: see `intact`), never before
        # (`Here: [{…Ana}, {…"F"g"…}, {…Bob}]` was Bob alone, for a list).
        # Any other region found inside one that stops reading as JSON (`Brackets [ like {
        # this: {"a": 1}`) is tried as written with the others, and repaired only after them.
        inside = [c for c in pieces if c.kind == "inside"]
        parts = [c for c in inside if c.part]
        inside = [c for c in inside if not c.part]
        pieces = [c for c in pieces if c.kind != "inside"]
        order += [(0, c) for c in pieces] + [(0, c) for c in inside]
        order += [(_PROBE, c) for c in parts]  # (read as written for `intact` alone)
        order += [(tier, c) for tier in tiers if tier for c in pieces]
        order += [(tier, c) for tier in tiers if tier for c in inside]
        order += [(tier, c) for tier in tiers for c in parts]
        # Prose read by a tolerant decoder is a last resort: the pieces above were found first.
        order += [(tier, whole) for tier in tiers if tier and whole not in leading]
        if self._text_root == "last" or (
            self._text_root == "words" and len(candidates) == 1 and whole.root == "other"
        ):
            order.append((-1, as_text))
        if extraction.unmatched > _MAX_UNMATCHED_FOR_REPAIR:
            # json-repair's cost grows with the square of such breakage: past this bound the
            # reply is garbage or hostile, and only the linear tiers are tried.
            order = [(tier, c) for tier, c in order if tier < 2]
        decoded: set[int] = set()
        tried: set[tuple[int, int]] = set()
        strict = _Regions()
        # The regions found inside one that stops reading as JSON, read as written (where, and
        # their JSON): a tolerant reading of a region around them must keep them whole.
        intact: dict[int, str] = {}
        # In a reply that is one broken JSON document (stray closers, cut off, or more JSON
        # after its first value: `{"a": 1} true, "b": 2`), the rest of the document is
        # content too: a region read alone falls under the loss rule, measured against the
        # whole.
        whole_content = (
            loss.measure(loss.region(whole.tolerant_text), deadline=deadline)
            if extraction.document
            and (extraction.unmatched or extraction.cut or extraction.continued)
            else None
        )
        # Once an attempt has been yielded and the caller came back, it failed and is the one
        # reported: later ones matter only if they succeed.
        trial = False
        for tier, candidate in order:
            if id(candidate) in decoded or (tier, id(candidate)) in tried:
                continue
            tried.add((tier, id(candidate)))
            if candidate.kind == "written" and gathered:
                continue  # every region was read, gathered: that reading stands
            if gathering and gathered and candidate.kind in _PIECES and candidate.root != "array":
                # An item of the gathered list, never the list alone; one found inside a
                # region that stops reading as JSON still holds a tolerant reading of that
                # region to keeping it whole.
                if tier == 0 and candidate.kind == "inside":
                    inner = decoding.decode(candidate.text, 0)
                    if isinstance(inner, decoding.Decoded):
                        intact[candidate.start] = values.encode(inner.value)
                continue
            deadline.enter("decode")
            if tier == _PROBE:
                inner = decoding.decode(candidate.text, 0)
                if isinstance(inner, decoding.Decoded):
                    intact[candidate.start] = values.encode(inner.value)
                continue
            if tier < 0:
                yield self._carry(candidate, decoding.Decoded(candidate.text, 0), run, trial=trial)
                trial = True
                continue
            if tier and candidate.kind != "collected" and strict.inside(candidate):
                # A region the strict decoder read is not read again by a tolerant one inside
                # a larger region: a tolerant reading of valid JSON can only differ by being
                # wrong (json-repair reading a fenced reply as `{}`, say).
                continue
            outcome = self._decode(candidate, tier, deadline)
            if isinstance(outcome, decoding.DecodeFailure):
                if tier == 0 or outcome.refused or outcome.skipped:
                    failures.append((candidate, outcome))
                if outcome.refused or outcome.skipped:
                    self._record_tolerant_failure(outcome, tier, candidate, run)
                continue
            decoded.add(id(candidate))
            if tier == 0 and candidate.kind == "inside":
                intact[candidate.start] = values.encode(outcome.value)
            elif tier == 0 and candidate.kind != "collected":
                strict.add(candidate)
            elif tier and intact and not _keeps_intact(candidate, outcome.value, [*intact.items()]):
                refusal = (
                    f"{decoding.TIER_NAMES[tier]}'s reading tears apart a region inside it that "
                    "reads as JSON as written"
                )
                failure = decoding.DecodeFailure(refusal, 0, refused=True)
                failures.append((candidate, failure))
                self._record_tolerant_failure(failure, tier, candidate, run)
                continue
            if gathering and candidate.kind in ("collected", "written") and not gathered:
                gathered.append((candidate, values.encode(outcome.value)))
            left = 0
            if gathering and candidate.kind in _PIECES:
                # (What the candidate itself counts as left out, the other values, is added
                # when its extraction is recorded: only what the gathering shows beyond it.)
                left = _left_out(candidate, outcome.value, gathered, collected[0])
                left = max(0, left - candidate.lost)
            lost = 0
            if whole_content is not None and (
                candidate.kind in ("span", "unclosed", "inside") or candidate.partial
            ):
                kept = loss.measure(values.encode(outcome.value), comments=False)
                measured = loss.Loss(whole_content, kept)
                if measured.refused:
                    reading = (
                        "gathering the values without the one written broken"
                        if candidate.partial
                        else "reading one region of the broken JSON document"
                    )
                    refusal = measured.describe(reading)
                    failures.append((candidate, decoding.DecodeFailure(refusal, 0, refused=True)))
                    run.emit("output.coercion.fail", "extract", detail=refusal)
                    continue
                # (A partial gathering counts what it leaves out itself: only the rest here.)
                lost = (
                    max(0, measured.lost - candidate.lost) if candidate.partial else measured.lost
                )
            if left:
                lost = max(lost, left)
            # (A piece of a gathering: what it leaves out is its own count or the gathering's.)
            pieced = gathering and candidate.kind in _PIECES and (left or candidate.lost)
            note = "the reply's other values are left out" if pieced else ""
            yield self._carry(candidate, outcome, run, lost, trial=trial, note=note)
            trial = True

    def _record_tolerant_failure(
        self,
        failure: decoding.DecodeFailure,
        tier: int,
        candidate: extract.Candidate,
        run: Run,
    ) -> None:
        name = decoding.TIER_NAMES[tier]
        if failure.skipped:
            before = f"{candidate.size:,} characters"
            run.change("", "tolerant", f"skip_{name}", before, None, detail=failure.message)
        run.emit("output.coercion.fail", "tolerant", transforms=(name,), detail=failure.message)

    def _extract(self, text: str, deadline: Deadline) -> extract.Extraction:
        options = self.options
        # With extraction off the reply is read whole: the scan that measures its nesting is
        # the first step of decoding it, and is named so when it runs out of time.
        deadline.enter("extract" if "extract" in options.stages else "decode")
        if "extract" in options.stages:
            extraction = extract.candidates(
                text,
                self._wanted,
                collect=self._collect,
                beside=not self._unconstrained,
                deadline=deadline,
            )
        else:
            stripped = text.strip()
            lead = len(text) - len(text.lstrip())
            whole = extract.Candidate(stripped, "whole", extract.root_of(stripped), (), 0, lead)
            scanned = extract.scan(text, deadline)
            extraction = extract.Extraction(
                [whole], text, [], scanned.deepest, True, scanned.unmatched
            )
        if extraction.deepest > options.max_depth:
            raise too_deep(options.max_depth, extraction.deepest)
        return extraction

    def _decode(
        self, candidate: extract.Candidate, tier: int, deadline: Deadline
    ) -> decoding.Decoded | decoding.DecodeFailure:
        text = candidate.text
        options = self.options
        if tier == 0:
            outcome = decoding.decode(text, 0)
            if (
                isinstance(outcome, decoding.DecodeFailure)
                and "unescape" in options.stages
                and unescape.looks_escaped(text)
            ):
                # JSON whose quotes are escaped, once per level the setting allows.
                deadline.enter("unescape")
                for _ in range(options.unescape_depth):
                    deadline.check()
                    inner = unescape.unescape_text(text)
                    if inner is None:
                        break
                    retry = decoding.decode(inner, 0)
                    if isinstance(retry, decoding.Decoded):
                        return decoding.Decoded(retry.value, 0, "unescaped")
                    text = inner
            return outcome
        return decoding.decode_tier(
            candidate.tolerant_text,
            tier,
            deadline=deadline,
            max_repair_chars=options.max_repair_chars,
            max_repair_string=options.max_repair_string,
            max_depth=options.max_depth,
        )

    def _carry(
        self,
        candidate: extract.Candidate,
        decoded: decoding.Decoded,
        parent: Run,
        lost: int = 0,
        *,
        trial: bool = False,
        note: str = "",
    ) -> _Attempt:
        """Take one decoded candidate through unescape, processors, coercion and validation.

        `trial`: an earlier attempt failed and is the one reported, so this one matters only
        if it succeeds; one that coercion certainly leaves invalid stops before it (coercing
        each of a reply's many pieces against a wide schema would cost their product)."""
        options = self.options
        value, tier, detail = decoded.value, decoded.tier, decoded.detail
        deadline = parent.deadline
        run = parent.fork()
        self._record_extraction(candidate, run, lost, note)
        if detail == "unescaped":
            run.change("", "syntactic", "unescape_text", clip(candidate.text), preview(value))
            run.emit("output.coercion.success", "syntactic", transforms=("unescape_text",))
        if not tier and not detail and duplicates.may_repeat(candidate.text, value):
            self._record_repeated(duplicates.find(candidate.text), run)
        if tier:
            name = decoding.TIER_NAMES[tier]
            failure = decoding.strict_failure(candidate.text)
            before = failure.around(candidate.text) if failure else clip(candidate.text)
            after = preview(value, _TEXT_STAGE_PREVIEW)
            run.change("", "tolerant", name, before, after, detail=detail, lost=decoded.lost)
            run.emit("output.coercion.attempt", "tolerant", transforms=(name,))
            run.emit("output.coercion.success", "tolerant", transforms=(name,), detail=detail)
        levels = 0
        if "unescape" in options.stages and not self._string_root:
            deadline.enter("unescape")
            unwrapped, levels = unescape.unescape_value(value, options.unescape_depth, deadline)
            if levels:
                run.change(
                    "", "syntactic", "decode_nested_json", preview(value), preview(unwrapped)
                )
                run.emit(
                    "output.coercion.success",
                    "syntactic",
                    transforms=("decode_nested_json",),
                    detail=f"{levels} level(s)",
                )
                value = unwrapped
        if levels or candidate.kind in _GATHERED:
            # JSON read out of strings, or values gathered into a list: nesting the extraction
            # did not count (see `_within_depth`).
            self._within_depth(value, deadline)
        if self._reverse is not None:
            mapped = self._reverse(value)
            if mapped != value:
                run.change("", "dialect", "dialect_reverse", preview(value), preview(mapped))
                value = mapped
        value = self._process_value("after_decode", value, run)
        deadline.enter("coerce")
        if trial and self._coercer_decides and self._coercer.cannot_fit(value):
            return _Attempt(candidate, value, run, False, [])
        blocked: list[tuple[str, str]] = []
        made: dict[int, tuple[float, str]] | None = None
        if "coerce" in options.stages and not self.compiled.is_valid(value):
            run.emit("output.coercion.attempt", "semantic")
            cut = _last_string(value) if decoded.cut_string else None
            coercion = self._coercer.coerce(value, deadline, candidate.text, cut)
            value = coercion.value
            blocked = coercion.blocked
            made = coercion.made
            run.changes.extend(coercion.changes)
            for path, branch in coercion.branches:
                run.emit("output.coercion.success", "semantic", branch_index=branch, path=path)
            if coercion.changes:
                self._within_depth(value, deadline)  # a value wrapped, or read out of a string
        value = self._process_value("after_coerce", value, run)
        deadline.enter("validate")
        valid = self.compiled.is_valid(value)
        if valid and self._defaults is not None:
            # Filled only where the value stays valid (see _fill_defaults).
            value = self._fill_defaults(self._defaults, value, run.changes, deadline)
        found: tuple[Violation, ...] = ()
        typed = None
        kept = 0  # fractions a float drops that decimal fields keep
        as_valid = value  # (its floats are those the checks of dropped fractions look for)
        if valid and self.adapter is not None:
            try:
                typed, value = typed_reading.read(
                    self.adapter, value, run, candidate.text, self._floats
                )
                if self._decimals is not None:
                    typed, kept = self._exact_decimals(value, typed, candidate.text, run, made)
            except PydanticValidationError as exc:
                found = pydantic_violations(exc, deadline)
            else:
                found = self._integer_overflow(candidate.text, typed)
                self._record_ignored(value, typed, run)
                self._record_folded(value, run)
        if valid and not found:
            found = _dropped_fractions(candidate.text, made, as_valid, kept)
        # (The reply's changes before the fork, from processors of its text and skipped tiers,
        # are none semantic.)
        semantic = tuple(dict.fromkeys(c.transform for c in run.changes if c.stage == "semantic"))
        if semantic:
            failed = not valid or found
            outcome: EventName = "output.coercion.fail" if failed else "output.coercion.success"
            run.emit(outcome, "semantic", transforms=semantic)
        return _Attempt(candidate, value, run, valid, blocked, found, typed)

    def _within_depth(self, value: Any, deadline: Deadline) -> None:
        """The depth rule for a value a stage made deeper than the text it was read from: a
        value wrapped in an array or an object, JSON read out of a string, values gathered
        into a list. The value the pipeline returns never nests deeper than `max_depth`: one
        that would is refused as deep JSON is (InputError naming the limit)."""
        limit = self.options.max_depth
        deepest = values.depth(value, limit, deadline)
        if deepest:
            raise too_deep(limit, deepest)

    def _exact_decimals(
        self,
        value: Any,
        typed: Any,
        text: str,
        run: Run,
        made: dict[int, tuple[float, str]] | None = None,
    ) -> tuple[Any, int]:
        """`typed` with each decimal holding the digits the reply wrote (see decimals.py), and
        how many of them have a fraction their float dropped; a decimal whose spelling is not
        known is recorded as lossy. Raises Pydantic's error when the digits written break a
        constraint the float's did not (`max_digits`)."""
        assert self._decimals is not None and self.adapter is not None
        # (`made`: the floats coercion read out of strings, spelled as the strings wrote them.)
        reading = decimals.read(self._decimals, value, Spellings(text, run.deadline, made))
        for path in reading.unknown:
            number = preview(pointer.lookup(value, path))
            run.change(
                path,
                "semantic",
                "decimal_from_float",
                number,
                number,
                detail="the reply's spelling of this number is not known (written more than "
                "one way, or as a fraction with no exact decimal): the decimal holds a float's "
                "digits",
                lost=1,
            )
        if not reading.exact:
            return typed, 0
        kept = sum(1 for exact in reading.exact.values() if values.fraction_dropped(exact))
        return self.adapter.validate_python(decimals.replaced(value, reading.exact)), kept

    def _reasons(self, attempt: _Attempt) -> tuple[Violation, ...]:
        """Why the reported attempt fails: every violation the validator finds (each told
        beside a conversion refused there), or the typed output's own checks."""
        if attempt.valid:
            return attempt.violations
        deadline = attempt.run.deadline
        deadline.enter("validate")
        found = violations(self.compiled, attempt.value, deadline)
        return allowlist.explain(found, attempt.blocked)

    def _integer_overflow(self, text: str, typed: Any) -> tuple[Violation, ...]:
        """A float field given an integer beyond a float's range (Pydantic reads 10**400 as
        infinity), found only when the text writes one (an integer field keeps it exact)."""
        out = values.out_of_range(text, integers=True)
        if out is None or self.adapter is None:
            return ()
        dumped = self.adapter.dump_python(typed)
        if values.flaw(dumped) is None:
            return ()
        return (
            Violation(
                "",
                "constraint",
                "a number a float holds (from 1e-308 to 1e308 in size)",
                f"{out.describe()} (for a float field)",
                "maximum",
            ),
        )

    def _record_repeated(self, repeats: list[duplicates.Repeat], run: Run) -> None:
        """Keys written twice: the last value kept (as every JSON reader does), each dropped
        value recorded, lossy when it differs from the kept one."""
        for r in repeats:
            kept, dropped = r.written[-1], r.written[:-1]
            lost = sum(loss.size(values.encode({r.key: v})) for v in dropped if v != kept)
            run.change(
                r.pointer,
                "syntactic",
                "drop_duplicate_key",
                preview(list(dropped)) if len(dropped) > 1 else preview(dropped[0]),
                preview(kept),
                detail=f"{r.key!r} written {len(r.written)} times: the last value is kept, "
                "as JSON readers do",
                lost=lost,
            )
        if repeats:
            run.emit("output.coercion.success", "syntactic", transforms=("drop_duplicate_key",))

    def _record_ignored(self, value: Any, typed: Any, run: Run) -> None:
        """Keys the typed output (`typed`, its reading of `value`) ignores (Pydantic's
        `extra="ignore"`), recorded as dropped."""
        if self._closed is None:
            return
        for path in ignored.ignored_keys(self._closed, value, typed):
            try:
                dropped = pointer.lookup(value, path)
            except KeyError:
                dropped = None  # a location the value does not have: recorded all the same
            key = pointer.parts(path)[-1]
            run.change(
                path,
                "semantic",
                "ignore_extra_key",
                preview(dropped),
                None,
                detail="the type does not declare this key and ignores it (extra='ignore')",
                lost=loss.size(values.encode({key: dropped})),
            )

    def _record_folded(self, value: Any, run: Run) -> None:
        """Items a set (or keys a map) of the typed output folds together, recorded as
        dropped: `result.value` holds fewer than `result.data`."""
        if self._folding is None:
            return
        for fold in folded.folds(self._folding, value):
            run.change(
                fold.path,
                "semantic",
                "fold_equal_items",
                preview(fold.dropped),
                None,
                detail=f"{fold.written} items written, {fold.kept} kept: the type holds one "
                "of the items (or keys) that are equal",
                lost=fold.lost,
            )

    def _record_extraction(
        self, candidate: extract.Candidate, run: Run, lost: int = 0, note: str = ""
    ) -> None:
        if not candidate.transforms:
            return
        after = clip(candidate.text, _TEXT_STAGE_PREVIEW)
        last = len(candidate.transforms) - 1
        # What extraction knows it leaves out (a value cut off at the end of a gathered list).
        lost += candidate.lost
        for index, transform in enumerate(candidate.transforms):
            # What a region read alone leaves out is lost by its extraction, the last step.
            final = index == last
            detail = "; ".join(filter(None, (candidate.detail, note))) if final else ""
            run.change(
                "", "extract", transform, None, after, detail=detail, lost=lost if final else 0
            )
        run.emit("output.coercion.success", "extract", transforms=candidate.transforms)

    # -- processors -----------------------------------------------------------------------

    def _process_text(self, text: str, run: Run) -> str:
        for processor in self._at["before_extract"]:
            run.deadline.enter("before_extract")  # a processor's time is named by its point
            updated = _call(processor, text)
            if not isinstance(updated, str):
                raise UsageError(
                    f"processor {processor.label!r} must return text, got {type(updated).__name__}",
                    where="before_extract",
                )
            if (flaw := _not_text(updated, self.options.max_chars)) is not None:
                raise UsageError(
                    f"processor {processor.label!r} returned {flaw}",
                    where="before_extract",
                    fix="return the reply as Unicode text without NUL characters, within "
                    "max_chars (replace broken characters with U+FFFD)",
                )
            if updated != text:
                run.change("", "custom", processor.label, clip(text), clip(updated))
                run.emit("output.coercion.success", "custom", transforms=(processor.label,))
            text = updated
        return text

    def _process_value(self, point: ProcessorPoint, value: Any, run: Run) -> Any:
        for processor in self._at[point]:
            run.deadline.enter(point)
            updated = _call(processor, value)
            if (flaw := arguments.not_json(updated, run.deadline)) is not None:
                raise UsageError(
                    f"processor {processor.label!r} returned a value that is not JSON: {flaw}",
                    where=point,
                    fix="return JSON values only: dicts with string keys, lists, Unicode text, "
                    "finite numbers, booleans, None (where the schema allows null); none inside "
                    "itself",
                )
            if updated != value:
                run.change(
                    "", "custom", processor.label, preview(value), preview(updated), detail=point
                )
                run.emit("output.coercion.success", "custom", transforms=(processor.label,))
            value = updated
        return value

    # -- outcomes -------------------------------------------------------------------------

    def _succeed(self, text: str, attempt: _Attempt) -> ParseResult[T]:
        run = attempt.run.settle()
        if self.options.shadow:
            return self._shadow(text, attempt.value, run)
        value = attempt.typed if self.adapter is not None else attempt.value
        result: ParseResult[T] = ParseResult(
            value=value,
            _data=attempt.value,
            text=text,
            changes=tuple(run.changes),
            events=tuple(run.events),
            schema_hash=self._hash,
            level=self.options.level,
        )
        return result

    def _fail(
        self,
        text: str,
        value: Any,
        run: Run,
        found: Sequence[Violation],
        notes: Sequence[str] = (),
        *,
        fix: str | None = None,
    ) -> ParseResult[T]:
        hint = RetryHint(tuple(found))
        run.emit("output.coercion.fail", "validate", detail=found[0].line() if found else "")
        if self.options.shadow:
            return self._shadow(text, value, run, would_fail=hint)
        result: ParseResult[T] = ParseResult(
            value=value,
            _data=value,
            text=text,
            changes=tuple(run.changes),
            events=tuple(run.events),
            schema_hash=self._hash,
            level=self.options.level,
            hint=hint,
        )
        if hint.is_syntax and not text.strip():
            # Nothing to repair: advice about repair levels would send the user the wrong way.
            what = "the reply is empty (no text, or only whitespace)"
            fix = "the model sent nothing: check its finish reason and max_tokens, or ask again"
        elif hint.is_syntax:
            what = "no JSON value could be read from the reply"
            stages = self.options.stages
            if fix is None and self.options.level == "off":
                fix = (
                    "level 'minimal' reads JSON out of prose, fences and reasoning blocks; "
                    "'full' also repairs malformed JSON"
                )
            elif fix is None and "extract" not in stages:
                # The level has the stage, but the stages set leaves it out.
                fix = (
                    "add 'extract' to the stages to read JSON out of prose, fences and "
                    "reasoning blocks"
                    + (
                        ""
                        if "decode" in stages
                        else ", and 'decode' to repair malformed JSON at level 'full'"
                    )
                )
            elif fix is None and self.options.tolerance < 2:
                fix = "level 'full' also repairs malformed JSON"
            elif fix is None and "decode" not in stages:
                fix = "add 'decode' to the stages to repair malformed JSON"
        else:
            what, fix = "the reply does not match the schema", None
        if notes:
            what += " (" + "; ".join(dict.fromkeys(notes)) + ")"
            if any("'max_repair_chars'" in note for note in notes):
                fix = "raise the 'max_repair_chars' option to let json-repair read the region"
            elif any("'max_repair_string'" in note for note in notes):
                fix = "raise the 'max_repair_string' option to let json-repair read the string"
        raise OutputError(what, hint=hint, result=result, fix=fix)

    def _shadow(
        self, text: str, would_be: Any, run: Run, would_fail: RetryHint | None = None
    ) -> ParseResult[T]:
        """Shadow mode: report what would change, return the reply as strict parsing reads it."""
        try:
            data: Any = orjson.loads(text)
        except orjson.JSONDecodeError:
            data = None
            found: tuple[Violation, ...] = (_syntax("the reply is not valid JSON"),)
        else:
            found = violations(self.compiled, data)
        value: Any = data
        if not found and self.adapter is not None:
            try:
                value = self.adapter.validate_python(data)
            except PydanticValidationError as exc:
                found = pydantic_violations(exc)
        result: ParseResult[T] = ParseResult(
            value=value,
            _data=data,
            text=text,
            changes=tuple(run.changes),
            events=tuple(run.events),
            schema_hash=self._hash,
            level=self.options.level,
            shadow=True,
            hint=RetryHint(found) if found else None,
            would_be=would_be,
            would_be_hint=would_fail,
        )
        return result

    # -- guards ---------------------------------------------------------------------------

    def _guard(self, reply: str | bytes) -> str:
        if type(reply) is str and len(reply) <= self._max_chars and "\x00" not in reply:
            return reply  # the common case, checked first
        if isinstance(reply, bytes | bytearray | memoryview):
            try:
                reply = bytes(reply).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    "the reply is not UTF-8 text (binary data?)",
                    where=f"byte {exc.start}",
                    fix="pass the model's text reply, decoded as UTF-8",
                ) from None
        if not isinstance(reply, str):
            raise UsageError(
                f"a reply must be text, got {type(reply).__name__}",
                fix="pass the model's reply as str (or UTF-8 bytes)",
            )
        if len(reply) > self.options.max_chars:
            raise too_long(len(reply), self.options.max_chars)
        if "\x00" in reply:
            raise InputError(
                "the reply contains NUL characters (binary data?)",
                where=f"character {reply.index(chr(0))}",
                fix="pass the model's text reply; binary content cannot be parsed as JSON",
            )
        return reply

    def _syntax_violation(
        self, failures: list[tuple[extract.Candidate, decoding.DecodeFailure]]
    ) -> Violation:
        if any(c.kind == "whole" and c.text.startswith(extract.BOM) for c, _ in failures):
            # (Left there only without the extract stage, which removes it.)
            return _syntax(
                "the reply opens with a byte order mark (U+FEFF), which JSON text has not"
            )
        json_like = [(c, f) for c, f in failures if c.root != "other"]
        if not json_like:
            return _syntax("the reply contains no JSON value")
        candidate, failure = next(((c, f) for c, f in json_like if f.unreadable), json_like[0])
        if failure.number is not None:
            number = failure.number
            return _syntax(
                f"the JSON writes {number.kind}: {number.describe()} (near "
                f"{failure.around(candidate.text)!r}); {number.advice}"
            )
        if failure.nonfinite:
            return _syntax(
                f"the JSON writes {failure.nonfinite}, which is not a JSON number (near "
                f"{failure.around(candidate.text)!r}); write a finite number, or null where "
                "the schema allows it"
            )
        found = f"the JSON is malformed ({failure.message} near {failure.around(candidate.text)!r})"
        # (the text ended inside the value: a cut reply's doing, see reask.cut_off)
        unended = failure.position >= len(candidate.text.rstrip())
        return _syntax(found, JSON_UNENDED if unended else "syntax")


class _Regions:
    """Where the regions the strict decoder read lie in the reply, to ask whether a candidate
    contains one (a candidate's region is [start, start + size))."""

    __slots__ = ("_dirty", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._dirty = False

    def add(self, candidate: extract.Candidate) -> None:
        self._starts.append(candidate.start)
        self._dirty = True

    def inside(self, candidate: extract.Candidate) -> bool:
        """Whether a strictly read region starts inside `candidate` (regions found by
        extraction are disjoint or nested, so one that starts inside lies inside)."""
        if not self._starts:
            return False
        if self._dirty:
            self._starts.sort()
            self._dirty = False
        index = bisect.bisect_left(self._starts, candidate.start)
        return index < len(self._starts) and self._starts[index] < candidate.start + candidate.size


def _keeps_intact(candidate: extract.Candidate, value: Any, intact: list[tuple[int, str]]) -> bool:
    """Whether `value`, a tolerant reading of `candidate`, holds whole, in order, every region
    inside it that reads as JSON as written (`intact`: where each is, and its JSON). A reading
    that tears one apart (`[0, 1) then {"a": 1}` read as `[0, 1, "then {", "a", 1]`) is no
    reading of it. Linear: each region's JSON is looked for after the previous one's."""
    end = candidate.start + candidate.size
    held = [text for start, text in sorted(intact) if candidate.start <= start < end]
    if not held:
        return True
    written = values.encode(value)
    position = 0
    for text in held:
        found = written.find(text, position)
        if found == -1:
            return False
        position = found + len(text)
    return True


def _last_string(value: Any) -> str | None:
    """The JSON pointer of the last scalar of `value` in the order written, when it is a
    string (that of a reply that ended inside it), else None."""
    path = ""
    while isinstance(value, dict | list) and value:
        if isinstance(value, dict):
            key = next(reversed(value))
            path, value = pointer.join(path, key), value[key]
        else:
            path, value = pointer.join(path, len(value) - 1), value[-1]
    return path if isinstance(value, str) else None


def _dropped_fractions(
    text: str, made: dict[int, tuple[float, str]] | None, value: Any, kept: int
) -> tuple[Violation, ...]:
    """The violation of a reply that writes a number whose fraction a float drops
    (`9007199254740993.5` reads as the integer 9007199254740994), as JSON or in a string
    coercion read (`made`), when `value` holds such a float other than in a decimal field,
    which keeps the digits (`kept` of them): a float field would hold another number, and an
    integer field would take one that is not an integer (see docs/pipeline.md#values). A
    number turned into text keeps the literal, and is no such float. Told at the first place
    `value` holds one."""
    literals = [out.literal for out in values.dropped_fractions(text)]
    if made:
        literals += [literal for _, literal in made.values() if values.fraction_dropped(literal)]
    if not literals:
        return ()
    by_float = {float(literal): literal for literal in literals}
    held = _floats_in(value, by_float)
    if len(held) <= kept:
        return ()
    path, number = held[0]
    out = values.OutOfRange(0, by_float[number], "too precise")
    return (
        Violation(
            path,
            "constraint",
            f"a number a float holds as written ({out.advice})",
            out.describe(),
            "type",
        ),
    )


def _floats_in(value: Any, numbers: Mapping[float, str]) -> list[tuple[str, float]]:
    """Each place `value` holds a float among `numbers`, in document order: (its JSON
    pointer, the float)."""
    found: list[tuple[str, float]] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, pointer.join(path, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((item[i], pointer.join(path, i)) for i in range(len(item) - 1, -1, -1))
        elif type(item) is float and item in numbers:
            found.append((path, item))
    return found


def _with_presence(schema: Any, defaults: Defaults) -> Any:
    """A validator of `schema` that also requires every property that has a default (None when
    that cannot be written as one schema). `$defs` stay at the root, where `$ref`s find them."""
    presence = defaults.presence()
    if presence is None or not isinstance(schema, dict):
        return None
    both = schema.get("allOf", [])
    if not isinstance(both, list):
        return None
    return compile_schema({**schema, "allOf": [*both, presence]}).validator


_PROBE = -2
"""In the order of `_attempts`: a part of a value written broken read as written only to
know what the value's repair must keep whole (`intact`), never yet taken."""
_PIECES = frozenset({"span", "unclosed", "inside", "fence"})
"""The kinds of candidate that are one value of the reply (or one block)."""
_GATHERED = frozenset({"collected", "written"})
"""Candidates that gather a reply's values into a list, one level over each."""


def _left_out(
    candidate: extract.Candidate,
    value: Any,
    gathered: list[tuple[extract.Candidate, str]],
    collected: extract.Candidate,
) -> int:
    """The letters and digits of the reply's other values that `candidate`, one of them read
    alone as `value`, leaves out: those of the gathered reading it does not hold (when the
    gathering was read), and the value left open at the end (unless it is that one)."""
    left = 0
    if gathered:
        every = loss.measure(gathered[0][1], comments=False)
        kept = loss.measure(values.encode(value), comments=False)
        left = max(0, every.size - kept.size)
    if candidate.kind != "unclosed":
        left += gathered[0][0].lost if gathered else collected.lost
    return left


def _judged(attempts: Sequence[_Attempt]) -> _Attempt:
    """The attempt a failure reports: the first one, except that a reply which is one JSON
    string is judged as the string it spells, not as its text with the quotes (`"May 1"` for a
    date is "May 1" that is not a date, not a text that starts with a quote)."""
    first = attempts[0]
    if first.candidate.kind == "text":
        for attempt in attempts[1:]:
            if attempt.candidate.kind != "whole" or not isinstance(attempt.value, str):
                continue
            if not any(c.stage == "tolerant" for c in attempt.run.settle().changes):
                return attempt
    return first


def _lists_scalars(compiled: CompiledSchema, accepted: frozenset[str]) -> bool:
    """Whether the root wants a list (and no object) whose items are scalars only."""
    if "array" not in accepted or "object" in accepted:
        return False
    location, root = compiled.resolve("")
    if not isinstance(root, dict) or not isinstance(root.get("items"), dict | bool):
        return False
    items = accepted_types(compiled, f"{location}/items")
    return bool(items) and not items & {"object", "array"}


def _not_text(text: str, max_chars: int) -> str | None:
    """What makes a processor's text one a reply could not be (a lone surrogate, a NUL, over
    `max_chars`), or None."""
    if len(text) > max_chars:
        return f"text of {len(text):,} characters, over the 'max_chars' limit of {max_chars:,}"
    position = values.first_surrogate(text)
    if position is not None:
        return (
            f"text that is not valid Unicode: a lone surrogate (U+{ord(text[position]):04X}) "
            f"at character {position}"
        )
    if "\x00" in text:
        return f"text with a NUL character at character {text.index(chr(0))}"
    return None


def _call(processor: Processor, value: Any) -> Any:
    """Run a user's processor; its failure is a UsageError naming it, not a crash of ours."""
    try:
        return processor.fn(value)
    except OutformError:
        raise
    except Exception as exc:
        raise UsageError(
            f"processor {processor.label!r} raised {type(exc).__name__}: {exc}",
            where=processor.at,
            fix="make the processor return its input unchanged when it does not apply",
        ) from exc


def _syntax(found: str, keyword: str = "syntax") -> Violation:
    return Violation("", "syntax", "a single JSON value matching the schema", found, keyword)


def _as_format(output: Any) -> ResponseFormat:
    if output is None:
        return ResponseFormat.json_schema({}, name="any")
    if isinstance(output, ResponseFormat):
        if not isinstance(output, TextFormat | JsonObjectFormat | JsonSchemaFormat):
            raise UsageError(
                f"outform cannot parse replies for response format type {output.type!r}",
                fix="use a text, json_object or json_schema format",
            )
        return output
    if isinstance(output, bool):  # a boolean schema: true is {}, false a SchemaError
        output = boolean_root(output, "the output (schema=)")
    if isinstance(output, Mapping):
        return ResponseFormat.json_schema(output)
    return ResponseFormat.of(output)
