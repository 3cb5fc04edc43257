"""Keys a typed output ignores (Pydantic's `extra="ignore"`) are recorded, never silently lost."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter

import outform
from outform.parse.ignored import closed_schema, closed_validator, ignored_keys


class Line(BaseModel):
    sku: str


class Invoice(BaseModel):
    total: float
    lines: list[Line] = []


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    total: float


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_a_key_the_model_ignores_is_a_recorded_lossy_change(level: str) -> None:
    reply = '{"total": 1, "note": "keep me", "lines": [{"sku": "A", "qty": 2}]}'
    result = outform.parse(reply, type=Invoice, level=level)
    assert result.value == Invoice(total=1, lines=[Line(sku="A")])
    assert [(c.path, c.transform, c.before) for c in result.changes] == [
        ("/lines/0/qty", "ignore_extra_key", "2"),
        ("/note", "ignore_extra_key", '"keep me"'),
    ]
    assert result.lossy


def test_a_model_that_keeps_or_forbids_extra_keys_needs_no_check() -> None:
    assert closed_validator(TypeAdapter(Open)) is None
    assert closed_validator(TypeAdapter(int)) is None
    result = outform.parse('{"total": 1, "note": "x"}', type=Open)
    assert result.changes == () and result.value.note == "x"


def test_dataclasses_and_lists_of_models_are_checked_too() -> None:
    @dataclass
    class Point:
        x: int

    point = closed_validator(TypeAdapter(Point))
    assert point is not None and ignored_keys(point, {"x": 1, "y": 2}) == ["/y"]
    lines = closed_validator(TypeAdapter(list[Line]))
    assert lines is not None and ignored_keys(lines, [{"sku": "a", "b": 1}]) == ["/0/b"]


def test_a_reply_with_only_declared_keys_stays_on_the_fast_path() -> None:
    result = outform.parse('{"total": 1, "lines": [{"sku": "A"}]}', type=Invoice)
    assert result.changes == () and result.events == ()


def test_colons_inside_strings_are_no_dropped_keys() -> None:
    reply = '{"total": 1, "lines": [{"sku": "at 10:30, see http://x"}]}'
    result = outform.parse(reply, type=Invoice)
    assert result.changes == () and result.value.lines[0].sku == "at 10:30, see http://x"


def test_the_fast_check_closes_only_objects_that_say_nothing_of_other_keys() -> None:
    closed = closed_schema(
        {"properties": {"a": {"properties": {}, "additionalProperties": True}}, "type": "object"}
    )
    assert closed["additionalProperties"] is False
    assert closed["properties"]["a"]["additionalProperties"] is True


class Cat(BaseModel):
    lives: int


class Dog(BaseModel):
    name: str


class Pets(BaseModel):
    pets: list[Cat | Dog]


class Maybe(BaseModel):
    pet: Dog | Cat | None


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_in_a_union_only_the_branch_the_type_chose_ignores_keys_at_their_own_path(
    level: str,
) -> None:
    """Each branch of `Cat | Dog` refuses the other's key; the type chose Cat for the third
    item, so only `name` is lost there (it was recorded under both branches, at a path holding
    the branch's schema name: `/pets/2/model-fields/name`)."""
    reply = '{"pets": [{"lives": 9}, {"name": "Rex"}, {"lives": 3, "name": "Tom"}]}'
    result = outform.parse(reply, type=Pets, level=level)
    assert result.value == Pets(pets=[Cat(lives=9), Dog(name="Rex"), Cat(lives=3)])
    assert [(c.path, c.transform, c.before) for c in result.changes] == [
        ("/pets/2/name", "ignore_extra_key", '"Tom"'),
    ]


def test_an_optional_union_records_the_keys_of_the_branch_chosen() -> None:
    result = outform.parse('{"pet": {"lives": 3, "name": "Tom", "age": 4}}', type=Maybe)
    assert result.value == Maybe(pet=Dog(name="Tom"))
    assert [c.path for c in result.changes] == ["/pet/age", "/pet/lives"]


def test_without_the_typed_reading_every_branch_s_keys_are_told_at_their_paths() -> None:
    closed = closed_validator(TypeAdapter(Pets))
    assert closed is not None
    assert ignored_keys(closed, {"pets": [{"lives": 3, "name": "Tom"}]}) == [
        "/pets/0/lives",
        "/pets/0/name",
    ]


class Place(BaseModel):
    city: str


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    place: Place


def test_a_model_inside_one_that_forbids_extra_keys_still_ignores_its_own() -> None:
    """A model's config is its own: Place ignores `x` though Strict forbids extra keys (a
    TypedDict or stdlib dataclass inside Strict would take Strict's and refuse it)."""
    result = outform.parse('{"place": {"city": "Oslo", "x": 1}}', type=Strict)
    assert result.value == Strict(place=Place(city="Oslo"))
    assert [(c.path, c.transform) for c in result.changes] == [("/place/x", "ignore_extra_key")]
    with pytest.raises(outform.OutputError, match="unexpected field"):
        outform.parse('{"place": {"city": "Oslo"}, "y": 2}', type=Strict, level="off")
