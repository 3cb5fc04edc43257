"""The health report over a store filled with known runs: every table's numbers, the trend and
what is rising, the recommendations, and an empty store or window."""

from __future__ import annotations

import pytest

from outform.errors import UsageError
from outform.trace import Batch, Event, Labels
from outform.trace.health import HealthQuery, HealthReport, report
from outform.trace.store import TraceStore
from tests.trace.runs import RunSpec, run_events
from tests.trace.stores import StoreFactory, make_store

__all__ = ["make_store"]

NOW = 1_700_002_770.0  # 30 s before an hour: buckets of 6 h end on the hour, the first
# holds the start of the 24 hours asked for (30 s before the hour, a day ago): five of them
HOUR = 3600.0
CHANGE = (("semantic", "string_to_int", "/qty"),)


def fill(store: TraceStore) -> None:
    """Four steps over the last 24 hours (see the assertions for what each shows)."""
    store.open()
    events: list[Event] = []
    for n in range(20):  # extract: clean in the first half, one coercion each in the second
        events += run_events(RunSpec(), NOW - 20 * HOUR + n)
        events += run_events(RunSpec(changes=CHANGE), NOW - 4 * HOUR + n)
    for n in range(12):  # classify: JSON mode by request, /label asked again every time
        spec = RunSpec(
            step="classify",
            provider="anthropic",
            model="claude-sonnet-4-5",
            mode="json_object",
            skipped="the caller asked for mode json",
            reasked=("/label",),
        )
        events += run_events(spec, NOW - 10 * HOUR + n)
    for n in range(3):  # summarize: streamed, cut once, then failed
        spec = RunSpec(
            step="summarize",
            provider="gemini",
            model="gemini-2.5-flash",
            aborted=True,
            outcome="invalid",
            latency_ms=2000.0,
        )
        events += run_events(spec, NOW - 2 * HOUR + n)
    events += run_events(RunSpec(step="old"), NOW - 30 * HOUR)  # outside the window
    store.write(Batch(events, time=NOW))
    bare = Batch(time=NOW - 1 * HOUR)  # five replies parsed on their own, valid as sent
    bare.tallies[Labels(step="extract")] = 5
    store.write(bare)


def run_report(store: TraceStore, **options: object) -> HealthReport:
    return report(store, HealthQuery(now=NOW, trend_buckets=4, **options))  # type: ignore[arg-type]


def test_totals_and_rankings_match_what_was_recorded(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    data = run_report(store).to_dict()
    totals = data["totals"]
    assert totals["runs"] == 40 + 5 + 12 + 3
    assert totals["interventions"] == 20
    assert totals["reasked_runs"] == 12 + 3
    assert totals["failed_runs"] == 3 and totals["stream_aborts"] == 3
    assert totals["streamed_runs"] == 3 and totals["abort_rate"] == 1.0
    assert totals["provider_calls"] == 40 + 24 + 6
    (extract, *others) = data["top_steps"]
    assert extract == {
        "step": "extract",
        "runs": 45,
        "interventions": 20,
        "per_100_runs": 44.44,
        "reask_rate": 0.0,
    }
    assert {r["step"] for r in others} == {"classify", "summarize"}
    assert data["top_transforms"] == [
        {
            "stage": "semantic",
            "transform": "string_to_int",
            "count": 20,
            "share": 1.0,
            "per_100_runs": 33.33,
        }
    ]
    assert data["stages"]["overall"] == [{"stage": "semantic", "count": 20, "share": 1.0}]
    assert data["stages"]["by_model"] == [
        {"model": "openai:gpt-4o", "stage": "semantic", "count": 20}
    ]


def test_native_skips_reasks_aborts_and_latency(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    data = run_report(store).to_dict()
    claude = next(r for r in data["native"] if r["model"] == "anthropic:claude-sonnet-4-5")
    assert (claude["applied"], claude["skipped"]) == (0, 12)
    assert claude["reasons"] == [{"reason": "the caller asked for mode json", "count": 12}]
    fields = data["reasks"]["fields"]
    assert {"step": "classify", "path": "/label", "reason": "schema", "count": 12} in fields
    assert data["reasks"]["success"] == 12 + 0 and data["reasks"]["fail"] == 3
    assert data["streams"]["aborts"] == [
        {
            "model": "gemini:gemini-2.5-flash",
            "reason": "a required field cannot appear any more",
            "count": 3,
        }
    ]
    latency = {r["model"]: r for r in data["latency"]}
    assert latency["openai:gpt-4o"]["calls"] == 40
    assert latency["openai:gpt-4o"]["latency_ms_p50"] == pytest.approx(800, rel=0.05)
    assert latency["gemini:gemini-2.5-flash"]["latency_ms_p99"] == pytest.approx(2000, rel=0.05)
    assert latency["gemini:gemini-2.5-flash"]["ttft_ms_p50"] == pytest.approx(90, rel=0.05)
    assert latency["openai:gpt-4o"]["ttft_ms_p50"] is None  # not streamed
    assert latency["openai:gpt-4o"]["input_tokens_p90"] == pytest.approx(120, rel=0.05)


def test_the_trend_and_what_is_rising(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    trend = run_report(store).to_dict()["trend"]
    assert trend["bucket_seconds"] == 6 * 3600
    buckets = trend["buckets"]
    assert [b["start"] for b in buckets] == [
        "2023-11-13T17:00:00Z",
        "2023-11-13T23:00:00Z",
        "2023-11-14T05:00:00Z",
        "2023-11-14T11:00:00Z",
        "2023-11-14T17:00:00Z",
    ]
    assert [b["runs"] for b in buckets] == [0, 20, 0, 12, 28]
    assert [b["interventions"] for b in buckets] == [0, 0, 0, 0, 20]
    assert buckets[4]["by_stage"] == {"semantic": 20}
    assert buckets[4]["by_model"] == {"openai:gpt-4o": 20}
    assert [b["stream_aborts"] for b in buckets] == [0, 0, 0, 0, 3]
    assert trend["rising_step"] == {
        "step": "extract",
        "before_per_100_runs": 0.0,
        "after_per_100_runs": 80.0,
        "delta": 80.0,
    }
    assert trend["rising_model"]["model"] == "openai:gpt-4o"


def test_recommendations_name_the_fix(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    recommendations = run_report(store).recommendations
    kinds = {(r["kind"], tuple(sorted(r["target"].values()))) for r in recommendations}
    assert ("enable_native", ("anthropic:claude-sonnet-4-5",)) in kinds
    assert ("custom_processor", ("extract", "semantic", "string_to_int")) in kinds
    assert ("tighten_field", ("/label", "classify", "schema")) in kinds
    assert ("switch_mode", ("anthropic:claude-sonnet-4-5", "json_object")) in kinds
    native = next(r for r in recommendations if r["kind"] == "enable_native")
    assert "mode='native'" in native["message"] and "anthropic" in native["message"]
    # openai:gpt-4o had native enforcement every time: nothing to say about it.
    assert not any(r["target"].get("model") == "openai:gpt-4o" for r in recommendations)


def test_filters_narrow_every_table(make_store: StoreFactory) -> None:
    store = make_store()
    fill(store)
    by_step = run_report(store, step="classify").to_dict()
    assert by_step["totals"]["runs"] == 12 and by_step["totals"]["interventions"] == 0
    assert [r["step"] for r in by_step["top_steps"]] == ["classify"]
    by_model = run_report(store, model="gemini:gemini-2.5-flash").to_dict()
    assert by_model["totals"]["runs"] == 3 and by_model["totals"]["stream_aborts"] == 3
    assert [r["model"] for r in by_model["latency"]] == ["gemini:gemini-2.5-flash"]
    recent = run_report(store, since_hours=3).to_dict()
    assert recent["totals"]["runs"] == 3 + 5  # summarize, and the bare replies an hour ago


@pytest.mark.parametrize("filled", [False, True], ids=["empty store", "empty window"])
def test_an_empty_store_or_window_reports_zeros_and_no_advice(
    make_store: StoreFactory, filled: bool
) -> None:
    store = make_store()
    store.open()
    if filled:
        store.write(Batch(run_events(RunSpec(changes=CHANGE), NOW - 100 * HOUR), time=NOW))
    result = run_report(store)
    data = result.to_dict()
    assert data["version"] == 1 and data["generated_at"] == "2023-11-14T22:59:30Z"
    assert data["totals"]["runs"] == 0 and data["totals"]["interventions_per_100_runs"] is None
    assert data["top_steps"] == [] and data["latency"] == [] and data["recommendations"] == []
    assert [b["runs"] for b in data["trend"]["buckets"]] == [0, 0, 0, 0, 0]
    assert data["trend"]["rising_step"] is None
    assert all(t.rows == [] for t in result.tables() if t.name not in ("totals", "trend"))


def test_bad_options_are_refused_with_the_option_named() -> None:
    with pytest.raises(UsageError, match="since-hours"):
        HealthQuery(since_hours=0)
    with pytest.raises(UsageError, match="trend-buckets"):
        HealthQuery(trend_buckets=0)


def test_buckets_are_whole_minutes_even_for_a_short_window(make_store: StoreFactory) -> None:
    store = make_store()
    store.open()
    data = report(store, HealthQuery(since_hours=0.05, trend_buckets=12, now=NOW)).to_dict()
    assert data["trend"]["bucket_seconds"] == 60
    # 3 minutes from 22:56:30, and the minute in progress: fewer buckets than asked
    assert len(data["trend"]["buckets"]) == 4


def test_outform_mapping_its_own_translation_back_is_no_intervention(
    make_store: StoreFactory,
) -> None:
    """Found by a new-user trial: every agent step's envelope (`error: null`, sent because a
    strict dialect wants every key) counted as an intervention, and the report advised a
    prompt change no model could make. A `dialect` change is recorded, not counted."""
    store = make_store()
    store.open()
    events: list[Event] = []
    for n in range(10):
        dialect = (("dialect", "dialect_reverse", ""),)
        events += run_events(RunSpec(step="agent", changes=dialect), NOW - HOUR + n)
    events += run_events(RunSpec(step="agent", changes=CHANGE), NOW - HOUR + 20)
    store.write(Batch(events, time=NOW))
    data = run_report(store).to_dict()
    assert data["totals"]["runs"] == 11 and data["totals"]["interventions"] == 1
    assert [r["transform"] for r in data["top_transforms"]] == ["string_to_int"]
    assert all(r["stage"] != "dialect" for r in data["stages"]["overall"])
    assert not any("dialect" in str(advice) for advice in data["recommendations"])


def test_runs_without_a_reply_do_not_count_against_a_mode(make_store: StoreFactory) -> None:
    """Found by a trial: provider errors (a 503, a timeout) made health advise a mode switch,
    though no reply was judged. A mode's trouble rate is of the runs that had a reply."""
    store = make_store()
    store.open()
    events: list[Event] = []
    for n in range(20):  # mode tool: every call refused by the provider, then 5 valid
        events += run_events(RunSpec(mode="tool", outcome="error"), NOW - HOUR + n)
    for n in range(5):
        events += run_events(RunSpec(mode="tool"), NOW - HOUR + 100 + n)
    for n in range(12):  # mode json_object: a re-ask every time
        events += run_events(RunSpec(mode="json_object", reasked=("/a",)), NOW - HOUR + 200 + n)
    store.write(Batch(events, time=NOW))
    found = run_report(store)
    modes = {r["mode"]: r for r in found.to_dict()["modes"]}
    assert (modes["tool"]["errors"], modes["tool"]["failed"]) == (20, 0)
    assert modes["tool"]["trouble_rate"] == 0.0
    advice = [r for r in found.recommendations if r["kind"] == "switch_mode"]
    # Only json_object is advised against; tool (5 replies) is too few to judge or to name.
    assert [r["target"]["mode"] for r in advice] == ["json_object"]
    assert "of 12 runs with a reply" in advice[0]["message"]
    assert "try another mode" in advice[0]["message"]
