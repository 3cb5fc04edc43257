"""A reply of many pieces, some refused by a tolerant reading: the work is their sum (issue 9).

Each refused reading is an event of the reply's run, and each candidate carried through the
stages has a run of its own that starts after those. It used to start as a copy of them, so
the copying grew with the pieces times the refusals before them; now it holds only its own
until it is reported. Counted here by what the runs hold, never timed.
"""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform import OutputError
from outform.parse.pipeline import Pipeline

SCHEMA = {
    "type": "object",
    "properties": {"zzz": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["zzz", "y"],
}


def pieces(count: int) -> str:
    """`count` pieces json-repair reads losing digits (refused), each followed by one it reads
    (carried, and refused by the schema)."""
    return " and ".join(f'{{"x": {i} 2 3}} then {{"a": {i} "b": 2}}' for i in range(count))


def held_by_runs(monkeypatch: pytest.MonkeyPatch, reply: str) -> int:
    """How many changes and events the runs of the reply's carried candidates hold."""
    held = 0
    real = Pipeline._carry

    def carry(self: Pipeline[Any], *args: Any, **kwargs: Any) -> Any:
        nonlocal held
        attempt = real(self, *args, **kwargs)
        held += len(attempt.run.changes) + len(attempt.run.events)
        return attempt

    monkeypatch.setattr(Pipeline, "_carry", carry)
    with pytest.raises(OutputError):
        outform.parse(reply, SCHEMA, level="full")
    monkeypatch.undo()
    return held


def test_the_runs_of_a_replys_pieces_grow_with_the_pieces_not_their_square(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small, large = held_by_runs(monkeypatch, pieces(100)), held_by_runs(monkeypatch, pieces(200))
    assert small >= 100  # each carried piece holds its own changes and events
    assert large / small <= 2.2  # (4 when each held the refusals before it)


def test_the_reported_attempt_holds_what_came_before_it_and_the_changes_after_it() -> None:
    # the first piece is refused (digits lost), the second is reported, the third is refused
    # after it, and the last region is too long for json-repair (a change of the reply's run)
    reply = (
        '{"x": 1 2 3} then {"a": 0 "b": 2} then {"x": 4 5 6} and {"w": "' + "y" * 300 + '" "z": 1}'
    )
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, SCHEMA, level="full", max_repair_chars=200)
    result = caught.value.result
    assert result is not None
    assert [(c.stage, c.transform) for c in result.changes] == [
        ("extract", "extract_from_prose"),
        ("tolerant", "json_repair"),
        ("tolerant", "skip_json_repair"),  # the long region, skipped after the attempt
        ("tolerant", "skip_json_repair"),  # the whole reply, read last
    ]
    events = [(e.name, e.stage) for e in result.events]
    assert events == [
        ("output.coercion.fail", "tolerant"),  # the first piece's refusal, before it
        ("output.coercion.success", "extract"),
        ("output.coercion.attempt", "tolerant"),
        ("output.coercion.success", "tolerant"),
        ("output.coercion.attempt", "semantic"),
        ("output.coercion.fail", "validate"),
    ]
    assert "keeps 2 of 4" in result.events[0].detail
