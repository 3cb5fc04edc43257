"""Compiled pipelines reused across `outform.parse` calls.

Compiling a pipeline (schema check, validators, plans) costs far more than parsing a small
reply, so `parse()` keeps the last few hundred. A schema dict is found first by identity (the
same dict passed again, still equal to the copy taken when it was first seen, so a mutated
dict is never served a stale pipeline), then by its canonical JSON.
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

    def get(self, output: Any, level: str | None, options: dict[str, Any]) -> Pipeline[Any]:
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
            with self._lock:
                if len(self._by_id) >= self.size:
                    self._by_id.clear()
                self._by_id[(id(output), settings)] = (output, copy.deepcopy(output), pipeline)
        return pipeline

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_id.clear()


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
