"""A wide schema (thousands of required properties) against a reply of many pieces: the work is
their sum, not their product (issue 9, the fuzzer's `hostile_schemas` family).

Three products are gone, each pinned here by counting work, never by timing it: every
candidate's violations collected in full (only the reported one's are); jsonschema-rs copying
the object into each missing name's error (one error per object now); every later piece
coerced against the whole schema (one that cannot succeed stops before coercion). The outcome
is the one a full run gives: the same value, the same violations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema_rs
import pytest

import outform
from outform import OutputError
from outform.parse import validate
from outform.parse.coerce import Coercer
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema, compile_schema
from tests.parse.test_bounds import opcodes_run


def wide(width: int, *, types: tuple[str, ...] = ("string", "integer")) -> dict[str, Any]:
    """An object of `width` properties, the first half required; none can be filled in."""
    properties = {f"k{i}": {"type": types[i % len(types)]} for i in range(width)}
    return {"type": "object", "properties": properties, "required": list(properties)[: width // 2]}


def pieces(count: int) -> str:
    """Prose holding `count` small objects, none of which is a whole reply."""
    return " ".join(f'Piece {i}: {{"x{i}": {i}}}, then [{{"y": {i}}}].' for i in range(count))


def refused(reply: str, schema: Any) -> outform.RetryHint:
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, schema, level="full")
    return caught.value.hint


def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of `owner.name`."""
    calls: list[int] = []
    real = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


# -- one full collection, for the attempt reported ------------------------------------------


def test_the_violations_of_only_the_reported_attempt_are_collected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collected = counting(monkeypatch, CompiledSchema, "errors")
    hint = refused(pieces(20), wide(40))
    assert len(collected) == 1
    # the first piece is the one reported, as before: its key is unexpected nowhere, and
    # every required name is missing
    assert [v.field for v in hint.violations] == [f"k{i}" for i in range(20)]


def test_a_later_attempt_that_succeeds_is_still_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    collected = counting(monkeypatch, CompiledSchema, "errors")
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    result = outform.parse('Not this: {"a": "x"}. This: {"a": "2", "b": "y"}.', schema)
    assert result.value == {"a": 2, "b": "y"}
    assert collected == []


def test_a_typed_output_failing_its_own_checks_reports_them() -> None:
    """A value the schema accepts and a validator of the type refuses: Pydantic's violations
    are the attempt's own, not collected from the schema."""
    from pydantic import BaseModel, field_validator

    class Even(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def even(cls, n: int) -> int:
            if n % 2:
                raise ValueError("n must be even")
            return n

    with pytest.raises(OutputError) as caught:
        outform.parse('Here: {"n": "3"}', type=Even)
    (violation,) = caught.value.hint.violations
    assert (violation.path, violation.kind) == ("/n", "custom")
    assert "even" in violation.found  # the type's reason (see validate._phrased)


# -- one error per object, not per missing name ---------------------------------------------


def test_an_object_lacking_many_required_names_is_one_error_of_the_validator() -> None:
    """jsonschema-rs copies the object into every error it reports: one per missing name made
    an object of n keys lacking m names cost n × m."""
    compiled = compile_schema(wide(4000))
    value = {f"k{i}": i for i in range(1, 4000, 2)}  # the odd ones: integers, none required
    assert len(list(compiled.errors(value))) == 1
    found = validate.violations(compiled, value)
    assert [v.field for v in found] == [f"k{i}" for i in range(0, 2000, 2)]
    assert found[0].line() == "at (root): missing required field 'k0' (string)"


def own_required(schema: Any, value: Any) -> list[tuple[str, str]]:
    """(path, name) of every missing name, as jsonschema-rs's own `required` reports them."""
    return [
        (pointer.from_parts(e.instance_path), str(e.kind.as_dict()["property"]))
        for e in jsonschema_rs.validator_for(schema).iter_errors(value)
        if e.kind.name == "required"
    ]


AGREEING: list[tuple[dict[str, Any], Any]] = [
    (wide(10), {"k1": "x"}),
    (wide(10), [{"k0": "x"}]),
    ({"type": "array", "items": wide(6)}, [{}, {"k0": "a"}, {"k0": "a", "k1": 1, "k2": "b"}]),
    (
        {
            "$defs": {"node": {"required": ["v"], "properties": {"kid": {"$ref": "#/$defs/node"}}}},
            "$ref": "#/$defs/node",
        },
        {"kid": {"kid": {}}},
    ),
    ({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"c": 1}),
    ({"not": {"required": ["a"]}}, {"a": 1}),
    ({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}, {"a": 1, "b": 2}),
    (
        {"$schema": "http://json-schema.org/draft-04/schema#", "required": ["a", "b"]},
        {"b": 1},
    ),
    ({"required": ["a", "b"], "if": {"required": ["c"]}, "then": {"required": ["d"]}}, {"c": 1}),
    ({"properties": {"a": {"required": ["x", "y"]}}, "required": ["a"]}, {"a": {"y": 1}}),
]


@pytest.mark.parametrize(("schema", "value"), AGREEING)
def test_missing_names_agree_with_the_validators_own_required(schema: Any, value: Any) -> None:
    compiled = compile_schema(schema)
    found = validate.violations(compiled, value)
    assert [(v.path, v.field) for v in found if v.kind == "missing"] == own_required(schema, value)
    assert bool(found) != compiled.is_valid(value)


def test_missing_fields_at_one_place_are_listed_by_their_keywords_place_in_the_schema() -> None:
    """The rule for several keywords at one place: a node's own, as written, before those of
    the subschemas it applies there, depth first. (The validator's order, which the hint kept
    before, differed only in putting a node's `dependentRequired` before its `required`.)"""
    schema = {
        "dependentRequired": {"c": ["d"]},
        "allOf": [{"required": ["b"]}],
        "required": ["a", "e"],
        "then": {"required": ["f"]},
        "if": True,
    }
    found = validate.violations(compile_schema(schema), {"c": 1})
    assert [v.field for v in found] == ["d", "a", "e", "b", "f"]


# -- later pieces stop where they cannot succeed --------------------------------------------


def test_a_piece_that_cannot_succeed_is_not_coerced_once_one_has_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the first attempt failed (it is the one reported), a later piece lacking a name
    the root requires, which no fill supplies and no key is renamed to, cannot succeed."""
    coerced = counting(monkeypatch, Coercer, "coerce")
    hint = refused(pieces(30), wide(20))
    assert len(coerced) == 1
    assert hint == refused(pieces(1), wide(20))


BOOLEAN_REQUIRED = {
    "type": "object",
    "properties": {"a": {"type": ["integer", "null"]}, "b": {"type": "boolean"}},
    "required": ["a", "b"],
}
"""`b` cannot be filled in; a reply's `"b": 7` cannot be made a boolean."""


@pytest.mark.parametrize(
    ("reply", "value", "transform"),
    [
        ('First {"b": 7}, then {"b": true}.', {"a": None, "b": True}, "fill_null"),
        ('First {"b": 7}, then {"a": 1, " B ": false}.', {"a": 1, "b": False}, "rename_key"),
        ('First {"b": 7}, then [{"a": 2, "b": true}].', {"a": 2, "b": True}, ""),
    ],
)
def test_a_later_piece_that_can_succeed_still_does(reply: str, value: Any, transform: str) -> None:
    result = outform.parse(reply, BOOLEAN_REQUIRED, level="full")
    assert result.value == value
    assert not transform or transform in [c.transform for c in result.changes]


def test_the_work_against_a_wide_schema_grows_with_the_sum_of_schema_and_reply() -> None:
    """Doubling both the schema's width and the reply's pieces doubles outform's own work (it
    was their product: each piece filled in and checked against every required name)."""

    def work(n: int) -> Callable[[], object]:
        schema, reply = wide(40 * n), pieces(n)
        compile_schema(schema)  # compiling is paid once per schema, not per reply
        return lambda: refused(reply, schema)

    small, large = work(10), work(20)
    assert opcodes_run(large) / opcodes_run(small) <= 2.2


# -- renaming keys, by key of the reply -----------------------------------------------------

RENAMED = {
    "type": "object",
    "properties": {"Name": {"type": "integer"}, "name": {"type": "integer"}},
    "required": ["name"],
}


def test_a_key_is_renamed_to_the_one_absent_name_it_fits() -> None:
    result = outform.parse('{"Name": 1, "NAME ": 2}', RENAMED)  # "Name" was written
    assert result.value == {"Name": 1, "name": 2}


def test_a_key_fitting_two_absent_names_is_renamed_to_neither() -> None:
    (violation,) = refused('{"NAME": 1}', RENAMED).violations
    assert (violation.kind, violation.field) == ("missing", "name")


def test_two_keys_fitting_one_absent_name_rename_neither() -> None:
    # a conversion that could mean two things is not made (which value is the name's?)
    schema = {"type": "object", "properties": {"name": {"type": "integer"}}}
    result = outform.parse('{"NAME": 1, "Name ": 2}', schema)
    assert (result.value, result.changes) == ({"NAME": 1, "Name ": 2}, ())


# -- the time limit holds while violations are described (issue 10) ---------------------------


class SteppingClock:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_listing_20000_missing_names_reads_the_clock_as_they_grow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One `required` of 200,000 names is one error of the validator but 200,000 violations:
    described without reading the clock, it took 2 s past a limit of 0.2 s and ended in an
    OutputError. Each read here moves the clock by a second: a limit of 20 s passes while
    20,000 names are listed."""
    from outform.parse import context
    from outform.parse.context import Deadline

    compiled = compile_schema({"type": "object", "required": [f"k{i}" for i in range(20_000)]})
    monkeypatch.setattr(context, "clock", SteppingClock())
    deadline = Deadline(20.0, size=10)
    deadline.stage = "validate"
    with pytest.raises(outform.InputError) as caught:
        validate.violations(compiled, {"a": "1"}, deadline)
    assert "time limit (20.0 s), in stage 'validate'" in caught.value.what


def test_a_union_whose_branches_require_50000_names_is_described_in_linear_time() -> None:
    """Looking for the union's tag tried each of the first branch's names against every
    branch's list of names: their square (200,000 names did not finish). Each branch's names
    are a set now, and the tag is looked for once per union."""
    names = [f"k{i}" for i in range(50_000)]
    schema = {"anyOf": [{"type": "object", "required": names}, {"required": names[::-1]}]}
    hint = refused('{"a": "1"}', schema)
    assert [v.kind for v in hint.violations] == ["type"]


def test_a_union_of_10000_branches_is_summarized_in_a_line() -> None:
    """A summary is for a message: it stops once past 200 characters, and so does its work."""
    compiled = compile_schema({"anyOf": [{"type": "integer", "minimum": i} for i in range(10_000)]})
    summary = validate.summarize(compiled, compiled.root)
    assert summary.startswith("integer | integer")
    assert summary.endswith("| …")
    assert len(summary) < 250


def test_a_tag_taking_100000_values_is_shown_in_a_line() -> None:
    values = [f"v{i}" for i in range(100_000)]
    branch = {"type": "object", "required": ["t"], "properties": {"t": {"enum": values}}}
    other = {"type": "object", "required": ["t"], "properties": {"t": {"const": "other"}}}
    (violation,) = refused('{"t": "zz"}', {"oneOf": [branch, other]}).violations
    assert violation.path == "/t"
    assert violation.expected.startswith('one of "v0", "v1", ')
    assert violation.expected.endswith(", …")
    assert len(violation.expected) < 260


def test_coercion_reads_the_clock_at_each_part_of_the_schema_it_meets_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Meeting a union's branch for the first time builds its validator, which costs up to the
    schema's size: 200,000 branches took 3 s past a limit of 0.2 s. Each read here moves the
    clock by a second: a limit of 500 s passes while 1,000 branches are tried."""
    from outform.parse import context

    branches = [{"type": "object", "required": [f"x{i}"]} for i in range(1000)]
    schema = {"type": "object", "properties": {"a": {"anyOf": branches}}}
    pipeline = outform.Pipeline(schema, time_limit=500)
    monkeypatch.setattr(context, "clock", SteppingClock())
    with pytest.raises(outform.InputError, match="in stage 'coerce'"):
        pipeline.run('{"a": {}}')
