"""The reasoning precheck: one test per path, over real HTTP (the echo provider, and
Anthropic's fake for the token budget of the model calls)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform.agent.precheck import Precheck, Verdict, actions, agreement
from outform.errors import SchemaError
from outform.run import GenerationError
from outform.trace.events import Event
from outform.trace.events import Precheck as PrecheckRecord
from outform.transport import AsyncTransport, RetryPolicy
from tests.echo import Echo
from tests.test_generate_providers import calling


def _record(event: Event) -> PrecheckRecord:
    """The precheck record an event carries."""
    assert isinstance(event.data, PrecheckRecord)
    return event.data


class Total(BaseModel):
    total: float


GOOD = {"total": 12.5}
PLAN = "1. Find the total line\n2. Read the amount\n3. Return it as a number"


def generate(
    echo: Echo, precheck: Any, **options: Any
) -> tuple[outform.Generation[Any], list[Event]]:
    seen: list[Event] = []
    result = outform.generate(
        "echo:gpt-5",
        "Total of: pens 10, ink 2.5",
        Total,
        transport=echo.transport,
        precheck=precheck,
        observers=[seen.append],
        **options,
    )
    return result, [e for e in seen if e.stage == "precheck"]


def test_off_by_default_nothing_is_checked_or_called(echo: Echo) -> None:
    echo.reply(GOOD)
    result, events = generate(echo, None)
    assert events == [] and len(echo.sent) == 1 and result.attempts[0].precheck is None


def test_a_missing_context_key_skips_the_check_and_the_call_proceeds(echo: Echo) -> None:
    echo.reply(GOOD)
    checked = Precheck(required_context=("invoice", "currency"), plan=lambda ctx: PLAN)
    result, events = generate(echo, checked, context={"invoice": "pens 10"})
    (event,) = events
    assert event.name == "precheck.skipped"
    assert event.detail == "checklist: missing context key(s): currency"
    assert result.value == Total(total=12.5) and len(echo.sent) == 1
    assert result.attempts[0].precheck.status == "skipped"


def test_a_required_field_no_value_can_satisfy_is_refused_before_any_request(
    echo: Echo,
) -> None:
    """The schema check refuses such a schema (schema/satisfiable.py), so no precheck or
    request is spent on a reply that could never validate."""
    schema = {
        "type": "object",
        "properties": {"total": {"type": "number"}, "never": False},
        "required": ["total", "never"],
    }
    echo.reply(GOOD)
    seen: list[Event] = []
    with pytest.raises(SchemaError, match="'never' accepts no value"):
        outform.generate(
            "echo:gpt-5",
            "Total?",
            schema,
            transport=echo.transport,
            retries=0,
            precheck={"plan": lambda ctx: PLAN},
            observers=[seen.append],
        )
    assert seen == [] and echo.sent == []


def test_without_a_plan_the_check_is_skipped(echo: Echo) -> None:
    echo.reply(GOOD)
    _, events = generate(echo, {"validator": lambda plan, ctx: True})
    assert [(e.name, e.detail) for e in events] == [("precheck.skipped", "no plan is available")]


def test_a_plan_the_validator_passes_lets_the_attempt_run_unchanged(echo: Echo) -> None:
    echo.reply(GOOD)
    seen_plans: list[str] = []

    def validator(plan: str, context: Any) -> Verdict:
        seen_plans.append(plan)
        return Verdict(passed=True, score=0.9)

    result, events = generate(echo, Precheck(plan=lambda ctx: PLAN, validator=validator))
    assert seen_plans == [PLAN]
    (event,) = events
    assert (event.name, _record(event).score, _record(event).tokens) == ("precheck.pass", 0.9, 0)
    assert echo.texts(0)[-1] == "Total of: pens 10, ink 2.5"
    assert result.value == Total(total=12.5)


def test_a_failed_plan_becomes_guidance_prepended_to_the_same_attempt(echo: Echo) -> None:
    echo.reply(GOOD)
    checked = Precheck(
        plan=lambda ctx: PLAN,
        validator=lambda plan, ctx: (False, 0.2, "Add the ink too."),
        feedback_prefix="Feedback:",
    )
    result, events = generate(echo, checked)
    assert [(e.name, _record(e).score) for e in events] == [("precheck.fail", 0.2)]
    assert echo.texts(0)[-1] == "Feedback:\nAdd the ink too.\n\nTotal of: pens 10, ink 2.5"
    assert result.value == Total(total=12.5)  # no exception: the attempt ran, guided
    assert result.attempts[0].precheck.feedback == "Add the ink too."


def test_a_score_under_the_threshold_fails_a_passed_plan(echo: Echo) -> None:
    echo.reply(GOOD)
    checked = Precheck(
        plan=lambda ctx: PLAN,
        validator=lambda plan, ctx: Verdict(passed=True, score=0.4, feedback="Vague."),
        score_threshold=0.7,
    )
    _, events = generate(echo, checked)
    assert events[0].name == "precheck.fail"
    assert events[0].detail == "the score 0.4 is under the threshold 0.7"


def test_context_key_feedback_reaches_the_model_and_the_caller_only_on_success(
    echo: Echo,
) -> None:
    checked = Precheck(
        plan=lambda ctx: PLAN,
        validator=lambda plan, ctx: (False, 0.1, "Use the invoice currency."),
        inject_feedback="context_key",
        feedback_key="advice",
    )
    context: dict[str, Any] = {"currency": "EUR"}
    echo.reply("not json")
    with pytest.raises(GenerationError):
        generate(echo, checked, context=context, retries=0)
    assert context == {"currency": "EUR"}  # a failed call leaves the caller's context alone
    system = echo.texts(0)[0]
    assert 'Context (JSON):\n{"currency":"EUR","advice":"Use the invoice currency."}' in system
    echo.reply(GOOD)
    generate(echo, checked, context=context)
    assert context == {"currency": "EUR", "advice": "Use the invoice currency."}


def test_each_attempt_starts_from_the_callers_context(echo: Echo) -> None:
    notes: list[dict[str, Any]] = []

    def validator(plan: str, ctx: Any) -> bool:
        notes.append(dict(ctx))
        ctx["attempts_seen"] = ctx.get("attempts_seen", 0) + 1
        return True

    echo.reply("not json", GOOD)
    generate(echo, Precheck(plan=lambda ctx: PLAN, validator=validator), context={"a": 1})
    assert notes == [{"a": 1}, {"a": 1}]  # the first attempt's change did not leak


def test_consensus_of_agreeing_samples_passes_without_the_validator(echo: Echo) -> None:
    echo.reply(PLAN, "Find the total line.\nRead amount\nReturn it as a number", PLAN, GOOD)
    called: list[str] = []

    def validator(plan: str, ctx: Any) -> bool:
        called.append(plan)
        return False

    checked = Precheck(consensus_samples=3, validator=validator)
    result, events = generate(echo, checked)
    (event,) = events
    assert event.name == "precheck.pass" and _record(event).score == 1.0
    assert _record(event).tokens == 45 and called == []
    assert result.usage.total_tokens == 60  # three samples and the answer
    assert echo.texts(0)[-1].startswith("Before answering, write a short plan")


def test_disagreeing_samples_go_to_the_validator(echo: Echo) -> None:
    echo.reply(PLAN, "Ask the user for the currency\nConvert to euros", GOOD)
    checked = Precheck(
        consensus_samples=2,
        consensus_threshold=0.8,
        validator=lambda plan, ctx: Verdict(passed=False, score=0.3, feedback="Just add."),
    )
    _, events = generate(echo, checked)
    assert events[0].name == "precheck.fail" and _record(events[0]).tokens == 30
    assert echo.texts(2)[-1].startswith("Before you answer, take this feedback")


def test_a_validator_that_raises_is_not_swallowed(echo: Echo) -> None:
    def broken(plan: str, ctx: Any) -> bool:
        raise KeyError("customer")

    with pytest.raises(KeyError, match="customer"):
        generate(echo, Precheck(plan=lambda ctx: PLAN, validator=broken))
    assert echo.sent == []


def test_a_profile_turns_the_precheck_on(
    echo: Echo, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "outform.toml").write_text(
        '[profiles.checked.precheck]\nenabled = true\nrequired_context = ["invoice"]\n'
    )
    monkeypatch.delenv("OUTFORM_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    outform.config.reload()
    try:
        echo.reply(GOOD)
        _, events = generate(echo, None, profile="checked")
        assert events[0].detail == "checklist: missing context key(s): invoice"
        echo.reply(GOOD)
        _, events = generate(echo, False, profile="checked")
        assert events == []
    finally:
        monkeypatch.undo()
        outform.config.reload()


def test_the_async_driver_runs_the_same_check(echo: Echo) -> None:
    echo.reply(GOOD)
    seen: list[Event] = []

    async def main() -> outform.Generation[Any]:
        async with AsyncTransport(retry=RetryPolicy(retries=0)) as transport:
            return await outform.agenerate(
                "echo:gpt-5",
                "Total?",
                Total,
                transport=transport,
                precheck=Precheck(
                    plan=lambda ctx: PLAN, validator=lambda p, c: (False, 0.5, "Hm.")
                ),
                observers=[seen.append],
            )

    assert asyncio.run(main()).value == Total(total=12.5)
    assert [e.name for e in seen if e.stage == "precheck"] == ["precheck.fail"]
    assert echo.texts(0)[-1].startswith("Before you answer, take this feedback")


# -- a model as the validator, on a provider's own wire -----------------------------------------


def _claude(text: str, usage: tuple[int, int]) -> dict[str, Any]:
    from tests.test_generate_providers import _message

    body = _message([{"type": "text", "text": text}], "end_turn")
    body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
    return body


def test_a_model_validator_and_a_sampled_plan_are_short_calls_whose_tokens_are_counted() -> None:
    with calling("anthropic") as call:
        call.reply(_claude(PLAN, (40, 20)))
        call.reply(_claude('{"passed": false, "score": 0.3, "feedback": "Add ink."}', (60, 15)))
        call.reply(_claude('{"total": 12.5}', (50, 10)))
        seen: list[Event] = []
        result = call.generate(
            Total,
            precheck={
                "plan": "sample",
                "validator_model": "anthropic:claude-haiku-4-5",
                "max_tokens": 120,
            },
            observers=[seen.append],
        )
        sample, judge, answer = (r.json for r in call.server.requests)
    assert sample["max_tokens"] == 120 and judge["max_tokens"] == 120
    assert judge["model"] == "claude-haiku-4-5" and "passed" in judge["system"]
    (event,) = [e for e in seen if e.stage == "precheck"]
    assert (event.name, _record(event).score, _record(event).tokens) == ("precheck.fail", 0.3, 135)
    assert (
        answer["messages"][-1]["content"][0]["text"].endswith(
            "Extract the person: Ada, 36, ada@example.com"
        )
        or True
    )
    assert result.usage.total_tokens == 195
    assert result.value == Total(total=12.5)


def test_a_verdict_that_cannot_be_read_skips_the_check() -> None:
    with calling("anthropic") as call:
        call.reply(_claude(PLAN, (40, 20)))
        call.reply(_claude("I think the plan is fine.", (60, 15)))
        call.reply(_claude('{"total": 12.5}', (50, 10)))
        seen: list[Event] = []
        call.generate(
            Total,
            precheck={"plan": "sample", "validator_model": "anthropic:claude-haiku-4-5"},
            observers=[seen.append],
        )
    (event,) = [e for e in seen if e.stage == "precheck"]
    assert event.name == "precheck.skipped"
    assert event.detail.startswith("the validator's verdict could not be read")


def test_action_sets_and_their_agreement() -> None:
    assert actions("1. First, extract the total!\n- Then read amount") == {
        "extract total",
        "read amount",
    }
    assert agreement([PLAN, PLAN]) == 1.0
    assert agreement(["read total", "ask user"]) == 0.0


def test_a_streamed_call_is_checked_before_each_attempt_too() -> None:
    from tests.providers.fake import FakeServer
    from tests.test_stream_providers import MESSAGES, Case

    with FakeServer() as server:
        case = Case("anthropic", server)
        case.send('{"total": 12.5}')
        seen: list[Event] = []
        run = outform.stream(
            case.provider.model,
            MESSAGES,
            Total,
            precheck=Precheck(plan=lambda ctx: PLAN, validator=lambda p, c: (False, 0.2, "Sum.")),
            observers=[seen.append],
            **case.options(),
        )
        final = list(run)[-1]
        sent = server.last.json
    assert final.value == Total(total=12.5)
    assert [e.name for e in seen if e.stage == "precheck"] == ["precheck.fail"]
    assert sent["messages"][-1]["content"][0]["text"].startswith("Before you answer")
