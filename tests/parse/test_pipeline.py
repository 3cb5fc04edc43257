"""The pipeline: levels, the fast path, shadow mode, processors, events, observers, typed
output and provenance."""

from __future__ import annotations

import dataclasses
import enum
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, Literal

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typing_extensions import TypedDict

import outform
from outform import Event, Pipeline, Processor, ResponseFormat
from outform.schema import pointer
from outform.schema.compiled import compile_schema
from outform.trace import events as trace_events
from tests.parse.strategies import json_values, prose

NUMBERED = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
}


def transforms(result: outform.ParseResult[Any]) -> list[str]:
    return [change.transform for change in result.changes]


# -- levels ---------------------------------------------------------------------------------


def test_the_default_level_is_minimal() -> None:
    assert outform.parse('{"a": 1}', NUMBERED).level == "minimal"


@pytest.mark.parametrize("reply", ['```json\n{"a": 1}\n```', 'Here: {"a": 1}', '{"a": "1"}'])
def test_level_off_accepts_only_a_reply_that_is_valid_as_sent(reply: str) -> None:
    with pytest.raises(outform.OutputError):
        outform.parse(reply, NUMBERED, level="off")


def test_level_off_still_validates_and_returns_a_valid_reply() -> None:
    result = outform.parse('{"a": 1}', NUMBERED, level="off")
    assert (result.value, result.level, result.changes) == ({"a": 1}, "off", ())


def test_level_minimal_extracts_and_coerces_but_does_not_repair_syntax() -> None:
    assert outform.parse('Here: {"a": "1"}', NUMBERED).value == {"a": 1}
    with pytest.raises(outform.OutputError):
        outform.parse('{"a": 1,}', NUMBERED)


def test_level_full_also_repairs_syntax_and_reads_leniently() -> None:
    result = outform.parse('{"a": "about 3",}', NUMBERED, level="full")
    assert result.value == {"a": 3}
    assert result.level == "full"
    assert transforms(result) == ["pyjson5", "string_to_integer"]


def test_an_option_overrides_what_the_level_implies() -> None:
    with pytest.raises(outform.OutputError):
        outform.parse('{"a": 1,}', NUMBERED, level="full", tolerance=0)


def test_without_the_coerce_stage_nothing_is_coerced() -> None:
    with pytest.raises(outform.OutputError):
        outform.parse('{"a": "1"}', NUMBERED, stages=("extract", "decode", "unescape"))


def test_stages_can_be_given_as_a_list() -> None:
    result = outform.parse('Here: {"a": 1}', NUMBERED, stages=["extract", "decode"])
    assert result.value == {"a": 1}


# -- the fast path --------------------------------------------------------------------------


def test_a_reply_valid_as_sent_records_nothing() -> None:
    result = outform.parse('{"a": 1}', NUMBERED)
    assert result.value == result.data == {"a": 1}
    assert result.changes == ()
    assert result.events == ()
    assert result.ok
    assert not result.repaired
    assert result.hint is None


def test_a_reply_valid_as_sent_is_not_reported_to_observers() -> None:
    seen: list[Event] = []
    outform.parse('{"a": 1}', NUMBERED, observers=[seen.append])
    assert seen == []


def test_utf8_bytes_are_accepted_as_a_reply() -> None:
    assert outform.parse(b'{"a": 1}', NUMBERED).value == {"a": 1}


def test_a_repaired_reply_says_so() -> None:
    result = outform.parse('{"a": "1"}', NUMBERED)
    assert result.repaired
    assert result.ok
    assert result.text == '{"a": "1"}'


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_any_json_value_parses_back_unchanged_under_the_empty_schema(value: Any) -> None:
    result = outform.parse(orjson.dumps(value), {})
    assert orjson.dumps(result.value) == orjson.dumps(value)
    assert result.changes == ()
    assert result.events == ()


def test_a_pipeline_is_reused_for_many_replies() -> None:
    pipeline: Pipeline[Any] = Pipeline(NUMBERED)
    assert pipeline.run('{"a": 1}').value == {"a": 1}
    assert pipeline.run('{"a": "2"}').value == {"a": 2}
    assert pipeline.run('{"a": 3}').changes == ()


def test_a_schema_dict_changed_between_calls_is_not_served_a_stale_pipeline() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert outform.parse('{"a": "1"}', schema).value == {"a": 1}
    schema["properties"]["a"] = {"type": "string"}
    assert outform.parse('{"a": "1"}', schema).value == {"a": "1"}


def test_a_compiled_schema_keeps_its_own_copy_of_the_callers_dict() -> None:
    """Compiled schemas are shared by every equal schema: a caller changing its dict later
    must not change what another caller's equal schema compiles to."""
    first: dict[str, Any] = {"type": "object", "properties": {"q": {"enum": ["m", "n"]}}}
    compile_schema(first)
    first["properties"]["q"]["enum"][0] = "changed"
    again = compile_schema({"type": "object", "properties": {"q": {"enum": ["m", "n"]}}})
    assert again.root["properties"]["q"]["enum"] == ["m", "n"]


@pytest.mark.parametrize("options", [{}, {"level": "full"}, {"fill_defaults": False}])
def test_a_schema_changed_deep_inside_is_never_served_a_stale_pipeline(
    options: dict[str, Any],
) -> None:
    """A cache hit is found by identity, so every change must be seen: a nested keyword, a
    list item, a default (the fast path folds defaults into its validator)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"enum": ["x", "y"]}, "b": {"type": "integer", "default": 1}},
        "required": ["a"],
    }
    assert outform.parse('{"a": "x"}', schema, **options).data["a"] == "x"
    schema["properties"]["a"]["enum"][0] = "z"
    with pytest.raises(outform.OutputError):
        outform.parse('{"a": "x"}', schema, **options)
    schema["properties"]["a"]["enum"][0] = "x"
    schema["properties"]["b"]["default"] = 2
    expected = {"a": "x", "b": 2} if options.get("fill_defaults", True) else {"a": "x"}
    assert outform.parse('{"a": "x"}', schema, **options).data == expected


@pytest.mark.parametrize("mapping", [dict, OrderedDict])
def test_a_value_changed_between_true_and_1_or_false_and_0_is_not_served_a_stale_pipeline(
    mapping: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    """Python's `==` takes True for 1 and False for 0 (and 0.0); a `const`, `default` or
    `enum` does not, so the identity cache compares those exactly (in any mapping)."""
    schema = mapping(
        {
            "type": "object",
            "properties": {"a": {"default": 0}, "b": {"const": 1}, "c": {"enum": [False, "x"]}},
        }
    )
    assert outform.parse('{"b": 1, "c": false}', schema).data == {"b": 1, "c": False, "a": 0}
    schema["properties"]["a"]["default"] = False
    schema["properties"]["b"]["const"] = True
    schema["properties"]["c"]["enum"][0] = 0.0
    assert outform.parse('{"b": true, "c": 0}', schema).data == {"b": True, "c": 0, "a": False}
    schema["properties"]["b"]["const"] = 1.0  # the same JSON number as 1: either pipeline is right
    assert outform.parse('{"b": 1, "c": 0}', schema).data == {"b": 1, "c": 0, "a": False}


# -- formats --------------------------------------------------------------------------------


def test_a_text_format_returns_the_reply_as_it_is() -> None:
    result = outform.parse("  hello {", ResponseFormat.text())
    assert result.value == "  hello {"


def test_a_json_object_format_wants_an_object() -> None:
    assert outform.parse('Here: {"a": 1}', ResponseFormat.json_object()).value == {"a": 1}
    with pytest.raises(outform.OutputError):
        outform.parse("[1]", ResponseFormat.json_object())


def test_a_json_schema_format_is_used_like_its_schema() -> None:
    fmt = ResponseFormat.json_schema(NUMBERED, name="numbered")
    result = outform.parse('{"a": "1"}', fmt)
    assert result.value == {"a": 1}
    assert result.schema_hash == fmt.schema_hash


def test_a_string_schema_takes_the_reply_as_written() -> None:
    assert outform.parse("hello there", {"type": "string"}).value == "hello there"


def test_a_scalar_schema_reads_the_reply_text_as_that_scalar() -> None:
    assert outform.parse("42", {"type": "integer"}).value == 42
    assert outform.parse("yes", {"type": "boolean"}).value is True


COUNTS = {"type": "array", "items": {"enum": ["ONE", "TWO", "THREE"]}}


@pytest.mark.parametrize(
    ("reply", "schema", "expected"),
    [
        ("TWO", COUNTS, ["TWO"]),
        ("three", COUNTS, ["THREE"]),
        ("The answer is One", COUNTS, ["ONE"]),
        ("**one** is the answer", COUNTS, ["ONE"]),
        ("The answer is true", {"type": "array", "items": {"type": "boolean"}}, [True]),
        ("hello world", {"type": "array", "items": {"type": "string"}}, ["hello world"]),
    ],
)
def test_a_list_of_scalars_takes_a_reply_without_json_as_its_one_item(
    reply: str, schema: dict[str, Any], expected: list[Any]
) -> None:
    result = outform.parse(reply, schema, level="full")
    assert result.value == expected
    assert transforms(result)[0] == "wrap_in_array"


def test_a_list_of_scalars_never_takes_broken_json_or_two_members_as_one_item() -> None:
    with pytest.raises(outform.OutputError):
        outform.parse('["a", "b"', {"type": "array", "items": {"type": "string"}})
    with pytest.raises(outform.OutputError):
        outform.parse("ONE and THREE", COUNTS, level="full")  # no guessing among members
    with pytest.raises(outform.OutputError):
        outform.parse("none", {"type": "array", "items": {"type": "object"}}, level="full")


# -- shadow mode ----------------------------------------------------------------------------


def test_shadow_mode_returns_the_reply_as_sent_and_what_would_change() -> None:
    result = outform.parse('{"a": "1"}', NUMBERED, shadow=True)
    assert result.shadow
    assert result.value == result.data == {"a": "1"}
    assert result.would_be == {"a": 1}
    assert transforms(result) == ["string_to_integer"]
    assert not result.ok
    assert result.hint is not None
    assert result.hint.paths == ("/a",)


def test_shadow_mode_reports_a_reply_valid_as_sent_as_ok() -> None:
    result = outform.parse('{"a": 1}', NUMBERED, shadow=True)
    assert (result.ok, result.shadow, result.changes, result.would_be) == (True, True, (), {"a": 1})


def test_shadow_mode_never_raises_for_an_invalid_reply() -> None:
    result = outform.parse('{"a": "x"}', NUMBERED, shadow=True)
    assert not result.ok
    assert result.value == {"a": "x"}
    assert result.would_be_hint is not None  # even repaired, it would not match
    assert result.would_be_hint.paths == ("/a",)


def test_shadow_mode_says_whether_the_would_be_value_is_valid() -> None:
    assert outform.parse('{"a": "1"}', NUMBERED, shadow=True).would_be_hint is None


def test_shadow_mode_reads_json_in_prose_as_unreadable_as_sent() -> None:
    result = outform.parse('Here: {"a": 1}', NUMBERED, shadow=True)
    assert result.data is None
    assert result.hint is not None
    assert result.hint.is_syntax
    assert result.would_be == {"a": 1}


def test_shadow_mode_serialises_what_would_be() -> None:
    data = outform.parse('{"a": "1"}', NUMBERED, shadow=True).to_dict()
    assert (data["shadow"], data["would_be"], data["ok"]) == (True, {"a": 1}, False)
    assert "would_be" not in outform.parse('{"a": "1"}', NUMBERED).to_dict()


# -- custom processors ----------------------------------------------------------------------


def test_a_before_extract_processor_rewrites_the_text_and_is_recorded() -> None:
    strip = Processor("before_extract", lambda text: text.removeprefix("JUNK"), name="unjunk")
    result = outform.parse('JUNK{"a": 1}', NUMBERED, processors=[strip])
    assert result.value == {"a": 1}
    (change,) = result.changes
    assert (change.path, change.stage, change.transform) == ("", "custom", "unjunk")
    assert [(e.stage, e.transforms) for e in result.events] == [("custom", ("unjunk",))]


def test_an_after_decode_processor_sees_the_value_before_coercion() -> None:
    seen: list[Any] = []

    def spy(value: Any) -> Any:
        seen.append(value)
        return value

    outform.parse('Here: {"a": "1"}', NUMBERED, processors=[Processor("after_decode", spy)])
    assert seen == [{"a": "1"}]


def test_an_after_coerce_processor_sees_the_coerced_value_and_its_change_is_recorded() -> None:
    def double(value: Any) -> Any:
        return {"a": value["a"] * 2}

    result = outform.parse('{"a": "2"}', NUMBERED, processors=[Processor("after_coerce", double)])
    assert result.value == {"a": 4}
    custom = [c for c in result.changes if c.stage == "custom"]
    assert [(c.transform, c.detail, c.after) for c in custom] == [
        ("double", "after_coerce", '{"a":4}')
    ]


def test_a_processor_can_make_valid_what_coercion_cannot() -> None:
    def pick(value: Any) -> Any:
        return {"a": len(value["a"])}

    result = outform.parse('{"a": "four"}', NUMBERED, processors=[Processor("after_decode", pick)])
    assert result.value == {"a": 4}


@pytest.mark.parametrize("at", ["after_decode", "after_coerce"])
def test_a_value_processor_runs_on_a_reply_that_is_valid_as_sent(at: str) -> None:
    bump = Processor(at, lambda value: {"a": value["a"] + 1}, name="bump")  # type: ignore[arg-type]
    result = outform.parse('{"a": 1}', NUMBERED, processors=[bump])
    assert result.value == {"a": 2}
    assert transforms(result) == ["bump"]


def test_a_processor_that_changes_nothing_records_nothing() -> None:
    same = Processor("after_decode", lambda value: value)
    result = outform.parse('Here: {"a": 1}', NUMBERED, processors=[same])
    assert transforms(result) == ["extract_from_prose"]


def test_a_before_extract_processor_must_return_text() -> None:
    with pytest.raises(outform.UsageError, match="must return text"):
        outform.parse('{"a": 1}', NUMBERED, processors=[Processor("before_extract", len)])


def test_a_processor_at_an_unknown_point_is_refused() -> None:
    with pytest.raises(outform.UsageError, match="unknown processor point"):
        Processor("before_validate", lambda value: value)  # type: ignore[arg-type]


# -- events ---------------------------------------------------------------------------------


def test_every_event_carries_the_schema_hash() -> None:
    pipeline: Pipeline[Any] = Pipeline(NUMBERED)
    result = pipeline.run('Here: {"a": "1"}')
    assert result.events
    assert {e.schema_hash for e in result.events} == {pipeline.schema_hash}
    assert pipeline.schema_hash == ResponseFormat.json_schema(NUMBERED).schema_hash


def test_events_name_the_stage_and_the_transforms() -> None:
    result = outform.parse('Here: {"a": "1"}', NUMBERED)
    assert [(e.name, e.stage, e.transforms) for e in result.events] == [
        ("output.coercion.success", "extract", ("extract_from_prose",)),
        ("output.coercion.attempt", "semantic", ()),
        ("output.coercion.success", "semantic", ("string_to_integer",)),
    ]


def test_a_tolerant_decode_emits_an_attempt_and_a_success() -> None:
    result = outform.parse('{"a": 1,}', NUMBERED, level="full")
    assert [(e.name, e.stage, e.transforms) for e in result.events] == [
        ("output.coercion.attempt", "tolerant", ("pyjson5",)),
        ("output.coercion.success", "tolerant", ("pyjson5",)),
    ]


def test_the_union_branch_chosen_is_an_event_with_its_index_and_path() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "boolean"}, {"type": "integer"}]}},
    }
    result = outform.parse('{"v": "7"}', schema)
    chosen = [(e.path, e.branch_index) for e in result.events if e.branch_index is not None]
    assert chosen == [("/v", 1)]


def test_a_failure_emits_a_fail_event_naming_the_first_violation() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('{"a": "x"}', NUMBERED)
    assert caught.value.result is not None
    last = caught.value.result.events[-1]
    assert (last.name, last.stage) == ("output.coercion.fail", "validate")
    assert last.detail == 'at a: expected integer, found string "x"'


def test_an_event_serialises_to_json() -> None:
    (event, *_) = outform.parse('Here: {"a": 1}', NUMBERED).events
    data = orjson.loads(orjson.dumps(event.to_dict()))
    assert data["transforms"] == ["extract_from_prose"]
    assert set(data) == {
        "name",
        "stage",
        "schema_hash",
        "transforms",
        "branch_index",
        "path",
        "detail",
        "time",
    }


# -- observers ------------------------------------------------------------------------------


def test_an_observer_receives_every_event_of_the_result_in_order() -> None:
    seen: list[Event] = []
    result = outform.parse('Here: {"a": "1"}', NUMBERED, observers=[seen.append])
    assert tuple(seen) == result.events


def test_an_observer_receives_the_events_of_a_failed_parse() -> None:
    seen: list[Event] = []
    with pytest.raises(outform.OutputError):
        outform.parse('{"a": "x"}', NUMBERED, observers=[seen.append])
    assert seen[-1].name == "output.coercion.fail"


def test_an_observer_that_raises_warns_and_does_not_break_the_parse() -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("sink is down")

    seen: list[Event] = []
    with pytest.warns(RuntimeWarning, match="sink is down"):
        result = outform.parse('Here: {"a": 1}', NUMBERED, observers=[broken, seen.append])
    assert result.value == {"a": 1}
    assert tuple(seen) == result.events


@pytest.fixture
def global_events() -> Iterator[list[Event]]:
    seen: list[Event] = []

    def observer(event: Event) -> None:
        seen.append(event)

    outform.add_observer(observer)
    yield seen
    outform.remove_observer(observer)


def test_a_global_observer_receives_events_of_every_call(global_events: list[Event]) -> None:
    first = outform.parse('Here: {"a": 1}', NUMBERED)
    second = outform.parse('{"a": "1"}', NUMBERED)
    assert tuple(global_events) == first.events + second.events


def test_a_removed_global_observer_receives_nothing_more() -> None:
    seen: list[Event] = []

    def observer(event: Event) -> None:
        seen.append(event)

    outform.add_observer(observer)
    outform.remove_observer(observer)
    outform.parse('Here: {"a": 1}', NUMBERED)
    assert seen == []


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def write(self, event: Event) -> None:
        self.events.append(event)


def test_a_bound_method_registered_as_a_global_observer_can_be_removed() -> None:
    """`sink.write` is a new object at each access: removal must compare equal, not identical."""
    sink = Sink()
    outform.add_observer(sink.write)
    outform.remove_observer(sink.write)
    try:
        outform.parse('Here: {"a": 1}', NUMBERED)
        assert sink.events == []
    finally:  # do not leak the observer into other tests while the bug stands
        registry = trace_events._registry
        registry.observers = tuple(o for o in registry.observers if o != sink.write)


def test_observers_do_not_warn_when_they_succeed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outform.parse('Here: {"a": 1}', NUMBERED, observers=[lambda event: None])


# -- typed output ---------------------------------------------------------------------------


class Invoice(BaseModel):
    number: str
    total: float
    paid: bool = False


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


def test_a_pydantic_model_gives_an_instance_and_the_plain_data() -> None:
    result = outform.parse('Sure: {"number": 7, "total": "$1,200.50"}', type=Invoice)
    assert result.value == Invoice(number="7", total=1200.5)
    assert result.data == {"number": "7", "total": 1200.5}
    assert transforms(result) == ["extract_from_prose", "number_to_string", "string_to_number"]


def test_a_valid_reply_for_a_model_takes_the_fast_path() -> None:
    result = outform.parse('{"number": "7", "total": 1.5, "paid": true}', type=Invoice)
    assert result.value == Invoice(number="7", total=1.5, paid=True)
    assert result.changes == ()
    assert result.data == {"number": "7", "total": 1.5, "paid": True}


def test_a_dataclass_gives_an_instance() -> None:
    assert outform.parse('{"x": "1", "y": 2}', type=Point).value == Point(1, 2)


def test_a_typed_dict_gives_a_dict() -> None:
    assert outform.parse('{"title": "Up", "year": "2009"}', type=Movie).value == {
        "title": "Up",
        "year": 2009,
    }


def test_a_list_type_gives_a_list() -> None:
    assert outform.parse('["1", 2, "3,000,000"]', type=list[int]).value == [1, 2, 3000000]


def test_a_literal_type_matches_a_member() -> None:
    assert outform.parse("B", type=Literal["a", "b"]).value == "b"


def test_an_enum_type_gives_the_member() -> None:
    assert outform.parse("Green", type=Colour).value is Colour.GREEN
    assert outform.parse('"red"', type=Colour).value is Colour.RED


def test_a_format_derived_from_a_type_gives_typed_values() -> None:
    result = outform.parse('{"x": 1, "y": "2"}', ResponseFormat.of(Point))
    assert result.value == Point(1, 2)


def test_a_typed_pipeline_returns_its_type() -> None:
    pipeline: Pipeline[Point] = Pipeline(Point)
    point: Point = pipeline.run('{"x": 1, "y": 2}').value
    assert point == Point(1, 2)


def test_schema_and_type_together_are_refused() -> None:
    with pytest.raises(outform.UsageError, match="not both"):
        outform.parse("{}", {"type": "object"}, type=Point)


# -- provenance -----------------------------------------------------------------------------


def test_a_change_path_is_a_json_pointer_with_escaped_keys() -> None:
    schema = {
        "type": "object",
        "properties": {"a/b": {"type": "integer"}, "c~d": {"type": "integer"}},
    }
    result = outform.parse('{"a/b": "1", "c~d": "2"}', schema)
    assert sorted(c.path for c in result.changes) == ["/a~1b", "/c~0d"]


def test_a_change_path_points_into_arrays_by_index() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    }
    result = outform.parse('{"items": [1, "2", 3, "4"]}', schema)
    assert [c.path for c in result.changes] == ["/items/1", "/items/3"]


def test_a_change_serialises_every_field() -> None:
    (change,) = outform.parse('{"a": "1"}', NUMBERED).changes
    assert change.to_dict() == {
        "path": "/a",
        "stage": "semantic",
        "transform": "string_to_integer",
        "before": "1",
        "after": 1,
        "detail": "plain",
        "lossy": False,
        "lost": 0,
        "attempt": 1,
        "expected": "integer",
        "actual": "string",
        "branch_index": None,
    }


def test_a_change_says_the_types_and_the_union_branch_it_was_made_under() -> None:
    schema = {
        "type": "object",
        "properties": {
            "v": {"anyOf": [{"type": "boolean"}, {"type": "integer"}]},
            "w": {"type": "integer"},
        },
        "additionalProperties": False,
    }
    result = outform.parse('{"v": "7", "w": "8", "x": [1]}', schema, level="full")
    found = {c.path: (c.transform, c.expected, c.actual, c.branch_index) for c in result.changes}
    assert found == {
        "/v": ("string_to_integer", "integer", "string", 1),
        "/w": ("string_to_integer", "integer", "string", None),
        "/x": ("drop_unexpected_key", "absent", "array", None),
    }


MESSY_PROPERTIES: dict[str, Any] = {
    "n": {"type": "integer"},
    "f": {"type": "number"},
    "ok": {"type": "boolean"},
    "s": {"type": "string"},
    "maybe": {"type": ["integer", "null"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "colour": {"enum": ["red", "green"]},
    "inner": {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"default": 0}},
        "required": ["x"],
    },
    "we/ird~key": {"type": "integer"},
}
MESSY = {
    "type": "object",
    "properties": MESSY_PROPERTIES,
    "required": ["n", "maybe"],
    "additionalProperties": False,
}

_numbers = st.integers(-(10**9), 10**9)
_messy_value = st.one_of(
    json_values,
    _numbers,
    _numbers.map(str),
    _numbers.map(lambda n: f"{n:,}"),
    _numbers.map(lambda n: [n]),
    _numbers.map(lambda n: [str(n)]),
    st.sampled_from(["yes", "No", "N/A", "null", "RED", "Green ", "true", "1.5", "[1]"]),
    st.dictionaries(st.sampled_from(["x", "X", "y", "value"]), json_values, max_size=3),
)
_messy_objects = st.dictionaries(
    st.sampled_from([*MESSY_PROPERTIES, "Colour", "N", "extra", "x"]),
    _messy_value,
    max_size=8,
)


def _wrap(document: str, how: str, words: str) -> str:
    if how == "fence":
        return f"{words}\n```json\n{document}\n```"
    if how == "prose":
        return f"{words} {document} {words}"
    return document


@settings(max_examples=200, deadline=None)
@given(
    value=_messy_objects,
    how=st.sampled_from(["plain", "prose", "fence"]),
    words=prose,
    level=st.sampled_from(["minimal", "full"]),
)
def test_every_change_path_is_a_pointer_into_the_returned_data(
    value: dict[str, Any], how: str, words: str, level: str
) -> None:
    reply = _wrap(orjson.dumps(value).decode(), how, words)
    try:
        result = outform.parse(reply, MESSY, level=level)
    except outform.OutputError as error:
        assert error.result is not None
        result = error.result
    for change in result.changes:
        tokens = pointer.parts(change.path)  # raises unless a JSON pointer
        if change.transform == "drop_unexpected_key":
            parent = pointer.lookup(result.data, pointer.from_parts(tokens[:-1]))
            assert tokens[-1] not in parent
        else:
            pointer.lookup(result.data, change.path)  # raises KeyError when absent


# -- the reply's own text as the value (found by the fuzzer) ------------------------------


def test_reasoning_removed_from_a_string_reply_is_recorded() -> None:
    """The reply as written is the value of a string schema, less its reasoning block, and
    the removal is a change: the value differs from the reply."""
    result = outform.parse('<think>done. {</think>\n["0"]', {"type": "string"})
    assert result.value == '\n["0"]'
    assert [(c.stage, c.transform) for c in result.changes] == [("extract", "strip_reasoning")]


@pytest.mark.parametrize(
    "schema", [{"type": ["string", "number"]}, {"anyOf": [{"type": "object"}, {"type": "string"}]}]
)
def test_a_reply_read_as_text_is_the_reply_as_written(schema: dict[str, Any]) -> None:
    """The text is not trimmed: a reply taken as a string is kept as written (as it is for a
    plain string schema), so that a value without changes is the reply itself."""
    result = outform.parse("Sure! ", schema)
    assert (result.value, result.changes) == ("Sure! ", ())
