"""The reasoning precheck: a cheap gate before an expensive generation (off by default).

Before each attempt of a call: (1) a local checklist: the context keys the step needs are
present, and the schema's required fields can be produced at all; (2) a plan, from the
caller (`plan=callable`) or sampled from the model (`plan="sample"`, a short call of
`max_tokens`); (3) optionally N plan samples whose key actions are compared (Jaccard
similarity of the action sets): when they agree, the attempt proceeds; (4) a validator, a
callable or a model (`validator="provider:model"`, a call of `max_tokens`), judges the plan:
pass or fail, a score, feedback. A failed check never raises: its feedback becomes guidance
for the same attempt, prepended to the prompt or put in the context under a key. A missing
basic (checklist), no plan or no validator skips the check: the attempt runs as usual, and the
normal re-ask path handles what goes wrong. Every attempt works on its own copy of the
context, merged into the caller's only when the call succeeds. Each check emits one event,
`precheck.pass|fail|skipped`, with its score and the tokens it spent.

Errors that are not outform's (a validator callable that raises) are never swallowed; a
validator model whose verdict cannot be read skips the check.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable, Generator, Mapping, MutableMapping
from dataclasses import dataclass, field, fields, replace
from itertools import combinations
from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from outform.errors import OutputError, UsageError
from outform.format import ResponseFormat
from outform.providers.base import Message, Request, Usage
from outform.trace.events import Precheck as PrecheckRecord
from outform.trace.tracer import RunTrace

Status = Literal["pass", "fail", "skipped"]
PlanSource = Callable[[Mapping[str, Any]], "str | None"] | Literal["none", "sample"]
PLANS = ("none", "sample")
"""The plans a setting can name (else a callable)."""
ValidatorFn = Callable[[str, Mapping[str, Any]], Any]

PLAN_PROMPT = (
    "Before answering, write a short plan: the key actions you will take, one per line, at "
    "most six lines, each a verb and its object. Do not answer yet."
)
JUDGE_PROMPT = (
    "You review a plan before it is carried out. Judge whether following it will answer the "
    "task correctly and completely. Reply in JSON: passed (true or false), score (from 0 to "
    "1), feedback (what to change, in one or two sentences; empty when nothing)."
)


class Verdict(BaseModel):
    """A validator's judgement of a plan."""

    passed: bool
    score: float | None = Field(default=None, ge=0, le=1)
    feedback: str = ""


@dataclass(frozen=True)
class Precheck:
    """The settings of the precheck (see the module docstring and docs/agents.md)."""

    enabled: bool = True
    required_context: tuple[str, ...] = ()
    plan: PlanSource = "none"
    validator: ValidatorFn | str | None = None
    """A callable (plan, context) -> Verdict | bool | (passed, score, feedback), or a model
    "provider:name" asked for a Verdict."""
    max_tokens: int = 200
    score_threshold: float | None = None
    consensus_samples: int = 0
    consensus_threshold: float = 0.5
    inject_feedback: Literal["prepend", "context_key"] = "prepend"
    feedback_prefix: str = "Before you answer, take this feedback on your plan into account:"
    feedback_key: str = "precheck_feedback"

    def __post_init__(self) -> None:
        # Every setting is checked here, as outform.toml's are when the file is read: a value
        # the gate cannot use would otherwise turn it off without a word (a plan "Sample"
        # is no plan: every check skipped) or fail every plan (a threshold of 2).
        if not callable(self.plan) and self.plan not in PLANS:
            raise UsageError(
                f"unknown precheck plan {self.plan!r}",
                where="precheck.plan",
                fix="use 'sample' (the model writes a plan), 'none', or a callable "
                "(context) -> str | None",
            )
        for name in ("score_threshold", "consensus_threshold"):
            value = getattr(self, name)
            if value is None and name == "score_threshold":
                continue
            if not _unit(value):
                raise UsageError(
                    f"{name} must be a number from 0 to 1, got {value!r}",
                    where=f"precheck.{name}",
                    fix="a score and an agreement are shares from 0 to 1"
                    + (" (or None: no threshold)" if name == "score_threshold" else ""),
                )
        samples = self.consensus_samples
        if not _whole(samples) or samples == 1 or not 0 <= samples <= 10:
            raise UsageError(
                f"consensus_samples must be 0 (off) or from 2 to 10, got {samples!r}",
                where="precheck.consensus_samples",
            )
        if self.inject_feedback not in ("prepend", "context_key"):
            raise UsageError(
                f"unknown inject_feedback {self.inject_feedback!r}",
                where="precheck.inject_feedback",
                fix="use 'prepend' or 'context_key'",
            )
        if not _whole(self.max_tokens) or self.max_tokens < 1:
            raise UsageError(
                f"max_tokens must be a whole number of 1 or more, got {self.max_tokens!r}",
                where="precheck.max_tokens",
            )

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> Precheck:
        """From the keys of a profile's `precheck` table (or a call's overrides of them)."""
        known = {f.name for f in fields(cls)} | {"validator_model"}
        unknown = set(settings) - known
        if unknown:
            raise UsageError(
                f"unknown precheck setting(s): {', '.join(sorted(unknown))}",
                where="precheck",
                fix=f"use: {', '.join(sorted(known))}",
            )
        values = dict(settings)
        model = values.pop("validator_model", None)
        if values.get("validator") is None and model:
            values["validator"] = model
        values["required_context"] = tuple(values.get("required_context", ()))
        return cls(**values)


@dataclass(frozen=True)
class PrecheckOutcome:
    """What the precheck of one attempt decided, and what it cost."""

    status: Status
    reason: str
    score: float | None = None
    feedback: str = ""
    plan: str | None = None
    usage: Usage = field(default_factory=Usage)


def resolve(
    asked: Precheck | Mapping[str, Any] | bool | None, profile: Mapping[str, Any]
) -> Precheck | None:
    """The precheck of a call: the profile's settings, overlaid by the call's (`True` turns
    it on, `False` off, a mapping overrides keys and turns it on, a Precheck replaces)."""
    if asked is False:
        return None
    if isinstance(asked, Precheck):
        return asked if asked.enabled else None
    values = dict(profile)
    if asked is True:
        values["enabled"] = True
    elif isinstance(asked, Mapping):
        values = {**values, "enabled": True, **asked}
    if not values.get("enabled"):
        return None
    return Precheck.of(values)


AskCall = tuple[str | None, list[Message], Any, int]
Ask = Callable[[str | None, list[Message], Any, int], Any]
"""(model or None for the call's own, messages, output, max_tokens) -> Generation."""
AAsk = Callable[[str | None, list[Message], Any, int], Awaitable[Any]]


class Gate:
    """The precheck of one call, run before each attempt. Sync (`before`) or async
    (`abefore`); the model calls go through the driver's `ask`."""

    def __init__(
        self,
        settings: Precheck,
        fmt: ResponseFormat,
        context: Mapping[str, Any] | None,
        trace: RunTrace,
    ) -> None:
        self.settings = settings
        self.caller_context = context
        self.context: dict[str, Any] = {}
        self.trace = trace
        """The call's run: each check is one of its events, on the attempt it precedes."""
        self.outcomes: list[PrecheckOutcome] = []

    # -- per attempt -------------------------------------------------------------------------

    def start(self) -> list[str]:
        """A fresh copy of the caller's context for this attempt; the checklist's findings."""
        self.context = copy.deepcopy(dict(self.caller_context or {}))
        missing = [key for key in self.settings.required_context if self.context.get(key) in _EMPTY]
        return [f"missing context key(s): {', '.join(missing)}"] if missing else []

    def before(self, request: Request, ask: Ask) -> Request:
        """The check of one attempt; the request, with feedback when the plan failed."""
        steps = self._check(request)
        reply: Any = None
        error: OutputError | None = None
        while True:
            try:
                call = steps.send(reply) if error is None else steps.throw(error)
            except StopIteration as done:
                checked: Request = done.value
                return checked
            try:
                reply, error = ask(*call), None
            except OutputError as exc:
                reply, error = None, exc

    async def abefore(self, request: Request, ask: AAsk) -> Request:
        """`before`, with the model calls awaited."""
        steps = self._check(request)
        reply: Any = None
        error: OutputError | None = None
        while True:
            try:
                call = steps.send(reply) if error is None else steps.throw(error)
            except StopIteration as done:
                checked: Request = done.value
                return checked
            try:
                reply, error = await ask(*call), None
            except OutputError as exc:
                reply, error = None, exc

    def _check(self, request: Request) -> Generator[AskCall, Any, Request]:
        """The check, without I/O: it yields the model calls it needs (the drivers make them
        and send back the Generation, or throw the OutputError of an unreadable reply)."""
        problems = self.start()
        if problems:
            skipped = PrecheckOutcome("skipped", "checklist: " + "; ".join(problems))
            return self._done(request, skipped)
        usage = Usage()
        settings = self.settings
        sample = (None, self._plan_messages(request), None, settings.max_tokens)
        samples: list[str] = []
        for _ in range(settings.consensus_samples):
            generation = yield sample
            usage = usage + generation.usage
            samples.append(generation.text)
        plan = samples[0] if samples else self._own_plan()
        if plan is None and settings.plan == "sample":
            generation = yield sample
            usage, plan = usage + generation.usage, generation.text
        agreed = self._agreement(samples, plan, usage)
        if agreed is not None:
            return self._done(request, agreed)
        assert plan is not None
        validator = settings.validator
        if isinstance(validator, str):
            judge = (validator, self._judge_messages(request, plan), Verdict, settings.max_tokens)
            try:
                generation = yield judge
            except OutputError as error:
                return self._unreadable(request, plan, usage, error)
            usage = usage + generation.usage
            verdict = generation.value
        else:
            verdict = _verdict(validator(plan, self.context)) if validator else None
        return self._judged(request, plan, verdict, usage)

    def merge(self) -> None:
        """The call succeeded: the last attempt's context becomes the caller's."""
        if isinstance(self.caller_context, MutableMapping):
            self.caller_context.clear()
            self.caller_context.update(self.context)

    # -- the steps ----------------------------------------------------------------------------

    def _own_plan(self) -> str | None:
        source = self.settings.plan
        if callable(source):
            plan = source(self.context)
            return plan if plan and plan.strip() else None
        return None

    def _agreement(
        self, samples: list[str], plan: str | None, usage: Usage
    ) -> PrecheckOutcome | None:
        """An outcome when the check ends before the validator: no plan, or plan samples
        that agree (or none to ask when they do not)."""
        if not plan or not plan.strip():
            return PrecheckOutcome("skipped", "no plan is available", usage=usage)
        if samples:
            score = agreement(samples)
            if score >= self.settings.consensus_threshold:
                why = f"the {len(samples)} plan samples agree (Jaccard {score:.2f})"
                return PrecheckOutcome("pass", why, score, plan=plan, usage=usage)
            if self.settings.validator is None:
                why = f"the plan samples disagree (Jaccard {score:.2f}) and no validator is set"
                return PrecheckOutcome("skipped", why, score, plan=plan, usage=usage)
        elif self.settings.validator is None:
            return PrecheckOutcome("skipped", "no validator is set", plan=plan, usage=usage)
        return None

    def _judged(
        self, request: Request, plan: str, verdict: Verdict | None, usage: Usage
    ) -> Request:
        if verdict is None:
            return self._done(
                request, PrecheckOutcome("skipped", "no validator is set", plan=plan, usage=usage)
            )
        # The threshold holds a score against it; a verdict without one (a bool, a tuple
        # or a model's verdict that gives none) is judged by `passed` alone.
        threshold, score = self.settings.score_threshold, verdict.score
        low = threshold is not None and score is not None and score < threshold
        passed = verdict.passed and not low
        if not verdict.passed:
            reason = "the validator failed the plan"
        elif low:
            reason = f"the score {score} is under the threshold {threshold}"
        elif threshold is not None and score is None:
            reason = (
                f"the validator passed the plan (no score to hold to the threshold {threshold})"
            )
        else:
            reason = "the validator passed the plan"
        outcome = PrecheckOutcome(
            "pass" if passed else "fail", reason, verdict.score, verdict.feedback, plan, usage
        )
        if not passed and verdict.feedback.strip():
            request = self._guide(request, verdict.feedback.strip())
        return self._done(request, outcome)

    def _unreadable(self, request: Request, plan: str, usage: Usage, error: OutputError) -> Request:
        spent = usage + getattr(error, "usage", Usage())
        why = f"the validator's verdict could not be read ({error.what})"
        return self._done(request, PrecheckOutcome("skipped", why, plan=plan, usage=spent))

    def _guide(self, request: Request, feedback: str) -> Request:
        """The feedback as guidance for this attempt (never an exception)."""
        if self.settings.inject_feedback == "context_key":
            self.context[self.settings.feedback_key] = feedback
            return request
        messages = list(request.messages)
        for index in range(len(messages) - 1, -1, -1):
            if messages[index].role == "user":
                text = f"{self.settings.feedback_prefix}\n{feedback}\n\n{messages[index].text}"
                messages[index] = replace(messages[index], parts=Message.user(text).parts)
                break
        return replace(request, messages=tuple(messages))

    def _done(self, request: Request, outcome: PrecheckOutcome) -> Request:
        self.outcomes.append(outcome)
        self.trace.emit(
            f"precheck.{outcome.status}",  # type: ignore[arg-type]
            "precheck",
            detail=outcome.reason,
            data=PrecheckRecord(
                check="precheck",
                detail=outcome.reason,
                score=outcome.score,
                tokens=outcome.usage.total_tokens,
            ),
        )
        return request

    def _plan_messages(self, request: Request) -> list[Message]:
        return [*request.messages, Message.user(PLAN_PROMPT)]

    def _judge_messages(self, request: Request, plan: str) -> list[Message]:
        task = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
        parts = [f"Task:\n{task}"]
        if self.context:
            parts.append(f"Context (JSON):\n{orjson.dumps(self.context, default=str).decode()}")
        parts.append(f"Plan:\n{plan}")
        return [Message.system(JUDGE_PROMPT), Message.user("\n\n".join(parts))]


def _unit(value: Any) -> bool:
    """A number from 0 to 1 (not a bool, not NaN)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_EMPTY: tuple[Any, ...] = (None, "", [], {})
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {"a", "an", "the", "to", "of", "for", "and", "or", "then", "first", "next", "finally"}
    | {"i", "will", "we", "step", "by", "with", "in", "on", "from", "into", "it", "its"}
    | {"this", "that"}
)


def actions(plan: str) -> frozenset[str]:
    """The key actions of a plan: per line, its first two words that are not filler
    ("1. First, extract the total!" -> "extract total")."""
    found = set()
    for line in plan.splitlines():
        words = [w for w in _WORD.findall(line.lower()) if w not in _STOP and not w.isdigit()]
        if words:
            found.add(" ".join(words[:2]))
    return frozenset(found)


def agreement(samples: list[str]) -> float:
    """The mean Jaccard similarity of the samples' action sets (1.0 for identical plans)."""
    sets = [actions(sample) for sample in samples]
    pairs = list(combinations(sets, 2))
    if not pairs:
        return 1.0
    return sum(len(a & b) / len(a | b) if a | b else 1.0 for a, b in pairs) / len(pairs)


def _verdict(value: Any) -> Verdict:
    """A validator callable's answer: a Verdict, a bool, or (passed, score, feedback)."""
    if isinstance(value, Verdict):
        return value
    if isinstance(value, bool):
        return Verdict(passed=value)
    if isinstance(value, tuple) and 1 <= len(value) <= 3:
        return Verdict(**dict(zip(("passed", "score", "feedback"), value, strict=False)))
    raise UsageError(
        f"a precheck validator returned {type(value).__name__}",
        where="precheck.validator",
        fix="return a Verdict, a bool, or a tuple (passed, score, feedback)",
    )


__all__ = ["Gate", "Precheck", "PrecheckOutcome", "Verdict", "actions", "agreement", "resolve"]
