"""Shared pieces of the batch tests: an input file, a schema, a scripted model."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.batch.fakes import Error

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def write_rows(path: Path, count: int) -> Path:
    lines = (orjson.dumps({"id": f"r{i}", "text": f"person #r{i}"}) for i in range(1, count + 1))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


class Scripted:
    """Replies by row number: every 7th invalid on its first ask (fixed when re-asked), every
    5th fenced with the age as a string (repaired), every 11th a transient provider error on
    its first ask, the rest valid as sent."""

    def __init__(self, *, invalid: int = 7, fenced: int = 5, errors: int = 0) -> None:
        self.invalid, self.fenced, self.errors = invalid, fenced, errors
        self.asked: Counter[str] = Counter()

    def __call__(self, custom_id: str, body: Mapping[str, Any]) -> str | Error:
        self.asked[custom_id] += 1
        n = int(custom_id.lstrip("r"))
        first = self.asked[custom_id] == 1
        if self.errors and n % self.errors == 0 and first:
            return Error(500)
        if n % self.invalid == 0 and first:
            return f'{{"name": "P{n}", "age": "unknown"}}'
        if n % self.fenced == 0:
            return f'```json\n{{"name": "P{n}", "age": "{n}"}}\n```'
        return f'{{"name": "P{n}", "age": {n}}}'


@pytest.fixture
def rows(tmp_path: Path) -> Path:
    return write_rows(tmp_path / "rows.jsonl", 30)
