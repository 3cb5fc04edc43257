"""The event model: every kind round-trips through JSON, records are bounded and
self-contained, and the events of a bare parse keep their old shape."""

from __future__ import annotations

import orjson
import pytest

import outform
from outform.trace import (
    EVENT_NAMES,
    Change,
    Event,
    EventName,
    FormatChoice,
    Precheck,
    ProviderCall,
    Reask,
    RunEnd,
    RunInfo,
    StreamAbort,
    Tokens,
    Validation,
    ViolationRecord,
)
from outform.trace.events import DETAILS, MAX_VIOLATIONS, PREVIEW_CHARS
from tests.trace.runs import RunSpec, run_events

RUN = RunInfo(
    "r-1",
    step="extract",
    agent="billing",
    tags=("prod", "eu"),
    provider="anthropic",
    model="claude-sonnet-4-5",
    mode="forced_tool",
    mode_reason="no native schema mode with thinking",
    streaming=True,
    trace_parent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
)
VIOLATION = ViolationRecord("/total", "type", "number", 'string "12,50"')
RECORDS = {
    "run.end": RunEnd("invalid", 3, 2, 2500.0, Tokens(300, 90, 10, 5), "GenerationError"),
    "format.native": FormatChoice("native_schema", dialect="anthropic", enforced=True),
    "format.skipped": FormatChoice("instructions", reason="the profile has no schema mode"),
    "output.change": Change('"42"', "42", "integer", "string", lossy=False),
    "output.validation.fail": Validation((VIOLATION,), 1),
    "output.reask.attempt": Reask("schema", ("/total",), (VIOLATION,)),
    "output.reask.success": Reask("schema", ("/total",)),
    "output.reask.fail": Reask("syntax"),
    "stream.abort": StreamAbort(412, "the value at /id can no longer match its pattern"),
    "precheck.pass": Precheck("reasoning_consistent"),
    "precheck.fail": Precheck("reasoning_consistent", "the answer contradicts step 3"),
    "precheck.skipped": Precheck("reasoning_consistent", "no reasoning in the reply"),
    "provider.call": ProviderCall(812.5, 95.0, 200, Tokens(120, 40), 1, None, "stop"),
}


@pytest.mark.parametrize("name", EVENT_NAMES)
def test_every_kind_round_trips_through_json(name: EventName) -> None:
    event = Event(
        name,
        "semantic",
        "hash",
        ("string_to_int",),
        0,
        "/age",
        "detail",
        time=1700000000.25,
        run=RUN,
        attempt=2,
        data=RECORDS.get(name),
    )
    text = orjson.dumps(event.to_dict())
    assert Event.from_dict(orjson.loads(text)) == event


def test_each_record_type_names_the_kinds_it_serves() -> None:
    assert set(DETAILS) <= set(EVENT_NAMES)
    for name, record in RECORDS.items():
        assert isinstance(record, DETAILS[name])


def test_a_stored_record_is_self_contained() -> None:
    (_, _, _, change, *_) = run_events(RunSpec(changes=(("semantic", "to_int", "/n"),)), 0.0)
    stored = orjson.loads(orjson.dumps(change.to_dict()))
    run = stored["run"]
    assert (run["step"], run["provider"], run["model"], run["mode"]) == (
        "extract",
        "openai",
        "gpt-4o",
        "native_schema",
    )
    assert stored["attempt"] == 1 and stored["data"]["expected"] == "integer"


def test_previews_and_violations_are_bounded() -> None:
    change = Change("x" * 10_000, "y" * 10_000)
    assert change.before is not None and len(change.before) == PREVIEW_CHARS
    assert change.before.endswith("…")
    many = [ViolationRecord(f"/{i}", "type", "integer", "string " + "z" * 500) for i in range(50)]
    validation = Validation.of(many)
    assert len(validation.violations) == MAX_VIOLATIONS and validation.total == 50
    assert all(len(v.found) <= PREVIEW_CHARS for v in validation.violations)


def test_violations_come_from_a_hint() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('{"a": "x"}', {"type": "object", "properties": {"a": {"type": "integer"}}})
    validation = Validation.of(caught.value.hint.violations)
    assert [(v.path, v.kind) for v in validation.violations] == [("/a", "type")]


def test_the_events_of_a_bare_parse_keep_their_shape() -> None:
    (event, *_) = outform.parse('Here: {"a": 1}', {"type": "object"}).events
    assert event.run is None and event.attempt == 0 and event.data is None
    assert "run" not in event.to_dict() and Event.from_dict(event.to_dict()) == event


def test_an_unknown_name_is_refused_when_read_back() -> None:
    with pytest.raises(ValueError, match="unknown event name"):
        Event.from_dict({"name": "output.teleport"})


def test_newer_rows_with_unknown_keys_still_read() -> None:
    data = Event("provider.call", run=RUN, data=RECORDS["provider.call"]).to_dict()
    data["colour"] = "blue"
    data["run"]["region"] = "eu"
    data["data"]["cost_usd"] = 0.01
    assert Event.from_dict(data).data == RECORDS["provider.call"]
