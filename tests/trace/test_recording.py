"""What generate(), stream() and parse() record, over real HTTP against a fake provider: one
run per call, its attempts, each provider call, each change, each re-ask, the outcome."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import outform
import outform.config
from outform.agent import Envelope
from outform.errors import ConfigError, ServerError, StreamAbortedError
from outform.parse.result import Change
from outform.run import GenerationError, RefusalError
from outform.streaming import parse_stream
from outform.trace import Event, RunInfo, labels, runtime
from outform.trace.events import Change as ChangeRecord
from outform.trace.events import FormatChoice, Precheck, ProviderCall, Reask, RunEnd, StreamAbort
from outform.trace.recorder import Batch
from outform.trace.rows import rows_of
from outform.transport import AsyncTransport, RetryPolicy, Transport
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.trace.sinks import ListSink, memory_spans, restore_recording

MODEL = "openai:gpt-4o-mini"


class Person(BaseModel):
    name: str
    age: int
    email: str


GOOD = {"name": "Ada", "age": 36, "email": "ada@example.com"}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def transport() -> Iterator[Transport]:
    with Transport(retry=RetryPolicy(retries=0)) as sender:
        yield sender


def answer(server: FakeServer, content: str | dict[str, Any], **fields: Any) -> None:
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    server.json(openai_wire.chat_completion(content=text, **fields))


def call(server: FakeServer, transport: Transport, **options: Any) -> Any:
    return outform.generate(
        MODEL, "Extract: Ada, 36", Person, base_url=server.url, api_key="k" * 12,
        transport=transport, **options,
    )  # fmt: skip


def names(events: list[Event]) -> list[tuple[int, str]]:
    return [(e.attempt, e.name) for e in events]


def one(events: list[Event], name: str) -> Event:
    (found,) = [e for e in events if e.name == name]
    return found


# -- generate() ------------------------------------------------------------------------------


def test_a_valid_reply_is_one_run_of_one_attempt(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    answer(server, GOOD, usage=openai_wire.chat_usage(31, 12, reasoning=4, cached=8))
    result = call(server, transport)
    events = recorded.flushed()
    assert names(events) == [
        (1, "run.start"),
        (1, "format.native"),
        (1, "provider.call"),
        (1, "run.end"),
    ]
    run = events[0].run
    assert isinstance(run, RunInfo)
    assert all(e.run == run for e in events)  # every event carries its run
    assert (run.source, run.provider, run.model) == ("library", "openai", "gpt-4o-mini")
    assert (run.mode, run.mode_reason) == (result.mode, result.mode_reason)
    assert all(e.schema_hash == result.parse.schema_hash for e in events)
    native = one(events, "format.native").data
    assert native == FormatChoice("native_schema", dialect="openai_strict", enforced=True)
    provider = one(events, "provider.call").data
    assert isinstance(provider, ProviderCall)
    assert (provider.status, provider.retries, provider.error_class) == (200, 0, None)
    assert provider.tokens == outform.Usage(31, 12, 4, 8) and provider.finish_reason == "stop"
    assert provider.latency_ms > 0 and provider.ttft_ms is None
    end = one(events, "run.end").data
    assert isinstance(end, RunEnd)
    assert (end.outcome, end.attempts, end.changes) == ("valid", 1, 0)
    assert end.tokens == result.usage


def test_a_reask_records_the_violations_what_was_asked_and_each_attempt(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    answer(server, "not JSON at all")
    answer(server, 'Here it is: {"name": "Ada", "age": "36", "email": "ada@example.com"}')
    result = call(server, transport)
    events = recorded.flushed()
    assert names(events) == [
        (1, "run.start"),
        (1, "format.native"),
        (1, "provider.call"),
        (1, "output.validation.fail"),
        (1, "output.reask.attempt"),
        (2, "provider.call"),
        (2, "output.change"),
        (2, "output.change"),
        (2, "output.reask.success"),
        (2, "run.end"),
    ]
    failed = one(events, "output.validation.fail").data
    assert failed is not None and failed.violations[0].kind == "syntax"  # type: ignore[attr-defined]
    asked = one(events, "output.reask.attempt").data
    assert isinstance(asked, Reask) and (asked.reason, asked.fields) == ("syntax", ())
    changes = [e for e in events if e.name == "output.change"]
    assert [(e.stage, e.path, e.transform) for e in changes] == [
        (c.stage, c.path, c.transform) for c in result.parse.changes
    ]
    coerced = changes[1].data
    assert coerced is not None
    assert (coerced.before, coerced.after) == ('"36"', "36")  # type: ignore[attr-defined]
    assert (coerced.expected, coerced.actual) == ("integer", "string")  # type: ignore[attr-defined]
    end = one(events, "run.end").data
    assert isinstance(end, RunEnd) and (end.attempts, end.changes) == (2, 2)


def test_a_field_reask_names_the_fields_as_json_pointers(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    answer(server, {"name": "Ada", "age": "thirty-six", "email": "ada@example.com"})
    answer(server, {"age": 36})
    call(server, transport)
    asked = one(recorded.flushed(), "output.reask.attempt").data
    assert isinstance(asked, Reask)
    assert (asked.reason, asked.fields) == ("schema", ("/age",))
    assert [v.path for v in asked.violations] == ["/age"]


def test_giving_up_records_the_failed_reask_and_an_invalid_run(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    for _ in range(2):
        answer(server, "no JSON here")
    with pytest.raises(GenerationError):
        call(server, transport, retries=1)
    events = recorded.flushed()
    assert names(events)[-3:] == [(2, "output.validation.fail"), (2, "output.reask.fail"),
                                  (2, "run.end")]  # fmt: skip
    end = one(events, "run.end").data
    assert isinstance(end, RunEnd) and (end.outcome, end.attempts) == ("invalid", 2)


def test_a_refusal_ends_the_run_refused(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    server.json(openai_wire.chat_completion(content=None, refusal="I cannot help with that."))
    with pytest.raises(RefusalError):
        call(server, transport)
    end = one(recorded.flushed(), "run.end").data
    assert isinstance(end, RunEnd) and end.outcome == "refused"


def test_a_failed_call_records_its_status_error_class_and_retries(
    server: FakeServer, recorded: ListSink
) -> None:
    server.json({"error": {"message": "overloaded"}}, status=503)
    server.json({"error": {"message": "still overloaded"}}, status=500)
    with (
        Transport(retry=RetryPolicy(retries=1, backoff=0.001)) as sender,
        pytest.raises(ServerError),
    ):
        call(server, sender)
    events = recorded.flushed()
    provider = one(events, "provider.call").data
    assert isinstance(provider, ProviderCall)
    assert (provider.status, provider.retries, provider.error_class) == (500, 1, "ServerError")
    end = one(events, "run.end").data
    assert isinstance(end, RunEnd) and (end.outcome, end.error_class) == ("error", "ServerError")


def test_a_retried_call_that_succeeds_says_how_many_retries_it_took(
    server: FakeServer, recorded: ListSink
) -> None:
    server.json({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0"})
    answer(server, GOOD)
    with Transport(retry=RetryPolicy(retries=2, backoff=0.001)) as sender:
        call(server, sender)
    provider = one(recorded.flushed(), "provider.call").data
    assert isinstance(provider, ProviderCall) and (provider.status, provider.retries) == (200, 1)


def test_a_mode_without_native_enforcement_records_why_it_was_skipped(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    answer(server, GOOD)
    result = call(server, transport, mode="json")
    skipped = one(recorded.flushed(), "format.skipped").data
    assert isinstance(skipped, FormatChoice)
    assert skipped.mechanism == "json_object" and skipped.reason == result.mode_reason


def test_labels_come_from_the_call_over_the_block(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    answer(server, GOOD)
    with labels(step="outer", agent="router", tags=["prod"]):
        call(server, transport, labels={"step": "extract", "tags": ["eu"]})
    run = recorded.flushed()[0].run
    assert run is not None
    assert (run.step, run.agent, run.tags) == ("extract", "router", ("prod", "eu"))


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An outform.toml with default labels and a profile that labels its step."""
    path = tmp_path / "outform.toml"
    path.write_text(
        '[defaults]\nagent = "app"\ntags = ["prod"]\n'
        '[profiles.triage]\nagent = "router"\ntags = ["fast"]\nretries = 0\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("OUTFORM_CONFIG", str(path))
    outform.config.reload()
    yield
    monkeypatch.undo()
    outform.config.reload()


def test_the_profile_is_the_step_and_gives_its_labels(
    server: FakeServer, transport: Transport, recorded: ListSink, profiles: None
) -> None:
    answer(server, GOOD)
    answer(server, GOOD)
    answer(server, GOOD)
    call(server, transport, profile="triage")
    call(server, transport, profile="triage", labels={"step": "own", "tags": ["eu"]})
    call(server, transport)
    runs = [e.run for e in recorded.flushed() if e.name == "run.start"]
    assert [(r.step, r.agent, r.tags) for r in runs if r is not None] == [
        ("triage", "router", ("prod", "fast")),
        ("own", "router", ("prod", "fast", "eu")),  # the call's labels win
        (None, "app", ("prod",)),  # no profile: [defaults]
    ]


def test_an_unknown_profile_fails_before_any_request(
    server: FakeServer, transport: Transport, recorded: ListSink, profiles: None
) -> None:
    with pytest.raises(ConfigError, match="unknown profile 'nope'") as caught:
        call(server, transport, profile="nope")
    assert "triage" in (caught.value.fix or "")
    with pytest.raises(ConfigError, match="unknown label"):
        call(server, transport, labels={"profile": "triage"})
    assert server.requests == []


def test_the_precheck_is_recorded_in_its_run_before_the_attempt_it_checks(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    answer(server, "not JSON at all")
    answer(server, GOOD)
    precheck = {"plan": lambda context: "1. read the name\n2. read the age", "validator":
                lambda plan, context: (False, 0.25, "read the email too")}  # fmt: skip
    call(server, transport, precheck=precheck)
    events = recorded.flushed()
    assert [n for n in names(events) if n[1].startswith(("precheck", "provider"))] == [
        (1, "precheck.fail"), (1, "provider.call"), (2, "precheck.fail"), (2, "provider.call"),
    ]  # fmt: skip
    checked = [e for e in events if e.name == "precheck.fail"]
    assert all(e.run == events[0].run and e.stage == "precheck" for e in checked)
    record = checked[0].data
    assert isinstance(record, Precheck) and record.score == 0.25
    assert b"read the email too" in server.requests[0].body


def test_a_text_fallback_is_recorded_with_its_change(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    prose = "Sorry, I have no invoice for you."
    answer(server, prose)
    result = outform.generate(
        MODEL, "Hi", Envelope, base_url=server.url, api_key="k" * 12, transport=transport,
        retries=0,
    )  # fmt: skip
    assert result.value is not None and result.value.content == prose
    events = recorded.flushed()
    assert names(events)[-4:] == [
        (1, "output.validation.fail"), (1, "output.fallback.text"), (1, "output.change"),
        (1, "run.end"),
    ]  # fmt: skip
    assert all(e.run == events[0].run for e in events)
    change = one(events, "output.change")
    assert (change.stage, change.transform) == ("fallback", "text_fallback")
    end = one(events, "run.end").data
    assert isinstance(end, RunEnd) and (end.outcome, end.changes) == ("valid", 1)


def test_observers_see_the_run_and_the_store_does_not_get_the_stage_summaries(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    seen: list[Event] = []
    answer(server, {"name": "Ada", "age": "36", "email": "ada@example.com"})
    call(server, transport, observers=[seen.append])
    stored = recorded.flushed()
    assert {e.run for e in seen} == {stored[0].run}
    summaries = [e for e in seen if e.name.startswith("output.coercion.")]
    assert summaries and all(e.attempt == 1 for e in summaries)
    assert [e for e in seen if not e.name.startswith("output.coercion.")] == stored


def test_an_envelope_s_confidence_and_sources_are_kept_with_the_run(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    envelope = {
        "type": "object",
        "properties": {"content": {"type": "string"}, "metadata": {"type": "object"}},
        "required": ["content"],
    }
    metadata = {"confidence": 0.72, "sources": ["https://example.com/a", 3, "doc b"]}
    answer(server, {"content": "Paris", "metadata": metadata})
    outform.generate(
        MODEL, "Capital of France?", envelope, base_url=server.url, api_key="k" * 12,
        transport=transport,
    )  # fmt: skip
    end = one(recorded.flushed(), "run.end").data
    assert isinstance(end, RunEnd)
    assert (end.confidence, end.sources) == (0.72, ("https://example.com/a", "doc b"))


def test_agenerate_records_the_same_run(server: FakeServer, recorded: ListSink) -> None:
    answer(server, GOOD)

    async def main() -> None:
        async with AsyncTransport(retry=RetryPolicy(retries=0)) as sender:
            await outform.agenerate(
                MODEL, "Extract", Person, base_url=server.url, api_key="k" * 12,
                transport=sender,
            )  # fmt: skip

    asyncio.run(main())
    assert [n for _, n in names(recorded.flushed())] == [
        "run.start", "format.native", "provider.call", "run.end",
    ]  # fmt: skip


# -- stream() --------------------------------------------------------------------------------


def text_stream(text: str) -> list[dict[str, Any]]:
    return openai_wire.text_stream(*(text[i : i + 8] for i in range(0, len(text), 8)))


def test_a_stream_records_its_time_to_first_token_and_is_marked_streamed(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    server.stream(text_stream(orjson.dumps(GOOD).decode()))
    snapshots = list(
        outform.stream(MODEL, "Extract", Person, base_url=server.url, api_key="k" * 12,
                       transport=transport)
    )  # fmt: skip
    assert snapshots[-1].final
    events = recorded.flushed()
    assert events[0].run is not None and events[0].run.streaming
    provider = one(events, "provider.call").data
    assert isinstance(provider, ProviderCall)
    assert provider.ttft_ms is not None and 0 < provider.ttft_ms <= provider.latency_ms
    assert provider.tokens == outform.Usage(31, 12)


def test_a_stream_cut_off_records_the_abort_then_the_reask(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    bad = '{"name": "Ada", "age": "thirty-six, as far as anyone knows", "email": "a@b.c"}'
    server.stream(text_stream(bad))
    server.stream(text_stream(orjson.dumps(GOOD).decode()))
    snapshots = list(
        outform.stream(MODEL, "Extract", Person, base_url=server.url, api_key="k" * 12,
                       transport=transport)
    )  # fmt: skip
    assert {s.attempt for s in snapshots} == {1, 2}
    events = recorded.flushed()
    abort = one(events, "stream.abort")
    assert abort.attempt == 1 and isinstance(abort.data, StreamAbort)
    assert 0 < abort.data.offset < len(bad) and abort.data.reason == "schema"
    asked = one(events, "output.reask.attempt").data
    assert isinstance(asked, Reask) and asked.reason == "stream_aborted"
    end = one(events, "run.end").data
    assert isinstance(end, RunEnd) and (end.outcome, end.attempts) == ("valid", 2)


def test_a_stream_left_early_ends_its_run_as_an_error(
    server: FakeServer, transport: Transport, recorded: ListSink
) -> None:
    server.stream(text_stream(orjson.dumps(GOOD).decode()))
    snapshots = outform.stream(
        MODEL, "Extract", Person, base_url=server.url, api_key="k" * 12, transport=transport
    )
    iterator = iter(snapshots)
    next(iterator)
    iterator.close()  # type: ignore[attr-defined]
    end = one(recorded.flushed(), "run.end").data
    assert isinstance(end, RunEnd) and (end.outcome, end.error_class) == ("error", "GeneratorExit")


# -- parse() ---------------------------------------------------------------------------------

NUMBERED = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def test_a_reply_valid_as_sent_is_only_counted(recorded: ListSink) -> None:
    with labels(step="fast"):
        outform.parse('{"a": 1}', NUMBERED)
        outform.parse('{"a": 2}', NUMBERED)
    recorded.flushed()
    (tallies,) = [b.tallies for b in recorded.batches if b.tallies]
    assert [(given.step, n) for given, n in tallies.items()] == [("fast", 2)]
    assert recorded.events == []


def test_a_repaired_reply_is_a_run_with_its_changes(recorded: ListSink) -> None:
    result = outform.parse('Here: {"a": "1"}', NUMBERED)
    events = recorded.flushed()
    assert [e.name for e in events] == ["run.start", "output.change", "output.change", "run.end"]
    assert [e.transform for e in events[1:3]] == [c.transform for c in result.changes]
    end = events[-1].data
    assert isinstance(end, RunEnd) and (end.outcome, end.changes) == ("valid", 2)
    assert events[0].run is not None and events[0].run.provider is None


def test_the_change_events_of_a_parse_are_built_off_the_callers_clock(
    recorded: ListSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turning many changes into events costs more than coercing them: the caller's thread
    (and its `time_limit`) only copies their values; the recorder's thread builds the events,
    one per change, showing the values as they were even if the caller changes the result."""
    built_on: set[str] = set()
    event = Change.event

    def watched(change: Change, **fields: Any) -> Event:
        built_on.add(threading.current_thread().name)
        return event(change, **fields)

    monkeypatch.setattr(Change, "event", watched)
    schema = {"type": "object", "properties": {"tags": {"type": "array"}, "a": {"type": "integer"}}}
    result = outform.parse('Here: {"tags": "x", "a": "1"}', schema)
    result.data["tags"].append("added later")
    events = recorded.flushed()
    assert built_on == {"outform-trace-writer"}
    changes = [e for e in events if e.name == "output.change"]
    assert [(e.path, e.transform) for e in changes] == [
        (c.path, c.transform) for c in result.changes
    ]
    (wrapped,) = [e.data for e in changes if e.transform == "wrap_in_array"]
    assert isinstance(wrapped, ChangeRecord) and wrapped.after == '["x"]'


def test_past_max_change_events_a_reply_s_changes_are_folded_with_their_count(
    recorded: ListSink,
) -> None:
    """A reply with thousands of coercions is a few events in the trace, not thousands: the
    first `max_change_events` one by one, then one event per stage, transform and lossiness
    standing for the rest of its kind. Every count the store keeps includes all of them."""
    recorder = runtime.active()
    assert recorder is not None
    recorder.max_change_events = 10
    items = ",".join(f'{{"price": "{i}", "tags": "x"}}' for i in range(500))
    item = {
        "type": "object",
        "properties": {"price": {"type": "integer"}, "tags": {"type": "array"}},
    }
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": item}}}
    result = outform.parse(f'{{"items": [{items}]}}', schema)
    assert len(result.changes) == 1000
    events = recorded.flushed()
    changes = [e for e in events if e.name == "output.change"]
    assert [(e.path, e.transform) for e in changes[:10]] == [
        (c.path, c.transform) for c in result.changes[:10]
    ]
    folded = {e.transform: e for e in changes[10:]}
    assert len(changes) == 12
    assert {name: e.data.count for name, e in folded.items()} == {  # type: ignore[union-attr]
        "string_to_integer": 495,
        "wrap_in_array": 495,
    }
    assert folded["string_to_integer"].path == "/items/5/price"  # the first it stands for
    rows = rows_of(Batch(events=events))
    assert sum(n for key, n in rows.counts.items() if key[5] == "output.change") == 1000
    (run,) = rows.runs.values()
    assert run.changes == 1000


def test_a_reply_that_cannot_be_made_valid_is_an_invalid_run(recorded: ListSink) -> None:
    with pytest.raises(outform.OutputError):
        outform.parse('{"a": "x"}', NUMBERED)
    events = recorded.flushed()
    assert [e.name for e in events] == ["run.start", "output.validation.fail", "run.end"]
    end = events[-1].data
    assert isinstance(end, RunEnd) and end.outcome == "invalid"


def test_the_observers_of_a_parse_see_what_they_always_saw(recorded: ListSink) -> None:
    seen: list[Event] = []
    result = outform.parse('Here: {"a": "1"}', NUMBERED, observers=[seen.append])
    assert tuple(seen) == result.events and all(e.run is None for e in seen)


def test_a_stream_parsed_on_its_own_records_its_abort(recorded: ListSink) -> None:
    with pytest.raises(StreamAbortedError):
        list(parse_stream(['{"a": "x', 'yz"}'], NUMBERED))
    events = recorded.flushed()
    assert [e.name for e in events] == [
        "run.start", "stream.abort", "output.validation.fail", "run.end",
    ]  # fmt: skip
    assert events[0].run is not None and events[0].run.streaming


def test_a_stream_parsed_on_its_own_is_a_streamed_run_its_observers_see(
    recorded: ListSink,
) -> None:
    seen: list[Event] = []
    outform.add_observer(seen.append)
    try:
        *_, last = parse_stream(['Here: {"a": ', '"1"}'], NUMBERED)
    finally:
        outform.remove_observer(seen.append)
    assert last.result is not None and tuple(seen) == last.result.events
    events = recorded.flushed()
    assert [e.name for e in events] == [
        "run.start", "output.change", "output.change", "run.end",
    ]  # fmt: skip
    assert events[0].run is not None and events[0].run.streaming


def test_with_recording_off_the_fast_path_finds_nothing_to_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime, "_recorder", None)
    monkeypatch.setattr(runtime, "_decided", False)
    monkeypatch.setattr(runtime, "tally", runtime._decide_then_tally)
    outform.parse('{"a": 1}', NUMBERED)  # the first reply decides (OUTFORM_TRACE=off here)
    assert runtime.tally is None and runtime.active() is None


def test_a_run_nests_under_the_caller_s_span_in_opentelemetry(
    server: FakeServer, transport: Transport, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outform.trace.otel import OtelSink

    restore_recording(monkeypatch)
    provider, exporter = memory_spans()
    outform.trace.start(sinks=[OtelSink(provider)])
    answer(server, GOOD)
    try:
        with provider.get_tracer("app").start_as_current_span("handle request") as parent:
            call(server, transport)
        assert outform.trace.flush()
    finally:
        outform.trace.stop()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    run = spans["outform.run"]
    assert run.parent is not None and run.parent.span_id == parent.get_span_context().span_id
    assert run.context.trace_id == parent.get_span_context().trace_id
    assert spans["chat gpt-4o-mini"].parent.span_id == run.context.span_id  # type: ignore[union-attr]
