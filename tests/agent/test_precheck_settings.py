"""Found by a second new-user trial of the precheck: a validator returning a bool failed every
plan once `score_threshold` was set, and settings the gate cannot use (a plan "bogus" or
"Sample", a threshold of 2) were accepted and quietly turned it off. A verdict without a score
is judged by `passed`; a bad setting is a UsageError naming it and the allowed values."""

from __future__ import annotations

from typing import Any

import pytest

from outform.agent.precheck import Precheck, Verdict
from outform.errors import UsageError
from tests.agent.test_precheck import GOOD, PLAN, Total, _record, generate
from tests.echo import Echo

# -- 5. the threshold holds a score; a verdict without one is judged by `passed` -------------


@pytest.mark.parametrize("threshold", [0.0, 0.7, 1.0])
@pytest.mark.parametrize("returned", [True, (True,), Verdict(passed=True)], ids=repr)
def test_a_passing_verdict_without_a_score_passes_whatever_the_threshold(
    echo: Echo, threshold: float, returned: Any
) -> None:
    echo.reply(GOOD)
    checked = Precheck(
        plan=lambda ctx: PLAN, validator=lambda plan, ctx: returned, score_threshold=threshold
    )
    result, events = generate(echo, checked)
    (event,) = events
    assert event.name == "precheck.pass"
    assert event.detail == (
        f"the validator passed the plan (no score to hold to the threshold {threshold})"
    )
    assert _record(event).score is None
    assert result.value == Total(total=12.5)


def test_a_failing_bool_still_fails(echo: Echo) -> None:
    echo.reply(GOOD)
    checked = Precheck(
        plan=lambda ctx: PLAN, validator=lambda plan, ctx: False, score_threshold=0.5
    )
    _, events = generate(echo, checked)
    assert [(e.name, e.detail) for e in events] == [
        ("precheck.fail", "the validator failed the plan")
    ]


@pytest.mark.parametrize(
    ("score", "status"), [(0.69, "precheck.fail"), (0.7, "precheck.pass"), (0.9, "precheck.pass")]
)
def test_a_score_is_held_to_the_threshold(echo: Echo, score: float, status: str) -> None:
    echo.reply(GOOD)
    checked = Precheck(
        plan=lambda ctx: PLAN,
        validator=lambda plan, ctx: Verdict(passed=True, score=score),
        score_threshold=0.7,
    )
    _, events = generate(echo, checked)
    (event,) = events
    assert event.name == status
    if status == "precheck.fail":
        assert event.detail == f"the score {score} is under the threshold 0.7"


# -- 6. a setting the gate cannot use is refused when the precheck is made -------------------


@pytest.mark.parametrize("plan", ["bogus", "Sample", "NONE", "", 3])
def test_an_unknown_plan_is_refused_naming_the_plans(plan: Any) -> None:
    with pytest.raises(UsageError, match="unknown precheck plan") as caught:
        Precheck(plan=plan)
    assert caught.value.where == "precheck.plan"
    assert "'sample'" in (caught.value.fix or "") and "'none'" in (caught.value.fix or "")


@pytest.mark.parametrize("plan", ["sample", "none", lambda ctx: PLAN])
def test_the_plans_there_are_are_taken(plan: Any) -> None:
    assert Precheck(plan=plan).plan is plan


@pytest.mark.parametrize("name", ["score_threshold", "consensus_threshold"])
@pytest.mark.parametrize("value", [2, -5, 1.5, -0.1, True, "0.7", float("nan")])
def test_a_threshold_outside_0_to_1_is_refused_naming_it(name: str, value: Any) -> None:
    with pytest.raises(UsageError, match=f"{name} must be a number from 0 to 1") as caught:
        Precheck(**{name: value})
    assert caught.value.where == f"precheck.{name}"


@pytest.mark.parametrize("value", [0, 0.5, 1, None])
def test_a_score_threshold_from_0_to_1_or_none_is_taken(value: Any) -> None:
    assert Precheck(score_threshold=value).score_threshold == value


def test_a_calls_overrides_are_checked_before_any_request(echo: Echo) -> None:
    """`precheck={...}` on a call goes through the same settings: refused before any
    request."""
    with pytest.raises(UsageError, match="unknown precheck plan 'Sample'"):
        generate(echo, {"plan": "Sample", "validator": lambda plan, ctx: True})
    assert echo.sent == []


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        ({"max_tokens": "200"}, "precheck.max_tokens"),
        ({"max_tokens": 0}, "precheck.max_tokens"),
        ({"consensus_samples": 2.5}, "precheck.consensus_samples"),
        ({"consensus_samples": 1}, "precheck.consensus_samples"),
    ],
)
def test_counts_must_be_whole_numbers_in_range(settings: dict[str, Any], where: str) -> None:
    with pytest.raises(UsageError) as caught:
        Precheck(**settings)
    assert caught.value.where == where
