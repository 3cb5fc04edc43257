"""The error hierarchy: every error says what, where and how to fix it, and survives pickling."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

import outform
from outform import (
    ConfigError,
    InputError,
    OutformError,
    OutputError,
    RetryHint,
    SchemaError,
    UsageError,
    Violation,
)

ERRORS: list[type[OutformError]] = [OutformError, UsageError, ConfigError, SchemaError, InputError]


def an_output_error() -> OutputError:
    with pytest.raises(OutputError) as caught:
        outform.parse(
            'Here: {"a": "x"}', {"type": "object", "properties": {"a": {"type": "integer"}}}
        )
    return caught.value


# -- what, where, fix -----------------------------------------------------------------------


def test_render_puts_what_then_where_then_fix() -> None:
    error = ConfigError("bad value", where="outform.toml", fix="use 'full'")
    assert error.render() == "bad value\n  where: outform.toml\n  fix: use 'full'"


def test_render_leaves_out_what_is_not_known() -> None:
    assert UsageError("wrong").render() == "wrong"
    assert UsageError("wrong", fix="do this").render() == "wrong\n  fix: do this"


def test_the_message_of_an_error_is_its_rendering() -> None:
    error = SchemaError("no good", where="schema at /type")
    assert str(error) == error.render()


@pytest.mark.parametrize("cls", [*ERRORS[1:], OutputError])
def test_every_error_is_an_outform_error(cls: type[OutformError]) -> None:
    assert issubclass(cls, OutformError)
    assert issubclass(cls, Exception)


def test_an_output_error_renders_the_hint_under_what_went_wrong() -> None:
    hint = RetryHint((Violation("/a", "type", "integer", 'string "x"'),))
    error = OutputError("the reply does not match the schema", hint=hint)
    assert error.render() == (
        'the reply does not match the schema\n  - at a: expected integer, found string "x"'
    )  # for people: the model's wording ("Reply again ...") stays in `.hint.message()`


def test_an_output_error_from_a_parse_carries_hint_and_result() -> None:
    error = an_output_error()
    assert error.hint.paths == ("/a",)
    assert error.result is not None
    assert error.result.hint == error.hint


# -- pickling -------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ERRORS)
def test_an_error_survives_pickling(cls: type[OutformError]) -> None:
    error = cls("what", where="where", fix="fix")
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is cls
    assert (restored.what, restored.where, restored.fix) == ("what", "where", "fix")
    assert str(restored) == str(error)
    assert restored.args == error.args


def test_extra_attributes_survive_pickling() -> None:
    error = InputError("too big")
    error.size = 12  # type: ignore[attr-defined]
    restored: Any = pickle.loads(pickle.dumps(error))
    assert restored.size == 12


def test_an_output_error_survives_pickling_with_its_hint_and_result() -> None:
    error = an_output_error()
    restored = pickle.loads(pickle.dumps(error))
    assert type(restored) is OutputError
    assert restored.hint == error.hint
    assert restored.result == error.result
    assert restored.render() == error.render()
    assert (restored.what, restored.where, restored.fix) == (error.what, error.where, error.fix)


def test_an_output_error_can_be_deep_copied() -> None:
    error = an_output_error()
    assert copy.deepcopy(error).hint == error.hint


def test_a_subclass_of_an_error_survives_pickling_as_itself() -> None:
    restored = pickle.loads(pickle.dumps(_CustomError("custom", where="here")))
    assert type(restored) is _CustomError
    assert restored.where == "here"


class _CustomError(SchemaError):
    pass


def test_a_dialect_error_survives_pickling_with_its_dialect_and_options() -> None:
    from outform.errors import DialectError

    error = DialectError("no oneOf", dialect="gemini", options=("use anyOf", "use mode json"))
    restored = pickle.loads(pickle.dumps(error))
    assert (restored.dialect, restored.options) == ("gemini", ("use anyOf", "use mode json"))
    assert restored.fix == "use anyOf; or use mode json"
    assert isinstance(restored, SchemaError)


def test_every_error_outform_raises_on_purpose_is_in_outform_errors() -> None:
    """Found by a trial: `from outform.errors import GenerationError` failed (it lived in
    outform.run). Every OutformError class outform defines is importable from errors.py."""
    import importlib
    import inspect
    import pkgutil

    from outform import errors

    for module_info in pkgutil.walk_packages(outform.__path__, "outform."):
        if module_info.name.endswith("__main__") or module_info.name.startswith(
            ("outform.gateway", "outform.agent.view")
        ):
            continue  # (entry points; extras: the gateway's errors are its HTTP answers)
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, errors.OutformError)
                and value.__module__ == module_info.name
                and not name.startswith("_")
                and module_info.name != "outform.errors"
            ):
                assert getattr(errors, name, None) is value, f"{module_info.name}.{name}"
