"""The output pipeline: `parse()` for one reply, `Pipeline` to reuse one schema for many."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from outform.config import settings
from outform.errors import InternalError, OutformError, UsageError
from outform.format import ResponseFormat
from outform.parse.cache import shared as _cache
from outform.parse.context import LEVELS, STAGES, Level, Options
from outform.parse.hint import RetryHint, Violation
from outform.parse.pipeline import PROCESSOR_POINTS, Pipeline, Processor
from outform.parse.result import Change, ParseResult
from outform.profile import active, step
from outform.trace.events import Observer


def parse(
    text: str | bytes,
    schema: Mapping[str, Any] | ResponseFormat | None = None,
    *,
    type: Any = None,
    level: str | None = None,
    processors: Iterable[Processor] = (),
    observers: Iterable[Observer] = (),
    profile: str | None = None,
    **options: Any,
) -> ParseResult[Any]:
    """Turn a model's reply into a value matching `schema` (a JSON Schema dict or a
    ResponseFormat) or `type` (a Pydantic model, dataclass, TypedDict or other type).

    Returns a ParseResult: `.value` (typed when `type` was given), `.changes` (what was changed,
    per JSON path) and `.events`. Raises OutputError, carrying a RetryHint, when the reply cannot
    be made valid; InputError for replies that cannot be parsed at all.

    `profile` names a `[profiles.NAME]` of outform.toml; its settings (over `[defaults]`)
    apply where the call does not set its own (see docs/profiles.md).
    """
    if (
        not options
        and level is None
        and profile is None
        and (schema is None or type is None)
        and not processors
        and not observers
    ):
        # The common call: a schema or type seen before, and nothing else. One lookup, then
        # the pipeline (no settings read: `[defaults]` is checked once per cache generation).
        seen = _cache.plain(schema if type is None else type)
        if seen is not None:
            try:
                return seen.run(text)
            except OutformError:
                raise
            except Exception as exc:  # only outform's errors leave (see errors.InternalError)
                raise InternalError.wrap(exc, "parse") from exc
    if schema is not None and type is not None:
        raise UsageError(
            "pass either schema= or type=, not both",
            fix="type= derives the schema from the type; drop schema=",
        )
    output = type if type is not None else schema
    try:
        pipeline = pipeline_for(
            output, level=level, processors=processors, observers=observers, profile=profile,
            **options,
        )  # fmt: skip
        if profile is None:
            return pipeline.run(text)
        with active(profile):
            return pipeline.run(text)
    except OutformError:
        raise
    except Exception as exc:  # only outform's errors leave (see errors.InternalError)
        raise InternalError.wrap(exc, "parse") from exc


def pipeline_for(
    output: Any,
    *,
    level: str | None = None,
    processors: Iterable[Processor] = (),
    observers: Iterable[Observer] = (),
    profile: str | None = None,
    **options: Any,
) -> Pipeline[Any]:
    """The pipeline `parse()` runs: the profile's settings (over `[defaults]`) where the call
    sets none, compiled once per schema and settings unless it has processors or observers."""
    if profile is not None or settings().defaults:
        chosen = step(profile)
        level = level or chosen.level
        options = {**chosen.parse_options(), **options}
    if processors or observers:  # the defaults, () and (), are the common case
        return Pipeline(output, level=level, processors=processors, observers=observers, **options)
    return _cache.get(output, level, options)


def clear_cache() -> None:
    """Forget compiled pipelines (after changing outform.toml, for instance)."""
    _cache.clear()


__all__ = [
    "LEVELS",
    "PROCESSOR_POINTS",
    "STAGES",
    "Change",
    "Level",
    "Options",
    "ParseResult",
    "Pipeline",
    "Processor",
    "RetryHint",
    "Violation",
    "clear_cache",
    "parse",
    "pipeline_for",
]
