"""Foreign string literals (triple quotes, backticks, fenced values) rewritten as JSON strings."""

from __future__ import annotations

import orjson

import outform
from outform.parse.literals import rewrite_literals

CODE = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}


def test_a_triple_quoted_value_becomes_a_dedented_json_string() -> None:
    text = '{"code": """\n    def f():\n        pass\n"""}'
    rewritten = rewrite_literals(text)
    assert rewritten is not None
    assert orjson.loads(rewritten) == {"code": "def f():\n    pass"}


def test_a_backtick_value_keeps_its_inner_quotes() -> None:
    rewritten = rewrite_literals('{"code": `say "hi"`}')
    assert rewritten is not None
    assert orjson.loads(rewritten) == {"code": 'say "hi"'}


def test_a_fenced_value_loses_its_info_string() -> None:
    rewritten = rewrite_literals('{"code": ```python\nprint(1)\n```}')
    assert rewritten is not None
    assert orjson.loads(rewritten) == {"code": "print(1)"}


def test_text_without_foreign_literals_gives_none() -> None:
    assert rewrite_literals('{"a": "plain"}') is None


def test_backticks_and_quotes_inside_json_strings_are_not_literals() -> None:
    assert rewrite_literals('{"a": "has ` and \\" inside"}') is None


def test_a_literal_that_is_never_closed_is_left_to_the_decoder() -> None:
    assert rewrite_literals('{"code": `unclosed}') is None


def test_a_literal_where_no_value_may_start_is_left_alone() -> None:
    assert rewrite_literals("{`key`: 1}") is None


def test_the_pipeline_reads_a_triple_quoted_value_at_level_full() -> None:
    reply = '{"code": """\n    x = "y"\n"""}'
    result = outform.parse(reply, CODE, level="full")
    assert result.value == {"code": 'x = "y"'}
    assert "rewrote" in result.changes[-1].detail


def test_the_pipeline_reads_a_backtick_value_at_level_full() -> None:
    result = outform.parse('{"code": `a "q" b`}', CODE, level="full")
    assert result.value == {"code": 'a "q" b'}
