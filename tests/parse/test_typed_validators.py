"""A typed output's own validators see what Pydantic gives them, on every path; and the reply's
JSON satisfies the type's schema (coerced and recorded, or refused) before any of them reads it
(docs/pipeline.md#typed-outputs)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

import pytest
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainValidator,
    TypeAdapter,
    ValidationInfo,
    WrapValidator,
    computed_field,
    field_validator,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass

import outform
from outform import OutputError
from outform.errors import CallerCodeError
from outform.parse import strictness


def fenced(reply: str) -> str:
    return f"```json\n{reply}\n```"


# -- after and wrap validators around a model -----------------------------------------------
# Each reads an attribute of what it is given, as a validator does: given anything but the
# model (a tuple of its fields), it raises AttributeError, the caller's bug (CallerCodeError).


class Range(BaseModel):
    lo: int
    hi: int

    @model_validator(mode="after")
    def ordered(self) -> Range:
        if self.lo > self.hi:  # (an AttributeError when given anything but the model)
            raise ValueError("lo is above hi")
        return self


class Wrapped(BaseModel):
    lo: int
    hi: int

    @model_validator(mode="wrap")
    @classmethod
    def checked(cls, data: Any, handler: Any) -> Wrapped:
        built = handler(data)
        if built.lo < 0:  # (an AttributeError when the handler gives anything but the model)
            raise ValueError("negative")
        return built  # type: ignore[no-any-return]


class Holder(BaseModel):
    one: Range
    many: list[Range]

    @field_validator("one", mode="after")
    @classmethod
    def one_is_a_range(cls, value: Any) -> Any:
        return value if value.lo >= 0 else None

    @field_validator("many", mode="wrap")
    @classmethod
    def many_are_ranges(cls, value: Any, handler: Any) -> Any:
        built = handler(value)
        return [item for item in built if item.lo >= 0]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def count(self) -> int:
        return 1 + len(self.many)


@pydantic_dataclass
class Span:
    lo: int
    hi: int

    @model_validator(mode="after")
    def ordered(self) -> Span:
        if self.lo > self.hi:
            raise ValueError("lo is above hi")
        return self


class Priced(BaseModel):
    price: Decimal

    @model_validator(mode="after")
    def is_model(self) -> Priced:
        if self.price < 0:
            raise ValueError("a price is not negative")
        return self


class Tagged(BaseModel):
    model_config = ConfigDict(frozen=True)
    tags: frozenset[int]

    @model_validator(mode="after")
    def is_model(self) -> Tagged:
        if len(self.tags) > 100:
            raise ValueError("too many tags")
        return self


SLOW = [
    pytest.param('{"lo": 5, "hi": 10}', True, id="a fence"),
    pytest.param('{"lo": 5.0, "hi": 10}', False, id="a coercion"),
    pytest.param('{"LO": 5, "hi": 10}', False, id="a renamed key"),
    pytest.param('{"lo": 5, "hi": 10, "note": "x"}', False, id="an ignored key"),
]
"""An object whose reply takes the slow path: fenced, or as it is."""


def reply_of(text: str, fence: bool) -> str:
    return fenced(text) if fence else text


@pytest.mark.parametrize(("obj", "fence"), SLOW)
def test_an_after_model_validator_is_given_the_model_on_the_slow_path(
    obj: str, fence: bool
) -> None:
    """The copy of the type's validator that finds ignored keys read models as their fields,
    and gave `model_validator(mode="after")` a tuple: AttributeError, a CallerCodeError."""
    assert outform.parse(reply_of(obj, fence), type=Range).value == Range(lo=5, hi=10)


@pytest.mark.parametrize(("obj", "fence"), SLOW)
def test_nested_and_in_a_pydantic_dataclass_alike(obj: str, fence: bool) -> None:
    ranges = outform.parse(reply_of(f"[{obj}]", fence), type=list[Range])
    assert ranges.value == [Range(lo=5, hi=10)]
    holder = outform.parse(reply_of(f'{{"one": {obj}, "many": [{obj}]}}', fence), type=Holder)
    assert holder.value.one == Range(lo=5, hi=10) and holder.value.count == 2
    assert outform.parse(reply_of(obj, fence), type=Span).value == Span(lo=5, hi=10)


@pytest.mark.parametrize(("obj", "fence"), SLOW)
def test_a_wrap_model_validator_s_handler_gives_the_model(obj: str, fence: bool) -> None:
    result = outform.parse(reply_of(obj, fence), type=Wrapped)
    assert result.value == Wrapped(lo=5, hi=10)


def test_the_checks_of_decimals_and_folded_sets_give_validators_the_model_too() -> None:
    priced = outform.parse('{"price": 1.10}', type=Priced)
    assert priced.value.price == Decimal("1.10")
    tagged = outform.parse('{"tags": [1, 1, 2]}', type=Tagged)
    assert tagged.value.tags == {1, 2}
    assert [c.transform for c in tagged.changes] == ["fold_equal_items"]


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_a_validator_refusing_the_reply_s_value_is_a_violation_asked_again(level: str) -> None:
    wrong = '{"lo": 50, "hi": 10}'
    for output, reply in ((Range, wrong), (list[Range], f"[{wrong}]"), (Span, wrong)):
        # (`off` reads no fence: only the reply as sent)
        for text in (reply,) if level == "off" else (reply, fenced(reply)):
            with pytest.raises(OutputError) as caught:
                outform.parse(text, type=output, level=level)
            assert caught.value.hint is not None
            assert "(value error, lo is above hi)" in caught.value.hint.explain()


class Limit(BaseModel):
    most: int


class Limited(BaseModel):
    limit: Limit
    n: int

    @field_validator("n")
    @classmethod
    def within(cls, value: int, info: ValidationInfo) -> int:
        if value > info.data["limit"].most:
            raise ValueError("over the limit")
        return value


class LimitedFirst(BaseModel):
    limit: Limit
    n: int

    @field_validator("n", mode="before")
    @classmethod
    def within(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, int) and value > info.data["limit"].most:
            raise ValueError("over the limit")
        return value


@pytest.mark.parametrize("output", [Limited, LimitedFirst])
@pytest.mark.parametrize(("obj", "fence"), SLOW[:1] + SLOW[3:])
def test_a_field_validator_s_info_data_holds_the_models_read_before_it(
    output: type[BaseModel], obj: str, fence: bool
) -> None:
    reply = obj.replace('"lo": 5, "hi": 10', '"limit": {"most": 5}, "n": 1')
    result = outform.parse(reply_of(reply, fence), type=output)
    assert result.value == output(limit=Limit(most=5), n=1)


class Faulty(BaseModel):
    lo: int

    @model_validator(mode="after")
    def looks_up(self) -> Faulty:
        known: dict[str, int] = {}
        self.lo += known["missing"]  # the caller's bug: a KeyError
        return self


def test_any_other_exception_of_the_caller_s_validator_is_its_own() -> None:
    for reply in ('{"lo": 1}', fenced('{"lo": 1}')):
        with pytest.raises(CallerCodeError, match="KeyError"):
            outform.parse(reply, type=Faulty)


class Cat(BaseModel):
    name: str
    lives: int = 9

    @model_validator(mode="after")
    def is_cat(self) -> Cat:
        if self.lives < 0:
            raise ValueError("a cat has lives")
        return self


class Dog(BaseModel):
    name: str
    bark: str = "woof"

    @model_validator(mode="after")
    def is_dog(self) -> Dog:
        if not self.bark:
            raise ValueError("a dog barks")
        return self


def test_in_a_union_only_the_branch_the_type_chose_counts_its_ignored_keys() -> None:
    """A model's validators wrap it: the branch's class is found through them."""
    result = outform.parse('{"name": "Tom", "lives": 3, "bark": "x"}', type=Cat | Dog)
    assert result.value == Cat(name="Tom", lives=3)
    assert [(c.path, c.transform) for c in result.changes] == [("/bark", "ignore_extra_key")]


# -- before, wrap and plain validators read the reply's value after the schema --------------


def split_commas(value: Any) -> Any:
    return [int(part) for part in value.split(",")] if isinstance(value, str) else value


class Tags(BaseModel):
    tags: Annotated[list[int], BeforeValidator(split_commas)]


def read_digits(value: Any) -> Any:
    return int(value) if isinstance(value, str) and value.isdigit() else value


class Count(BaseModel):
    n: Annotated[int, BeforeValidator(read_digits)]


class Inner(BaseModel):
    x: int

    @model_validator(mode="before")
    @classmethod
    def digits(cls, data: Any) -> Any:
        return {**data, "x": read_digits(data["x"])} if isinstance(data, dict) else data


class Outer(BaseModel):
    items: list[Inner]


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_a_value_the_schema_refuses_is_never_left_to_a_before_validator(level: str) -> None:
    """`{"tags": "1,2,3"}` took the fast path as `[1, 2, 3]`, `data` saying "1,2,3" and
    nothing recorded; fenced, it was refused. Both are refused now."""
    reply = '{"tags": "1,2,3"}'
    for text in (reply,) if level == "off" else (reply, fenced(reply)):
        with pytest.raises(OutputError):
            outform.parse(text, type=Tags, level=level)
    valid = outform.parse('{"tags": [1, 2]}', type=Tags, level=level)
    assert valid.value == Tags(tags=[1, 2]) and valid.changes == ()


@pytest.mark.parametrize(
    ("output", "reply", "path", "data"),
    [
        (Count, '{"n": "1"}', "/n", {"n": 1}),
        (Inner, '{"x": "1"}', "/x", {"x": 1}),
        (Outer, '{"items": [{"x": "1"}]}', "/items/0/x", {"items": [{"x": 1}]}),
    ],
)
def test_a_conversion_the_schema_needs_is_recorded_on_every_path(
    output: type, reply: str, path: str, data: Any
) -> None:
    """Unfenced, `{"n": "1"}` was the validator's 1 with `data` saying "1", nothing recorded;
    fenced, `string_to_integer` was recorded."""
    for text in (reply, fenced(reply)):
        result = outform.parse(text, type=output)
        assert ("semantic", path, "string_to_integer") in [
            (c.stage, c.path, c.transform) for c in result.changes
        ]
        assert result.data == data, "data is what the type read"


def test_only_a_validator_of_the_type_s_own_code_costs_the_fast_path_a_check() -> None:
    def wrap(value: Any, handler: Any) -> Any:
        return handler(value)

    assert strictness.own_readers(TypeAdapter(Tags))
    assert strictness.own_readers(TypeAdapter(Outer))
    assert strictness.own_readers(TypeAdapter(Annotated[int, WrapValidator(wrap)]))
    assert strictness.own_readers(TypeAdapter(Annotated[int, PlainValidator(int)]))
    assert not strictness.own_readers(TypeAdapter(Range))  # after validators only
    assert strictness.own_readers(TypeAdapter(Holder))
    # Pydantic's own functions for the types it reads so (a URL, an IP address, a Sequence):
    from collections.abc import Sequence
    from ipaddress import IPv4Address

    from pydantic import AnyUrl

    for own in (AnyUrl, IPv4Address, Sequence[int], Decimal, dict[str, int]):
        assert not strictness.own_readers(TypeAdapter(own)), own
