"""Found by a second new-user trial of the agent loop: a call refused for a key that names no
parameter is recorded as refused, as one refused for a wrong type is (one outcome for the
trace and the ToolResult), and a tool's error is held to `max_result_chars` as its output is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

import outform
from outform.agent import AgentRun, run
from outform.trace import Event
from outform.trace.events import RunEnd, Validation
from outform.trace.health import HealthQuery, report
from outform.trace.sqlite_store import SqliteTraceStore
from tests.agent.test_loop import answer, ask, results_sent
from tests.echo import Echo
from tests.trace.sinks import ListSink, restore_recording

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


def readings(events: list[Event]) -> dict[str, list[Event]]:
    """The events of each reading of a tool's arguments (runs with no provider: the loop's
    generate() calls have one), by run id."""
    out: dict[str, list[Event]] = {}
    for event in events:
        if event.run is not None and event.run.provider is None:
            out.setdefault(event.run.run_id, []).append(event)
    return out


# -- 4. a key that names no parameter: refused, and recorded so ------------------------------


def test_a_call_refused_for_an_unknown_key_is_recorded_invalid_like_a_wrong_type(
    echo: Echo, recorded: ListSink
) -> None:
    """`forecast({"city": "Oslo", "extra": 1})` never runs; its reading was recorded `valid`
    with a `drop_unexpected_key` change (an intervention for a call that never ran). Now it
    ends `invalid`, with the key as an `unexpected` violation, as `days: true` ends `invalid`
    with its type violation."""
    result = agent(echo, {"city": "Oslo", "extra": 1}, {"city": "Oslo", "days": True})
    unknown, wrong_type = result.steps[0].results
    assert received == []
    assert unknown.received is None and unknown.error == (
        "invalid arguments: at extra: no such parameter (the parameters: city, days)"
    )
    assert wrong_type.received is None
    recorded_runs = list(readings(recorded.flushed()).values())
    assert len(recorded_runs) == 2
    for events in recorded_runs:
        assert [e.name for e in events] == ["run.start", "output.validation.fail", "run.end"]
        end = events[-1].data
        assert isinstance(end, RunEnd) and end.outcome == "invalid" and end.changes == 0
    refusal = recorded_runs[0][1].data
    assert isinstance(refusal, Validation)
    ((path, kind, found),) = [(v.path, v.kind, v.found) for v in refusal.violations]
    assert (path, kind, found) == ("", "unexpected", "'extra'")


def test_a_refused_call_counts_as_failed_and_as_no_intervention_in_health(
    echo: Echo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    restore_recording(monkeypatch)
    outform.trace.start(store=f"sqlite:{tmp_path / 't.db'}")
    try:
        agent(echo, {"city": "Oslo", "extra": 1})
        assert outform.trace.flush()
    finally:
        outform.trace.stop()
    store = SqliteTraceStore(tmp_path / "t.db", create=False)
    data = report(store, HealthQuery(since_hours=1)).to_dict()
    store.close()
    assert data["totals"]["failed_runs"] == 1
    assert data["totals"]["interventions"] == 0 and data["top_transforms"] == []
    assert {"path": "/", "kind": "unexpected", "count": 1} in data["reasks"]["violations"]


def test_the_runs_observers_see_the_refusal_as_a_failed_parse(echo: Echo) -> None:
    seen: list[Event] = []
    agent(echo, {"city": "Oslo", "extra": 1}, observers=[seen.append])
    (failed,) = [e for e in seen if e.name == "output.coercion.fail"]
    assert failed.stage == "validate"
    assert failed.detail == "at (root): unexpected field(s) 'extra'; allowed: 'city', 'days'"


class Stay(BaseModel):
    model_config = ConfigDict(extra="forbid")  # closed: a key it does not declare is dropped
    nights: int


def reserve(stay: Stay) -> str:
    """Reserve a stay."""
    return f"{stay.nights} nights"


def test_a_key_in_a_nested_object_is_refused_and_recorded_under_its_object(
    echo: Echo, recorded: ListSink
) -> None:
    echo.reply(ask({"function_name": "reserve", "arguments": {"stay": {"nights": 2, "pets": 1}}}))
    echo.reply(answer("done"))
    result = run("echo:gpt-5", "Book", tools=[reserve], transport=echo.transport)
    (refused,) = result.steps[0].results
    assert refused.error == "invalid arguments: at stay.pets: no such field"
    ((events),) = readings(recorded.flushed()).values()
    assert isinstance(events[-1].data, RunEnd) and events[-1].data.outcome == "invalid"
    violation = events[1].data
    assert isinstance(violation, Validation)
    assert [(v.path, v.kind, v.found) for v in violation.violations] == [
        ("/stay", "unexpected", "'pets'")
    ]


def test_arguments_read_as_sent_are_still_only_counted(echo: Echo, recorded: ListSink) -> None:
    """A reading that changes nothing is a fast-path tally, as `outform.parse` counts a reply
    valid as sent: no run of its own."""
    agent(echo, {"city": "Oslo"})
    assert received == [("Oslo", 1)]
    assert readings(recorded.flushed()) == {}
    assert sum(sum(b.tallies.values()) for b in recorded.batches) >= 1


# -- 7. max_result_chars holds a tool's error as it holds its output -------------------------


def failing(city: str) -> str:
    """A tool whose failure is long."""
    raise RuntimeError("y" * 5000)


def test_a_long_tool_error_is_clipped_to_max_result_chars_and_marked(echo: Echo) -> None:
    echo.reply(ask({"function_name": "failing", "arguments": {"city": "Oslo"}}))
    echo.reply(answer("done"))
    result = run(
        "echo:gpt-5", "Weather?", tools=[failing], transport=echo.transport, max_result_chars=10
    )
    (sent,) = results_sent(echo)
    assert "error" not in sent
    assert sent["error_clipped"] == "RuntimeEr…"
    assert sent["note"] == "the error had 5014 characters; only the start is shown"
    assert sent["function_name"] == "failing" and sent["arguments"] == {"city": "Oslo"}
    # The caller keeps the whole error: only what the model reads is clipped.
    assert result.steps[0].results[0].error == "RuntimeError: " + "y" * 5000


def test_an_error_within_the_limit_is_sent_whole(echo: Echo) -> None:
    result = agent(echo, {"city": "Oslo", "days": True}, max_result_chars=1000)
    (sent,) = results_sent(echo)
    assert sent["error"] == result.steps[0].results[0].error
    assert "error_clipped" not in sent and "note" not in sent


def test_a_limit_of_zero_shows_no_output_nor_error(echo: Echo) -> None:
    agent(echo, {"city": "Oslo"}, {"city": "Oslo", "days": True}, max_result_chars=0)
    output, error = results_sent(echo)
    assert output["output_clipped"] == "" and error["error_clipped"] == ""
    assert output["note"].startswith("the output had ") and error["note"].startswith(
        "the error had "
    )
