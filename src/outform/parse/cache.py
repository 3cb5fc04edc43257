"""Compiled pipelines reused across `outform.parse` calls.

Compiling a pipeline (schema check, validators, plans) costs far more than parsing a small
reply, so `parse()` keeps the last few hundred. A schema dict is found first by identity (the
same dict passed again, still equal to the copy taken when it was first seen, so a mutated
dict is never served a stale pipeline), then by its canonical JSON.

The identity check is the whole cost of a cache hit, so it is kept to one dict lookup and one
comparison in C (`==` of the dict and its deep copy, which stops at the first difference and
skips every leaf the copy shares). A call with the default level and no options (the common
one) skips building the settings key too. No cheaper check is correct: a dict can be changed
anywhere inside without any object that holds it changing identity or size.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

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
        self._plain: dict[int, tuple[Mapping[str, Any], Any, Pipeline[Any]]] = {}
        """The identity entries of calls with the default level and no options."""

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
            entry = (output, copy.deepcopy(output), pipeline)
            with self._lock:
                if len(self._by_id) >= self.size:
                    self._by_id.clear()
                    self._plain.clear()
                self._by_id[(id(output), settings)] = entry
                if level is None and not options:
                    self._plain[id(output)] = entry
        return pipeline

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_id.clear()
            self._plain.clear()


shared = PipelineCache()
"""The one cache `outform.parse` and the stream parser share, so `clear_cache()` (and
`config.reload()`) reach both."""


def _output_key(output: Any) -> Any:
    if isinstance(output, Mapping):
        return ("schema", canonical_json(output))
    if isinstance(output, JsonSchemaFormat):
        return ("format", canonical_json(output.to_dict()), output.output_type)
    if isinstance(output, ResponseFormat):
        return ("format", canonical_json(output.to_dict()))
    return ("type", output)
