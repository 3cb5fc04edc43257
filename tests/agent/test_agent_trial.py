"""Found by a new-user trial of the agent loop: a tool's arguments are read as outform reads any
typed value (a conversion made is recorded, one the pipeline refuses goes back to the model),
and a tool whose signature no JSON can fill is a UsageError naming the parameter."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform.agent import AgentRun, FunctionTool, arun, as_tool, run
from outform.errors import OutputError, UsageError
from outform.trace import Event
from tests.agent.test_loop import answer, ask, results_sent
from tests.echo import Echo
from tests.trace.sinks import ListSink

received: list[tuple[str, int]] = []


def forecast(city: str, days: int = 1) -> dict[str, Any]:
    """The weather forecast for a city."""
    received.append((city, days))
    return {"city": city, "celsius": [11] * days}


@pytest.fixture(autouse=True)
def _forget() -> None:
    received.clear()


def agent(echo: Echo, *calls: dict[str, Any], **options: Any) -> AgentRun:
    echo.reply(ask(*({"function_name": "forecast", "arguments": a} for a in calls)))
    echo.reply(answer("done"))
    tools = options.pop("tools", [forecast])
    return run("echo:gpt-5", "Weather?", tools=tools, transport=echo.transport, **options)


def test_an_argument_the_pipeline_converts_reaches_the_tool_with_the_change_recorded(
    echo: Echo,
) -> None:
    result = agent(echo, {"city": "Oslo", "days": 2.0}, {"city": "Oslo", "days": "3"})
    assert received == [("Oslo", 2), ("Oslo", 3)]
    first, second = result.steps[0].results
    assert first.arguments == {"city": "Oslo", "days": 2.0}  # as the model sent them
    assert first.received == {"city": "Oslo", "days": 2}  # as the tool got them
    assert [(c.path, c.transform, c.before, c.after) for c in first.changes] == [
        ("/days", "number_to_integer", 2.0, 2)
    ]
    assert [(c.path, c.transform) for c in second.changes] == [("/days", "string_to_integer")]


def test_an_argument_the_pipeline_refuses_is_not_passed_but_told_to_the_model(
    echo: Echo,
) -> None:
    """`true` for an int: outform.parse refuses it, so the loop does too (Pydantic's lax
    reading made it 1, and the tool ran with days=1 without a word)."""
    with pytest.raises(OutputError, match="expected integer, found boolean true"):
        outform.parse('{"city": "Oslo", "days": true}', type=FunctionTool(forecast).arguments)
    result = agent(echo, {"city": "Oslo", "days": True})
    assert received == []
    (refused,) = result.steps[0].results
    assert refused.error == "invalid arguments: at days: expected integer, found boolean true"
    assert refused.received is None and refused.changes == ()
    assert results_sent(echo) == [
        {
            "function_name": "forecast",
            "arguments": {"city": "Oslo", "days": True},
            "error": "invalid arguments: at days: expected integer, found boolean true",
        }
    ]


def test_an_unchanged_argument_records_nothing(echo: Echo) -> None:
    (result,) = agent(echo, {"city": "Oslo"}).steps[0].results
    assert result.received == {"city": "Oslo", "days": 1} and result.changes == ()


def test_the_runs_parse_level_reads_the_arguments(echo: Echo) -> None:
    """level="off" converts nothing in a reply, and nothing in a tool's arguments either."""
    result = agent(echo, {"city": "Oslo", "days": "3"}, level="off")
    assert received == []
    assert result.steps[0].results[0].error == (
        'invalid arguments: at days: expected integer, found string "3"'
    )


def test_a_key_naming_no_parameter_is_refused_not_dropped(echo: Echo) -> None:
    """The pipeline drops an unexpected key from a reply; from a tool's arguments, the model
    meant something by it (a misspelled `dayz`: the tool would run with its default)."""
    result = agent(echo, {"city": "Oslo", "dayz": 3})
    assert received == []
    assert result.steps[0].results[0].error == (
        "invalid arguments: at dayz: no such parameter (the parameters: city, days)"
    )


def test_a_key_in_another_case_is_renamed_and_recorded(echo: Echo) -> None:
    (result,) = agent(echo, {"City": "Oslo"}).steps[0].results
    assert received == [("Oslo", 1)]
    assert [(c.path, c.transform, c.before) for c in result.changes] == [
        ("/city", "rename_key", "City")
    ]


class Place(BaseModel):
    city: str
    lat: float = 0.0


def locate(place: Place) -> str:
    """Where a place is."""
    return f"{place.city} at {place.lat}"


def test_a_key_a_nested_model_ignores_is_recorded(echo: Echo) -> None:
    """The model a nested argument is read into keeps its own `extra` (here Pydantic's
    default, ignore): the key it drops is a recorded change."""
    echo.reply(
        ask({"function_name": "locate", "arguments": {"place": {"city": "Oslo", "alt": 23}}})
    )
    echo.reply(answer("done"))
    result = run("echo:gpt-5", "Where?", tools=[locate], transport=echo.transport)
    (located,) = result.steps[0].results
    assert located.output == "Oslo at 0.0"
    assert [(c.path, c.transform) for c in located.changes] == [("/place/alt", "ignore_extra_key")]


def test_argument_changes_reach_the_runs_observers_and_the_trace(
    echo: Echo, recorded: ListSink
) -> None:
    """Each reading of a tool's arguments is a parse of its own: its events go to the run's
    observers, and it is recorded (under the run's labels) with a change per conversion."""
    seen: list[Event] = []
    agent(echo, {"city": "Oslo", "days": "2"}, observers=[seen.append], labels={"agent": "w"})
    (coerced,) = [e for e in seen if e.name == "output.coercion.success"]
    assert coerced.transforms == ("string_to_integer",)
    (change,) = [e for e in recorded.flushed() if e.name == "output.change" and e.path == "/days"]
    assert change.transform == "string_to_integer"
    assert change.run is not None and change.run.agent == "w"


def test_arun_reads_arguments_the_same_way(echo: Echo) -> None:
    async def lookup(city: str, days: int = 1) -> int:
        """Days of forecast."""
        return days

    echo.reply(
        ask(
            {"function_name": "lookup", "arguments": {"city": "Oslo", "days": "4"}},
            {"function_name": "lookup", "arguments": {"city": "Oslo", "days": True}},
        ),
        answer("done"),
    )

    async def main() -> AgentRun:
        from outform.transport import AsyncTransport, RetryPolicy

        async with AsyncTransport(retry=RetryPolicy(retries=0)) as transport:
            return await arun("echo:gpt-5", "Weather?", tools=[lookup], transport=transport)

    converted, refused = asyncio.run(main()).steps[0].results
    assert converted.output == 4 and converted.received == {"city": "Oslo", "days": 4}
    assert [c.transform for c in converted.changes] == ["string_to_integer"]
    assert refused.error is not None and "found boolean true" in refused.error


def test_an_agent_tools_arguments_are_read_against_its_schema(echo: Echo) -> None:
    counted = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    researcher = as_tool("research", model="echo:gpt-5", output=counted, transport=echo.transport)
    echo.reply(ask({"function_name": "research", "arguments": {"request": 7}}))
    echo.reply({"n": 7})  # the sub-call's reply
    echo.reply(answer("7"))
    result = run("echo:gpt-5", "Count", tools=[researcher], transport=echo.transport)
    (sub,) = result.steps[0].results
    assert sub.received == {"request": "7"}
    assert [(c.path, c.transform) for c in sub.changes] == [("/request", "number_to_string")]
    assert echo.texts(1)[-1] == '{"request":"7"}'  # the sub-call got the converted request


class Weird:
    pass


def weird(w: Weird) -> int:
    """w"""
    return 1


def call_back(f: Callable[[int], int]) -> int:
    """f"""
    return 1


def test_a_parameter_type_with_no_json_schema_is_a_usage_error_naming_it(echo: Echo) -> None:
    """Found by the trial: PydanticSchemaGenerationError left outform.agent.run()."""
    with pytest.raises(UsageError) as caught:
        run("echo:gpt-5", "hi", tools=[weird], transport=echo.transport)
    message = str(caught.value)
    assert "parameter 'w' of tool 'weird' has type Weird, which has no JSON Schema" in message
    assert "where: weird(w)" in message
    assert "arbitrary_types_allowed is not enough" in message
    with pytest.raises(UsageError, match=r"parameter 'f' of tool 'call_back' has type Callable"):
        FunctionTool(call_back)
    assert echo.sent == []


def wrong_default(days: int = "x") -> int:  # type: ignore[assignment]
    """A default the type does not take."""
    return 1


def none_for_a_list(cities: list[str] = None) -> int:  # type: ignore[assignment]  # noqa: RUF013
    """None where the type says a list."""
    return 1


def path_as_text(folder: Path = ".") -> str:  # type: ignore[assignment]
    """A default JSON writes as the type's value."""
    return str(folder)


def test_a_default_not_of_its_parameters_type_is_a_usage_error() -> None:
    """The schema shows the default to the model as the value taken: one the type refuses
    would make the model's own omission an error it cannot fix."""
    with pytest.raises(UsageError, match="the default of parameter 'days' of tool 'wrong_def"):
        FunctionTool(wrong_default)
    with pytest.raises(UsageError, match=r"list\[str\] \| None = None"):
        FunctionTool(none_for_a_list)
    assert FunctionTool(path_as_text).parameters["properties"]["folder"]["default"] == "."


class Later(BaseModel):
    inner: Undefined  # type: ignore[name-defined]  # noqa: F821


def uses_later(x: Later) -> int:
    """x"""
    return 1


def test_a_type_that_is_not_fully_defined_is_a_usage_error() -> None:
    """A model whose forward reference does not resolve: Pydantic's PydanticUserError when
    its schema is asked for."""
    with pytest.raises(UsageError, match="parameter 'x' of tool 'uses_later'"):
        FunctionTool(uses_later)


def test_an_annotation_that_does_not_resolve_is_a_usage_error() -> None:
    def missing(x: NotImported) -> int:  # type: ignore[name-defined]  # noqa: F821
        """x"""
        return 1

    with pytest.raises(UsageError, match="the signature of tool 'missing' cannot be read"):
        FunctionTool(missing)


def maybe(reading: float | None = None) -> str:
    """A reading, if there is one."""
    return repr(reading)


def test_a_number_json_has_none_for_is_not_read_as_null() -> None:
    """Arguments go to the pipeline as JSON text: a NaN a caller passes is spelled out (and
    refused: JSON has no such number), never written as null, which `float | None` takes."""
    result = FunctionTool(maybe).run({"reading": float("nan")})
    assert result.received is None
    assert result.error is not None and "the JSON writes NaN" in result.error
