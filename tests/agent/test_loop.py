"""The agent loop: tools run with checked arguments, their errors go back to the model, every
step is kept, and the step limit holds."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from outform import jsontext
from outform.agent import AgentRun, Envelope, FunctionTool, arun, as_tool, run
from outform.errors import UsageError
from tests.agent.test_envelope import _wire_text
from tests.echo import Echo
from tests.test_generate_providers import Call

calls: list[tuple[str, Any]] = []


def add(a: int, b: int = 0) -> int:
    """Add two integers."""
    calls.append(("add", (a, b)))
    return a + b


def divide(a: float, b: float) -> float:
    return a / b


def ask(*tools: dict[str, Any], content: str = "", confidence: float = 0.5) -> dict[str, Any]:
    """An envelope asking for `tools` (each {"function_name", "arguments", ...})."""
    return {
        "content": content,
        "tool_calls": list(tools),
        "metadata": {"confidence": confidence, "response_type": "tool_call"},
    }


def answer(content: str) -> dict[str, Any]:
    return {"content": content, "metadata": {"confidence": 0.95, "sources": ["add"]}}


def results_sent(echo: Echo, index: int = -1) -> list[dict[str, Any]]:
    """The tool results as the model received them in request `index`."""
    text = echo.texts(index)[-1]
    return list(orjson.loads(text.split("\n")[1]))


@pytest.fixture(autouse=True)
def _forget_calls() -> None:
    calls.clear()


def agent(echo: Echo, tools: list[Any], **options: Any) -> AgentRun:
    return run("echo:gpt-5", "What is 2 + 3?", tools=tools, transport=echo.transport, **options)


def test_a_tool_call_runs_and_its_result_goes_back_until_an_answer(echo: Echo) -> None:
    echo.reply(ask({"function_name": "add", "arguments": {"a": 2, "b": "3"}, "reasoning": "sum"}))
    echo.reply(answer("5"))
    result = agent(echo, [add])
    assert result.complete and result.content == "5"
    assert calls == [("add", (2, 3))]  # "3" checked against the signature: an int
    assert [len(s.results) for s in result.steps] == [1, 0]
    assert result.steps[0].results[0].output == 5
    assert results_sent(echo) == [
        {"function_name": "add", "arguments": {"a": 2, "b": "3"}, "output": 5}
    ]
    system = echo.texts(0)[0]
    assert "- add: {\n    a: integer\n    b?: integer = 0\n  }  // Add two integers." in system
    assert result.usage.total_tokens == 30


def test_bad_arguments_unknown_tools_and_exceptions_go_back_as_results(echo: Echo) -> None:
    echo.reply(
        ask(
            {"function_name": "add", "arguments": {"a": "two"}},
            {"function_name": "divide", "arguments": {"a": 1, "b": 0}},
            {"function_name": "multiply", "arguments": {"a": 1}},
            {"function_name": "add", "arguments": {"a": 1, "c": 2}},
        )
    )
    echo.reply(answer("I could not compute it."))
    result = agent(echo, [add, divide])
    assert calls == []
    errors = [r["error"] for r in results_sent(echo)]
    assert errors[0] == 'invalid arguments: at a: expected integer, found string "two"'
    assert errors[1] == "ZeroDivisionError: float division by zero"
    assert errors[2] == "there is no tool named 'multiply'; the tools are: add, divide"
    assert errors[3] == "invalid arguments: at c: no such parameter (the parameters: a, b)"
    assert result.complete


def test_the_step_limit_stops_the_loop_and_leaves_the_last_calls_unrun(echo: Echo) -> None:
    step = ask({"function_name": "add", "arguments": {"a": 1}})
    echo.reply(step, step, step)
    result = agent(echo, [add], max_steps=2)
    assert not result.complete and len(result.steps) == 2
    assert calls == [("add", (1, 0))]
    assert result.final.tool_calls[0].function_name == "add"
    assert len(echo.sent) == 2


def test_the_last_tool_calls_are_one_call_away(echo: Echo) -> None:
    echo.reply(
        ask(
            {"function_name": "add", "arguments": {"a": 1, "b": 2}, "reasoning": "first"},
            {"function_name": "add", "arguments": {"a": "x"}},
            confidence=0.7,
        ),
        answer("3"),
    )
    summary = agent(echo, [add]).last_tool_calls()
    assert summary is not None
    assert (summary.step, summary.count, summary.names) == (1, 2, ("add", "add"))
    assert summary.arguments == ({"a": 1, "b": 2}, {"a": "x"})
    assert summary.reasoning == ("first", None)
    assert summary.errors[0] is None and summary.errors[1] is not None
    assert summary.metadata.confidence == 0.7


def test_no_tool_call_means_no_summary(echo: Echo) -> None:
    echo.reply(answer("hi"))
    assert agent(echo, [add]).last_tool_calls() is None


def test_arun_awaits_async_tools_and_runs_blocking_ones_in_a_thread(echo: Echo) -> None:
    async def lookup(city: str) -> dict[str, Any]:
        """Weather for a city."""
        return {"city": city, "celsius": 11}

    echo.reply(
        ask(
            {"function_name": "lookup", "arguments": {"city": "Oslo"}},
            {"function_name": "add", "arguments": {"a": 4}},
        ),
        answer("11 °C"),
    )

    async def main() -> AgentRun:
        from outform.transport import AsyncTransport, RetryPolicy

        async with AsyncTransport(retry=RetryPolicy(retries=0)) as transport:
            return await arun("echo:gpt-5", "Weather?", tools=[lookup, add], transport=transport)

    result = asyncio.run(main())
    assert [r.output for r in result.steps[0].results] == [{"city": "Oslo", "celsius": 11}, 4]


def test_an_agent_tool_runs_its_own_validated_generation(echo: Echo) -> None:
    researcher = as_tool(
        "research",
        model="echo:gpt-5",
        output={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        transport=echo.transport,
    )
    echo.reply(ask({"function_name": "research", "arguments": {"request": "count"}}))
    echo.reply({"n": "7"})  # the sub-call's reply, coerced and validated
    echo.reply(answer("7"))
    result = agent(echo, [researcher])
    assert result.steps[0].results[0].output == {"n": 7}
    assert result.content == "7"


def test_what_cannot_be_a_tool_or_an_output_is_refused_before_any_call(echo: Echo) -> None:
    async def slow() -> None:
        return None

    with pytest.raises(UsageError, match="async"):
        agent(echo, [slow])
    with pytest.raises(UsageError, match="Envelope"):
        agent(echo, [add], output=dict)
    with pytest.raises(UsageError, match="two tools"):
        agent(echo, [add, FunctionTool(divide, name="add")])
    with pytest.raises(UsageError, match="needs a name"):
        agent(echo, [lambda: 1])
    # Found by a new-user trial: max_steps=2.5 raised TypeError, max_result_chars=-1 clipped
    # every result to nothing without a word.
    for limits in ({"max_steps": 2.5}, {"max_steps": 0}, {"max_result_chars": -1}):
        with pytest.raises(UsageError, match="must be a whole number"):
            agent(echo, [add], **limits)
    assert echo.sent == []


def test_the_loop_works_over_every_provider(call: Call) -> None:
    first = ask({"function_name": "add", "arguments": {"a": 2, "b": 3}})
    call.reply(call.provider.reply(_wire_text(call.provider.model, first), "stop"))
    call.reply(call.provider.reply(_wire_text(call.provider.model, answer("5")), "stop"))
    result = run(
        call.provider.model,
        "What is 2 + 3?",
        tools=[add],
        base_url=call.server.url,
        api_key="test-key-not-secret",
        transport=call.transport,
    )
    for request in call.server.requests:
        call.provider.check_request(request.path, request.json)
    assert result.complete and result.content == "5" and calls == [("add", (2, 3))]
    assert isinstance(result.final, Envelope)


def not_a_number() -> float:
    """A measurement that failed."""
    return float("nan")


def test_a_tool_result_json_has_no_number_for_is_not_sent_as_null(echo: Echo) -> None:
    """Found by a new-user trial: a tool's NaN went to the model as `null`, a value changed
    without a word. It is spelled as JSON5 spells it."""
    echo.reply(ask({"function_name": "not_a_number", "arguments": {}, "reasoning": "measure"}))
    echo.reply(answer("unknown"))
    agent(echo, [not_a_number])
    text = echo.texts(-1)[-1].split("\n")[1]
    assert '"output":NaN' in text


def huge(days: int) -> int:
    """A count past 64 bits."""
    return days * 10**30


def test_integers_past_64_bits_from_the_model_or_a_tool_keep_every_digit(echo: Echo) -> None:
    """Found by a new-user trial: a model's argument or a tool's result of 10**30 crashed the
    loop with orjson's TypeError."""
    echo.reply(jsontext.dumps_text(ask({"function_name": "huge", "arguments": {"days": 10**30}})))
    echo.reply(answer("many"))
    result = agent(echo, [huge])
    assert result.steps[0].results[0].output == 10**60
    assert str(10**60) in echo.texts(-1)[-1] and str(10**30) in echo.texts(-1)[-2]


def long_text() -> str:
    """A long output."""
    return "x" * 500


def test_a_clipped_result_keeps_the_start_of_its_output(echo: Echo) -> None:
    """Found by a new-user trial: the clip measured the whole record, so with a small limit
    the model saw `{"functio…` and none of the output."""
    echo.reply(ask({"function_name": "long_text", "arguments": {}}))
    echo.reply(answer("done"))
    agent(echo, [long_text], max_result_chars=10)
    (sent,) = results_sent(echo)
    assert sent["output_clipped"].startswith('"xxxxxxx') and "function_name" not in str(
        sent["output_clipped"]
    )


SECRET = "sk-tool-secret-7f3a9c21d4"


def leaky() -> str:
    """A tool whose failure quotes a key."""
    raise RuntimeError(f"the service refused key {SECRET}")


def test_a_tools_failure_reaches_the_model_without_a_secret(echo: Echo) -> None:
    """Found by a new-user trial: a tool's exception text went to the model as is, the API key
    it quoted included (the trace store masked it; the provider's request did not)."""
    from outform.trace.redact import register_secret

    register_secret(SECRET)
    echo.reply(ask({"function_name": "leaky", "arguments": {}}))
    echo.reply(answer("sorry"))
    agent(echo, [leaky])
    (sent,) = results_sent(echo)
    assert SECRET not in str(sent) and "RuntimeError: the service refused key" in sent["error"]
