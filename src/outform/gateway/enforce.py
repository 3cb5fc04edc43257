"""Enforcement mode: schema-valid output even from a backend that ignores `response_format`.

Off by default (passthrough stays passthrough); on per deployment (`enforce = true`) or per
request (`x-outform-enforce: 1` or `true`, or `0` / `false` to turn a deployment's default
off; any other value is a 400). For a `json_schema` or `json_object` format, the backend's
reply goes through outform's pipeline
(extract from prose and fences, repair, coerce, validate) at the configured level; a reply
that cannot be made valid is asked for again, the model shown its reply and the hint that
says path by path what was wrong (the re-ask of `outform.generate`), up to `enforce_retries`
times. The client receives the valid JSON as the message text: unchanged when it was valid
as sent, re-serialised when outform changed it. After the last attempt the client gets a
422 with the hint. Tool calls and refusals are returned as they are: there is no JSON to
check. Usage is summed over the attempts.

A streamed request in enforcement mode asks the backend for a whole answer and streams the
validated result (a stream of invalid JSON cannot be taken back once sent).

The pipeline never runs on the event loop: `Checker` sends each reply to a bounded pool of
worker processes (`enforce_workers`), with the pipeline's `time_limit` set to
`enforce_time_limit`, and stops a worker still busy at twice that. A reply that cannot be
checked in time is a 422 naming the limit at once; one the pipeline refuses unread (nested
deeper than `max_depth`, longer than `max_chars`) is asked for again like an invalid one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from outform.errors import ConfigError, SchemaError
from outform.format import JsonObjectFormat, JsonSchemaFormat, ResponseFormat
from outform.gateway import tracing
from outform.gateway.backend import Backend
from outform.gateway.checks import CheckSettings, Verdict, check_reply
from outform.gateway.output import content_text
from outform.gateway.replies import GatewayError, bad_request
from outform.gateway.settings import ENFORCE_HEADER, ENFORCE_VALUES, GatewaySettings
from outform.gateway.translate import (
    FORMAT_TYPE,
    check_format,
    check_value,
    flat_format,
    format_fields,
)
from outform.gateway.usage import read as read_usage
from outform.gateway.workers import WorkerPool, WorkerTimeoutError
from outform.schema import pointer
from outform.schema.compiled import compile_schema
from outform.trace.events import Reask, RunInfo, RunOutcomeName, Validation
from outform.trace.tracer import RunTrace


@dataclass(frozen=True)
class Enforced:
    completion: dict[str, Any]
    attempts: int
    repaired: bool

    def headers(self) -> list[tuple[bytes, bytes]]:
        verdict = b"repaired" if self.repaired else b"valid"
        return [(b"x-outform-enforce", verdict), (b"x-outform-attempts", b"%d" % self.attempts)]


def wanted(setting: bool, header: bytes | None) -> bool:
    """The deployment's setting, unless the request's `x-outform-enforce` header says
    otherwise: `1` / `true` or `0` / `false`, in any case; any other value is a 400 naming the
    header and its values (a header that says something must not be read as something else)."""
    if header is None:
        return setting
    value = header.decode("latin-1").strip()
    found = ENFORCE_VALUES.get(value.lower())
    if found is None:
        on = " or ".join(repr(v) for v, state in ENFORCE_VALUES.items() if state)
        off = " or ".join(repr(v) for v, state in ENFORCE_VALUES.items() if not state)
        raise bad_request(
            f"Invalid value for header '{ENFORCE_HEADER}': {value[:40]!r}; expected {on} to "
            f"enforce the response format, {off} to pass the reply through (in any case).",
            ENFORCE_HEADER,
            "invalid_value",
        )
    return found


def checkable(fmt: Any, where: str = "text.format") -> dict[str, Any] | None:
    """The flat format dict enforcement can check (`json_schema`, `json_object`, in either
    shape), else None (no format, or `text`); a 400 when it is not a valid format, its
    schema included: a schema
    the pipeline cannot compile is refused before the backend is called, not found out by
    the check of its reply. Each refusal names the path of the client's own request, `where`
    being the format's (`text.format`, Chat's `response_format`): the nested shape's fields
    are under `where.json_schema`, and a schema's fault under its schema's path, down to the
    keyword when the error says where it is (`...schema.properties.age.type`)."""
    if fmt is None:
        return None  # no format: nothing to enforce
    _check_format_type(fmt, where)
    flat = flat_format(fmt, where)
    if flat.get("type") == "text":
        return None
    check_format(fmt, where)
    fields = format_fields(fmt, where)
    try:
        parsed = ResponseFormat.from_dict(flat)
    except SchemaError as exc:  # (check_format refuses what from_dict would first)
        raise bad_request(f"Invalid '{fields}': {exc.what}.", fields, "invalid_value") from None
    if isinstance(parsed, JsonSchemaFormat):
        try:
            compile_schema(parsed.schema)
        except SchemaError as exc:
            param = schema_path(f"{fields}.schema", parsed.schema, exc.where)
            fix = f" To fix: {exc.fix}." if exc.fix else ""
            raise bad_request(
                f"Invalid schema at '{param}': {exc.what}.{fix}", param, "invalid_value"
            ) from None
    return dict(flat) if isinstance(parsed, JsonSchemaFormat | JsonObjectFormat) else None


def _check_format_type(fmt: Any, where: str) -> None:
    """A format sent to be enforced (or translated) is an object whose `type` is one of the
    spec's, or a 400 naming `where` or `where.type` with the documented code: a format
    enforcement cannot read (`"json"`, a list, no `type`, a misspelt one) must never be read
    as no format, which would answer 200 with a reply nobody checked."""
    if not isinstance(fmt, Mapping):
        raise bad_request(
            f"Invalid type for '{where}': expected an object with a 'type' (text, json_object "
            f"or json_schema), got {type(fmt).__name__}.",
            where,
            "invalid_type",
        )
    if fmt.get("type") is None:
        raise bad_request(
            f"Missing required parameter: '{where}.type' (text, json_object or json_schema).",
            f"{where}.type",
            "missing_required",
        )
    check_value(fmt["type"], f"{where}.type", FORMAT_TYPE)


_SIMPLE_KEY = re.compile(r"[A-Za-z_$][\w$-]*", re.ASCII)


def schema_path(base: str, schema: Any, where: str | None) -> str:
    """The request path of the place a schema error names (`where`, outform's `schema at
    /properties/a/type`) in `schema`, found at `base`: `base.properties.a.type`, a list's
    items as `[0]` and keys that are not names as `['first name']`; `base` alone when the
    error names no place, or one the schema does not have."""
    prefix = "schema at "
    if not where or not where.startswith(prefix):
        return base
    try:
        tokens = pointer.parts(where[len(prefix) :])
    except ValueError:
        return base
    path, node = base, schema
    for token in tokens:
        if isinstance(node, list) and token.isdigit() and int(token) < len(node):
            path, node = f"{path}[{token}]", node[int(token)]
        elif isinstance(node, Mapping) and token in node:
            path = f"{path}.{token}" if _SIMPLE_KEY.fullmatch(token) else f"{path}[{token!r}]"
            node = node[token]
        else:
            return base
    return path


class Checker:
    """Runs the pipeline on replies in worker processes, never on the event loop."""

    def __init__(self, settings: GatewaySettings) -> None:
        self.level = settings.enforce_level
        self.time_limit = settings.enforce_time_limit
        size = settings.enforce_workers or os.cpu_count() or 1
        self.pool = WorkerPool(size, preload=["outform.gateway.checks"])
        self.job = check_reply
        """What a worker runs (tests put a job they control here)."""

    async def check(
        self,
        text: str,
        fmt: Mapping[str, Any],
        *,
        cut: bool,
        level: str | None = None,
        profile: str | None = None,
    ) -> Verdict:
        """The verdict on one reply; `level` and `profile` (a `[profiles.NAME]`) override the
        deployment's parse settings for this request."""
        deadline = 2 * self.time_limit
        try:
            settings = CheckSettings(level or self.level, self.time_limit, profile)
            verdict: Verdict = await self.pool.run(deadline, self.job, text, fmt, settings, cut)
        except WorkerTimeoutError:
            return Verdict(
                "unreadable",
                what=f"checking it took longer than {deadline:g} s (twice enforce_time_limit)",
            )
        return verdict

    async def aclose(self) -> None:
        await self.pool.aclose()


async def enforce(
    backend: Backend,
    chat: Mapping[str, Any],
    fmt: Mapping[str, Any],
    *,
    retries: int,
    checker: Checker,
    run: RunTrace | None = None,
    profile: str | None = None,
    param: str = "text.format",
) -> Enforced:
    """Call the backend until its reply validates against `fmt` (or the retries run out).
    `param`: where the request states the format (`response_format` on Chat Completions),
    which the error after the last attempt names.
    `run`: the request's run, which records each exchange, each verdict and the outcome as
    generate() does (docs/observability.md). `profile` (of the `x-outform-profile` header,
    `profile_named`) names the parse settings to use; a level it sets explicitly wins over the
    deployment's."""
    run = run or RunTrace(RunInfo("unrecorded"), observers=None)
    with run.recording():  # an error that ends the request ends its run
        return await _enforce(
            backend,
            chat,
            fmt,
            retries=retries,
            checker=checker,
            run=run,
            profile=profile,
            param=param,
        )


async def _enforce(
    backend: Backend,
    chat: Mapping[str, Any],
    fmt: Mapping[str, Any],
    *,
    retries: int,
    checker: Checker,
    run: RunTrace,
    profile: str | None,
    param: str = "text.format",
) -> Enforced:
    level = _level(profile, checker.level)
    body = {k: v for k, v in chat.items() if k not in ("stream", "stream_options")}
    messages = list(body.get("messages") or ())
    usages: list[Any] = []
    usage: dict[str, Any] | None = None
    explanation = ""
    asked: Reask | None = None
    for attempt in range(1, retries + 2):
        run.attempt = attempt
        body["messages"] = messages
        _, completion = await tracing.complete(backend, body, run)
        usages.append(completion.get("usage"))
        usage = _summed(usages)
        choices = completion.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        if message.get("tool_calls") or message.get("refusal"):
            outcome: RunOutcomeName = "tool_calls" if message.get("tool_calls") else "refused"
            run.end(outcome, tokens=tracing.usage_of(usage))
            return Enforced(_with(completion, choice, message, usage), attempt, False)
        text = content_text(message.get("content"))
        cut = choice.get("finish_reason") == "length"
        verdict = await checker.check(text, fmt, cut=cut, level=level, profile=profile)
        run.schema_hash = verdict.schema_hash or run.schema_hash
        if verdict.kind == "invalid":
            explanation = verdict.explanation
            found = verdict.validation or Validation()
            run.emit("output.validation.fail", "validate", data=found)
            asked = Reask(_reason(found, cut), (), found.violations)
            if attempt <= retries:
                run.emit("output.reask.attempt", data=asked)
            messages = [
                *chat.get("messages", ()),
                {"role": "assistant", "content": text or "(empty reply)"},
                {"role": "user", "content": verdict.hint},
            ]
            continue
        if verdict.kind == "unreadable":
            run.emit("output.validation.fail", "validate", detail=verdict.what)
            run.end("invalid", tokens=tracing.usage_of(usage))
            raise GatewayError(
                422,
                f"The backend's reply cannot be parsed: {verdict.what}",
                param=param,
                code="output_invalid",
            )
        run.forward(verdict.changes)
        if asked is not None:
            run.emit("output.reask.success", data=Reask(asked.reason))
        run.end("valid", changes=len(verdict.changes), tokens=tracing.usage_of(usage))
        if verdict.kind == "valid":
            return Enforced(_with(completion, choice, message, usage), attempt, False)
        fixed = {**message, "content": verdict.text}
        return Enforced(_with(completion, choice, fixed, usage), attempt, True)
    if asked is not None:
        run.emit("output.reask.fail", data=asked)
    run.end("invalid", tokens=tracing.usage_of(usage))
    raise GatewayError(
        422,
        f"The backend's reply did not match the response format after {retries + 1} "
        f"attempt(s):\n{explanation}",
        param=param,
        code="output_invalid",
    )


def _reason(found: Validation, cut: bool) -> str:
    """Why the reply is asked for again, as generate() names it."""
    if any(v.kind == "syntax" for v in found.violations):
        return "cut_off" if cut else "syntax"
    return "schema"


def profile_named(header: bytes | None) -> str | None:
    """The profile an `x-outform-profile` header names (None: no header); a 400 naming the
    profiles there are for a name outform.toml does not define."""
    if header is None:
        return None
    from outform.profile import step

    name = header.decode("latin-1")
    try:
        step(name)
    except ConfigError as error:
        raise bad_request(
            f"{error.what}. {error.fix}", "x-outform-profile", "invalid_value"
        ) from None
    return name


def _level(profile: str | None, level: str) -> str:
    """The parse level of a check: the deployment's, unless the profile sets its own."""
    if profile is None:
        return level
    from outform.profile import step

    chosen = step(profile)
    explicit = chosen.sources["level"].startswith("[profiles.") or not chosen.enabled
    return (chosen.level or level) if explicit else level


def _with(
    completion: dict[str, Any],
    choice: dict[str, Any],
    message: dict[str, Any],
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    """The answer: the last attempt's, with the checked message and the usage of all the
    attempts (left out when it is not known)."""
    out = {**completion, "choices": [{**choice, "message": message}]}
    if usage is None:
        out.pop("usage", None)
    else:
        out["usage"] = usage
    return out


def _summed(usages: list[Any]) -> dict[str, Any] | None:
    """The usage of every attempt so far: the backend's own for one attempt, their sum for
    several; None (not known) when an attempt's usage is missing or one the gateway cannot
    read (`gateway.usage`): a sum of some of them would be a count nobody made."""
    counts = [read_usage(usage) for usage in usages]
    if any(c is None for c in counts):
        return None
    if len(usages) == 1:
        only: dict[str, Any] = usages[0]
        return only
    total = counts[0]
    assert total is not None
    for more in counts[1:]:
        assert more is not None
        total = total + more
    return total.chat()


__all__ = ["Checker", "Enforced", "checkable", "enforce", "schema_path", "wanted"]
