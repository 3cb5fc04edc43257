"""What the gateway records of a request: one run per request (`source = "gateway"`), a
`provider.call` per exchange with the backend, and in enforcement mode the same validation
and re-ask events as generate() (docs/observability.md).

Labels come from the request's headers, over those of its profile and `[defaults]`:

    x-outform-step: extract-invoice
    x-outform-agent: billing
    x-outform-tags: prod, eu            (comma-separated)
    x-outform-profile: invoice_extract  (the step, when x-outform-step does not say)

A run's `mode` is `enforce` (outform's pipeline checks the reply, `mode_reason` says who asked
for it) or `passthrough` (the backend's answer goes back as it is: `valid` then means that it
was answered). Nothing here reads a body's content into an event: usage, status, timings and
(in enforcement mode) the pipeline's changes and violations, as the library records them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from outform.gateway.backend import Backend, BackendReply, Body
from outform.gateway.replies import bad_request
from outform.gateway.usage import tokens as usage_tokens
from outform.plan import Plan
from outform.run import format_event
from outform.trace.caller import Labels
from outform.trace.tracer import RunTrace, elapsed_ms
from outform.usage import Usage

STEP, AGENT, TAGS = b"x-outform-step", b"x-outform-agent", b"x-outform-tags"
MAX_LABEL = 200
"""Longest label a header may set (characters)."""
MAX_TAGS = 20


def labels_of(headers: Iterable[tuple[bytes, bytes]]) -> Labels | None:
    """The labels a request's headers set (None: none); a 400 for one too long."""
    found: dict[bytes, str] = {}
    for name, value in headers:
        if name in (STEP, AGENT, TAGS):
            found[name] = value.decode("utf-8", "replace").strip()
    if not found:
        return None
    step, agent = found.get(STEP) or None, found.get(AGENT) or None
    tags = tuple(dict.fromkeys(t.strip() for t in found.get(TAGS, "").split(",") if t.strip()))
    for header, text in ((STEP, step), (AGENT, agent), *((TAGS, tag) for tag in tags)):
        if text is not None and len(text) > MAX_LABEL:
            said = header.decode()
            raise bad_request(
                f"{said} holds a label longer than {MAX_LABEL} characters.", said, "invalid_value"
            )
    if len(tags) > MAX_TAGS:
        raise bad_request(
            f"x-outform-tags holds more than {MAX_TAGS} tags.", "x-outform-tags", "invalid_value"
        )
    return Labels(step, agent, tags)


def begin(
    labels: Labels | None,
    model: str,
    *,
    provider: str | None,
    streaming: bool,
    enforced: str | None,
    profile: str | None = None,
    start: bool = True,
) -> RunTrace:
    """The run of one request to `model` (the backend's name for it). `enforced`: why the
    reply is checked (None: passed through); `profile`: the `x-outform-profile` the request
    named (its name is the step, unless `x-outform-step` says otherwise); `start`: emit
    `run.start` now."""
    name, sep, rest = model.partition(":")
    if provider is not None and sep:  # a native backend serves `provider:model` names too
        provider, model = name, rest
    return RunTrace.begin(
        source="gateway",
        labels=labels,
        profile=profile,
        provider=provider,
        model=model,
        mode="enforce" if enforced else "passthrough",
        mode_reason=enforced or "no response format to enforce, or enforcement off",
        streaming=streaming,
        strict=False,
        start=start,
    )


def planned(run: RunTrace, answer: object) -> None:
    """How a native backend had its provider enforce the format (the `plan` of its reply or
    stream), recorded as generate() records it (`format.native` or `format.skipped`), once
    per run: at its first attempt. A Chat Completions backend plans nothing."""
    chosen = getattr(answer, "plan", None)
    if isinstance(chosen, Plan) and run.attempt == 1:
        format_event(run, chosen)


async def complete(backend: Backend, body: Body, run: RunTrace) -> tuple[BackendReply, Any]:
    """One whole exchange with the backend, recorded: the reply and its Chat Completions
    body (a 502 when it is not one)."""
    sent = time.perf_counter()
    try:
        reply = await backend.complete(body)
        completion = reply.json()
    except Exception as error:
        run.call(elapsed_ms(sent), status=getattr(error, "status", None), error=error)
        raise
    planned(run, reply)
    choice = _first_choice(completion)
    run.call(
        elapsed_ms(sent),
        status=reply.status,
        tokens=usage_of(completion.get("usage")),
        finish_reason=choice.get("finish_reason"),
    )
    return reply, completion


class StreamCall:
    """A streamed exchange as the run sees it: started when asked for, its first content,
    its end (or failure)."""

    __slots__ = ("first", "run", "sent", "usage")

    def __init__(self, run: RunTrace) -> None:
        self.run = run
        self.sent = time.perf_counter()
        self.first: float | None = None
        self.usage = Usage()

    def chunk(self, chunk: Mapping[str, Any]) -> None:
        """A `chat.completion.chunk` seen on its way to the client."""
        if self.first is None:
            delta = _first_choice(chunk).get("delta")
            if isinstance(delta, dict) and delta.get("content"):
                self.first = time.perf_counter()
        if chunk.get("usage"):
            self.usage = usage_of(chunk["usage"])

    def data(self) -> None:
        """Bytes relayed as they came (the first counts as the first content)."""
        if self.first is None:
            self.first = time.perf_counter()

    def end(self, error: BaseException | str | None = None) -> None:
        """The exchange ended: whole (no `error`), broken by an exception, or cut because
        `error` (a reason, such as the client going away)."""
        run = self.run
        ttft = None if self.first is None else elapsed_ms(self.sent, self.first)
        status = getattr(error, "status", None) if error is not None else 200
        run.call(elapsed_ms(self.sent), status=status, ttft_ms=ttft, tokens=self.usage, error=error)
        run.end("error" if error is not None else "valid", tokens=self.usage, error=error)


def usage_of(usage: Any) -> Usage:
    """A Chat Completions `usage` object as outform's usage (zeros when absent, or when the
    gateway cannot read it: `gateway.usage`)."""
    return usage_tokens(usage)


def _first_choice(completion: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = completion.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return first if isinstance(first, dict) else {}
