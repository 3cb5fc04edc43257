"""Streaming: typed snapshots of a reply while it arrives, and an early stop when it goes wrong.

```python
for snapshot in outform.parse_stream(chunks, type=Invoice):
    render(snapshot.value)        # a PartialInvoice: every field optional, filled in as it comes
final = snapshot.result           # the last snapshot: validated like outform.parse(full_text)
```

Snapshots follow the no-flicker rule of :mod:`outform.parse.partial`: a value once shown never
changes, except when it turns out to have been reasoning written without its opening tag (a
`</think>` arrives after it): the stream then restarts after the tag, and the next snapshot says
so (`restarted`). A value that may still turn out so (words came before it, no reasoning tag
yet) is never shown `complete` before the end, and does not stop the stream. Per-field policies
refine the rule, as `Annotated` markers on the output type:

- `Done`: the field appears only once complete (no partial strings or lists).
- `Required`: the object holding the field is not shown until the field is present.
- `WithState`: the field is a :class:`StreamState` (value and "pending" / "incomplete" /
  "complete").

While the reply streams, :class:`outform.parse.incremental.Checker` follows it against the
schema; as soon as it can no longer become valid (or degenerates into a loop), `feed` raises
:class:`StreamAbortedError` so the caller can stop the provider's stream and re-ask.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import typing
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Final, Generic, Literal, TypeVar, cast

import typing_extensions
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainValidator,
    PydanticUserError,
    RootModel,
    StringConstraints,
    TypeAdapter,
    WrapValidator,
    create_model,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic.fields import FieldInfo

from outform import arguments, jsontext
from outform.errors import (
    InternalError,
    OutformError,
    OutputError,
    StreamAbortedError,
    UsageError,
    guarded,
)
from outform.format import JsonSchemaFormat, ResponseFormat
from outform.parse import arraypath, by_name, context, decimals, folded, strictness
from outform.parse.cache import shared as _pipelines
from outform.parse.context import refuse_surrogates, too_deep, too_long, too_slow
from outform.parse.extract import (
    TAG_SPAN,
    find_fences,
    opener_run_end,
    opens_json,
    reasoning_tag,
    scan,
    strip_reasoning,
)
from outform.parse.hint import RetryHint, Violation, preview
from outform.parse.incremental import (
    DEFAULT_DEGENERATION,
    Checker,
    Degeneration,
    DegenerationGuard,
)
from outform.parse.partial import (
    MISSING,
    PartialDict,
    PartialList,
    PartialParser,
    is_complete,
    plain,
)
from outform.parse.pipeline import Pipeline
from outform.parse.result import Change, ParseResult
from outform.parse.scalars import (
    as_integer,
    is_null_word,
    normalize_token,
    parse_bool,
    parse_number,
)
from outform.parse.unescape import ESCAPE_WINDOW, looks_escaped, may_look_escaped
from outform.parse.validate import pydantic_violations
from outform.parse.values import number_text
from outform.schema import pointer
from outform.schema.compiled import compile_schema
from outform.schema.derive import adapter_for, is_type
from outform.schema.dialects.result import DialectResult
from outform.schema.types import accepted_types
from outform.schema.types import choices as enum_choices
from outform.trace import runtime as _trace
from outform.trace.tracer import record_abort

T = TypeVar("T")


# -- policies -------------------------------------------------------------------------------


class StreamPolicy:
    """A per-field stream policy, used as `Annotated[type, Done]` (see the module doc)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


Done: Final = StreamPolicy("Done")
"""Show the field only once its value is complete."""
Required: Final = StreamPolicy("Required")
"""Hold the object that holds this field until the field is present."""
WithState: Final = StreamPolicy("WithState")
"""Expose the field as a StreamState: its value and whether it is pending, incomplete or
complete."""

FieldState = Literal["pending", "incomplete", "complete"]


@dataclass(frozen=True, slots=True)
class StreamState(Generic[T]):
    """A field under the `WithState` policy: what is known of it so far."""

    value: T | None
    state: FieldState


# -- errors ---------------------------------------------------------------------------------


# -- snapshots ------------------------------------------------------------------------------


Build = Callable[[Any], "tuple[Any, tuple[Change, ...]]"]
"""Snapshot data -> (the partial typed value, the coercions that made it)."""


class Snapshot(Generic[T]):
    """The reply as far as it has arrived.

    `data`: the partial value as JSON (open arrays and objects are read-only views that share
    storage with later snapshots; `outform.parse.partial.plain` copies one to plain JSON).
    `value`: the same as the partial type (computed on first access), or for the last snapshot
    the validated value. `offset`: characters received. `complete`: the JSON value is complete.
    `result`: the ParseResult, on the last snapshot only. `attempt`: which call of a
    generate() stream the snapshot belongs to (1, then 2 after a re-ask, ...); `first`: it is
    the first snapshot of its attempt (what was shown before belongs to a reply given up).
    `restarted`: it is the first snapshot after the stream restarted at the closing tag of
    reasoning written without its opening tag (what was shown before was reasoning).
    """

    __slots__ = (
        "_build",
        "_changes",
        "_value",
        "attempt",
        "complete",
        "data",
        "first",
        "offset",
        "restarted",
        "result",
    )

    def __init__(
        self,
        data: Any,
        offset: int,
        complete: bool = False,
        build: Build | None = None,
        result: ParseResult[T] | None = None,
        *,
        attempt: int = 1,
        first: bool = False,
        restarted: bool = False,
    ) -> None:
        self.data = data
        self.offset = offset
        self.complete = complete
        self.result = result
        self.attempt = attempt
        self.first = first
        self.restarted = restarted
        self._build = build
        self._value: Any = MISSING
        self._changes: tuple[Change, ...] = ()

    @property
    def final(self) -> bool:
        """This is the validated end of the stream."""
        return self.result is not None

    @property
    def value(self) -> Any:
        """The partial typed value (None when a `Required` field holds it back), or the
        validated value on the last snapshot. A field of a partial value holds only a value of
        its declared type: converted when the pipeline's scalar rules convert it (`changes`
        says so), else not shown yet."""
        if self._value is MISSING:
            if self.result is not None:
                self._value = self.result.value
            elif self._build is not None:
                try:
                    built, self._changes = self._build(self.data)
                except OutformError:
                    raise
                except Exception as exc:  # only outform's errors leave a public property
                    raise InternalError.wrap(exc, "stream") from exc
                self._value = built if _shown(built) else None
            else:
                self._value = self.data
        return self._value

    @property
    def changes(self) -> tuple[Change, ...]:
        """What was converted to give `value`: the pipeline's changes on the last snapshot; on
        a partial one, the fields converted to their declared type (`"36"` to 36)."""
        if self.result is not None:
            return self.result.changes
        _ = self.value
        return self._changes

    def in_attempt(
        self, *, attempt: int, first: bool, data: Any = MISSING, build: Build | None = None
    ) -> Snapshot[T]:
        """This snapshot, numbered as part of `attempt` (and with other data or typing)."""
        return Snapshot(
            self.data if data is MISSING else data,
            self.offset,
            self.complete,
            build or self._build,
            self.result,
            attempt=attempt,
            first=first,
            restarted=self.restarted,
        )

    def __repr__(self) -> str:
        kind = "final" if self.final else "partial"
        return f"Snapshot({kind}, attempt={self.attempt}, offset={self.offset}, data={self.data!r})"


# -- the stream parser ----------------------------------------------------------------------


class StreamParser(Generic[T]):
    """Parses one streamed reply: `feed` each chunk, then `finish`.

    `output` and `level` are those of :class:`outform.Pipeline` (a type, a JSON Schema or a
    ResponseFormat), or `pipeline` is one already built. `wire`: the dialect translation when
    the provider enforces a translated schema (the check follows the wire schema; snapshots of
    a root the dialect wrapped in `{"value": ...}` show the root itself). `every`: characters
    to gather before parsing again (0: every chunk; a larger value costs less per character
    and delays snapshots and the early stop by that much). `validate`: check the schema while
    streaming. `abort`: raise StreamAbortedError on a violation (otherwise it is only
    recorded in `violation`). `degeneration`: the limits of the degeneration guard, None to
    disable it. `record`: record the reply (its end, or its abort) as a streamed run in the
    trace store; off when the caller records the run itself (stream()).
    """

    @guarded("stream")
    def __init__(
        self,
        output: Any = None,
        *,
        level: str | None = None,
        every: int = 0,
        validate: bool = True,
        abort: bool = True,
        degeneration: Degeneration | None = DEFAULT_DEGENERATION,
        pipeline: Pipeline[T] | None = None,
        wire: DialectResult | None = None,
        record: bool = True,
        **options: Any,
    ) -> None:
        arguments.one_of("pipeline", pipeline, (Pipeline, type(None)), "an outform.Pipeline")
        arguments.one_of("wire", wire, (DialectResult, type(None)), "a DialectResult or None")
        arguments.one_of(
            "degeneration", degeneration, (Degeneration, type(None)), "a Degeneration or None"
        )
        self.pipeline: Pipeline[T] = pipeline or _pipelines.get(output, level, options)
        self.every = arguments.whole("every", every, 0)
        self.abort = arguments.flag("abort", abort)
        validate = arguments.flag("validate", validate)
        self.record = arguments.flag("record", record) and not self.pipeline.options.shadow
        opts = self.pipeline.options
        # A reply written under a provider's dialect is checked, while it streams, against the
        # schema the provider enforced; the pipeline maps it back and validates the original.
        compiled = compile_schema(wire.validation_schema) if wire else self.pipeline.compiled
        self._unwrap = wire is not None and wire.wrapped_root
        self._compiled = compiled
        self._validate = validate
        self.checker, self.parser = self._reader()
        self.guard = DegenerationGuard(degeneration) if degeneration is not None else None
        self.violation: Violation | None = None
        """The first reason the reply cannot succeed (also when `abort` is off)."""
        self.stopped = False
        """The value is complete and the rest of the reply degenerated: reading can stop."""
        output_type = (
            self.pipeline.format.output_type
            if isinstance(self.pipeline.format, JsonSchemaFormat)
            else None
        )
        self._build = typed_builder(output_type)
        self._text_output = _reads_text(self.pipeline)
        """The output is text (see `_reads_text`): no snapshots, the final parse decides."""
        self._chunks: list[str] = []
        self._parsed = 0
        """How many of the chunks were parsed (`every` holds the others back)."""
        self._pending_size = 0
        self._last: Snapshot[T] | None = None
        self._level = opts.level
        self._decided: bool | None = None
        self._item: bool | None = None
        """Whether the followed value is an item of the values gathered (see `_gathered`)."""
        self._unescapable = False
        self._head = ""
        """The first character of the followed value, once it is complete."""
        self._extracts = "extract" in opts.stages
        self._options = opts
        self._deep: str | None = None
        """Once the parser met nesting past `max_depth`: the reply from the last opener of the
        followed value's first run of openers (see `_deep_run`); "" once judged."""
        self._deep_at = -1
        """Where that opener is in the reply."""
        self._watch = self._extracts
        """Reasoning written without its opening tag may still end (a closing `</think>` may
        come): no reasoning tag has been met yet (see `_reasoning_closed`)."""
        self._seen = ""
        """The end of the text looked at for reasoning tags (one may span two chunks)."""
        self._origin = 0
        """Where the text read for the answer begins: after the closing tag of reasoning
        written without its opening tag, once the stream restarted there."""
        self._restarted = False
        """The stream restarted; the next snapshot says so."""
        self._spent = 0.0
        """Seconds spent parsing so far (waiting for chunks does not count): the stream's share
        of `time_limit`."""

    def _reader(self) -> tuple[Checker | None, PartialParser]:
        """A new push parser, with a new checker listening to it."""
        opts = self.pipeline.options
        compiled = self._compiled
        accepted = accepted_types(compiled)
        roots = frozenset(k for k in ("object", "array") if k in accepted)
        checker = (
            Checker(
                compiled,
                strict=opts.level == "off",
                lenient=opts.lenient,
                tolerance=opts.tolerance,
                max_depth=opts.max_depth,
                time_limit=opts.time_limit,
            )
            if self._validate
            else None
        )
        parser = PartialParser(
            roots=roots or frozenset({"object", "array"}),
            scalars=bool(accepted - {"object", "array"}),
            extract="extract" in opts.stages,
            listener=checker,
            max_depth=opts.max_depth,
        )
        return checker, parser

    @property
    def text(self) -> str:
        """Everything received so far."""
        return "".join(self._chunks)

    @property
    def provisional(self) -> bool:
        """The value followed may still turn out to be reasoning: words came before it, and no
        reasoning tag has been met, so a closing `</think>` (reasoning written without its
        opening tag) may yet follow. Such a value is never shown complete before the end of
        the stream, and does not stop it."""
        return self._watch and self.parser.start is not None and self.parser.prose

    @property
    def received(self) -> int:
        """Characters received so far (parsed or held back by `every`)."""
        return self.parser.received + self._pending_size

    @property
    def snapshot(self) -> Snapshot[T] | None:
        """The latest snapshot, if any."""
        return self._last

    def feed(self, chunk: str) -> list[Snapshot[T]]:
        """Read one chunk; the new snapshot (if the value shown changed). Raises StreamAbortedError
        when the reply can no longer become valid (`abort=True`)."""
        try:  # inline, not @guarded: a wrapper call per chunk costs ~5% of a stream
            if type(chunk) is not str and not isinstance(chunk, str):
                raise _not_text(chunk)
            if not chunk:
                return []
            received = self.parser.received + self._pending_size + len(chunk)
            if received > self._options.max_chars:
                raise too_long(received, self._options.max_chars, streaming=True)
            if not chunk.isascii():  # (a lone surrogate: refused where `parse` refuses it)
                refuse_surrogates(chunk, received - len(chunk))
            chunks = self._chunks
            chunks.append(chunk)
            if not self.every:
                return self._parse(chunk)
            self._pending_size += len(chunk)
            if self._pending_size < self.every:
                return []
            return self.flush()
        except OutformError:
            raise
        except Exception as exc:
            raise InternalError.wrap(exc, "stream") from exc

    @guarded("stream")
    def flush(self) -> list[Snapshot[T]]:
        """Parse what `every` held back (`finish` does it too)."""
        if not self._pending_size:
            return []
        held = self._chunks[self._parsed :]
        self._pending_size = 0
        return self._parse("".join(held))

    @guarded("stream")
    def finish(self) -> ParseResult[T]:
        """The final value, validated through the pipeline: equal to `outform.parse` of the
        whole reply with the same output and options. Raises OutputError like it."""
        self.flush()
        return self.pipeline.run(self.text, record=self.record, streaming=True)

    @guarded("stream")
    def final(self) -> Snapshot[T]:
        """`finish`, as the last snapshot: `complete` unless the reply ended inside the JSON
        value it was writing (cut off: the final parse closed it)."""
        result = self.finish()
        restarted, self._restarted = self._restarted, False
        return Snapshot(
            result.data,
            len(self.text),
            complete=not _ends_cut(self.text),
            result=result,
            restarted=restarted,
        )

    # -- internals --------------------------------------------------------------------------

    def _parse(self, text: str) -> list[Snapshot[T]]:
        """Parse newly received text; the limits of the options hold at every chunk:
        `max_depth` as the parser reads, `time_limit` over the time spent parsing."""
        started = context.clock()
        snapshots = self._advance(text)
        self._spent += context.clock() - started
        if self._spent > self._options.time_limit:
            raise too_slow(self._options.time_limit, "stream", self.received)
        return snapshots

    def _advance(self, text: str) -> list[Snapshot[T]]:
        self._parsed = len(self._chunks)
        parser = self.parser
        if self.guard is not None and self.violation is None:
            degenerate = self.guard.feed(text)
            if degenerate is not None:
                if parser.done:
                    self.stopped = True
                elif self.guard.limits.inside:  # a bet against a reply still valid so far
                    self._stop(degenerate, "degenerate", len(text))
        changed = False
        while self._watch:
            closing = self._reasoning_closed(text)
            if closing is None:
                break
            # Read up to the tag's end: a tag inside a string of the value followed is that
            # string's text (as `outform.parse` reads it), and the watch goes on after it.
            upto = closing[1] - parser.received
            changed = parser.feed(text[:upto]) or changed
            text = text[upto:]
            if parser.in_string:
                self._watch = True
                continue
            if parser.start is not None and parser.start < closing[0]:
                # The value followed was in reasoning written without its opening tag: the
                # answer begins after the closing tag, where `outform.parse` reads it too.
                parser = self._restart(closing[1])
                changed = True
                text = ""  # (the restart read the whole reply after the tag)
            break
        changed = parser.feed(text) or changed
        if parser.too_deep:
            if self._deep_run(parser, text):
                raise too_deep(self._options.max_depth, where=f"character {parser.too_deep_at}")
            if self.parser is not parser:  # the run was prose: read on after it
                parser = self.parser
                changed = True
        if self.violation is None and not self.provisional:
            checker = self.checker
            if checker is not None and checker.violation is not None:
                if self._decides() and self._reading_is_final() and not self._gathered():
                    self._stop(checker.violation, "schema")
            elif (
                parser.error is not None
                and not parser.too_deep
                and self._decides()
                and self._syntax_is_final()
            ):
                self._stop(parser.error, "syntax")
        if not changed or self._text_output:
            return []
        data = parser.value
        if self._unwrap:
            data = data["value"] if isinstance(data, Mapping) and "value" in data else MISSING
        if data is MISSING:
            return []
        # A value that is one item of the values gathered into the root's list (JSON lines
        # for a list root) is not the value: more may follow, and the final value is the list
        # of them all. It is never shown complete, so a complete snapshot never changes.
        complete = parser.done and not self.provisional and not self._gathered()
        snapshot: Snapshot[T] = Snapshot(
            data, parser.received, complete, self._build, restarted=self._restarted
        )
        self._restarted = False
        self._last = snapshot
        return [snapshot]

    def _deep_run(self, parser: PartialParser, text: str) -> bool:
        """Whether the nesting past `max_depth` the parser met (in the value it follows, which
        it then stopped reading) is refused by `outform.parse` too: raise it now.

        The value's first run of openers (`[[[…`, `opener_run_end`) is judged once what follows
        it decides, as the extraction judges it (`extract.opens_json`): while the run goes on
        (or only spaces follow it, or a word that may still grow), nothing is decided. Followed
        by what begins no JSON value (`[[[… Let me see`), it is prose, as `parse` reads it
        whatever its length and as the parser reads a run it could wait on: the stream reads
        on after it (see `_restart`). Followed by JSON (`[[[… 1`, or a key), it is JSON
        nested past the limit: raised at once when only whitespace, reasoning blocks and a
        fence came before it, where the extraction reads it as the parser does; after words
        (`self.parser.prose`) the extraction may read what came before otherwise (a bracket
        that opens JSON in its reading and not in the parser's), and the final parse decides.
        A reply that ends inside the run is also the final parse's to judge (deep JSON, cut
        off)."""
        if self._deep == "":
            return False  # judged: the final parse decides
        if self._deep is None:
            assert parser.start is not None
            whole = self.text[: parser.received]
            run_end = opener_run_end(whole, parser.start)
            assert run_end is not None  # the value starts with an opener
            self._deep_at = run_end - 1
            self._deep = whole[self._deep_at :]
        else:
            self._deep += text
            run_end = opener_run_end(self._deep, 0)  # (it starts at the run's last opener)
            assert run_end is not None
            if run_end > 1:
                self._deep_at += run_end - 1
                self._deep = self._deep[run_end - 1 :]
        verdict = opens_json(self._deep, 0, final=False)
        if verdict is None:
            return False
        self._deep = ""
        if not verdict:
            # Prose, as `parse` reads it (and the parser a run it can wait on): read on after
            # it. (The run stays before the value read then: that value decides nothing.)
            self._restart(self._deep_at + 1, origin=False)
            return False
        return not parser.prose

    def _reasoning_closed(self, text: str) -> tuple[int, int] | None:
        """Where a closing reasoning tag with no opening tag before it (reasoning the reply
        began without its opening tag, as `extract.strip_reasoning` reads it) lies in the
        reply, once it arrives: (its start, its end). The first reasoning tag met, opening or
        closing, ends the watch: after an opening tag, no closing one is dangling."""
        seen = self._seen
        window = seen + text
        if "<" not in window:
            self._seen = ""
            return None
        found = reasoning_tag(window)
        if found is None:
            # Only a tag begun at the last `<` may still be completed by what follows.
            last = window.rfind("<")
            self._seen = window[last:] if len(window) - last < TAG_SPAN else ""
            return None
        self._watch = False
        self._seen = ""
        closing, start, end = found
        if not closing:
            return None
        offset = self.parser.received - len(seen)
        return offset + start, offset + end

    def _restart(self, at: int, *, origin: bool = True) -> PartialParser:
        """Read the reply again from `at` (after the closing tag of reasoning), with a new
        parser and checker: what was shown before was reasoning, and the next snapshot says
        so (`restarted`), when a snapshot was shown before. `origin`: the text read for the
        answer begins there (after reasoning; not after a run of brackets that was prose,
        which a value after it does not make any less a region of the reply)."""
        self.checker, parser = self._reader()
        self.parser = parser
        parser.skip(at)
        if origin:
            self._origin = at
        self.violation = None
        self._decided = None
        self._item = None
        self._deep = None
        self._head = ""
        self._unescapable = False
        self._restarted = self._last is not None  # said only when something was shown
        self._last = None
        parser.feed(self.text[at:])
        return parser

    def _decides(self) -> bool:
        """Whether the value the parser follows decides the reply, so that its violation may
        stop the stream: the pipeline may not take the reply's own text as the value (a
        string root; a scalar root when the reply does not start with a bracket), and no bracket
        before the value began a region the pipeline would try too (a block only the tolerant
        decoders read, a fence the parser passed over; not one in reasoning). Once no, always
        no; yes is kept once the value's start is certain."""
        known = self._decided
        if known is not None:
            return known
        parser = self.parser
        start = parser.start
        if start is None:
            decides = not self.pipeline.reads_text(starts_with_bracket=False)
        else:
            text = self.text
            # (Less its reasoning blocks, which the pipeline removes before it reads the rest.)
            prefix = strip_reasoning(text[self._origin : start])[0]
            bracket = not prefix.strip() and text[start : start + 1] in ("{", "[")
            decides = (
                not self.pipeline.reads_text(bracket) and "{" not in prefix and "[" not in prefix
            )
            if decides and text[start : start + 1] == '"' and self._extracts:
                # A string that is the whole value: the pipeline reads the regions inside it as
                # it reads those of prose, so a bracket in it (so far) may begin the answer.
                held = text[start : parser.end]
                decides = "{" not in held and "[" not in held
                if decides and parser.end is None:
                    return True  # not kept: the string is still being written
        if not decides or parser.started or parser.broken:
            self._decided = decides
        return decides

    def _gathered(self) -> bool:
        """Whether the followed value is one item of the values the pipeline gathers into
        the root's array (a value that is no array, for a root that wants a list: JSON lines),
        so that its schema violation decides nothing: the list is the values together, judged
        at the end (`{"a": 1}⏎{"a": 2}` for a list of at least two)."""
        known = self._item
        if known is not None:
            return known
        parser = self.parser
        if not (self._extracts and self.pipeline.gathers) or parser.start is None:
            return False
        item = self._window(parser.start)[:1] != "["
        if parser.started:  # (kept once the value's start is certain)
            self._item = item
        return item

    def _reading_is_final(self) -> bool:
        """Whether the pipeline reads the followed value as the stream parser did, so that its
        schema violation stands. At *full*, a value that is not JSON as written (a syntax error,
        or a reply cut off here) is read by the tolerant decoders, which read it otherwise: they
        delimit strings by their own rules (three quotes open a triple-quoted string where the
        parser read `""`; `"a"b"` is one string with a quote inside), and json-repair drops the
        last member of a cut-off array when it is empty or just opened (`[{}, {` reads `[{}]`),
        and a number only whitespace follows at the end (it may have been longer). So the
        parser's reading decides nothing once a syntax error is met, nor while the text
        received ends with a quote, a bracket or a digit; a violation stands once anything else
        follows, or once the followed value is a container the parser has closed: the pipeline
        reads that region as written, whatever comes after it. (Waiting for a later character
        made the stop depend on where the chunks were cut: a reply of two values whose chunks
        all ended on a quote or a bracket ran to its end, where `parse` took the second.)"""
        if self._level != "full":
            return True
        parser = self.parser
        if parser.error is not None:
            return False
        if parser.done and parser.start is not None:
            if not self._head:
                self._head = self._window(parser.start)[:1]
            if self._head in ("{", "["):
                return True
        for chunk in reversed(self._chunks):
            tail = chunk.rstrip()
            if tail:
                return tail[-1] not in _UNCONFIRMED
        return True

    def _syntax_is_final(self) -> bool:
        """Whether the pipeline could still read a reply that is not JSON as written. A no is
        kept (the error stays, and a stream never stopped is never wrong): asking again after
        every chunk cost the whole text each time. Only the unescape stage (not at *off*)
        reads such a value, as the body of a JSON string, which a quote not escaped ends: a
        value holding one (`{"a": …`) is never unescaped, and its error is final at once.
        Otherwise whether it looks escaped is known once its first `ESCAPE_WINDOW`
        characters are (a chunk may end inside an escape, `{\\` or `{\\u00`)."""
        if self._level == "full" or self._unescapable:
            return False  # the tolerant decoders, or unescaping, may read it
        start = self.parser.start
        if start is None or "unescape" not in self._options.stages:
            return True
        window = self._window(start)
        if _BARE_QUOTE.search(window) is not None:
            return True
        if looks_escaped(window):
            self._unescapable = True
            return False
        return not may_look_escaped(window)  # (not kept: the next chunk decides)

    def _window(self, start: int) -> str:
        """The first `ESCAPE_WINDOW` characters received from `start`, joining only the chunks
        from there (asked again at each chunk while the window is not yet full)."""
        pieces: list[str] = []
        at = self.parser.received + self._pending_size
        for chunk in reversed(self._chunks):
            at -= len(chunk)
            pieces.append(chunk[max(start - at, 0) :])
            if at <= start:
                break
        return "".join(reversed(pieces))[:ESCAPE_WINDOW]

    def _stop(
        self,
        violation: Violation,
        reason: Literal["schema", "syntax", "degenerate"],
        unread: int = 0,
    ) -> None:
        self.violation = violation
        if not self.abort:
            return
        what = {
            "schema": "the reply can no longer match the schema",
            "syntax": "the reply is not valid JSON",
            "degenerate": "the reply is degenerating into a loop",
        }[reason]
        offset = self.parser.received + self._pending_size + unread
        recorder = _trace.active() if self.record else None
        if recorder is not None:
            record_abort(recorder, self.pipeline.schema_hash, offset, reason, (violation,))
        raise StreamAbortedError(
            f"stream stopped: {what}",
            hint=RetryHint((violation,)),
            offset=offset,
            text=self.text,
            reason=reason,
        )


_BARE_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*"')
"""A quote no backslash escapes (after an even run of backslashes, or none): it ends the body
of a JSON string, so text holding one is never read as escaped JSON (`unescape_text`)."""

_UNCONFIRMED = frozenset('"{}[]0123456789')
"""The last characters after which, at *full*, the tolerant decoders may read the value otherwise
than the stream parser (see `StreamParser._reading_is_final`)."""


# -- entry points ---------------------------------------------------------------------------


def _reads_text(pipeline: Pipeline[Any]) -> bool:
    """Whether the output is text: the root takes only a string (and null), no enum of them
    (`str`, `{"type": "string"}`). The pipeline then takes the reply's own text as the value
    whenever the schema takes it as written (`"quoted"` is those 8 characters, quotes
    included), so a string the stream decoded would not be the final value: no snapshots."""
    accepted = accepted_types(pipeline.compiled)
    root = pipeline.compiled.resolve("")[1]
    return (
        "string" in accepted
        and accepted <= {"string", "null"}
        and not (isinstance(root, dict) and enum_choices(root) is not None)
    )


def _ends_cut(text: str) -> bool:
    """Whether the reply ends inside what it opened: a bracketed region, a string in one, or
    a fenced block (reasoning set aside). Its last snapshot is then not complete, whichever
    value the final parse took: the reply was cut off."""
    body = strip_reasoning(text)[0]
    scanned = scan(body)
    if scanned.open_string or (scanned.spans and not scanned.spans[-1].closed):
        return True
    fences = find_fences(body)
    return bool(fences) and not fences[-1].closed


def _not_text(chunk: Any) -> UsageError:
    """A chunk that is not text. Bytes are refused too, unlike `parse`'s whole reply: a chunk
    of bytes may end inside a character, which no chunk-by-chunk decoding can mend."""
    fix = (
        "decode the stream with an incremental decoder, "
        "codecs.getincrementaldecoder('utf-8')(), and feed its text"
        if isinstance(chunk, bytes | bytearray | memoryview)
        else "feed the reply's text, chunk by chunk"
    )
    return arguments.refused("each chunk", "a str", chunk, fix)


def _output(schema: Any, type_: Any) -> Any:
    if schema is not None and type_ is not None:
        raise UsageError(
            "pass either schema= or type=, not both",
            fix="type= derives the schema from the type; drop schema=",
        )
    return type_ if type_ is not None else schema


def parse_stream(
    chunks: Iterable[str],
    schema: Mapping[str, Any] | ResponseFormat | None = None,
    *,
    type: Any = None,
    level: str | None = None,
    **options: Any,
) -> Iterator[Snapshot[Any]]:
    """Snapshots of a reply while its chunks arrive, then the validated value as the last one.

    Raises StreamAbortedError as soon as the reply can no longer become valid, OutputError at the
    end when it is not valid. `options` are those of StreamParser and of `outform.parse`.
    """
    arguments.iterable("chunks", chunks, "an iterable of text chunks (a list, a generator)")
    parser: StreamParser[Any] = StreamParser(_output(schema, type), level=level, **options)
    for chunk in chunks:
        yield from parser.feed(chunk)
        if parser.stopped:
            break
    yield from parser.flush()
    yield parser.final()


async def aparse_stream(
    chunks: AsyncIterable[str],
    schema: Mapping[str, Any] | ResponseFormat | None = None,
    *,
    type: Any = None,
    level: str | None = None,
    **options: Any,
) -> AsyncIterator[Snapshot[Any]]:
    """`parse_stream` for an asynchronous source of chunks."""
    if not isinstance(chunks, AsyncIterable):
        raise arguments.refused(
            "chunks", "an asynchronous iterable of text chunks (async for)", chunks
        )
    parser: StreamParser[Any] = StreamParser(_output(schema, type), level=level, **options)
    async for chunk in chunks:
        for snapshot in parser.feed(chunk):
            yield snapshot
        if parser.stopped:
            break
    for snapshot in parser.flush():
        yield snapshot
    yield parser.final()


def replay(
    text: str,
    chunk_size: int = 16,
    output: Any = None,
    *,
    level: str | None = None,
    **options: Any,
) -> Iterator[Snapshot[Any]]:
    """Stream a stored reply in chunks of `chunk_size` characters (what `outform parse
    --stream` shows). Ends with the validated value; raises like `parse_stream`."""
    arguments.text("text", text, fix="pass the stored reply as str")
    if type(chunk_size) is not int or chunk_size < 1:
        raise arguments.refused("chunk_size", "a whole number ≥ 1", chunk_size, fix="use e.g. 16")
    chunks = (text[i : i + chunk_size] for i in range(0, len(text), chunk_size))
    return parse_stream(chunks, output, level=level, **options)


def stream_items(
    chunks: Iterable[str],
    output: Any = None,
    path: str | None = None,
    *,
    level: str | None = None,
    **options: Any,
) -> Iterator[Any]:
    """The elements of an array, one by one, each as soon as it is complete.

    The array is the top-level value, or the one at `path` ("items", "data.items" or a JSON
    pointer "/data/items"). With a typed output each element is validated as the array's item
    type; the whole reply is still validated at the end (an invalid reply raises OutputError
    after the elements that were complete).
    """
    if path is not None:
        arguments.text("path", path, fix='name the array: "items", "data.items" or "/data/items"')
    parts = _path_parts(path)
    parser: StreamParser[Any] = StreamParser(output, level=level, **options)
    arraypath.check(parser.pipeline.compiled, parts, path or "")
    convert = _item_converter(parser, parts)
    seen = 0
    for chunk in chunks:
        parser.feed(chunk)
        if parser.provisional:
            continue  # may turn out to be reasoning: its items come from the final result
        array = _lookup(parser.parser.value, parts)
        if isinstance(array, PartialList):
            done = array.completed
        elif isinstance(array, list):
            done = len(array)
        else:
            continue
        for index in range(seen, done):
            yield convert(array[index], index)
        seen = max(seen, done)
        if parser.stopped:
            break
    result = parser.finish()
    array = _lookup(result.data, parts)
    if isinstance(array, list):
        for index in range(seen, len(array)):
            yield convert(array[index], index)


def _path_parts(path: str | None) -> list[str]:
    if not path:
        return []
    if path.startswith("/"):
        return pointer.parts(path)
    return path.split(".")


def _lookup(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(value, Mapping):
            value = value.get(part, MISSING)
        elif isinstance(value, PartialList | list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def _item_converter(parser: StreamParser[Any], parts: list[str]) -> Callable[[Any, int], Any]:
    fmt = parser.pipeline.format
    output_type = fmt.output_type if isinstance(fmt, JsonSchemaFormat) else None
    if output_type is None:
        return lambda item, index: item
    item_type = _item_type(output_type, parts)
    if item_type is None:
        return lambda item, index: item
    adapter = adapter_for(item_type)
    where = pointer.from_parts(parts)

    def convert(item: Any, index: int) -> Any:
        try:
            return adapter.validate_python(item)
        except PydanticValidationError as exc:
            found = pydantic_violations(exc)
            path = f"{where}/{index}"
            hint = RetryHint(tuple(dataclasses.replace(v, path=path + v.path) for v in found))
            raise OutputError(f"array item {path} is not valid", hint=hint) from None
        except Exception as exc:  # a validator of the caller's that fails otherwise
            raise InternalError.wrap(exc, "stream") from exc

    return convert


def _item_type(output_type: Any, parts: list[str]) -> Any:
    """The element type of the array at `parts` of the output type, if the type says."""
    current = output_type
    for part in [*parts, None]:
        current = _strip(current)
        while _is_root_model(current):  # a RootModel holds its root's items
            current = _strip(_root_annotation(current))
        if part is None:
            origin = typing.get_origin(current)
            if origin in (list, tuple, set, frozenset) or _is_sequence(origin):
                args = typing.get_args(current)
                return args[0] if args else None
            return None
        if typing.get_origin(current) in (dict, Mapping, typing.Mapping):
            args = typing.get_args(current)
            current = args[1] if len(args) == 2 else Any
            continue
        fields = _fields(current)
        if fields is None:
            return None
        match = next((f for f in fields if f.spelled(part)), None)
        if match is None:
            return None
        current = match.annotation
    return None


def _is_sequence(origin: Any) -> bool:
    return origin in (Sequence, Iterable)


def _strip(annotation: Any) -> Any:
    """Without Annotated and Optional wrappers."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, _UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation


_UnionType = type(int | None)


# -- partial types --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Field:
    key: str
    """The JSON key (the first the type reads the field from; its name when it reads it only
    through a path into a nested key, see outform/parse/by_name.py)."""
    name: str
    """The attribute (or TypedDict key)."""
    annotation: Any
    policies: frozenset[str]
    also: tuple[str, ...] = ()
    """The other keys the type reads the field from, in the order it tries them (its name, the
    choices of an `AliasChoices`: see outform/parse/by_name.py)."""
    read: bool = True
    """Whether the type reads the field from `key` (not from a path only)."""

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every key the type reads the field from, in the order it tries them."""
        return (self.key, *self.also) if self.read else self.also

    def written(self, data: Mapping[str, Any]) -> str | None:
        """The key `data` holds the field under (the first the type tries), or None."""
        return next((key for key in self.spellings if key in data), None)

    def spelled(self, key: str) -> bool:
        """Whether the type reads the field from `key`."""
        return key in self.spellings


def _policies(metadata: Iterable[Any]) -> frozenset[str]:
    return frozenset(m.name for m in metadata if isinstance(m, StreamPolicy))


def _fields(tp: Any) -> list[_Field] | None:
    """The fields of a Pydantic model, dataclass or TypedDict (None for other types)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        config: Any = tp.model_config
        fields = [
            _spelled(
                name,
                info,
                _validated(info.annotation, [*info.metadata, *_field_validators(tp, name)]),
                _policies(info.metadata),
                config,
            )
            for name, info in tp.model_fields.items()
        ]
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        infos = getattr(tp, "__pydantic_fields__", {})
        config = getattr(tp, "__pydantic_config__", None)
        fields = [
            _field_of(
                f.name,
                _validated(hints.get(f.name, Any), _field_validators(tp, f.name)),
                infos.get(f.name),
                config,
            )
            for f in dataclasses.fields(tp)
        ]
    elif typing_extensions.is_typeddict(tp):  # also TypedDicts made by typing_extensions
        hints = typing.get_type_hints(tp, include_extras=True)
        config = getattr(tp, "__pydantic_config__", None)
        fields = [_field_of(name, hint, None, config) for name, hint in hints.items()]
    else:
        return None
    # (A key that is another field's first is that field's.)
    keys = {f.key for f in fields if f.read}
    return [dataclasses.replace(f, also=tuple(k for k in f.also if k not in keys)) for f in fields]


def _validated(annotation: Any, extras: Sequence[Any]) -> Any:
    """The annotation with what Pydantic validates the field by beside its type (its
    constraints and `Annotated` validators, the validators its class declares for it), as
    `Annotated` metadata: what the stream runs a value through to show it as the type makes
    it (see `_TransformPlan`)."""
    if not extras:
        return annotation
    return Annotated[(annotation, *extras)]


_VALIDATOR_KINDS: Final = {
    "after": AfterValidator,
    "before": BeforeValidator,
    "plain": PlainValidator,
    "wrap": WrapValidator,
}


def _field_validators(tp: Any, name: str) -> list[Any]:
    """The `field_validator`s a Pydantic model or dataclass declares for field `name` (or for
    every field, "*"), as the `Annotated` validators Pydantic itself makes of them, in order."""
    decorators = getattr(tp, "__pydantic_decorators__", None)
    if decorators is None:
        return []
    found = []
    for decorator in decorators.field_validators.values():
        fields = decorator.info.fields
        kind = _VALIDATOR_KINDS.get(decorator.info.mode)
        if kind is not None and (name in fields or "*" in fields):
            found.append(kind(decorator.func))
    return found


def _model_validated(tp: Any) -> bool:
    """Whether a model or dataclass declares validators of the whole object
    (`model_validator`, or the older `root_validator`), which may change any field."""
    decorators = getattr(tp, "__pydantic_decorators__", None)
    return decorators is not None and bool(
        decorators.model_validators or decorators.root_validators
    )


def _is_root_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, RootModel)


def _root_annotation(tp: Any) -> Any:
    """A RootModel's root type, with what Pydantic validates it by (see `_validated`)."""
    info = tp.model_fields["root"]
    return _validated(info.annotation, [*info.metadata, *_field_validators(tp, "root")])


def _spelled(
    name: str, info: FieldInfo | None, annotation: Any, policies: frozenset[str], config: Any
) -> _Field:
    """Field `name`, read under the keys its alias and the type's config say."""
    alias = None
    if info is not None:
        alias = info.validation_alias if info.validation_alias is not None else info.alias
    by_alias, named = by_name.reading(config)
    keys = by_name.spellings(name, alias, by_alias=by_alias, by_name=named).keys
    if not keys:
        return _Field(name, name, annotation, policies, read=False)
    return _Field(keys[0], name, annotation, policies, keys[1:])


_TD_QUALIFIERS = frozenset(
    {typing.Required, typing.NotRequired, typing_extensions.Required,
     typing_extensions.NotRequired, typing_extensions.ReadOnly}
)  # fmt: skip
"""What a TypedDict's key may be wrapped in: it says whether the key may be missing (the
partial type makes every key optional anyway), not what its value is."""


def _unqualified(hint: Any) -> Any:
    """A TypedDict's hint without `Required`, `NotRequired` or `ReadOnly`."""
    while typing.get_origin(hint) in _TD_QUALIFIERS:
        hint = typing.get_args(hint)[0]
    return hint


def _field_of(name: str, hint: Any, info: FieldInfo | None, config: Any) -> _Field:
    """A dataclass's or TypedDict's field, its policies and `Field(...)` found in its hint."""
    hint = _unqualified(hint)
    policies: frozenset[str] = frozenset()
    if typing.get_origin(hint) is Annotated:
        args = typing.get_args(hint)
        policies = _policies(args[1:])
        if info is None:
            info = next((a for a in reversed(args[1:]) if isinstance(a, FieldInfo)), None)
    return _spelled(name, info, hint, policies, config)


_in_progress: set[Any] = set()


@guarded("stream")
def partial_type(tp: Any) -> Any:
    """The partial type of a Pydantic model, dataclass or TypedDict: every field optional
    (default None), nested models partial too, `WithState` fields typed StreamState. Built once
    per type. Other types are returned as they are (containers of models with partial items)."""
    if not is_type(tp):
        raise arguments.refused(
            "partial_type's argument",
            "a type (a Pydantic model, dataclass, TypedDict, or a container of them)",
            tp,
        )
    try:
        return _partial_cached(tp)
    except TypeError:  # unhashable type expression
        return _partial(tp)


@functools.lru_cache(maxsize=256)
def _partial_cached(tp: Any) -> Any:
    return _partial(tp)


def _partial(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is Annotated:
        return _partial(typing.get_args(tp)[0])
    if origin is not None:
        args = typing.get_args(tp)
        if origin in (typing.Union, _UnionType):
            return cast(Any, typing.Union)[tuple(_partial(a) for a in args)]
        if origin is Literal:
            return tp
        try:
            return origin[tuple(_partial(a) for a in args)] if args else tp
        except TypeError:
            return tp
    if _is_root_model(tp):
        return _partial_root(tp)
    fields = _fields(tp)
    if fields is None:
        return tp
    if tp in _in_progress:
        return Any  # a recursive type: partial annotations are documentation only
    _in_progress.add(tp)
    try:
        annotations = {f.name: _partial_field(f) for f in fields}
    finally:
        _in_progress.discard(tp)
    name = f"Partial{tp.__name__}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        definitions: dict[str, Any] = {
            key: (annotation, _state_default() if "WithState" in f.policies else None)
            for (key, annotation), f in zip(annotations.items(), fields, strict=True)
        }
        model: Any = create_model(
            name, __base__=_PartialModel, __module__=tp.__module__, **definitions
        )
        model.__doc__ = f"{tp.__name__} while it streams: every field optional."
        return model
    if dataclasses.is_dataclass(tp):
        return dataclasses.make_dataclass(
            name,
            [
                (key, annotation, dataclasses.field(default=None))
                for key, annotation in annotations.items()
            ],
            namespace={"__module__": tp.__module__},
        )
    # (typing_extensions' TypedDict: Pydantic refuses typing's below Python 3.12, so a partial
    # model holding one could not be built.)
    return typing_extensions.TypedDict(name, annotations, total=False)  # type: ignore[operator]


def _partial_root(tp: Any) -> Any:
    """The partial type of a RootModel: a RootModel of the partial root type (or None)."""
    if tp in _in_progress:
        return Any
    _in_progress.add(tp)
    try:
        root = cast(Any, typing.Optional)[_partial(_root_annotation(tp))]
    finally:
        _in_progress.discard(tp)
    base: Any = _PartialRoot
    model: Any = create_model(
        f"Partial{tp.__name__}", __base__=base[root], __module__=tp.__module__
    )
    model.__doc__ = f"{tp.__name__} while it streams: the root optional."
    return model


_Root = TypeVar("_Root")


class _PartialRoot(RootModel[_Root], Generic[_Root]):
    """The base of partial RootModels (see `_PartialModel`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def model_dump(self, **options: Any) -> Any:
        options.setdefault("warnings", False)
        return super().model_dump(**options)

    def model_dump_json(self, **options: Any) -> str:
        options.setdefault("warnings", False)
        return super().model_dump_json(**options)


class _PartialModel(BaseModel):
    """The base of partial models. Their fields hold the stream's views (`PartialList`,
    `PartialDict`) where the type says `list` or `dict`: Pydantic writes them as what they
    show, and is told not to warn that they are views."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def model_dump(self, **options: Any) -> dict[str, Any]:
        options.setdefault("warnings", False)
        return super().model_dump(**options)

    def model_dump_json(self, **options: Any) -> str:
        options.setdefault("warnings", False)
        return super().model_dump_json(**options)


def _partial_field(f: _Field) -> Any:
    inner = _partial(f.annotation)
    if "WithState" in f.policies:
        return cast(Any, StreamState)[inner]
    return cast(Any, typing.Optional)[inner]


def _state_default() -> Any:
    from pydantic import Field

    return Field(default_factory=lambda: StreamState(None, "pending"))


# -- building typed snapshots ---------------------------------------------------------------

_HOLD: Final = object()
"""A value not shown: held back by a `Required` field that is not there yet, or a leaf that is
not (yet) a value of its declared type."""
_PENDING: Final = object()
"""A value not known yet: an object of a union whose branch is not decided (see `_UnionPlan`).
Not shown, like `_HOLD`; in a list its place holds None, so the items after it keep theirs."""


def _shown(built: Any) -> bool:
    return built is not _HOLD and built is not _PENDING


def typed_builder(output_type: Any) -> Build | None:
    """How snapshot data becomes a partial value of `output_type` (None for no type): one per
    stream, since it keeps the typed parts of completed subtrees between snapshots."""
    return _Builder(output_type).build if output_type is not None else None


class _Builder:
    """Turns snapshot data into partial typed values, sharing work between snapshots: a
    complete subtree is converted once; an open array's typed items are kept per storage.
    Conversions of a leaf to its declared type are collected in `changes`, and remembered
    with the subtree that holds them."""

    def __init__(self, output_type: Any) -> None:
        self.root = _planner(output_type).root
        self._memo: dict[tuple[int, int], tuple[Any, Any, int, tuple[Change, ...]]] = {}
        self._lists: dict[int, tuple[list[Any], list[Any], list[Change], int]] = {}
        self.changes: list[Change] = []
        self.holds = 0
        """How many complete values were not shown (a branch tried is whole while it stays)."""

    def build(self, data: Any) -> tuple[Any, tuple[Change, ...]]:
        self.changes = []
        value = self.root.build(data, self, "")
        return value, tuple(self.changes)

    def remembered(self, data: Any, plan: _Plan) -> Any:
        """The value `plan` built for this complete subtree before (its changes counted again;
        keyed by plan too, since a union may try one subtree under several branches)."""
        memo = self._memo.get((id(data), id(plan)))
        if memo is None or memo[0] is not data:
            return MISSING
        self.changes.extend(memo[3])
        self.holds += memo[2]
        return memo[1]

    def remember(self, data: Any, plan: _Plan, value: Any, since: int, holds: int) -> None:
        self._memo[(id(data), id(plan))] = (
            data,
            value,
            self.holds - holds,
            tuple(self.changes[since:]),
        )

    def trying(self) -> tuple[int, int]:
        """Where the changes and holds stand before a branch is tried (see `undo`)."""
        return len(self.changes), self.holds

    def undo(self, mark: tuple[int, int]) -> None:
        """Forget what a branch tried since `mark` recorded."""
        del self.changes[mark[0] :]
        self.holds = mark[1]


def _planner(output_type: Any) -> _Planner:
    try:
        return _cached_planner(output_type)
    except TypeError:  # an unhashable type expression
        return _Planner(output_type)


@functools.lru_cache(maxsize=256)
def _cached_planner(output_type: Any) -> _Planner:
    return _Planner(output_type)


class _Planner:
    """How to build the partial value of one output type (made once per type)."""

    def __init__(self, output_type: Any) -> None:
        self._plans: dict[Any, _Plan] = {}
        self.root = self.plan(output_type)

    def plan(self, tp: Any, strings: _Strings = ()) -> _Plan:
        """The plan of `tp`; `strings`: the string rules of the config of the model that
        declares it (`str_to_upper`, ...), which Pydantic applies to its strings."""
        key = (_plan_key(tp), strings)
        found = self._plans.get(key)
        if found is not None:
            return found
        placeholder = _Lazy()
        self._plans[key] = placeholder
        made = self._make(tp, strings)
        placeholder.target = made
        self._plans[key] = made
        return made

    def _make(self, tp: Any, strings: _Strings) -> _Plan:
        if isinstance(tp, typing.TypeVar):  # a generic left unparametrised: its bound, or Any
            return self.plan(tp.__bound__, strings) if tp.__bound__ is not None else _VALUE
        origin = typing.get_origin(tp)
        if origin is Annotated:
            inner = self.plan(typing.get_args(tp)[0], strings)
            if _transforms(typing.get_args(tp)[1:]):
                return _TransformPlan(inner, _adapter(tp, strings))
            return inner
        if origin in (typing.Union, _UnionType):
            options = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(options) == 1:
                return self.plan(options[0], strings)
            union = _UnionPlan([self.plan(a, strings) for a in options], options, _ScalarPlan(tp))
            if strings and any(_strip(a) is str for a in options):
                return _TransformPlan(union, _adapter(tp, strings))
            return union
        if origin is tuple:
            return self._tuple(tp, strings)
        if origin in (set, frozenset):
            args = typing.get_args(tp)
            return _SetPlan(tp, self.plan(args[0] if args else Any, strings), origin)
        if origin is list or _is_sequence(origin):
            args = typing.get_args(tp)
            return _ListPlan(self.plan(args[0] if args else Any, strings))
        if origin in (dict, Mapping) or origin is typing.Mapping:
            args = typing.get_args(tp)
            return _DictPlan(self.plan(args[1] if len(args) == 2 else Any, strings))
        if _is_root_model(tp):
            partial = partial_type(tp)
            made: _Plan = _RootPlan(
                self.plan(_root_annotation(tp), _string_rules(tp.model_config)),
                lambda root: partial.model_construct(root=root),
            )
            return _TransformPlan(made, adapter_for(tp)) if _model_validated(tp) else made
        fields = _fields(tp)
        if fields is not None:
            own = _string_rules(_config_of(tp))
            factory = _factory(tp, partial_type(tp))
            plan = _ModelPlan(factory, [(f, self.plan(f.annotation, own)) for f in fields])
            plan.closed = _forbids_extra(tp)
            return _TransformPlan(plan, adapter_for(tp)) if _model_validated(tp) else plan
        if isinstance(tp, type) and issubclass(tp, Enum):
            return _EnumPlan(tp)
        if tp is Any or tp is object:
            return _VALUE
        if strings and _strip(tp) is str:
            return _TransformPlan(_ScalarPlan(tp), _adapter(tp, strings))
        return _ScalarPlan(tp)

    def _tuple(self, tp: Any, strings: _Strings) -> _Plan:
        """`tuple[int, ...]` is a list of its one item type; `tuple[str, int]` is planned
        position by position (its JSON Schema's `prefixItems`)."""
        args = typing.get_args(tp)
        if not args:
            return _ListPlan(_VALUE)
        if len(args) == 2 and args[1] is Ellipsis:
            return _ListPlan(self.plan(args[0], strings))
        if args == ((),):  # tuple[()]: the empty tuple
            args = ()
        return _TuplePlan([self.plan(a, strings) for a in args])


_Strings = tuple[tuple[str, bool], ...]
"""The string rules of a model's config that change a string (`str_strip_whitespace`,
`str_to_lower`, `str_to_upper`), those set, as (name, value) pairs: a key of the plans."""

_STRING_RULES: Final = ("str_strip_whitespace", "str_to_lower", "str_to_upper")


def _config_of(tp: Any) -> Any:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp.model_config
    return getattr(tp, "__pydantic_config__", None)


def _string_rules(config: Any) -> _Strings:
    if not isinstance(config, Mapping):
        return ()
    return tuple((name, True) for name in _STRING_RULES if config.get(name))


def _transforms(metadata: Sequence[Any]) -> bool:
    """Whether `Annotated` metadata may change a value rather than only check it: a validator
    function (`AfterValidator`, `BeforeValidator`, `PlainValidator`, `WrapValidator`, and the
    model's `field_validator`s, which Pydantic makes the same), `StringConstraints` that strip
    or change case, or a hook of the caller's own (`__get_pydantic_core_schema__`), which may
    do either. Constraints (`Gt`, `MaxLen`, `Field(pattern=...)`) and stream policies only
    check."""
    for item in metadata:
        if isinstance(item, AfterValidator | BeforeValidator | PlainValidator | WrapValidator):
            return True
        if isinstance(item, StringConstraints):
            if item.strip_whitespace or item.to_lower or item.to_upper:
                return True
            continue
        if isinstance(item, StreamPolicy | FieldInfo):
            continue
        hook = getattr(item, "__get_pydantic_core_schema__", None)
        module = getattr(type(item), "__module__", "") or ""
        if hook is not None and not module.startswith(("pydantic", "annotated_types")):
            return True
    return False


def _adapter(tp: Any, strings: _Strings) -> TypeAdapter[Any]:
    """The type's adapter, under the string rules of the model that declares it (a type with
    a config of its own keeps that one)."""
    if not strings:
        return adapter_for(tp)
    try:
        return TypeAdapter(tp, config=ConfigDict(**dict(strings)))  # type: ignore[typeddict-item]
    except PydanticUserError:  # a model, dataclass or TypedDict: its own config holds
        return adapter_for(tp)


def _forbids_extra(tp: Any) -> bool:
    return isinstance(tp, type) and (
        (issubclass(tp, BaseModel) and tp.model_config.get("extra") == "forbid")
        or getattr(tp, "__closed__", False) is True  # a closed TypedDict (PEP 728)
    )


def _plan_key(tp: Any) -> Any:
    try:
        hash(tp)
    except TypeError:
        return id(tp)
    return tp


def _factory(tp: Any, partial: Any) -> Callable[[dict[str, Any]], Any]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return lambda values: partial.model_construct(**values)
    if dataclasses.is_dataclass(tp):
        return lambda values: partial(**values)
    return dict


class _Plan:
    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        raise NotImplementedError


class _Lazy(_Plan):
    """A plan being made (recursive types)."""

    target: _Plan | None = None

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        assert self.target is not None
        return self.target.build(data, builder, path)


class _ValuePlan(_Plan):
    """Any JSON value (a field typed `Any`)."""

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if isinstance(data, PartialList | PartialDict):
            return plain(data)
        return data


_VALUE: Final = _ValuePlan()


class _TransformPlan(_Plan):
    """A value whose type may change it, not only check it (an `Annotated` validator, a
    `field_validator`, `StringConstraints` or a config that strip or change the case of
    strings, a `model_validator`): shown once complete, as the type makes it, never as
    written (a number shown as 1 that the final value gives as 2, a string shown as ' ana '
    that becomes 'ANA'). The value read (its JSON, after the conversions that made it show,
    as the final parse converts it) is run through the type, as the final parse reads it:
    strictly as JSON, else laxly. A scalar the type refuses is shown as read: the final parse
    reads that same value and refuses the reply. An array or object it refuses is not shown:
    the final parse may repair parts of it the stream leaves to it (a key in another case, a
    default to fill), and read it otherwise. A type whose validation fails otherwise (a
    validator that needs the model's other fields) shows nothing."""

    def __init__(self, inner: _Plan, adapter: TypeAdapter[Any]) -> None:
        self.inner = inner
        self.adapter = adapter

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if not is_complete(data):
            return _HOLD
        whole = isinstance(data, list | dict)
        if whole:
            memo = builder.remembered(data, self)
            if memo is not MISSING:
                return memo
        mark = builder.trying()
        built = self.inner.build(data, builder, path)
        if not _shown(built):
            return built
        try:
            value = self._read(_converted(data, builder.changes[mark[0] :], path))
        except PydanticValidationError:
            value = _HOLD if whole else built
        except Exception:  # the caller's validator, run without its model: nothing shown
            value = _HOLD
        if value is _HOLD:
            builder.undo(mark)
            builder.holds += 1
        if whole:
            builder.remember(data, self, value, *mark)
        return value

    def _read(self, value: Any) -> Any:
        """`value` as the type reads it, as the final parse reads the value it converted
        (outform/parse/typed.py): strictly as JSON, else laxly."""
        try:
            return self.adapter.validate_json(jsontext.dumps(value), strict=True)
        except PydanticValidationError:
            return self.adapter.validate_python(value)


def _converted(data: Any, changes: Sequence[Change], path: str) -> Any:
    """The complete `data` at `path` with the scalar conversions recorded since (`"36"` made
    36) made: what the final parse hands the type. A copy when anything changed; `data` is a
    snapshot's, shared with later ones."""
    made = [c for c in changes if c.path.startswith(path) and c.transform != "fold_equal_items"]
    if not made:
        return data
    value = plain(copy.deepcopy(data))
    for change in made:
        parts = pointer.parts(change.path[len(path) :])
        if not parts:
            value = change.after
            continue
        node = value
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        last = parts[-1]
        if isinstance(node, list):
            node[int(last)] = change.after
        else:
            node[last] = change.after
    return value


class _RootPlan(_Plan):
    """A RootModel: its root value, planned as its root type, held in the partial model
    (`.root`), as the final value holds it."""

    def __init__(self, inner: _Plan, make: Callable[[Any], Any]) -> None:
        self.inner = inner
        self.make = make

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        built = self.inner.build(data, builder, path)
        return self.make(built) if _shown(built) else built


class _ScalarPlan(_Plan):
    """A leaf of a declared type (`int`, `str`, `datetime`, `Literal[...]`, a union of such):
    shown only as a value of that type. A value of another JSON type is converted by the rules
    the pipeline's coercion stage applies to scalars (numbers, booleans and null spelled as
    strings, numbers as strings), and the conversion recorded; otherwise it is not shown. A
    string still being written is shown only in a field that takes any string."""

    def __init__(self, tp: Any) -> None:
        self.adapter = adapter_for(tp)
        self.text = _strip(tp) is str
        self.check = _loose_check(self.adapter)
        """Where the type's strict reading takes a value its schema refuses (`true` for
        `Literal[1]`, `" 1.5"` for a decimal: see strictness.py), the schema's validator, which
        the value must pass too; else None."""
        self.decimal = decimals.decimal_validator(self.adapter) is not None
        """Whether the type holds a Decimal: one read from a float is not shown (the float
        may not hold the digits the reply wrote, which the final parse gives: decimals.py)."""
        stripped = _strip(tp)
        self.members: tuple[Any, ...] | None = (
            typing.get_args(stripped) if typing.get_origin(stripped) is Literal else None
        )
        """The values of a `Literal` type (what may tell a union's branches apart)."""
        self.choice = self.members is not None or (
            isinstance(stripped, type) and issubclass(stripped, Enum)
        )
        """Whether the type is a choice of members (a Literal, an Enum): a value converted to
        one is a `match_enum`, as the coercion stage names it."""

    def named(self, transform: str) -> tuple[str, str]:
        """The change's name and detail for a conversion (`string_to_integer(plain)`) that
        gave a value of this type."""
        if self.choice:
            return "match_enum", ""
        name, _, detail = transform.partition("(")
        return name, detail.rstrip(")")

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if not is_complete(data):
            return data if self.text and isinstance(data, str) else _HOLD
        value = self._read(data, builder, path)
        if value is _HOLD:
            builder.holds += 1
        return value

    def _read(self, data: Any, builder: _Builder, path: str) -> Any:
        if self.decimal and type(data) is float:
            return _HOLD  # (nor any conversion of it: `number_to_integer` would give its digits)
        value = self._typed(data)
        if value is not _HOLD:
            return value
        for converted, transform in _conversions(data):
            value = self._typed(converted)
            if value is not _HOLD:
                name, detail = self.named(transform)
                builder.changes.append(Change(path, "semantic", name, data, converted, detail))
                return value
        return _HOLD

    def names(self, data: Any) -> bool:
        """Whether `data` is one of the Literal's values as written."""
        return self.members is not None and is_complete(data) and self._typed(data) is not _HOLD

    def may_take(self, data: Any) -> bool:
        """Whether the final parse may read `data` (complete) as one of the Literal's values:
        as written, by a scalar conversion, or matched as the coercion stage matches a member
        (case, accents and surrounding punctuation aside). A value none of these reach rules
        a union's branch out."""
        if self.members is None or not is_complete(data):
            return True
        if self.names(data) or any(self._typed(c) is not _HOLD for c, _ in _conversions(data)):
            return True
        if not isinstance(data, str):
            return False
        token = normalize_token(data)
        return any(isinstance(m, str) and normalize_token(m) == token for m in self.members)

    def _typed(self, data: Any) -> Any:
        if self.decimal and type(data) is float:
            return _HOLD
        if self.check is not None and not self.check.is_valid(data):
            return _HOLD
        try:
            return self.adapter.validate_json(jsontext.dumps(data), strict=True)
        except (PydanticValidationError, TypeError):
            return _HOLD


def _loose_check(adapter: TypeAdapter[Any]) -> Any:
    """The validator of the type's schema (its decimals' strings written as literals) when the
    type's strict reading is looser than it (see strictness.py), else None."""
    try:
        schema = adapter.json_schema()
    except Exception:  # a type without a schema: nothing to check against
        return None
    tightened = strictness.decimal_schema(adapter, schema)
    if tightened is None and not strictness.compares_numbers(schema):
        return None
    return compile_schema(tightened or schema).validator


def _conversions(data: Any) -> Iterator[tuple[Any, str]]:
    """The scalar conversions of the coercion stage, with its names for them, in its order."""
    if isinstance(data, str):
        if is_null_word(data):
            yield None, "string_to_null"
        number = parse_number(data)
        if number is not None:
            integer = as_integer(number.value)
            if integer is not None:
                yield integer, f"string_to_integer({number.how})"
            yield number.value, f"string_to_number({number.how})"
        flag = parse_bool(data)
        if flag is not None:
            yield flag, "string_to_boolean"
    elif isinstance(data, bool):
        yield ("true" if data else "false"), "boolean_to_string"
    elif isinstance(data, int | float):
        integer = as_integer(data)
        if isinstance(data, float) and integer is not None:
            yield integer, "number_to_integer"
        if data in (0, 1):
            yield bool(data), "number_to_boolean"
        if isinstance(data, int) and (text := number_text(data)) is not None:
            # (A float's text is the literal the reply wrote, which the final parse gives.)
            yield text, "number_to_string"


class _EnumPlan(_Plan):
    def __init__(self, enum: type[Enum]) -> None:
        self.enum = enum

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if not is_complete(data):
            return _HOLD
        member = self._member(data)
        if member is _HOLD:
            builder.holds += 1
        return member

    def _member(self, data: Any) -> Any:
        try:
            member = self.enum(data)
        except (ValueError, TypeError):
            return _HOLD
        if isinstance(member.value, bool) is not isinstance(data, bool):
            return _HOLD  # `true` is no member 1 (Python's `True == 1`; JSON's not)
        return member


class _ModelPlan(_Plan):
    def __init__(
        self, factory: Callable[[dict[str, Any]], Any], fields: list[tuple[_Field, _Plan]]
    ) -> None:
        self.factory = factory
        self.fields = fields
        self.keys = frozenset(key for f, _ in fields for key in f.spellings)
        self.closed = False
        """The type refuses keys it does not declare (`extra="forbid"`)."""

    def open_to(self, data: Mapping[str, Any]) -> bool:
        """Whether the type takes every key of `data` (one it refuses, the final parse drops
        only as a lossy repair: another branch may be taken first)."""
        return not self.closed or all(key in self.keys for key in data)

    def literal(self, key: str) -> tuple[_Field, _ScalarPlan] | None:
        """The field read from `key`, when its type is a Literal."""
        for f, plan in self.fields:
            target = _target(plan)
            if f.spelled(key) and isinstance(target, _ScalarPlan) and target.members is not None:
                return f, target
        return None

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if not isinstance(data, Mapping):
            return _HOLD
        complete = is_complete(data)
        if complete:
            memo = builder.remembered(data, self)
            if memo is not MISSING:
                return memo
        since, holds = builder.trying()
        values: dict[str, Any] = {}
        for f, plan in self.fields:
            key = f.written(data)
            built: Any = None
            shown = False
            if key is not None:
                item = data[key]
                if "Done" not in f.policies or is_complete(item):
                    built = plan.build(item, builder, pointer.join(path, key))
                    shown = _shown(built)
            if "Required" in f.policies and not shown:
                return _HOLD
            if "WithState" in f.policies:
                state: FieldState = (
                    "pending"
                    if key is None
                    else "complete"
                    if is_complete(data[key])
                    else "incomplete"
                )
                values[f.name] = StreamState(built if shown else None, state)
            elif shown:
                values[f.name] = built
        value = self.factory(values)
        if complete:
            builder.remember(data, self, value, since, holds)
        return value


class _ListPlan(_Plan):
    def __init__(self, item: _Plan) -> None:
        self.item = item

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if isinstance(data, PartialList):
            items, n, tail = data.parts()
            entry = builder._lists.get(id(items))
            if entry is None or entry[0] is not items:
                entry = (items, [], [], 0)
            _, typed, changes, done = entry
            since = len(builder.changes)
            for index in range(done, n):
                built = self.item.build(items[index], builder, pointer.join(path, index))
                # An item not shown (yet) keeps its place, as None: the items after it keep
                # theirs, which the final value gives them (`["3 items", 5]` for `list[int]`
                # is `[None, 5]` until the final parse reads 3 out of the first).
                typed.append(None if built is _PENDING or built is _HOLD else built)
            changes.extend(builder.changes[since:])
            del builder.changes[since:]
            builder.changes.extend(changes)
            builder._lists[id(items)] = (items, typed, changes, n)
            last = (
                self.item.build(tail, builder, pointer.join(path, n))
                if tail is not MISSING
                else _HOLD
            )
            return PartialList(typed, len(typed), last if _shown(last) else MISSING)
        if isinstance(data, list):
            memo = builder.remembered(data, self)
            if memo is not MISSING:
                return memo
            since, holds = builder.trying()
            out = [
                None if b is _PENDING or b is _HOLD else b
                for b in (
                    self.item.build(x, builder, pointer.join(path, i)) for i, x in enumerate(data)
                )
            ]
            builder.remember(data, self, out, since, holds)
            return out
        return _HOLD


class _DictPlan(_Plan):
    def __init__(self, value: _Plan) -> None:
        self.value = value

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if not isinstance(data, Mapping):
            return _HOLD
        out = {}
        for key, item in data.items():
            built = self.value.build(item, builder, pointer.join(path, key))
            if _shown(built):
                out[key] = built
        return out


class _UnionPlan(_Plan):
    """A union of types. An object is shown under the branch the final parse will choose, once
    the data says which (see `_branch`); a scalar is shown as a value of the union."""

    def __init__(self, options: list[_Plan], types: list[Any], scalar: _ScalarPlan) -> None:
        self.options = options
        self.types = types
        """The branches' types, in declared order (the plans' `types[i]`)."""
        self.scalar = scalar
        self._tags: dict[int, _ScalarPlan] | None = None
        """Per branch, the plan of the Literal field that tells the branches apart (see
        `_tag`), None when no field does."""
        self._asked = False
        """Whether `_tags` was found (on first use: the plans of a recursive type are finished
        only after the union's)."""
        self._tag_field: list[_Field] = []

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if isinstance(data, Mapping):
            objects = [i for i, o in enumerate(self.options) if _objects(o)]
            if len(objects) == 1:
                return self.options[objects[0]].build(data, builder, path)
            if objects:
                chosen = self._branch(data, objects, builder, path)
                if chosen is None:
                    return _PENDING
                return self.options[chosen].build(data, builder, path)
        if isinstance(data, PartialList | list):
            for option in self.options:
                target = option.target if isinstance(option, _Lazy) else option
                if isinstance(target, _ListPlan):
                    return option.build(data, builder, path)
        for option in self.options:
            target = option.target if isinstance(option, _Lazy) else option
            if isinstance(target, _EnumPlan) and is_complete(data):
                built = target._member(data)
                if isinstance(built, Enum):
                    return built
        if is_complete(data) and self.scalar._typed(data) is _HOLD:
            if type(data) is float and (integer := as_integer(data)) is not None:
                # 1.0 is the integer 1 as sent, to JSON Schema: an integer branch takes it
                # before any conversion into another branch (`bool | int` shows 1, not True).
                value = self.scalar._typed(integer)
                if value is not _HOLD:
                    builder.changes.append(
                        Change(path, "semantic", "number_to_integer", data, integer, "")
                    )
                    return value
            # Not valid as sent: converted for the first branch, in declared order, that a
            # conversion fits, as the coercion stage chooses (`"1"` for `bool | int` is True),
            # not by the first conversion any branch takes (which showed 1, then the final True).
            # (The value is the union's reading of the converted data, as the final parse's.)
            for option in self.options:
                target = option.target if isinstance(option, _Lazy) else option
                if not isinstance(target, _ScalarPlan):
                    continue
                for converted, transform in _conversions(data):
                    if target._typed(converted) is _HOLD:
                        continue
                    value = self.scalar._typed(converted)
                    if value is not _HOLD:
                        name, detail = target.named(transform)
                        builder.changes.append(
                            Change(path, "semantic", name, data, converted, detail)
                        )
                        return value
        return self.scalar.build(data, builder, path)

    def _branch(
        self, data: Mapping[str, Any], objects: list[int], builder: _Builder, path: str
    ) -> int | None:
        """The branch an object of the union is shown under, or None while it is not known.

        With a field that tells the branches apart (Pydantic's `discriminator=`, or a Literal
        field each branch declares with its own values), its value decides, once complete, if
        it names one branch as written. Otherwise (or while that field is missing or still
        being written) a branch is chosen only when it is the one the data leaves (a Literal
        field's complete value that the final parse cannot read as the branch's rules it out)
        or, the object complete, the one the final parse takes: the union's strict reading of
        the value as sent (never coerced), else the first branch left, in declared order, that
        takes the value after the coercion stage's scalar conversions. Two branches left
        while the object is open show it as not known: a guess could change into another."""
        tags = self._tag(objects)
        if tags:
            field = self._tag_field[0]
            key = field.written(data)
            if key is not None and is_complete(data[key]):
                return self._named(data[key], tags)
        left = [i for i in objects if not self._ruled_out(i, data)]
        if len(left) <= 1:
            return left[0] if left else None
        if not is_complete(data):
            return None
        sent = self.scalar._typed(data)
        if sent is not _HOLD:
            taken = [i for i in left if _is_branch(self.types[i], sent)]
            return taken[0] if len(taken) == 1 else None
        return left[0] if self._fits(left[0], data, builder, path) else None

    def _named(self, value: Any, tags: dict[int, _ScalarPlan]) -> int | None:
        """The branch whose tag `value` is as written, when the final parse can read it as no
        other branch's (`"Dog"` may be matched to a `"dog"` or a `"DOG"`: not known)."""
        named = [i for i, tag in tags.items() if tag.names(value)]
        if len(named) != 1:
            return None
        others = (tag for i, tag in tags.items() if i != named[0])
        return None if any(tag.may_take(value) for tag in others) else named[0]

    def _ruled_out(self, index: int, data: Mapping[str, Any]) -> bool:
        target = _target(self.options[index])
        if not isinstance(target, _ModelPlan):
            return False
        for f, plan in target.fields:
            key = f.written(data)
            leaf = _target(plan)
            if key is not None and isinstance(leaf, _ScalarPlan) and not leaf.may_take(data[key]):
                return True
        return False

    def _fits(self, index: int, data: Mapping[str, Any], builder: _Builder, path: str) -> bool:
        """Whether the branch takes the complete object after the scalar conversions the
        stream makes (every value shown, the whole valid for the branch's type)."""
        target = _target(self.options[index])
        if not isinstance(target, _ModelPlan) or not target.open_to(data):
            return False
        mark = builder.trying()
        try:
            built = target.build(data, builder, path)
            if not isinstance(built, BaseModel) or builder.holds != mark[1]:
                return False
            dumped = built.model_dump(mode="json", exclude_unset=True, by_alias=True)
            adapter_for(self.types[index]).validate_json(jsontext.dumps(dumped), strict=True)
        except (PydanticValidationError, TypeError, ValueError):
            return False
        finally:
            builder.undo(mark)
        return True

    def _tag(self, objects: list[int]) -> dict[int, _ScalarPlan] | None:
        """Per object branch, the Literal field that tells them apart: one key every branch
        declares as a Literal, no value shared by two branches (Pydantic's discriminator is
        one). None when there is none, or a branch is no model."""
        if self._asked:
            return self._tags
        self._asked = True
        targets = [_target(self.options[i]) for i in objects]
        if not all(isinstance(t, _ModelPlan) for t in targets):
            return None
        models = cast(list[_ModelPlan], targets)
        for f, _ in models[0].fields:
            found = [m.literal(f.key) for m in models]
            if any(x is None for x in found):
                continue
            plans = cast(list[tuple[_Field, _ScalarPlan]], found)
            values = [v for _, plan in plans for v in cast(tuple[Any, ...], plan.members)]
            if len({jsontext.dumps(v) for v in values}) == len(values):
                self._tag_field = [g for g, _ in plans]
                self._tags = {i: plan for i, (_, plan) in zip(objects, plans, strict=True)}
                break
        return self._tags


def _target(plan: _Plan) -> _Plan:
    """The plan that reads the value (through a plan being made, and a transform: a union
    tells its branches apart by what the data holds, before any validator runs)."""
    while True:
        if isinstance(plan, _Lazy) and plan.target is not None:
            plan = plan.target
        elif isinstance(plan, _TransformPlan):
            plan = plan.inner
        else:
            return plan


def _objects(plan: _Plan) -> bool:
    """Whether the plan reads a JSON object."""
    return isinstance(_target(plan), _ModelPlan | _DictPlan)


def _is_branch(tp: Any, value: Any) -> bool:
    """Whether the union's strict reading gave `value` under the branch of type `tp`."""
    stripped = _strip(tp)
    if isinstance(stripped, type) and (
        issubclass(stripped, BaseModel) or dataclasses.is_dataclass(stripped)
    ):
        return type(value) is stripped
    return isinstance(value, dict)


class _TuplePlan(_Plan):
    """A tuple of fixed positions (`tuple[str, int]`): each item read as its position's type.
    Shown up to the first item not shown, so that no item ever moves to another position; a
    whole tuple, once closed, as a tuple."""

    def __init__(self, positions: list[_Plan]) -> None:
        self.positions = positions

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if isinstance(data, PartialList):
            items, n, tail = data.parts()
            typed = self._items(items[:n], builder, path)
            last: Any = MISSING
            if len(typed) == n and tail is not MISSING and n < len(self.positions):
                built = self.positions[n].build(tail, builder, pointer.join(path, n))
                last = built if _shown(built) else MISSING
            return PartialList(typed, len(typed), last)
        if not isinstance(data, list):
            return _HOLD
        memo = builder.remembered(data, self)
        if memo is not MISSING:
            return memo
        since, holds = builder.trying()
        typed = self._items(data, builder, path)
        out = tuple(typed) if len(typed) == len(data) == len(self.positions) else typed
        builder.remember(data, self, out, since, holds)
        return out

    def _items(self, items: Sequence[Any], builder: _Builder, path: str) -> list[Any]:
        typed = []
        for index, (item, plan) in enumerate(zip(items, self.positions, strict=False)):
            built = plan.build(item, builder, pointer.join(path, index))
            if not _shown(built):
                break
            typed.append(built)
        return typed


class _SetPlan(_Plan):
    """A `set` or `frozenset`: shown once its array is closed, its items read as the item
    type and folded as the final parse folds them (the later of equal items dropped), with
    the same `fold_equal_items` change. (A set has no order: items shown as they arrive could
    not be those the final value keeps.)"""

    def __init__(self, tp: Any, item: _Plan, kind: Any) -> None:
        self.item = item
        self.kind = kind
        self.folding = folded.folding_validator(adapter_for(tp))

    def build(self, data: Any, builder: _Builder, path: str) -> Any:
        if not isinstance(data, list):
            return _HOLD
        memo = builder.remembered(data, self)
        if memo is not MISSING:
            return memo
        since, holds = builder.trying()
        value = self._read(data, builder, path)
        if value is _HOLD:
            builder.undo((since, holds))
            builder.holds += 1
            return _HOLD
        builder.remember(data, self, value, since, holds)
        return value

    def _read(self, data: list[Any], builder: _Builder, path: str) -> Any:
        typed, sent = [], []
        for index, item in enumerate(data):
            at = pointer.join(path, index)
            before = len(builder.changes)
            built = self.item.build(item, builder, at)
            if not _shown(built):
                return _HOLD
            typed.append(built)
            change = builder.changes[-1] if len(builder.changes) > before else None
            sent.append(change.after if change is not None and change.path == at else item)
        try:
            value = self.kind(typed)
        except TypeError:  # unhashable items (models): the final parse says what they are
            return _HOLD
        for fold in folded.folds(self.folding, sent) if self.folding is not None else ():
            builder.changes.append(
                Change(
                    path + fold.path,
                    "semantic",
                    "fold_equal_items",
                    preview(fold.dropped),
                    None,
                    f"{fold.written} items written, {fold.kept} kept: the type holds one "
                    "of the items (or keys) that are equal",
                    lost=fold.lost,
                )
            )
        return value


def to_json(snapshot: Snapshot[Any]) -> bytes:
    """A snapshot's data as JSON bytes (what the CLI prints), every integer digit for digit."""
    return jsontext.dumps(plain(snapshot.data))


__all__ = [
    "Done",
    "FieldState",
    "Required",
    "Snapshot",
    "StreamAbortedError",
    "StreamParser",
    "StreamPolicy",
    "StreamState",
    "WithState",
    "aparse_stream",
    "parse_stream",
    "partial_type",
    "replay",
    "stream_items",
    "to_json",
]
