"""A tool's parameters keep their names, whatever Pydantic makes of them as fields: the model
is shown and writes `_id`, `model_config` or `json`, and the tool is called with them."""

from __future__ import annotations

import asyncio
import warnings
from typing import Annotated, Any

import orjson
import pytest
from pydantic import Field

from outform.agent import FunctionTool, run
from tests.echo import Echo


def lookup(_id: int, _secret: int = 0) -> list[int]:
    """A private-looking name: Pydantic would take `_id` for a private attribute."""
    return [_id, _secret]


def clash(model_config: str, json: int = 1, schema: bool = False, copy: str = "c") -> list[Any]:
    """Names of BaseModel's own: its config, and methods a field would shadow."""
    return [model_config, json, schema, copy]


def test_a_parameter_named_with_an_underscore_is_shown_and_called_by_that_name() -> None:
    tool = FunctionTool(lookup)
    assert tool.parameters["properties"] == {
        "_id": {"title": "Id", "type": "integer"},
        "_secret": {"default": 0, "title": "Secret", "type": "integer"},
    }
    assert tool.parameters["required"] == ["_id"]
    result = tool.run({"_id": "3"})
    assert result.output == [3, 0] and result.received == {"_id": 3, "_secret": 0}
    assert [(c.path, c.transform) for c in result.changes] == [("/_id", "string_to_integer")]


def test_a_defaulted_underscore_parameter_does_not_silently_disappear() -> None:
    """Pydantic drops `_secret: int = 0` from the schema: the model could never set it."""
    assert FunctionTool(lookup).run({"_id": 1, "_secret": 7}).output == [1, 7]


def test_a_missing_underscore_parameter_is_told_to_the_model_not_raised() -> None:
    result = FunctionTool(lookup).run({})
    assert result.error == "invalid arguments: at (root): missing required field '_id' (integer)"
    assert result.received is None


def test_names_clashing_with_basemodel_attributes_are_parameters_like_any_other() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "shadows an attribute in parent BaseModel"
        tool = FunctionTool(clash)
    assert list(tool.parameters["properties"]) == ["model_config", "json", "schema", "copy"]
    assert tool.parameters["required"] == ["model_config"]
    result = tool.run({"model_config": "x", "json": 2, "schema": True})
    assert result.output == ["x", 2, True, "c"]


def test_the_internal_field_name_of_a_renamed_parameter_is_no_parameter() -> None:
    """The model writes the parameter's name; the field's Python name is outform's own."""
    result = FunctionTool(lookup).run({"_id": 1, "p0": 2})
    assert (
        result.error == "invalid arguments: at p0: no such parameter (the parameters: _id, _secret)"
    )


def test_a_renamed_field_never_takes_another_parameters_name() -> None:
    def both(_a: int, p0: int) -> list[int]:
        return [_a, p0]

    assert FunctionTool(both).run({"_a": 1, "p0": 2}).output == [1, 2]


def test_ordinary_parameters_keep_their_own_field_names() -> None:
    """`FunctionTool(fn).arguments` is a model one can parse with: its fields are the names."""
    assert list(FunctionTool(clash).arguments.model_fields)[1:] == ["p1", "p2", "p3"]

    def forecast(city: str, days: int = 1) -> str:
        return city * days

    assert list(FunctionTool(forecast).arguments.model_fields) == ["city", "days"]


def test_an_async_tool_gets_its_underscore_parameter_too() -> None:
    async def fetch(_id: int) -> int:
        return _id * 2

    assert asyncio.run(FunctionTool(fetch).arun({"_id": 4})).output == 8


def test_the_loop_shows_and_calls_an_underscore_parameter(echo: Echo) -> None:
    echo.reply(
        {
            "content": "",
            "tool_calls": [{"function_name": "lookup", "arguments": {"_id": 5, "_secret": 1}}],
            "metadata": {"confidence": 0.5, "response_type": "tool_call"},
        },
        {"content": "done", "metadata": {"confidence": 0.9}},
    )
    result = run("echo:gpt-5", "Look up 5", tools=[lookup], transport=echo.transport)
    assert result.content == "done"
    assert "_id: integer" in echo.texts(0)[0] and "_secret?: integer = 0" in echo.texts(0)[0]
    sent = orjson.loads(echo.texts(-1)[-1].split("\n")[1])
    assert sent == [
        {"function_name": "lookup", "arguments": {"_id": 5, "_secret": 1}, "output": [5, 1]}
    ]


@pytest.mark.parametrize("name", ["_id", "__id", "model_config", "model_dump", "validate"])
def test_every_name_pydantic_refuses_as_a_field_reaches_the_tool(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def tool({name}: int) -> int:\n    return {name}", namespace)
    assert FunctionTool(namespace["tool"]).run({name: 9}).output == 9


def test_an_annotated_parameter_keeps_its_description_and_constraints() -> None:
    """`Annotated[int, Field(description=..., ge=1)]` lost both (the hints were read without
    their extras): the model never saw them, and 0 reached the tool."""

    def forecast(days: Annotated[int, Field(description="how many days", ge=1)]) -> int:
        """Forecast."""
        return days

    tool = FunctionTool(forecast)
    assert tool.parameters["properties"]["days"]["description"] == "how many days"
    assert tool.parameters["properties"]["days"]["minimum"] == 1
    assert tool.run({"days": 0}).error == (
        "invalid arguments: at days: expected a number ≥ 1, found integer 0"
    )
