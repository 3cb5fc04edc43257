"""A type that reads a field by its Python name as well as its alias (`populate_by_name`,
`validate_by_name`) is checked against a schema that takes either spelling (parse/by_name.py):
the fast path, the slow path and the stream give the same answer."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
import pytest
from pydantic import AliasChoices, AliasPath, BaseModel, ConfigDict, Field, TypeAdapter, with_config
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass
from typing_extensions import TypedDict

import outform
from outform.errors import StreamAbortedError
from outform.parse import strictness
from outform.streaming import StreamParser


class User(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    user_name: str = Field(alias="userName")
    age: int


class ByValidateName(BaseModel):
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True)
    user_name: str = Field(alias="userName")
    age: int


class Aliased(BaseModel):
    """Reads `userName` only (Pydantic's default)."""

    user_name: str = Field(alias="userName")
    age: int


class Line(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    unit_name: str
    unit_count: int = 1


class Order(BaseModel):
    lines: list[Line]
    order_id: str = Field(alias="orderId")


@dataclass(config=ConfigDict(populate_by_name=True))
class UserData:
    user_name: str = Field(alias="userName")
    age: int = 0


@with_config(ConfigDict(validate_by_name=True))
class UserDict(TypedDict):
    user_name: Annotated[str, Field(alias="userName")]
    age: int


class Choice(BaseModel):
    """Reads `x`, else `ex` (an `AliasChoices`)."""

    x: int = Field(validation_alias=AliasChoices("x", "ex"))


class ChoiceByName(BaseModel):
    """Reads `ex`, else `xx`, else its name `x`."""

    model_config = ConfigDict(populate_by_name=True)
    x: int = Field(validation_alias=AliasChoices("ex", "xx"))


class KeyPath(BaseModel):
    """`AliasPath("zz")` is a key: the type reads `zz` (its schema writes `z`)."""

    z: int = Field(validation_alias=AliasPath("zz"))


class DeepPath(BaseModel):
    """Reads `y` from `data[0]`: no property of the object."""

    y: int = Field(validation_alias=AliasPath("data", 0))
    n: int = 0


def _slow(reply: str, output: Any, level: str = "full") -> outform.ParseResult[Any]:
    """The reply through the stages (a processor keeps it off the fast path)."""
    keep = outform.Processor("after_decode", lambda value: value)
    return outform.Pipeline(output, level=level, processors=[keep]).run(reply)


def _stream(chunks: list[str], output: Any, level: str = "full") -> tuple[list[Any], Any]:
    parser: StreamParser[Any] = StreamParser(output, level=level)
    snapshots = [s.value for chunk in chunks for s in parser.feed(chunk)]
    return snapshots, parser.finish()


@pytest.mark.parametrize("model", [User, ByValidateName])
def test_a_field_written_by_its_name_is_valid_as_sent_on_the_slow_path_too(model: Any) -> None:
    result = outform.parse('{"user_name": "a", "age": "3"}', type=model, level="full")
    assert result.value == model(user_name="a", age=3)
    assert [(c.path, c.transform) for c in result.changes] == [("/age", "string_to_integer")]
    assert result.data == {"user_name": "a", "age": 3}  # the reply's key, as written


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_the_fast_path_and_the_slow_path_agree_on_a_field_written_by_its_name(
    level: str,
) -> None:
    reply = '{"user_name": "a", "age": 3}'
    fast = outform.parse(reply, type=User, level=level)
    slow = _slow(reply, User, level)
    assert fast.events == ()  # valid as sent: the fast path
    assert fast.value == slow.value == User(userName="a", age=3)
    assert fast.changes == slow.changes == ()
    assert fast.data == slow.data == {"user_name": "a", "age": 3}


def test_a_field_written_by_neither_spelling_is_missing_under_its_alias() -> None:
    with pytest.raises(outform.OutputError, match="missing required field 'userName'"):
        outform.parse('{"age": "3"}', type=User, level="full")


def test_a_model_that_reads_only_the_alias_still_refuses_the_name() -> None:
    with pytest.raises(outform.OutputError, match="missing required field 'userName'"):
        outform.parse('{"user_name": "a", "age": "3"}', type=Aliased, level="full")
    with pytest.raises(outform.OutputError, match="missing required field 'userName'"):
        outform.parse('{"user_name": "a", "age": 3}', type=Aliased, level="full")


@pytest.mark.parametrize("level", ["off", "full"])
def test_both_spellings_read_the_alias_and_record_the_name_as_ignored(level: str) -> None:
    """As Pydantic reads it: the alias's value, the name's key ignored (and recorded)."""
    reply = '{"userName": "b", "user_name": "a", "age": 3}'
    fast = outform.parse(reply, type=User, level=level)
    slow = _slow(reply, User, level)
    for result in (fast, slow):
        assert result.value == User(userName="b", age=3)
        assert [(c.path, c.transform, c.before) for c in result.changes] == [
            ("/user_name", "ignore_extra_key", '"a"')
        ]
        assert result.lossy


def test_each_spelling_written_is_checked_as_the_field() -> None:
    reply = '{"userName": "b", "user_name": 5, "age": 3}'
    result = outform.parse(reply, type=User, level="full")
    assert result.value == User(userName="b", age=3)
    assert [(c.path, c.transform) for c in result.changes] == [
        ("/user_name", "number_to_string"),
        ("/user_name", "ignore_extra_key"),
    ]
    with pytest.raises(outform.OutputError, match="at user_name: expected string"):
        outform.parse(reply, type=User, level="off")


def test_nested_models_read_by_name_take_either_spelling() -> None:
    reply = '{"orderId": "o1", "lines": [{"unit_name": "a", "unit_count": "2"}, {"unitName": "b"}]}'
    result = outform.parse(reply, type=Order, level="full")
    assert result.value == Order(
        orderId="o1", lines=[Line(unit_name="a", unit_count=2), Line(unit_name="b")]
    )
    assert [(c.path, c.transform) for c in result.changes] == [
        ("/lines/0/unit_count", "string_to_integer")
    ]
    # Order itself reads `orderId` only.
    with pytest.raises(outform.OutputError, match="missing required field 'orderId'"):
        outform.parse('{"order_id": "o1", "lines": []}', type=Order, level="full")


@pytest.mark.parametrize("output", [UserData, UserDict])
def test_dataclasses_and_typed_dicts_read_by_name_take_either_spelling(output: Any) -> None:
    result = outform.parse('{"user_name": "a", "age": "3"}', type=output, level="full")
    assert TypeAdapter(output).dump_python(result.value) == {"user_name": "a", "age": 3}


def test_the_published_schema_and_its_hash_are_unchanged() -> None:
    fmt = outform.ResponseFormat.of(User)
    assert set(fmt.schema["properties"]) == {"userName", "age"}
    assert fmt.schema["required"] == ["userName", "age"]
    result = outform.parse('{"user_name": "a", "age": "3"}', type=User, level="full")
    assert result.schema_hash == fmt.schema_hash == outform.Pipeline(User).schema_hash
    assert "user_name" not in orjson.dumps(fmt.schema).decode()


def test_a_hand_written_schema_with_the_type_is_checked_as_written() -> None:
    schema = TypeAdapter(User).json_schema()
    fmt = outform.JsonSchemaFormat(name="u", schema=schema | {"title": "Mine"}, output_type=User)
    with pytest.raises(outform.OutputError, match="missing required field 'userName'"):
        outform.parse('{"user_name": "a", "age": "3"}', fmt, level="full")


def test_decimals_and_names_are_checked_together() -> None:
    from decimal import Decimal

    class Price(BaseModel):
        model_config = ConfigDict(populate_by_name=True)
        unit_price: Decimal = Field(alias="unitPrice")

    adapter = TypeAdapter(Price)
    checked = strictness.checked_schema(adapter, adapter.json_schema(), decimals=True)
    assert checked is not None
    assert checked["properties"]["unit_price"] == checked["properties"]["unitPrice"]
    assert "pattern" in orjson.dumps(checked["properties"]["unit_price"]).decode()
    result = outform.parse('{"unit_price": "$1,234.50"}', type=Price, level="full")
    assert result.value.unit_price == Decimal("1234.50")
    assert [(c.path, c.transform) for c in result.changes] == [("/unit_price", "string_to_number")]


def test_the_stream_shows_a_field_written_by_its_name() -> None:
    snapshots, final = _stream(['{"user_name": "a",', ' "age": "3"}'], User)
    assert [(s.user_name, s.age) for s in snapshots] == [("a", None), ("a", 3)]
    assert final.value == User(userName="a", age=3)
    assert final.changes == outform.parse('{"user_name": "a", "age": "3"}', type=User).changes


def test_the_stream_reads_the_alias_when_both_spellings_are_written() -> None:
    snapshots, final = _stream(['{"userName": "b", "user_name": "a",', ' "age": 3}'], User)
    assert snapshots[-1].user_name == "b"
    assert final.value == User(userName="b", age=3)
    assert [c.transform for c in final.changes] == ["ignore_extra_key"]


def test_the_stream_shows_nested_fields_written_by_name() -> None:
    snapshots, final = _stream(['{"orderId": "o1", "lines": [{"unit_name": "a",', "}]}"], Order)
    assert snapshots[-1].lines[0].unit_name == "a"
    assert final.value.lines == [Line(unit_name="a")]


def test_the_stream_still_stops_a_model_that_reads_only_the_alias() -> None:
    with pytest.raises(StreamAbortedError, match="missing required field 'userName'"):
        _stream(['{"user_name": "a",', ' "age": "3"}'], Aliased)


def test_the_streams_checker_uses_the_pipelines_checked_schema() -> None:
    parser: StreamParser[Any] = StreamParser(User, level="full")
    assert parser.checker is not None
    assert parser.checker.compiled is parser.pipeline.compiled
    assert "user_name" in parser.pipeline.compiled.root["properties"]


# -- every spelling: AliasChoices, AliasPath ------------------------------------------------


@pytest.mark.parametrize("level", ["off", "full"])
def test_each_choice_of_an_alias_choices_is_valid_as_sent_on_both_paths(level: str) -> None:
    fast = outform.parse('{"ex": 5}', type=Choice, level=level)
    slow = _slow('{"ex": 5}', Choice, level)
    assert fast.events == ()  # valid as sent: the fast path
    assert fast.value == slow.value == Choice(x=5)
    assert fast.changes == slow.changes == ()


def test_a_choice_written_is_checked_and_converted_as_the_field() -> None:
    result = _slow('{"ex": "7"}', Choice)
    assert result.value == Choice(x=7)
    assert [(c.path, c.transform) for c in result.changes] == [("/ex", "string_to_integer")]


def test_a_field_written_under_no_choice_is_missing_under_the_schemas_key() -> None:
    with pytest.raises(outform.OutputError, match="missing required field 'x'"):
        _slow("{}", Choice)


def test_choices_then_the_name_are_read_in_pydantics_order() -> None:
    """The first spelling the type tries is read; the others written are ignored keys."""
    reply = '{"x": 1, "xx": 2}'
    for result in (
        outform.parse(reply, type=ChoiceByName, level="full"),
        _slow(reply, ChoiceByName),
    ):
        assert result.value == ChoiceByName(x=2)
        assert [(c.path, c.transform) for c in result.changes] == [("/x", "ignore_extra_key")]


def test_every_spelling_is_a_property_of_the_checked_schema_only() -> None:
    adapter = TypeAdapter(ChoiceByName)
    published = adapter.json_schema()
    checked = strictness.checked_schema(adapter, published, decimals=False)
    assert checked is not None
    assert list(published["properties"]) == ["ex"]
    assert list(checked["properties"]) == ["ex", "xx", "x"]
    assert "required" not in checked  # (any spelling, told as missing under `ex`)
    assert checked["allOf"] == [
        {
            "if": {"required": ["xx"]},
            "else": {"if": {"required": ["x"]}, "else": {"required": ["ex"]}},
        }
    ]
    assert (
        outform.Pipeline(ChoiceByName).schema_hash
        == outform.ResponseFormat.of(ChoiceByName).schema_hash
    )


def test_an_alias_path_of_one_key_is_that_key() -> None:
    assert _slow('{"zz": 1}', KeyPath).value.z == 1
    adapter = TypeAdapter(KeyPath)
    checked = strictness.checked_schema(adapter, adapter.json_schema(), decimals=False)
    assert checked is not None
    assert list(checked["properties"]) == ["zz"]  # (`z`, which the type does not read, is gone)
    assert checked["required"] == ["zz"]


def test_a_field_read_through_a_nested_path_is_left_to_the_type() -> None:
    """Not required by the checked schema; the path's first key takes any value there, and
    the type reads the field from it and checks it."""
    adapter = TypeAdapter(DeepPath)
    checked = strictness.checked_schema(adapter, adapter.json_schema(), decimals=False)
    assert checked is not None
    assert checked["properties"] == {"n": checked["properties"]["n"], "data": {}}
    assert "required" not in checked
    assert _slow('{"data": [5, 6]}', DeepPath).value == DeepPath(data=[5])  # type: ignore[call-arg]
    assert outform.parse('{"data": [5]}', type=DeepPath).value.y == 5
    with pytest.raises(outform.OutputError, match="at data: missing required field 0"):
        _slow('{"n": 1}', DeepPath)


def test_the_stream_reads_a_field_under_any_choice() -> None:
    snapshots, final = _stream(['{"ex": 5,', "}"], Choice)
    assert [s.x for s in snapshots] == [5, 5]
    assert final.value == Choice(x=5)


def test_the_stream_shows_the_spelling_the_type_reads_first() -> None:
    snapshots, final = _stream(['{"x": 1,', ' "xx": 2}'], ChoiceByName)
    assert [s.x for s in snapshots] == [1, 2]
    assert final.value == ChoiceByName(x=2)


def test_the_stream_shows_a_field_read_through_a_nested_path_only_at_the_end() -> None:
    snapshots, final = _stream(['{"n": 1, "data": [5', "]}"], DeepPath)
    assert all(s.y is None for s in snapshots)
    assert final.value == DeepPath(data=[5], n=1)  # type: ignore[call-arg]


def test_the_ignored_keys_check_reads_every_spelling() -> None:
    result = outform.parse('{"ex": 1, "x": 2}', type=Choice, level="full")
    assert result.value == Choice(x=2)
    assert [(c.path, c.transform) for c in result.changes] == [("/ex", "ignore_extra_key")]


@pytest.mark.parametrize("reply", ['{"userName": "a", "age": 3}', '{"user_name": "a", "age": 3}'])
@pytest.mark.parametrize("output", [UserData, UserDict])
def test_the_stream_reads_dataclasses_and_typed_dicts_under_each_spelling(
    output: Any, reply: str
) -> None:
    snapshots, final = _stream([reply[:-9], reply[-9:]], output)
    first = TypeAdapter(Any).dump_python(snapshots[0])
    user_name = first["user_name"] if isinstance(first, dict) else first.user_name
    assert user_name == "a"
    assert TypeAdapter(output).dump_python(final.value) == {"user_name": "a", "age": 3}
