"""Items a typed output folds together (a set's equal items, a map's keys that read as one)
are recorded as lossy changes, never silently lost: `result.value` holds fewer than
`result.data`, and the change says which and how many."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

import outform
from outform.parse.folded import folding_validator, folds
from outform.streaming import parse_stream

LEVELS = ("off", "minimal", "full")


class Tagged(BaseModel):
    tags: set[str]
    by_id: dict[int, str] = {}
    seen: frozenset[datetime] = frozenset()


@pytest.mark.parametrize("level", LEVELS)
def test_a_set_that_folds_duplicates_is_a_recorded_lossy_change(level: str) -> None:
    result = outform.parse('["a", "b", "a"]', type=set[str], level=level)
    assert (result.value, result.data) == ({"a", "b"}, ["a", "b", "a"])
    assert [(c.path, c.stage, c.transform, c.before) for c in result.changes] == [
        ("", "semantic", "fold_equal_items", '["a"]')
    ]
    assert result.changes[0].detail.startswith("3 items written, 2 kept")
    assert result.lossy


@pytest.mark.parametrize("level", ("minimal", "full"))
def test_every_folding_container_of_a_model_is_recorded_at_its_path(level: str) -> None:
    reply = (
        '{"tags": ["x", "y", "x"], "by_id": {"1": "one", "01": "uno"},'
        ' "seen": ["2024-05-01T10:00:00Z", "2024-05-01T12:00:00+02:00"]}'
    )
    result = outform.parse(reply, type=Tagged, level=level)
    assert result.value.by_id == {1: "uno"}  # the last of the keys that read as one
    assert len(result.value.seen) == 1  # one instant, spelled twice
    assert [(c.path, c.before) for c in result.changes] == [
        ("/by_id", '[{"1":"one"}]'),
        ("/seen", '["2024-05-01T12:00:00+02:00"]'),
        ("/tags", '["x"]'),
    ]
    assert all(c.lossy for c in result.changes)


def test_distinct_items_and_string_keyed_maps_record_nothing() -> None:
    result = outform.parse('{"tags": ["x", "y"], "by_id": {"1": "one", "2": "two"}}', type=Tagged)
    assert result.changes == () and result.value.tags == {"x", "y"}
    assert folding_validator(TypeAdapter(dict[str, int])) is None
    assert folding_validator(TypeAdapter(list[str])) is None


def test_items_equal_only_as_python_values_are_folded_and_recorded() -> None:
    check = folding_validator(TypeAdapter(frozenset[float]))
    assert check is not None
    [fold] = folds(check, [1, 1.0, 2])
    assert (fold.written, fold.kept, fold.dropped) == (3, 2, [1.0])


def test_a_streamed_set_records_the_fold_too() -> None:
    *_, final = parse_stream(['["a", "b"', ', "a"]'], type=set[str])
    assert final.value == {"a", "b"}
    assert [c.transform for c in final.changes] == ["fold_equal_items"]


class Mixed(BaseModel):
    items: list[set[str] | int]


class WithSet(BaseModel):
    numbers: set[int]


class WithText(BaseModel):
    text: str


class Either(BaseModel):
    either: WithSet | WithText


@pytest.mark.parametrize(
    ("output", "reply", "path"),
    [
        (Mixed, '{"items": [["a", "a"], 3]}', "/items/0"),
        (Either, '{"either": {"numbers": [1, 1]}}', "/either/numbers"),
    ],
)
def test_a_folded_container_in_a_union_is_recorded_at_its_path_in_the_reply(
    output: Any, reply: str, path: str
) -> None:
    """Pydantic's error locations name a union's branches and validators (`model-fields`,
    `function-wrap[...]`): the change's path is the container's place in the reply alone."""
    result = outform.parse(reply, type=output, level="full")
    assert [(c.path, c.transform) for c in result.changes] == [(path, "fold_equal_items")]
