"""RetryHint: what is wrong with a reply, as data and as a short message for the model."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, field_validator

import outform
from outform import RetryHint, Violation
from outform.parse.hint import clip, describe, preview


def hint_for(reply: str, schema: Any = None, **options: Any) -> RetryHint:
    with pytest.raises(outform.OutputError) as caught:
        if isinstance(schema, type):
            outform.parse(reply, type=schema, **options)
        else:
            outform.parse(reply, schema, **options)
    return caught.value.hint


def obj(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


# -- one violation --------------------------------------------------------------------------


def test_a_type_violation_reads_path_expected_and_found() -> None:
    violation = Violation("/items/0/price", "type", "number", 'string "ten"', "type")
    assert violation.line() == 'at items[0].price: expected number, found string "ten"'


def test_a_missing_field_names_the_field() -> None:
    assert Violation("", "missing", "'id' (integer)", "nothing").line() == (
        "at (root): missing required field 'id' (integer)"
    )


def test_an_unexpected_field_names_it_and_what_is_allowed() -> None:
    assert Violation("/a", "unexpected", "'x', 'y'", "'z'").line() == (
        "at a: unexpected field(s) 'z'; allowed: 'x', 'y'"
    )


def test_a_syntax_violation_says_what_was_found_first() -> None:
    violation = Violation("", "syntax", "a single JSON value", "the reply is empty")
    assert violation.line() == "the reply is empty; expected a single JSON value"


def test_keys_that_are_not_identifiers_are_quoted_in_the_readable_path() -> None:
    violation = Violation("/weird key~1x/0", "type", "integer", "string")
    assert violation.line().startswith("at ['weird key/x'][0]:")


def test_a_violation_serialises_every_field() -> None:
    violation = Violation("/a", "enum", "one of [1,2]", "integer 3", "enum")
    assert violation.to_dict() == {
        "path": "/a",
        "kind": "enum",
        "expected": "one of [1,2]",
        "found": "integer 3",
        "keyword": "enum",
        "field": "",
    }


# -- the hint -------------------------------------------------------------------------------


def test_paths_are_listed_once_each_in_order() -> None:
    hint = RetryHint(
        (
            Violation("", "missing", "'a'", "nothing"),
            Violation("", "missing", "'b'", "nothing"),
            Violation("/c", "type", "integer", "string"),
        )
    )
    assert hint.paths == ("", "/c")


def test_the_message_heads_its_lines_and_asks_for_corrected_json() -> None:
    hint = RetryHint((Violation("/a", "type", "integer", 'string "x"'),))
    assert hint.message() == (
        "Your reply did not match the required JSON schema:\n"
        '- at a: expected integer, found string "x"\n'
        "Reply again with only the corrected JSON."
    )


def test_a_syntax_hint_says_the_reply_could_not_be_read() -> None:
    hint = RetryHint((Violation("", "syntax", "JSON", "the reply is empty"),))
    assert hint.is_syntax
    assert hint.message().startswith("Your reply could not be read as JSON:")


def test_every_line_of_the_message_can_be_indented() -> None:
    hint = RetryHint((Violation("/a", "type", "integer", "string"),))
    assert all(line.startswith("  ") for line in hint.message(indent="  ").splitlines())


def test_a_long_list_of_violations_is_cut_with_a_count_of_the_rest() -> None:
    hint = RetryHint(tuple(Violation(f"/{i}", "type", "integer", "string") for i in range(25)))
    lines = hint.message().splitlines()
    assert len(lines) == 1 + 20 + 1 + 1
    assert lines[-2] == "- … and 5 more"


def test_people_get_the_violations_without_the_words_for_the_model() -> None:
    hint = RetryHint(tuple(Violation(f"/{i}", "type", "integer", "string") for i in range(25)))
    explanation = hint.explain(indent="  ")
    assert "Your reply" not in explanation and "Reply again" not in explanation
    assert explanation.splitlines()[0] == "  - at [0]: expected integer, found string"
    assert explanation.splitlines()[-1] == "  - … and 5 more"
    assert explanation in hint.message(indent="  ")  # the same lines the model is sent


def test_the_hint_serialises_its_violations_and_message() -> None:
    hint = RetryHint((Violation("/a", "type", "integer", "string"),))
    data = hint.to_dict()
    assert data["message"] == hint.message()
    assert data["explanation"] == hint.explain()
    assert data["violations"] == [hint.violations[0].to_dict()]


# -- violations found by validation ---------------------------------------------------------

FULL = {
    **obj(
        ("a", "z"),
        a={"type": "integer", "minimum": 5},
        b={"type": "array", "items": {"enum": ["x", "y"]}},
        c={"type": "string", "maxLength": 2},
        d={"const": 1},
        e={"type": "string", "pattern": "^a"},
        f={"anyOf": [{"type": "integer"}, {"type": "null"}]},
        z={"type": "integer"},
    ),
    "additionalProperties": False,
}
REPLY = '{"a": 3, "b": ["x", "q"], "c": "long", "d": 2, "e": "b", "f": "s", "extra": 1}'


def test_every_violation_of_a_reply_is_reported_at_its_path() -> None:
    hint = hint_for(REPLY, FULL, level="off")
    assert [(v.path, v.kind, v.keyword) for v in hint.violations] == [
        ("", "missing", "required"),
        ("", "unexpected", "additionalProperties"),
        ("/a", "constraint", "minimum"),
        ("/b/1", "enum", "enum"),
        ("/c", "constraint", "maxLength"),
        ("/d", "enum", "const"),
        ("/e", "constraint", "pattern"),
        ("/f", "type", "anyOf"),
    ]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", "'z' (integer)"),
        ("/a", "a number ≥ 5"),
        ("/b/1", 'one of ["x","y"]'),
        ("/c", "at most 2 characters"),
        ("/d", "1"),
        ("/e", "a string matching ^a"),
        ("/f", "integer | null"),
    ],
)
def test_what_was_expected_is_said_in_words(path: str, expected: str) -> None:
    hint = hint_for(REPLY, FULL, level="off")
    assert expected in [v.expected for v in hint.violations if v.path == path]


def test_what_was_found_gives_the_type_and_a_preview() -> None:
    hint = hint_for('{"c": "long"}', obj(c={"type": "string", "maxLength": 2}))
    assert hint.violations[0].found == 'string "long"'


def test_violations_of_array_items_are_listed_in_index_order() -> None:
    hint = hint_for(
        "[" + ",".join(['"x"'] * 12) + "]", {"type": "array", "items": {"type": "integer"}}
    )
    assert hint.paths == tuple(f"/{i}" for i in range(12))


def test_the_message_sent_back_keeps_the_first_items_of_a_long_array() -> None:
    reply = "[" + ",".join(['"x"'] * 30) + "]"
    message = hint_for(reply, {"type": "array", "items": {"type": "integer"}}).message()
    assert "- at [2]: expected integer" in message
    assert "- at [25]:" not in message


class Even(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even")
        return value


def test_a_check_only_the_type_can_make_is_a_custom_violation() -> None:
    (violation,) = hint_for('{"n": 3}', Even).violations
    assert (violation.path, violation.kind) == ("/n", "custom")
    # The type's own reason, in outform's phrasing: "expected ..., found ... (why)".
    assert violation.expected == "a value the type accepts"
    assert "must be even" in violation.found


def test_an_output_error_carries_the_hint_and_the_partial_result() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('Here: {"a": "x"}', obj(a={"type": "integer"}))
    error = caught.value
    assert error.hint.paths == ("/a",)
    assert error.result is not None
    assert error.result.value == {"a": "x"}
    assert not error.result.ok
    assert [c.transform for c in error.result.changes] == ["extract_from_prose"]
    assert error.hint.explain(indent="  ") in str(error)
    assert "Reply again" not in str(error)


def test_an_unreadable_reply_gives_a_syntax_hint_quoting_the_problem() -> None:
    hint = hint_for('{"a": 1,}', {"type": "object"})
    (violation,) = hint.violations
    assert violation.kind == "syntax"
    assert "malformed" in violation.found


def test_a_reply_with_no_json_at_all_says_so() -> None:
    (violation,) = hint_for("I cannot help with that.", {"type": "object"}).violations
    assert violation.found == "the reply contains no JSON value"


# -- previews -------------------------------------------------------------------------------


def test_a_preview_is_one_line_of_json_cut_with_an_ellipsis() -> None:
    assert preview({"a": [1, 2]}) == '{"a":[1,2]}'
    assert preview("x" * 100, 10) == '"xxxxxxxx…'
    assert len(preview(list(range(100)), 20)) == 20


def test_a_clip_keeps_text_up_to_the_limit() -> None:
    assert clip("short") == "short"
    assert clip("y" * 100, 10) == "y" * 9 + "…"


def test_describe_gives_the_json_type_and_the_preview() -> None:
    assert describe(3) == "integer 3"
    assert describe(None) == "null"  # not "null null": its preview is its type
