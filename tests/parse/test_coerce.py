"""Stage *coerce*: unambiguous type mismatches fixed under the schema, each one recorded."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import outform
from outform import OutputError
from outform.parse.coerce import Coercer
from outform.parse.context import Deadline
from outform.schema.compiled import compile_schema
from tests.parse.strategies import json_values


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def coerced(value: Any, schema: dict[str, Any], *, lenient: bool = False) -> Any:
    coercer = Coercer(compile_schema(schema), lenient=lenient, max_depth=200)
    return coercer.coerce(value).value


def changes(result: outform.ParseResult[Any]) -> list[tuple[str, str, Any, Any]]:
    return [(c.path, c.transform, c.before, c.after) for c in result.changes]


def refused(reply: str, schema: dict[str, Any], **options: Any) -> outform.RetryHint:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse(reply, schema, **options)
    return caught.value.hint


INTEGER = {"type": "integer"}
NUMBER = {"type": "number"}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}

# -- scalars --------------------------------------------------------------------------------


def test_a_numeric_string_becomes_an_integer_and_the_spelling_is_recorded() -> None:
    result = outform.parse('{"n": "1,234,000"}', obj(n=INTEGER))
    assert result.value == {"n": 1234000}
    assert changes(result) == [("/n", "string_to_integer", "1,234,000", 1234000)]
    assert result.changes[0].stage == "semantic"
    assert result.changes[0].detail == "thousands"


def test_a_string_spelling_a_long_integer_keeps_every_digit() -> None:
    """Read through a float, it was 12345678901234567168, not lossy."""
    result = outform.parse('{"n": "12345678901234567890.0"}', obj(n=INTEGER))
    assert result.value == {"n": 12345678901234567890}
    refused('{"n": "12345678901234567890.0"}', obj(n={"enum": [12345678901234567168]}))


def test_an_amount_whose_separator_depends_on_the_locale_is_refused_not_guessed() -> None:
    for text in ("€1.234", "1,234", "12,5"):
        with pytest.raises(OutputError) as caught:
            outform.parse(f'{{"n": "{text}"}}', obj(n=NUMBER), level="full")
        (violation,) = caught.value.hint.violations
        assert violation.path == "/n" and "locale" in violation.found
        assert "locale" in caught.value.hint.message()  # the model is told why


def test_a_decimal_string_becomes_a_number() -> None:
    assert outform.parse('{"n": "$3.50"}', obj(n=NUMBER)).value == {"n": 3.5}


def test_a_whole_decimal_string_becomes_an_integer() -> None:
    assert outform.parse('{"n": "3.0"}', obj(n=INTEGER)).value == {"n": 3}


def test_a_fractional_string_is_not_rounded_into_an_integer() -> None:
    hint = refused('{"n": "3.5"}', obj(n=INTEGER))
    assert hint.paths == ("/n",)


def test_a_locale_dependent_number_is_refused() -> None:
    assert refused('{"n": "12,5"}', obj(n=NUMBER)).paths == ("/n",)


def test_a_boolean_word_becomes_a_boolean() -> None:
    result = outform.parse('{"ok": "Yes"}', obj(ok=BOOLEAN))
    assert changes(result) == [("/ok", "string_to_boolean", "Yes", True)]


def test_zero_and_one_become_booleans_but_other_numbers_do_not() -> None:
    assert outform.parse('{"ok": 0}', obj(ok=BOOLEAN)).value == {"ok": False}
    refused('{"ok": 2}', obj(ok=BOOLEAN))


def test_a_null_word_becomes_null_where_null_is_allowed() -> None:
    result = outform.parse('{"n": "N/A"}', obj(n={"type": ["integer", "null"]}))
    assert changes(result) == [("/n", "string_to_null", "N/A", None)]


def test_numbers_and_booleans_become_strings_where_a_string_is_wanted() -> None:
    result = outform.parse('{"a": 5, "b": true}', obj(a=STRING, b=STRING))
    assert result.value == {"a": "5", "b": "true"}
    assert [c.transform for c in result.changes] == ["number_to_string", "boolean_to_string"]


def test_a_string_holding_json_is_decoded_where_a_container_is_wanted() -> None:
    result = outform.parse('{"a": "[1, 2]"}', obj(a={"type": "array"}))
    assert changes(result) == [("/a", "decode_json_string", "[1, 2]", [1, 2])]


def test_json_decoded_from_a_string_is_coerced_in_turn() -> None:
    result = outform.parse('{"a": "{\\"b\\": \\"1\\"}"}', obj(a=obj(b=INTEGER)))
    assert result.value == {"a": {"b": 1}}
    assert [c.path for c in result.changes] == ["/a", "/a/b"]


# -- arrays ---------------------------------------------------------------------------------


def test_a_single_value_is_wrapped_where_an_array_is_wanted() -> None:
    result = outform.parse('{"tags": "x"}', obj(tags={"type": "array", "items": STRING}))
    assert changes(result) == [("/tags", "wrap_in_array", "x", ["x"])]


def test_null_becomes_an_empty_array() -> None:
    result = outform.parse('{"tags": null}', obj(tags={"type": "array", "items": STRING}))
    assert changes(result) == [("/tags", "null_to_empty_array", None, [])]


def test_a_one_item_array_is_unwrapped_where_a_scalar_is_wanted() -> None:
    result = outform.parse('{"n": ["7"]}', obj(n=INTEGER))
    assert result.value == {"n": 7}
    assert [c.transform for c in result.changes] == ["string_to_integer", "unwrap_single_item"]


def test_a_longer_array_is_not_unwrapped() -> None:
    refused('{"n": [1, 2]}', obj(n=INTEGER))


def test_items_and_prefix_items_are_coerced_at_their_index() -> None:
    schema = {"type": "array", "prefixItems": [INTEGER, STRING], "items": BOOLEAN}
    result = outform.parse('["1", 2, "yes"]', schema)
    assert result.value == [1, "2", True]
    assert [c.path for c in result.changes] == ["/0", "/1", "/2"]


ROWS = {"type": "array", "items": {"type": "array", "items": INTEGER}}
"""`list[list[int]]`."""


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    ("reply", "expected", "paths"),
    [
        ("5", [[5]], ["", "/0"]),  # a scalar: wrapped once per level, each level recorded
        ('"5"', [[5]], ["", "/0", "/0/0"]),
        ("[7]", [[7]], ["/0"]),  # one item: one row of one, whichever level it lacks
        ("[[1, 2], 3]", [[1, 2], [3]], ["/1"]),  # rows written: the bare item is a row
        ("[[1], 2, [3, 4]]", [[1], [2], [3, 4]], ["/1"]),
    ],
)
def test_a_value_written_without_a_level_of_lists_is_wrapped_once_per_level(
    level: str, reply: str, expected: Any, paths: list[str]
) -> None:
    result = outform.parse(reply, ROWS, level=level)
    assert result.data == expected
    assert [c.path for c in result.changes] == paths
    assert all(c.transform in ("wrap_in_array", "string_to_integer") for c in result.changes)


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize("reply", ["[1, 2, 3]", '["1", "2"]', "[1, 2]"])
def test_a_list_of_several_scalars_for_a_list_of_lists_is_not_guessed(
    level: str, reply: str
) -> None:
    """Found by a trial: `[1, 2, 3]` for `list[list[int]]` became `[[1], [2], [3]]`, three rows,
    where the reply may have written one row without its brackets, `[[1, 2, 3]]`: two readings,
    one level of wrapping each. Neither is made; the violation says why."""
    hint = refused(reply, ROWS, level=level)
    assert "written one level deep where two are wanted" in hint.message()
    assert hint.violations[0].path == "/0"


def test_a_list_of_objects_for_a_list_of_lists_of_objects_is_not_guessed_either() -> None:
    schema = {"type": "array", "items": {"type": "array", "items": obj(a=INTEGER)}}
    refused('[{"a": 1}, {"a": 2}]', schema)
    assert outform.parse('[{"a": 1}]', schema).data == [[{"a": 1}]]


def test_a_flat_list_that_is_no_item_is_wrapped_item_by_item() -> None:
    """Where the list as a whole could not be one item (here: at most two numbers a row), the
    one reading left is wrapping each item."""
    schema = {"type": "array", "items": {"type": "array", "items": INTEGER, "maxItems": 2}}
    assert outform.parse("[1, 2, 3]", schema).data == [[1], [2], [3]]


# -- objects --------------------------------------------------------------------------------


def test_a_key_differing_only_in_case_or_accents_is_renamed() -> None:
    result = outform.parse('{"Café": 1}', obj(("cafe",), cafe=INTEGER))
    assert changes(result) == [("/cafe", "rename_key", "Café", "cafe")]


def test_a_key_is_not_renamed_when_the_declared_name_is_also_present() -> None:
    result = outform.parse('{"NAME": "x", "name": "y"}', obj(name=STRING))
    assert result.value == {"NAME": "x", "name": "y"}
    assert result.changes == ()


def test_two_keys_that_could_each_be_the_declared_one_are_neither_renamed() -> None:
    # which of "Name" and "NAME" is the name? Guessing would drop the other's value
    assert outform.parse('{"Name": "x", "NAME": "y"}', obj(name=STRING)).changes == ()
    hint = refused('{"Name": "x", "NAME": "y"}', obj(("name",), name=STRING))
    assert [v.kind for v in hint.violations] == ["missing"]


def test_keys_differing_in_separators_are_not_renamed() -> None:
    hint = refused('{"user_name": 1}', obj(("user-name",), **{"user-name": INTEGER}))
    assert [v.kind for v in hint.violations] == ["missing"]


def test_an_unexpected_key_is_dropped_when_the_schema_forbids_extra_keys() -> None:
    schema = {**obj(a=INTEGER), "additionalProperties": False}
    result = outform.parse('{"a": 1, "b": 2}', schema)
    assert result.value == {"a": 1}
    assert changes(result) == [("/b", "drop_unexpected_key", 2, None)]


def test_a_missing_nullable_field_is_filled_with_null() -> None:
    result = outform.parse('{"b": 1}', obj(("a",), a={"type": ["integer", "null"]}, b=INTEGER))
    assert changes(result) == [("/a", "fill_null", None, None)]


def test_a_missing_list_field_is_filled_with_an_empty_list() -> None:
    schema = obj(("a",), a={"type": "array", "items": INTEGER}, b=INTEGER)
    result = outform.parse('{"b": 1}', schema)
    assert changes(result) == [("/a", "fill_empty", None, [])]


def test_an_empty_object_is_not_wrapped_as_the_only_item_of_a_list_field() -> None:
    """`{}` against `{"items": list[dict]}` means no items; wrapping `{}` as the only item
    invents an element the reply never had."""
    schema = obj(("items",), items={"type": "array", "items": {"type": "object"}})
    assert outform.parse("{}", schema).value == {"items": []}


def test_a_missing_field_with_a_default_is_filled_with_it() -> None:
    result = outform.parse('{"b": 1}', obj(("a",), a={**INTEGER, "default": 3}, b=INTEGER))
    assert result.value == {"a": 3, "b": 1}
    assert ("/a", "fill_default", None, 3) in changes(result)


def test_a_missing_field_with_no_sensible_value_is_reported() -> None:
    hint = refused('{"b": 1}', obj(("a",), a=INTEGER, b=INTEGER))
    assert [(v.kind, v.path) for v in hint.violations] == [("missing", "")]


def test_a_bare_value_is_wrapped_into_the_only_field_of_the_object() -> None:
    result = outform.parse("5", obj(a=INTEGER))
    assert changes(result) == [("", "wrap_in_object", 5, {"a": 5})]


def test_properties_reached_through_ref_pattern_and_additional_properties_are_coerced() -> None:
    schema = {
        "type": "object",
        "properties": {"r": {"$ref": "#/$defs/n"}},
        "patternProperties": {"^x": INTEGER},
        "additionalProperties": BOOLEAN,
        "$defs": {"n": INTEGER},
    }
    result = outform.parse('{"r": "1", "x1": "2", "other": "yes"}', schema)
    assert result.value == {"r": 1, "x1": 2, "other": True}


def test_all_of_branches_are_each_applied() -> None:
    schema = {"allOf": [obj(a=INTEGER), obj(b=BOOLEAN)]}
    assert outform.parse('{"a": "1", "b": "no"}', schema).value == {"a": 1, "b": False}


# -- enums ----------------------------------------------------------------------------------


def test_an_enum_member_is_matched_ignoring_case_accents_and_spaces() -> None:
    schema = obj(c={"enum": ["red", "Sao Paulo"]})
    assert outform.parse('{"c": "RED "}', schema).value == {"c": "red"}
    assert outform.parse('{"c": "São Paulo"}', schema).value == {"c": "Sao Paulo"}


def test_an_enum_match_that_could_mean_two_members_is_not_made() -> None:
    refused('{"c": "RED"}', obj(c={"enum": ["red", "Red"]}))


def test_a_number_and_its_string_match_each_other_in_an_enum() -> None:
    assert outform.parse('{"c": "2"}', obj(c={"enum": [1, 2]})).value == {"c": 2}
    assert outform.parse('{"c": 2}', obj(c={"enum": ["1", "2"]})).value == {"c": "2"}


def test_a_one_item_list_holding_a_member_is_the_member() -> None:
    assert outform.parse('{"c": ["red"]}', obj(c={"enum": ["red"]})).value == {"c": "red"}


def test_a_const_is_matched_like_a_one_member_enum() -> None:
    assert outform.parse('{"c": "YES"}', obj(c={"const": "yes"})).value == {"c": "yes"}


# -- lenient conversions (level full) -------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "schema", "value", "transform"),
    [
        ('{"n": "about 42 apples"}', obj(n=INTEGER), {"n": 42}, "string_to_integer"),
        ('{"ok": "it is true"}', obj(ok=BOOLEAN), {"ok": True}, "string_to_boolean"),
        ('{"c": "the colour is red"}', obj(c={"enum": ["red", "green"]}), {"c": "red"}, None),
        ('{"n": {"value": 5}}', obj(n=INTEGER), {"n": 5}, "unwrap_single_key"),
        ('{"s": [1, 2]}', obj(s=STRING), {"s": "[1,2]"}, "json_to_string"),
    ],
)
def test_a_lenient_conversion_happens_at_level_full_only(
    reply: str, schema: dict[str, Any], value: Any, transform: str | None
) -> None:
    refused(reply, schema, level="minimal")
    result = outform.parse(reply, schema, level="full")
    assert result.value == value
    assert (transform or "match_enum") in [c.transform for c in result.changes]


# -- a value read out of a sentence leaves the sentence behind -------------------------------


@pytest.mark.parametrize(
    ("text", "schema", "value", "lost"),
    [
        ("about 42 apples", INTEGER, 42, 11),
        ("12 items", INTEGER, 12, 5),
        ("The answer is: true.", BOOLEAN, True, 11),
        ("I'd say MEDIUM, not high", {"enum": ["LOW", "MEDIUM", "HIGH"]}, "MEDIUM", 12),
    ],
)
def test_a_value_read_out_of_a_sentence_records_the_rest_as_lost(
    text: str, schema: dict[str, Any], value: Any, lost: int
) -> None:
    """The words around the value are content of the reply it discards (docs/pipeline.md,
    Loss): the change is lossy, as the trace event's `lossy` has always described it."""
    result = outform.parse(orjson.dumps({"a": text}).decode(), obj(a=schema), level="full")
    assert result.value == {"a": value}
    (change,) = result.changes
    assert change.lost == lost
    assert result.lossy


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("$4.25", NUMBER, 4.25),
        ("1,234.50", NUMBER, 1234.5),
        ("42.0", INTEGER, 42),
        ("yes", BOOLEAN, True),
        ("**EUR**", {"enum": ["EUR", "USD"]}, "EUR"),
        ("cafe", {"enum": ["café"]}, "café"),
    ],
)
def test_a_respelled_value_loses_nothing(text: str, schema: dict[str, Any], value: Any) -> None:
    result = outform.parse(orjson.dumps({"a": text}).decode(), obj(a=schema), level="full")
    assert result.value == {"a": value}
    assert not result.lossy


# -- unwrapping a key: its name is content ---------------------------------------------------

AGE = obj(("age",), age=INTEGER)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ('{"height": 180}', "missing"),
        ('{"salary": 90000}', "missing"),
        ('[{"height": 180}]', "type"),
    ],
)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_value_is_never_moved_under_another_key(reply: str, kind: str, level: str) -> None:
    """Wrapping `{"height": 180}` into the one field and unwrapping it again made it
    `{"age": 180}`: a rename the reply never wrote. Both levels report it."""
    hint = refused(reply, AGE, level=level)
    assert [v.kind for v in hint.violations] == [kind]


def test_unwrapping_a_key_records_its_name_as_lost() -> None:
    result = outform.parse('{"result": 12}', INTEGER, level="full")
    assert result.value == 12
    (change,) = result.changes
    assert (change.transform, change.lost) == ("unwrap_single_key", 6)
    assert change.detail == "dropped the key 'result'"
    assert result.lossy


def test_unwrapping_a_list_keeps_the_list_and_records_the_key() -> None:
    schema = {"type": "array", "items": INTEGER}
    result = outform.parse('{"items": [1, 2]}', schema, level="full")
    assert result.value == [1, 2]
    assert [(c.transform, c.lost) for c in result.changes] == [("unwrap_single_key", 5)]


@pytest.mark.parametrize(
    ("reply", "schema", "value"),
    [
        ('{"age": {"age": 180}}', AGE, {"age": 180}),
        ('{"Age": {"AGE": 180}}', AGE, {"age": 180}),
        ('{"Priority": "HIGH"}', {"enum": ["LOW", "HIGH"], "title": "Priority"}, "HIGH"),
    ],
)
def test_a_key_that_names_the_value_there_is_unwrapped_without_loss(
    reply: str, schema: dict[str, Any], value: Any
) -> None:
    """The key of the object holding it, or the schema's title there: the name is kept."""
    result = outform.parse(reply, schema, level="full")
    assert result.value == value
    assert "unwrap_single_key" in [c.transform for c in result.changes]
    assert not result.lossy


@pytest.mark.parametrize(
    ("reply", "schema", "value", "minimal"),
    [
        ('{"a": 0}', {"type": "array"}, [{"a": 0}], True),
        ('{"name": "Ana"}', obj(("user",), user=obj(name=STRING)), {"user": {"name": "Ana"}}, True),
        ('{"s": {"name": "Paris"}}', obj(s=STRING), {"s": '{"name":"Paris"}'}, False),
    ],
)
def test_a_lossless_reading_comes_before_unwrapping_a_key(
    reply: str, schema: dict[str, Any], value: Any, minimal: bool
) -> None:
    """Level full never loses what level minimal keeps (`minimal`: the reading is one of
    level minimal too; JSON text for a string is of level full only)."""
    full = outform.parse(reply, schema, level="full")
    assert full.value == value
    assert not full.lossy
    if minimal:
        assert outform.parse(reply, schema, level="minimal").value == value


def test_a_sentence_naming_two_enum_members_is_not_matched() -> None:
    refused('{"c": "red or green"}', obj(c={"enum": ["red", "green"]}), level="full")


def test_lenient_conversions_can_be_switched_on_at_level_minimal() -> None:
    result = outform.parse('{"n": "about 42 apples"}', obj(n=INTEGER), lenient=True)
    assert result.value == {"n": 42}


# -- unions ---------------------------------------------------------------------------------


UNION = {
    "anyOf": [
        obj(("kind", "n"), kind={"const": "a"}, n=INTEGER),
        obj(("kind", "s"), kind={"const": "b"}, s=STRING),
    ]
}


def test_the_first_union_branch_that_validates_wins_and_its_index_is_recorded() -> None:
    result = outform.parse('{"kind": "b", "s": 5}', UNION)
    assert result.value == {"kind": "b", "s": "5"}
    branches = [e.branch_index for e in result.events if e.branch_index is not None]
    assert branches == [1]


def test_lossless_branches_are_preferred_to_lossy_ones() -> None:
    schema = {"anyOf": [{**obj(a=INTEGER), "additionalProperties": False}, obj(a=STRING)]}
    result = outform.parse('{"a": 1, "extra": true}', schema)
    assert result.value == {"a": "1", "extra": True}


def test_one_of_requires_exactly_one_branch_after_coercion() -> None:
    assert outform.parse('"1"', {"oneOf": [INTEGER, BOOLEAN]}).value == 1


def test_a_string_is_tried_against_every_branch_of_a_nullable_union() -> None:
    schema = obj(n={"anyOf": [{"type": "null"}, INTEGER]})
    assert outform.parse('{"n": "1"}', schema).value == {"n": 1}


@pytest.mark.parametrize(
    ("schema", "reply", "expected", "branch"),
    [
        ({"anyOf": [BOOLEAN, INTEGER]}, '"1"', True, 0),  # both convert: the first declared
        ({"anyOf": [INTEGER, BOOLEAN]}, '"1"', 1, 0),
        ({"anyOf": [INTEGER, BOOLEAN]}, '"true"', True, 1),
        ({"anyOf": [BOOLEAN, STRING]}, "1", True, 0),
        ({"oneOf": [NUMBER, STRING]}, "true", "true", 1),
    ],
)
def test_of_the_branches_a_coercion_fits_the_first_declared_wins(
    schema: dict[str, Any], reply: str, expected: Any, branch: int
) -> None:
    result = outform.parse(reply, schema)
    assert result.data == expected
    assert [c.branch_index for c in result.changes] == [branch]


@pytest.mark.parametrize("anyof_strategy", ["first-pass", "best"])
@pytest.mark.parametrize(
    ("schema", "reply"),
    [
        ({"anyOf": [INTEGER, STRING]}, '"5"'),
        ({"anyOf": [BOOLEAN, STRING]}, '"yes"'),
        ({"anyOf": [NUMBER, {"type": "array", "items": NUMBER}]}, "[1, 2]"),
        ({"anyOf": [obj(("a",), a=INTEGER), obj(("a",), a=STRING)]}, '{"a": "5"}'),
        (obj(x={"anyOf": [INTEGER, STRING]}, y=INTEGER), '{"x": "5", "y": "6"}'),
    ],
)
def test_a_value_valid_as_sent_in_a_later_branch_wins_over_a_coercion_into_an_earlier_one(
    schema: dict[str, Any], reply: str, anyof_strategy: str
) -> None:
    """Coercion enters only what does not validate: a union value that a later branch takes as
    written is kept as written, even where the reply needs coercion elsewhere."""
    result = outform.parse(reply, schema, level="full", anyof_strategy=anyof_strategy)
    expected = orjson.loads(reply)
    if isinstance(expected, dict) and "y" in expected:
        expected["y"] = 6
    assert result.data == expected
    assert all(c.path == "/y" for c in result.changes)


# -- the coercer on its own -----------------------------------------------------------------


def test_the_coercer_returns_the_changes_and_the_union_branches() -> None:
    coercer = Coercer(compile_schema(UNION), lenient=False, max_depth=200)
    coercion = coercer.coerce({"kind": "a", "n": "3"})
    assert coercion.value == {"kind": "a", "n": 3}
    assert [(c.path, c.transform) for c in coercion.changes] == [("/n", "string_to_integer")]
    assert coercion.branches == [("", 0)]


def test_the_coercer_does_not_mutate_its_input() -> None:
    value = {"n": "1", "tags": "x"}
    coerced(value, obj(n=INTEGER, tags={"type": "array"}))
    assert value == {"n": "1", "tags": "x"}


_ints = st.integers(-(2**63), 2**63)
_union_values = st.fixed_dictionaries({"kind": st.just("a"), "n": _ints}) | st.fixed_dictionaries(
    {"kind": st.just("b"), "s": st.text()}
)
# Schemas, each with values of which most validate (the rest are filtered out).
VALID_VALUES: list[tuple[dict[str, Any], st.SearchStrategy[Any]]] = [
    ({}, json_values),
    (INTEGER, _ints),
    (STRING, st.text()),
    (
        obj(n=INTEGER, s=STRING, tags={"type": "array", "items": STRING}),
        st.fixed_dictionaries(
            {},
            optional={"n": _ints, "s": st.text(), "tags": st.lists(st.text()), "x": json_values},
        ),
    ),
    (
        {**obj(("a",), a=BOOLEAN), "additionalProperties": False},
        st.fixed_dictionaries({"a": st.booleans()}),
    ),
    (
        {"type": "array", "items": {"anyOf": [INTEGER, {"type": "null"}]}},
        st.lists(st.none() | _ints),
    ),
    ({"enum": ["red", "green", 1]}, st.sampled_from(["red", "green", 1])),
    (UNION, _union_values),
]
_schema_and_valid_value = st.sampled_from(VALID_VALUES).flatmap(
    lambda pair: st.tuples(st.just(pair[0]), pair[1])
)


@settings(max_examples=200, deadline=None)
@given(case=_schema_and_valid_value, lenient=st.booleans())
def test_coercion_never_changes_a_value_that_already_validates(
    case: tuple[dict[str, Any], Any], lenient: bool
) -> None:
    schema, value = case
    compiled = compile_schema(schema)
    assume(compiled.is_valid(value))
    coercion = Coercer(compiled, lenient=lenient, max_depth=200).coerce(value)
    assert coercion.changes == []
    assert orjson.dumps(coercion.value) == orjson.dumps(value)


@settings(max_examples=200, deadline=None)
@given(case=_schema_and_valid_value, level=st.sampled_from(["minimal", "full"]))
def test_a_valid_value_found_in_a_fence_comes_back_unchanged(
    case: tuple[dict[str, Any], Any], level: str
) -> None:
    schema, value = case
    assume(schema != STRING)  # a string schema takes the reply as written, fence and all
    assume(compile_schema(schema).is_valid(value))
    reply = f"Here you are:\n```json\n{orjson.dumps(value).decode()}\n```"
    result = outform.parse(reply, schema, level=level)
    assert orjson.dumps(result.value) == orjson.dumps(value)
    assert all(c.path == "" for c in result.changes)  # found, but nothing inside it changed


@settings(max_examples=200, deadline=None)
@given(
    n=json_values,
    s=st.text(),
    tags=st.lists(st.text(), max_size=4),
    level=st.sampled_from(["minimal", "full"]),
)
def test_coercion_leaves_the_valid_parts_of_an_invalid_value_alone(
    n: Any, s: str, tags: list[str], level: str
) -> None:
    schema = obj(n=INTEGER, s=STRING, tags={"type": "array", "items": STRING})
    compiled = compile_schema(schema)
    value = {"n": n, "s": s, "tags": tags}
    coercion = Coercer(compiled, lenient=level == "full", max_depth=200).coerce(value)
    assert coercion.value["s"] == s
    assert coercion.value["tags"] == tags
    assert all(c.path == "/n" or c.path.startswith("/n/") for c in coercion.changes)


# -- work on recursive schemas (found by the fuzzer, tests/fuzz) -----------------------------


def visits(value: Any, schema: dict[str, Any], *, lenient: bool) -> int:
    """How many nodes the coercion walk visits (each visit ticks the deadline once; the limit
    only turns a regression into a failure rather than a hang)."""
    deadline = Deadline(60.0)
    Coercer(compile_schema(schema), lenient=lenient, max_depth=200).coerce(value, deadline)
    return deadline.ticks


LIST_OR_NUMBER = {
    "$defs": {"n": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/n"}}},
    "$ref": "#/$defs/n",
}
INTEGER_OR_LIST = {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]}


@pytest.mark.parametrize("levels", [4, 8, 16, 32])
def test_wrapping_a_value_for_a_recursive_schema_does_not_repeat_to_max_depth(
    levels: int,
) -> None:
    """`{"a": [...]}` where `array | integer` of the same schema is wanted, a word at the
    bottom: unwrapping the key, then wrapping the object in `[...]`, asked the same question of
    it again, and again, until `max_depth`, at every level (4 levels took longer than 10 s; a
    fuzzed reply of 311 characters hit the 5 s time limit). Each level is visited a bounded
    number of times: the object, the list a lossless reading puts it in, its value."""
    value: Any = "text"
    for _ in range(levels):
        value = {"a": [value]}
    assert visits(value, LIST_OR_NUMBER, lenient=True) < 6 * levels
    assert visits(value, LIST_OR_NUMBER, lenient=False) < 5 * levels


def test_a_union_over_a_recursive_schema_is_walked_once_per_value() -> None:
    """`[{}, null, [-0.0]]` against `integer | array of itself`: 15,000 visits before, because
    each object, copied by the walk, looked new at every level."""
    assert visits([{}, None, [-0.0]], INTEGER_OR_LIST, lenient=False) < 50
    hint = refused("[{}, null, [-0.0]]", INTEGER_OR_LIST)
    assert hint.violations[0].path == ""


def test_a_part_the_walk_cannot_fix_stays_the_same_object() -> None:
    """An invalid object or list the walk changes nothing in is returned as it was, not as a
    copy: the walk recognises a value it met before by its identity."""
    value = {"a": {"b": "x"}, "c": [1, "y"]}
    schema = obj(a=obj(b=INTEGER), c={"type": "array", "items": INTEGER})
    result = Coercer(compile_schema(schema), lenient=False, max_depth=200).coerce(value)
    assert result.value is value and not result.changes
