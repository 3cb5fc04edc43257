"""The output pipeline: `parse()` for one reply, `Pipeline` to reuse one schema for many."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from outform.errors import UsageError
from outform.format import JsonSchemaFormat, ResponseFormat
from outform.parse.context import LEVELS, STAGES, Level, Options
from outform.parse.hint import RetryHint, Violation
from outform.parse.pipeline import PROCESSOR_POINTS, Pipeline, Processor
from outform.parse.result import Change, ParseResult
from outform.schema.canonical import canonical_json
from outform.trace.events import Observer


def parse(
    text: str | bytes,
    schema: Mapping[str, Any] | ResponseFormat | None = None,
    *,
    type: Any = None,
    level: str | None = None,
    processors: Iterable[Processor] = (),
    observers: Iterable[Observer] = (),
    **options: Any,
) -> ParseResult[Any]:
    """Turn a model's reply into a value matching `schema` (a JSON Schema dict or a
    ResponseFormat) or `type` (a Pydantic model, dataclass, TypedDict or other type).

    Returns a ParseResult: `.value` (typed when `type` was given), `.changes` (what was changed,
    per JSON path) and `.events`. Raises OutputError, carrying a RetryHint, when the reply cannot
    be made valid; InputError for replies that cannot be parsed at all.
    """
    if schema is not None and type is not None:
        raise UsageError(
            "pass either schema= or type=, not both",
            fix="type= derives the schema from the type; drop schema=",
        )
    output = type if type is not None else schema
    processors = tuple(processors)
    observers = tuple(observers)
    if processors or observers:
        pipeline: Pipeline[Any] = Pipeline(
            output, level=level, processors=processors, observers=observers, **options
        )
    else:
        pipeline = _cached_pipeline(output, level, options)
    return pipeline.run(text)


def _cached_pipeline(output: Any, level: str | None, options: dict[str, Any]) -> Pipeline[Any]:
    try:
        key = (_output_key(output), level, tuple(sorted(options.items())))
        hash(key)
    except TypeError:
        return Pipeline(output, level=level, **options)
    return _pipeline(key, output, level, options)


def _output_key(output: Any) -> Any:
    if isinstance(output, Mapping):
        return ("schema", canonical_json(output))
    if isinstance(output, JsonSchemaFormat):
        return ("format", canonical_json(output.to_dict()), output.output_type)
    if isinstance(output, ResponseFormat):
        return ("format", canonical_json(output.to_dict()))
    return ("type", output)


_cache: dict[Any, Pipeline[Any]] = {}
_CACHE_SIZE = 256


def _pipeline(key: Any, output: Any, level: str | None, options: dict[str, Any]) -> Pipeline[Any]:
    pipeline = _cache.get(key)
    if pipeline is None:
        pipeline = Pipeline(output, level=level, **options)
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = pipeline
    return pipeline


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
]
