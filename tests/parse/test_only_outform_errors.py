"""Only outform's errors leave parse, Pipeline, the stream parser and the schema functions: a
fault of outform's own becomes an InternalError naming the stage (issue 9)."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

import outform
from outform import Processor, UsageError
from outform.errors import CallerCodeError, InternalError, OutformError
from outform.parse import coerce, extract
from outform.schema import compiled as compiled_module
from outform.schema import dialects
from outform.streaming import StreamParser
from tests.injected import fault_in


def broken_in(module: str) -> Callable[..., Any]:
    return fault_in(module)


@pytest.mark.parametrize(
    ("module", "name", "stage", "reply"),
    [
        (extract, "scan", "extract", 'Here: {"a": "1"}'),
        (coerce._Walk, "own", "coerce", '{"a": "1"}'),
    ],
)
def test_a_stray_exception_in_a_stage_becomes_an_internal_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, stage: str, reply: str
) -> None:
    monkeypatch.setattr(module, name, broken_in(f"outform.parse.{stage}"))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    with pytest.raises(InternalError) as caught:
        outform.parse(reply, schema)
    error = caught.value
    assert error.stage == stage
    assert f"stage {stage!r}" in error.what and "TypeError: a fault inside outform" in error.what
    assert isinstance(error.__cause__, TypeError)
    assert error.fix is not None and "bug" in error.fix


def test_an_internal_error_survives_pickling() -> None:
    error = InternalError("outform failed", stage="coerce")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.what, copy.stage) == ("outform failed", "coerce")


def test_the_stream_parser_wraps_a_stray_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    parser: StreamParser[Any] = StreamParser({"type": "object"})
    monkeypatch.setattr(parser.parser, "feed", broken_in("outform.streaming"))
    with pytest.raises(InternalError) as caught:
        parser.feed('{"a": 1}')
    assert caught.value.stage == "stream"


def test_the_schema_functions_wrap_a_stray_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled_module, "CompiledSchema", broken_in("outform.schema.compiled"))
    with pytest.raises(InternalError):
        compiled_module.compile_schema({"type": "object", "title": "never compiled before"})
    with pytest.raises(InternalError):
        dialects.translate({"type": "object", "title": "neither"}, "openai")


def test_an_exception_of_the_callers_own_code_is_named_as_such_not_as_a_bug_of_outform() -> None:
    """Found by a new-user trial: a validator of the output type raising KeyError became an
    InternalError saying "this is a bug in outform"."""

    class Checked(BaseModel):
        a: int

        @field_validator("a")
        @classmethod
        def look_up(cls, value: int) -> int:
            return {0: value}[value]  # KeyError for anything but 0

    for reply, level in (('{"a": 1}', None), ('{"a": "1"}', "full")):
        with pytest.raises(CallerCodeError) as caught:
            outform.parse(reply, type=Checked, level=level)
        assert isinstance(caught.value, UsageError) and isinstance(caught.value.__cause__, KeyError)
        assert caught.value.where is not None and caught.value.where.startswith("look_up in ")
        assert __file__ in caught.value.where
    assert outform.parse('{"a": 0}', type=Checked).value == Checked(a=0)


def test_an_exception_of_a_processor_is_a_usage_error_naming_it() -> None:
    def explode(text: str) -> str:
        raise ValueError("no")

    with pytest.raises(UsageError) as caught:
        outform.parse(
            '{"a": 1}', {"type": "object"}, processors=[Processor("before_extract", explode)]
        )
    assert "'explode' raised ValueError: no" in caught.value.what
    assert caught.value.where == "before_extract"


@pytest.mark.parametrize(
    "reply",
    ['["\ud800"]', "\ud800", "1" * 30, "[" + "1" * 30 + "]", '{"a": 1e400}', "[NaN]", '"\\ud800"'],
)
@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize(
    "schema",
    [{"type": "integer"}, {"type": "string"}, {"type": "array", "items": {"type": "string"}}, {}],
)
def test_edge_values_raise_only_outform_errors(reply: str, level: str, schema: Any) -> None:
    with contextlib.suppress(OutformError):
        outform.parse(reply, schema, level=level)
