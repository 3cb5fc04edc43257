"""What the gateway records: one run per request (`source = "gateway"`), labelled by the
request's headers, a `provider.call` per backend exchange, and in enforcement mode the same
validation and re-ask events as generate(); and `/dashboard` on the same server, behind the
same keys."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

import outform.config
from outform.trace import Batch, Event
from outform.trace.events import ProviderCall, Reask, RunEnd
from outform.trace.sqlite_store import SqliteTraceStore
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.test_background import poll
from tests.providers.openai_wire import chat_completion, chat_usage, text_stream
from tests.trace.runs import RunSpec, run_events
from tests.trace.sinks import ListSink

LABELS = {"x-outform-step": "triage", "x-outform-agent": "router", "x-outform-tags": "eu, prod"}
ON = {"x-outform-enforce": "1"}
PERSON = {
    "type": "json_schema",
    "name": "person",
    "schema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    },
}


def named(events: list[Event], name: str) -> list[Event]:
    return [e for e in events if e.name == name]


def test_a_passed_through_request_is_a_run_labelled_by_its_headers(
    gw: Harness, recorded: ListSink
) -> None:
    gw.backend.json(chat_completion(content="Hello", usage=chat_usage(12, 3)))
    gw.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Hi"}], extra_headers=LABELS
    )
    events = recorded.flushed()
    assert [e.name for e in events] == ["run.start", "provider.call", "run.end"]
    run = events[0].run
    assert run is not None and all(e.run == run for e in events)
    assert (run.source, run.step, run.agent, run.tags) == ("gateway", "triage", "router",
                                                           ("eu", "prod"))  # fmt: skip
    assert (run.model, run.mode) == ("m", "passthrough")
    call = events[1].data
    assert isinstance(call, ProviderCall)
    assert (call.status, call.tokens.input_tokens, call.tokens.output_tokens) == (200, 12, 3)
    end = events[2].data
    assert isinstance(end, RunEnd) and end.outcome == "valid"


def test_an_enforced_request_records_the_verdicts_and_the_reask(
    gw: Harness, recorded: ListSink
) -> None:
    gw.backend.json(chat_completion(content='{"name": "Ada"}'))
    gw.backend.json(chat_completion(content='Here: {"name": "Ada", "age": "36"}'))
    gw.client.responses.create(
        model="m", input="Ada, 36", text={"format": PERSON}, extra_headers={**ON, **LABELS}
    )  # type: ignore[call-overload]
    events = recorded.flushed()
    assert [(e.attempt, e.name) for e in events] == [
        (1, "run.start"),
        (1, "provider.call"),
        (1, "output.validation.fail"),
        (1, "output.reask.attempt"),
        (2, "provider.call"),
        (2, "output.change"),
        (2, "output.change"),
        (2, "output.reask.success"),
        (2, "run.end"),
    ]
    assert events[0].run is not None and events[0].run.mode == "enforce"
    (asked,) = (e.data for e in named(events, "output.reask.attempt"))
    assert isinstance(asked, Reask) and asked.reason == "schema"
    assert [(v.kind, v.expected) for v in asked.violations] == [("missing", "'age' (integer)")]
    assert [e.transform for e in named(events, "output.change")] == [
        "extract_from_prose",
        "string_to_integer",
    ]
    assert all(e.schema_hash for e in named(events, "output.change"))
    end = events[-1].data
    assert isinstance(end, RunEnd) and (end.outcome, end.attempts, end.changes) == ("valid", 2, 2)


def test_a_streamed_request_records_its_first_content_and_usage(
    gw: Harness, recorded: ListSink
) -> None:
    gw.backend.stream(text_stream("Hel", "lo", usage=chat_usage(9, 2)))
    with gw.client.responses.stream(model="m", input="Hi") as stream:
        for _ in stream:
            pass
    events = recorded.flushed()
    (call,) = (e.data for e in named(events, "provider.call"))
    assert isinstance(call, ProviderCall)
    assert call.ttft_ms is not None and call.ttft_ms <= call.latency_ms
    assert (call.tokens.input_tokens, call.tokens.output_tokens) == (9, 2)
    assert events[0].run is not None and events[0].run.streaming


def test_a_background_response_is_a_run_of_its_job(gw: Harness, recorded: ListSink) -> None:
    gw.backend.json(chat_completion(content="Hello", usage=chat_usage(7, 2)))
    queued = gw.client.responses.create(
        model="m", input="Hi", background=True, extra_headers=LABELS
    )
    assert poll(gw.client, queued.id).status == "completed"
    events = recorded.flushed()
    assert [e.name for e in events] == ["run.start", "provider.call", "run.end"]
    assert events[0].run is not None and events[0].run.step == "triage"
    end = events[-1].data
    assert isinstance(end, RunEnd) and (end.outcome, end.tokens.input_tokens) == ("valid", 7)


def test_a_backend_error_is_a_failed_call_and_a_failed_run(gw: Harness, recorded: ListSink) -> None:
    error = {"message": "overloaded", "type": "server_error", "param": None, "code": None}
    gw.backend.json({"error": error}, status=503)
    with pytest.raises(openai.InternalServerError):
        gw.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    events = recorded.flushed()
    (call,) = (e.data for e in named(events, "provider.call"))
    assert isinstance(call, ProviderCall)
    assert (call.status, call.error_class) == (503, "PassthroughError")
    (end,) = (e.data for e in named(events, "run.end"))
    assert isinstance(end, RunEnd) and end.outcome == "error"


def test_a_label_header_too_long_is_a_400_naming_it(gw: Harness) -> None:
    with pytest.raises(openai.BadRequestError, match="x-outform-step"):
        gw.client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-outform-step": "s" * 201},
        )
    assert gw.backend.requests == []


@pytest.fixture
def billing(tmp_path: Path) -> Iterator[None]:
    """An outform.toml with a profile `billing` (its own patch: `recorded` has the test's)."""
    config = tmp_path / "outform.toml"
    config.write_text('[profiles.billing]\nagent = "ledger"\ntags = ["eu"]\n', encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OUTFORM_CONFIG", str(config))
        outform.config.reload()
        yield
    outform.config.reload()


def test_the_profile_header_is_the_step_unless_the_step_header_says_otherwise(
    gw: Harness, recorded: ListSink, billing: None
) -> None:
    for headers in (
        {"x-outform-profile": "billing"},
        {"x-outform-profile": "billing", "x-outform-step": "own", "x-outform-tags": "prod"},
    ):
        gw.backend.json(chat_completion(content="Hello"))
        gw.client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], extra_headers=headers
        )
    with pytest.raises(openai.BadRequestError, match="unknown profile 'bill'"):
        gw.client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Hi"}],
            extra_headers={"x-outform-profile": "bill"},  # passed through, still checked
        )
    runs = [e.run for e in recorded.flushed() if e.name == "run.start"]
    assert [(r.step, r.agent, r.tags) for r in runs if r is not None] == [
        ("billing", "ledger", ("eu",)),
        ("own", "ledger", ("eu", "prod")),
    ]  # the unknown profile is a 400 before the backend: no run
    assert len(gw.backend.requests) == 2


def test_serve_mounts_the_dashboard_behind_the_gateway_s_keys(
    make_gateway: MakeGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "trace.sqlite"
    store = SqliteTraceStore(path)
    store.open()
    store.write(Batch(run_events(RunSpec(step="billing"), time.time())))
    store.close()
    monkeypatch.setenv("OUTFORM_TRACE", f"sqlite:{path}")
    harness = make_gateway(api_keys=("CLIENT",), env={"CLIENT": "sk-client"})
    with httpx.Client(base_url=harness.url, timeout=10) as http:
        assert http.get("/dashboard/").status_code == 200  # the page holds no data
        assert http.get("/dashboard/api/overview").status_code == 401
        key = {"authorization": "Bearer sk-client"}
        overview = http.get("/dashboard/api/overview", headers=key)
        assert overview.status_code == 200 and overview.json()["totals"]["runs"] == 1
        assert "billing" in overview.json()["filters"]["steps"]
        assert http.get("/v1/models").status_code == 401  # the rest is as guarded as before


def test_with_several_client_keys_the_dashboard_answers_only_its_own_keys(
    make_gateway: MakeGateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a trial: with two client keys (two tenants), either key read every run on
    the dashboard, the other tenant's steps, tags and reply texts included. The runs are
    every tenant's, so the dashboard then answers only `dashboard_api_keys`, and without
    them it is off."""
    path = tmp_path / "trace.sqlite"
    store = SqliteTraceStore(path)
    store.open()
    store.write(Batch(run_events(RunSpec(step="acme-payroll"), time.time())))
    store.close()
    monkeypatch.setenv("OUTFORM_TRACE", f"sqlite:{path}")
    env = {"A": "sk-tenant-a-0123456789", "B": "sk-tenant-b-0123456789"}
    tenant_a = {"authorization": f"Bearer {env['A']}"}

    closed = make_gateway(api_keys=("A", "B"), env=env)
    with httpx.Client(base_url=closed.url, timeout=10) as http:
        assert http.get("/dashboard/api/overview", headers=tenant_a).status_code == 404

    operator = {"OPS": "sk-operator-0123456789"}
    guarded = make_gateway(api_keys=("A", "B"), dashboard_api_keys=("OPS",), env=env | operator)
    with httpx.Client(base_url=guarded.url, timeout=10) as http:
        assert http.get("/dashboard/api/overview", headers=tenant_a).status_code == 401
        ops = {"authorization": f"Bearer {operator['OPS']}"}
        overview = http.get("/dashboard/api/overview", headers=ops)
        assert overview.status_code == 200
        assert "acme-payroll" in overview.json()["filters"]["steps"]
        assert http.get("/v1/models", headers=ops).status_code == 401  # not a client key
