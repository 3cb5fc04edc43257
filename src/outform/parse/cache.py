"""Compiled pipelines reused across `outform.parse` calls.

Compiling a pipeline (schema check, validators, plans) costs far more than parsing a small
reply, so `parse()` keeps the last few hundred. A schema dict is found first by identity (the
same dict passed again, still equal to the copy taken when it was first seen, so a mutated
dict is never served a stale pipeline), then by its canonical JSON.

The identity check is the whole cost of a cache hit, so it is kept to one dict lookup and one
comparison in C (`==` of the dict and its deep copy, which stops at the first difference and
skips every leaf the copy shares: `copy.deepcopy` keeps strings and numbers as they are, so only
the containers are walked). A call with the default level and no options (the common one)
skips building the settings key too, and `plain` serves `parse()` such a call without reading
the settings: whether outform.toml has `[defaults]` is read once per cache generation
(`config.reload()` clears the cache). No cheaper check is correct: a dict can be changed
anywhere inside without any object that holds it changing identity or size.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from outform.config import settings
from outform.format import JsonSchemaFormat, ResponseFormat
from outform.parse.pipeline import Pipeline
from outform.schema.canonical import canonical_json

_SIZE = 256


class PipelineCache:
    def __init__(self, size: int = _SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._by_key: OrderedDict[Any, Pipeline[Any]] = OrderedDict()
        self._by_id: dict[tuple[int, Any], tuple[Mapping[str, Any], Any, Pipeline[Any]]] = {}
        self._plain: dict[int, tuple[Any, Any, Pipeline[Any]]] = {}
        """The identity entries of calls with the default level and no options."""
        self._no_defaults: bool | None = None
        """outform.toml has no `[defaults]` (None: not read since the cache was cleared)."""

    def plain(self, output: Any) -> Pipeline[Any] | None:
        """The pipeline of `parse(text, output)` with no level, options or profile, if this
        very `output` was seen (and, a dict, is still equal to the copy taken then) and no
        `[defaults]` change such a call; None otherwise (then `get` decides)."""
        seen = self._plain.get(id(output))
        if seen is None or seen[0] is not output or seen[1] != output:
            return None
        no_defaults = self._no_defaults
        if no_defaults is None:
            no_defaults = self._no_defaults = not settings().defaults
        return seen[2] if no_defaults else None

    def get(self, output: Any, level: str | None, options: dict[str, Any]) -> Pipeline[Any]:
        if level is None and not options:
            seen = self._plain.get(id(output))
            if seen is not None and seen[0] is output and seen[1] == output:
                return seen[2]
        try:
            settings = (level, tuple(sorted(options.items())))
            hash(settings)
        except TypeError:  # an unhashable option value (a list of stages): no caching
            return Pipeline(output, level=level, **options)
        if isinstance(output, Mapping):
            seen = self._by_id.get((id(output), settings))
            if seen is not None and seen[0] is output and seen[1] == output:
                return seen[2]
        try:
            key = (_output_key(output), settings)
            hash(key)
        except TypeError:  # an unhashable type expression: compile without caching
            return Pipeline(output, level=level, **options)
        with self._lock:
            pipeline = self._by_key.get(key)
            if pipeline is not None:
                self._by_key.move_to_end(key)
        if pipeline is None:
            pipeline = Pipeline(output, level=level, **options)
            with self._lock:
                self._by_key[key] = pipeline
                if len(self._by_key) > self.size:
                    self._by_key.popitem(last=False)
        if isinstance(output, Mapping):
            entry = (output, guard_copy(output), pipeline)
            with self._lock:
                if len(self._by_id) >= self.size:
                    self._by_id.clear()
                    self._plain.clear()
                self._by_id[(id(output), settings)] = entry
                if level is None and not options:
                    self._plain[id(output)] = entry
        elif isinstance(output, type) and level is None and not options:
            with self._lock:  # a class is its own key (as in `_by_key`): nothing to compare
                if len(self._plain) >= self.size:
                    self._plain.clear()
                self._plain[id(output)] = (output, output, pipeline)
        return pipeline

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_id.clear()
            self._plain.clear()
            self._no_defaults = None


shared = PipelineCache()
"""The one cache `outform.parse` and the stream parser share, so `clear_cache()` (and
`config.reload()`) reach both."""


_EXACT_KEYWORDS = frozenset({"const", "default", "enum", "examples"})
"""Keywords whose value is any JSON value, where `true` and `1` (or `false`, `0` and `0.0`)
mean different things although Python's `==` takes them as equal."""


class _Exact:
    """A leaf of a guard copy that equals only the same JSON value (1 and 1.0 are one number;
    `true` is not 1)."""

    __slots__ = ("value",)

    def __init__(self, value: bool | int | float) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        value = self.value
        if isinstance(value, bool) or isinstance(other, bool):
            return other is value
        return isinstance(other, int | float) and other == value

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.value)


_KEPT: frozenset[type] = frozenset({str, int, float, bool, type(None)})
"""Types `guard_copy` keeps as they are (immutable, compared by `==`)."""
_KEPT_EXACT: frozenset[type] = frozenset({str, type(None)})
"""The same where booleans and the numbers 0 and 1 must be compared exactly."""


def guard_copy(value: Any, exact: bool = False) -> Any:
    """A deep copy of a schema to compare the caller's dict with on a cache hit: `==` stops at
    the first difference and returns at once for the strings and numbers it shares with the
    original (only containers are walked), except where a keyword takes any JSON value
    (`const`, `default`, ...): there booleans and the numbers 0 and 1 are compared exactly."""
    kind = type(value)
    if kind is dict or isinstance(value, Mapping):
        return {
            key: guard_copy(item, exact or key in _EXACT_KEYWORDS) for key, item in value.items()
        }
    if kind is list or isinstance(value, list):
        if set(map(type, value)) <= (_KEPT_EXACT if exact else _KEPT):
            return list(value)  # (a million-member enum of strings: one copy in C)
        return [guard_copy(item, exact) for item in value]
    if exact and kind in (bool, int, float) and value in (0, 1):
        return _Exact(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)


def _output_key(output: Any) -> Any:
    if isinstance(output, Mapping):
        return ("schema", canonical_json(output))
    if isinstance(output, JsonSchemaFormat):
        return ("format", canonical_json(output.to_dict()), output.output_type)
    if isinstance(output, ResponseFormat):
        return ("format", canonical_json(output.to_dict()))
    return ("type", output)
