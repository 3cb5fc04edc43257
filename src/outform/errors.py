"""The error hierarchy.

Every error says *what* went wrong, *where* (a file, a key, a JSON path, a byte offset) and
*how to fix it*, so that a CLI can print it as one readable block without a traceback.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

if TYPE_CHECKING:
    from outform.parse.hint import RetryHint
    from outform.parse.result import ParseResult
    from outform.providers.base import Usage
    from outform.run import Attempt

F = TypeVar("F", bound=Callable[..., Any])


class OutformError(Exception):
    """Base class of every error outform raises on purpose."""

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        """The message: what, then where, then how to fix it."""
        parts = [self.what]
        if self.where:
            parts.append(f"  where: {self.where}")
        if self.fix:
            parts.append(f"  fix: {self.fix}")
        return "\n".join(parts)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructor arguments need help to survive pickling (multiprocessing).
        return (_rebuild, (type(self), self.what, self.where, self.fix, self.__dict__))


def _rebuild(
    cls: type[OutformError], what: str, where: str | None, fix: str | None, state: dict[str, Any]
) -> OutformError:
    error = cls.__new__(cls)
    OutformError.__init__(error, what, where=where, fix=fix)
    error.__dict__.update(state)
    return error


class UsageError(OutformError):
    """An API or CLI was called with arguments that do not fit together."""


class ConfigError(OutformError):
    """A configuration file or setting is invalid."""


class SchemaError(OutformError):
    """A schema or type cannot be used: not valid JSON Schema, a remote `$ref`, an unknown type."""


class InputError(OutformError):
    """The text cannot be parsed at all: binary, too large, too deeply nested, or over the time
    limit. (An empty reply is an OutputError: the model can be asked again.)"""

    def __init__(
        self,
        what: str,
        *,
        where: str | None = None,
        fix: str | None = None,
        limit: str | None = None,
    ) -> None:
        self.limit = limit
        """The option whose limit the text is over (`max_chars`, `max_depth`, `time_limit`),
        or None (not a limit: binary, not Unicode)."""
        super().__init__(what, where=where, fix=fix)


class InternalError(OutformError):
    """A fault inside outform: an exception no stage expected, caught at the boundary of a
    public function so that callers only ever see outform's errors. `stage` names where it
    happened; the original exception is chained as `__cause__`."""

    def __init__(self, what: str, *, stage: str, where: str | None = None) -> None:
        self.stage = stage
        super().__init__(
            what,
            where=where or f"stage {stage!r}",
            fix="this is a bug in outform: please report it with the reply and the schema",
        )

    @classmethod
    def wrap(cls, exc: BaseException, default_stage: str) -> OutformError:
        """An InternalError for `exc`, naming the stage (the innermost outform module in the
        traceback, else `default_stage`); or, when the caller's own code raised it (a
        validator of the output type, a custom type), a :class:`CallerCodeError` naming it."""
        caller = _caller_frame(exc)
        if caller is not None:
            return CallerCodeError(exc, caller)
        stage = _stage_of(exc) or default_stage
        return cls(f"outform failed in stage {stage!r}: {type(exc).__name__}: {exc}", stage=stage)


class CallerCodeError(UsageError):
    """Code the caller handed to outform raised an exception outform cannot read: a validator
    of the output type raising KeyError, a type whose constructor fails. Not outform's fault,
    nor the model's: the caller's code is named, and the original is chained."""

    def __init__(self, exc: BaseException, where: str) -> None:
        super().__init__(
            f"your code raised {type(exc).__name__}: {exc}",
            where=where,
            fix="a validator refuses a value by raising ValueError or AssertionError (Pydantic "
            "then reports it, and outform can ask the model again); other exceptions are bugs "
            "in the code named",
        )


def _caller_frame(exc: BaseException) -> str | None:
    """Where the innermost frame of the caller's own code in `exc`'s traceback is (`name in
    file:line`), or None when every frame is outform's, a library's or the standard
    library's (installed under the interpreter's prefixes)."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        module = tb.tb_frame.f_globals.get("__name__", "")
        if not _library(module, code.co_filename):
            found = f"{code.co_name} in {code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def _library(module: Any, filename: str) -> bool:
    if isinstance(module, str) and (module == "outform" or module.startswith("outform.")):
        return True
    return filename.startswith("<frozen") or filename.startswith(_PREFIXES)


_PREFIXES = tuple(
    dict.fromkeys(
        str(path).rstrip(os.sep) + os.sep
        for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
        for path in (Path(prefix), Path(prefix).resolve())
    )
)
"""Where the standard library and installed packages live, as written and resolved: no
caller's code."""


def _stage_of(exc: BaseException) -> str | None:
    """The innermost stage module (outform.parse.*, outform.schema.*) the exception passed
    through, by name: `coerce`, `extract`, `compiled`..."""
    stage = None
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        parts = module.split(".") if isinstance(module, str) else []
        if len(parts) > 2 and parts[0] == "outform" and parts[1] in ("parse", "schema"):
            stage = parts[-1]
        tb = tb.tb_next
    return stage


def guarded(stage: str) -> Callable[[F], F]:
    """Decorate a public entry point so that only outform's errors leave it: any other
    exception becomes an :class:`InternalError` naming the stage, chained to the original."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except OutformError:
                raise
            except Exception as exc:
                raise InternalError.wrap(exc, stage) from exc

        return cast(F, wrapper)

    return decorate


class OutputError(OutformError):
    """The reply could not be turned into a value that matches the schema.

    Carries the :class:`RetryHint` (what to tell the model) and the partial
    :class:`ParseResult` (what every stage did) so a caller can re-ask or inspect.
    """

    def __init__(
        self,
        what: str,
        *,
        hint: RetryHint,
        result: ParseResult[Any] | None = None,
        where: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.hint = hint
        self.result = result
        super().__init__(what, where=where, fix=fix)

    def render(self) -> str:
        # For people: the violations under what went wrong (the model's wording is `.hint`'s).
        return super().render() + "\n" + self.hint.explain(indent="  ")

    def __reduce__(self) -> tuple[Any, ...]:
        # Every attribute (a subclass's too: a GenerationError's attempts), for pickling and
        # copying alike; not the constructor, whose arguments differ between subclasses.
        return (_rebuild_output_error, (type(self), dict(self.__dict__)))


def _rebuild_output_error(cls: type[OutputError], state: dict[str, Any]) -> OutputError:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    OutformError.__init__(error, state["what"], where=state["where"], fix=state["fix"])
    return error


class JobBusyError(UsageError):
    """A batch job another process drives (its lock is held)."""


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


class DialectError(SchemaError):
    """A provider's schema dialect cannot express the schema: raised before any request.

    `options` lists what the caller can do instead (another mode, another dialect, a change
    to the schema), and `dialect` names the dialect that refused.
    """

    def __init__(
        self,
        what: str,
        *,
        dialect: str,
        options: tuple[str, ...],
        where: str | None = None,
    ) -> None:
        self.dialect = dialect
        self.options = options
        super().__init__(what, where=where, fix="; or ".join(options) if options else None)


class StoreError(OutformError):
    """The response store failed (database unreachable, locked, full): the gateway answers
    503 and nothing it reported as saved is lost."""


class ProviderError(OutformError):
    """A provider call failed. `status` is the HTTP status (None for network failures), `body`
    an excerpt of what the provider said. Credentials never appear here."""

    def __init__(
        self,
        what: str,
        *,
        provider: str,
        status: int | None = None,
        body: str | None = None,
        where: str | None = None,
        fix: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.provider = provider
        self.status = status
        self.body = body
        self.retry_after = retry_after
        super().__init__(what, where=where, fix=fix)


class BadRequestError(ProviderError):
    """The provider refused the request (4xx): a schema it cannot take, a bad parameter."""


class AuthenticationError(ProviderError):
    """The key or credentials are missing, wrong, or lack permission (401 / 403)."""


class RateLimitError(ProviderError):
    """Too many requests (429), after the retries allowed."""


class ServerError(ProviderError):
    """The provider failed (5xx), after the retries allowed."""


class ConnectionFailedError(ProviderError):
    """No answer: the connection failed or timed out, after the retries allowed. `reached`:
    whether any attempt may have reached the provider (False only when every attempt failed
    to connect: then nothing was created there, a batch say)."""

    def __init__(self, what: str, *, reached: bool = True, **details: Any) -> None:
        self.reached = reached
        super().__init__(what, **details)


class StreamInterruptedError(ProviderError):
    """A streamed reply broke off, or the provider reported an error in the middle of it."""


class StreamAbortedError(OutputError):
    """The reply can no longer become valid: the stream was cut at `offset` characters.

    `reason` is "schema" (a violation of the schema that no repair can undo), "syntax" (not
    JSON) or "degenerate" (a loop of whitespace or of one fragment). `.hint` says what to tell
    the model on the re-ask; `.text` is what had been received.
    """

    def __init__(
        self,
        what: str,
        *,
        hint: RetryHint,
        offset: int,
        text: str,
        reason: Literal["schema", "syntax", "degenerate"],
    ) -> None:
        self.offset = offset
        self.text = text
        self.reason = reason
        super().__init__(what, hint=hint, where=f"character {offset} of the reply")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_aborted, (self.what, self.hint, self.offset, self.text, self.reason))


def _rebuild_aborted(
    what: str, hint: RetryHint, offset: int, text: str, reason: Any
) -> StreamAbortedError:
    return StreamAbortedError(what, hint=hint, offset=offset, text=text, reason=reason)


# -- what an error may show ------------------------------------------------------------------

E = TypeVar("E", bound=BaseException)


def sealed(error: E, hide: Callable[[str], str]) -> E:
    """`error`, about to leave a call, showing nothing `hide` masks (the call's credentials):
    everything it carries (its message, hint, attempts, partial result: every text in them)
    masked in place, and its chain cut at the first exception that shows one, whether as
    `__cause__` or as `__context__` (a traceback prints the chain, and so do
    `logging.exception()` and `traceback.format_exception()`). An exception of the chain that
    shows none is kept as it is. `hide` returns a text that holds no secret unchanged."""
    hide = _once(hide)
    state = vars(error)
    shown = masked(state, hide)
    if shown is not state:
        state.update(shown)
    if isinstance(error, OutformError):
        error.args = (error.render(),)
    else:
        error.args = masked(error.args, hide)
    _cut_chain(error, hide, {id(error)})
    return error


def _once(hide: Callable[[str], str]) -> Callable[[str], str]:
    """`hide`, run once per distinct text (a large result repeats many: keys, transforms)."""
    seen: dict[str, str | None] = {}  # (None: the text shows nothing)

    def once(text: str) -> str:
        if text in seen:
            found = seen[text]
            return text if found is None else found
        hidden = hide(text)
        seen[text] = None if hidden == text else hidden
        return text if hidden == text else hidden

    return once


def _cut_chain(error: BaseException, hide: Callable[[str], str], seen: set[int]) -> None:
    for inner in (error.__cause__, error.__context__):
        if inner is None or id(inner) in seen:
            continue
        seen.add(id(inner))
        if _shows(inner, hide):
            if inner is error.__cause__:
                error.__cause__ = None
            if inner is error.__context__:
                error.__context__ = None
                error.__suppress_context__ = True
        else:
            _cut_chain(inner, hide, seen)


def _shows(error: BaseException, hide: Callable[[str], str]) -> bool:
    """Whether `error` shows something `hide` masks: in its arguments, or in what it carries."""
    return masked(error.args, hide) is not error.args or masked(vars(error), hide) is not vars(
        error
    )


def masked(value: Any, hide: Callable[[str], str]) -> Any:
    """`value` with `hide` applied to every text it holds: strings, the keys and values of
    dicts, the items of lists and tuples, the fields of dataclass instances (a copy, its
    fields set without running its constructor). The very object when `hide` changes no text
    in it; any other object is kept as it is."""
    if isinstance(value, str):
        return hide(value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, new_item = masked(key, hide), masked(item, hide)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list | tuple):
        items = []
        for item in value:
            items.append(masked(item, hide))
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        if isinstance(value, list):
            return items
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name, None)
            new = masked(old, hide)
            if new is not old:
                fields[f.name] = new
        if not fields:
            return value
        copied = copy.copy(value)
        for name, new in fields.items():
            object.__setattr__(copied, name, new)
        return copied
    return value


__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "ConfigError",
    "ConnectionFailedError",
    "DialectError",
    "InputError",
    "InternalError",
    "OutformError",
    "OutputError",
    "ProviderError",
    "RateLimitError",
    "SchemaError",
    "ServerError",
    "StoreError",
    "StreamAbortedError",
    "StreamInterruptedError",
    "UsageError",
    "guarded",
    "masked",
    "sealed",
]
