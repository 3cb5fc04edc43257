"""A job's settings (stored in the manifest) and what is derived from them on every start:
the plan, the pipeline and the request of each row, built exactly as generate() builds them.

One plan serves every row: the same format, provider and model. Follow-up rounds re-ask the
whole reply with the hint (as the adapters' `build` sees it: the row's messages, the bad reply
and the hint), never a subset of fields, so one pipeline parses every reply of the job.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from outform.batch.api import BatchApi
from outform.batch.rows import Template
from outform.errors import UsageError
from outform.format import JsonSchemaFormat, ResponseFormat
from outform.parse.hint import RetryHint, Violation
from outform.parse.pipeline import Pipeline
from outform.plan import Mode, Plan, plan
from outform.providers.base import Message, Request, WireRequest
from outform.providers.registry import Resolved, resolve
from outform.reask import reask_messages
from outform.run import _pipeline
from outform.transport import hide_secrets

BATCH_APIS = ("openai", "openai-responses", "anthropic", "gemini", "bedrock")
"""Providers served through a batch API; every other provider runs the job live."""


@dataclass(frozen=True)
class JobSpec:
    """Everything needed to (re)start a job, as JSON in the manifest. No secret is kept:
    keys are read from the environment (or passed again) at every start."""

    model: str
    format: Mapping[str, Any]
    """The response format's dictionary form (`ResponseFormat.to_dict()`)."""
    input: str
    output: str | None = None
    prompt: str | None = None
    id_field: str = "id"
    mode: Mode = "auto"
    rounds: int = 2
    """Follow-up rounds at most for rows whose reply failed validation."""
    level: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    live: bool = False
    """Run live even where the provider has a batch API."""
    concurrency: int = 8
    max_requests: int | None = None
    max_bytes: int | None = None
    poll_interval: float = 30.0
    s3_uri: str | None = None
    role_arn: str | None = None
    input_size: int = 0
    input_mtime: float = 0.0
    labels: Mapping[str, Any] = field(default_factory=dict)
    """The rows' trace labels (`step`, `agent`, `tags`), resolved when the job was made."""

    def to_json(self) -> bytes:
        return orjson.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, data: bytes | str) -> JobSpec:
        values = orjson.loads(data)
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def new_job_id() -> str:
    """Sortable and short; letters, digits and dashes only (it goes into batch names)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


@dataclass(frozen=True)
class Prepared:
    """What a job's spec means at run time."""

    spec: JobSpec
    resolved: Resolved
    fmt: ResponseFormat
    plan: Plan
    pipeline: Pipeline[Any]
    template: Request
    prompt: Template | None
    api: str | None
    """The batch API in use, or None when the job runs live."""

    @property
    def input(self) -> Path:
        return Path(self.spec.input)

    def request(self, messages: Sequence[Message]) -> Request:
        base = list(messages)
        if self.plan.instructions:
            base.insert(0, Message.system(self.plan.instructions))
        return dataclasses.replace(self.template, messages=tuple(base))

    def reask(self, messages: Sequence[Message], text: str, hint: RetryHint) -> Request:
        first = self.request(messages)
        return dataclasses.replace(
            first, messages=tuple(reask_messages(first.messages, text, hint, None))
        )

    def wire(self, request: Request) -> WireRequest:
        return self.resolved.adapter.build(request)

    def hide(self, text: str) -> str:
        """`text` without a secret the job sends (a model or a provider may echo it): the
        job's key (from the provider's variable, `--api-key-env` or `api_key=`) as `***`, as
        generate() masks it, and every other secret outform knows. Applied to everything the
        job writes of a reply: its rows' output lines, their history and re-ask, warnings."""
        return hide_secrets(text, self.resolved.endpoint)


def prepare(
    spec: JobSpec, *, api_key: str | None = None, env: Mapping[str, str] | None = None
) -> Prepared:
    """Resolve the model, plan the calls and compile the pipeline: UsageError (unknown model,
    a schema the provider cannot take, a bad mode) before anything is read or sent."""
    import os

    resolved = resolve(spec.model, base_url=spec.base_url, api_key=api_key, env=env or os.environ)
    fmt = ResponseFormat.from_dict(spec.format)
    if not isinstance(fmt, JsonSchemaFormat):
        raise UsageError(
            "a batch job needs a JSON schema to check each reply against",
            where="format",
            fix="pass --schema S.json or --type module:Class",
        )
    provider = resolved.spec.name
    api = None if spec.live or provider not in BATCH_APIS else provider
    mode = spec.mode
    if api == "bedrock" and mode == "auto":
        mode = "prompted"  # batch inference takes neither outputConfig nor toolConfig
    call_plan = plan(fmt, provider=resolved.spec.profile_name, model=resolved.model, mode=mode)
    if spec.rounds < 0:
        raise UsageError("rounds must be 0 or more", where="rounds")
    template = Request(
        model=resolved.model,
        messages=(),
        output=call_plan.output,
        thinking=call_plan.thinking,
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        extra=dict(spec.extra),
    )
    pipeline = _pipeline(fmt, call_plan, spec.level, {})
    prompt = Template(spec.prompt) if spec.prompt is not None else None
    return Prepared(spec, resolved, fmt, call_plan, pipeline, template, prompt, api)


def hint_from_dict(data: Mapping[str, Any]) -> RetryHint:
    """A stored hint, back as the RetryHint it was (for the follow-up round's re-ask)."""
    return RetryHint(tuple(Violation(**v) for v in data.get("violations", ())))


def batch_api(prepared: Prepared) -> BatchApi:
    """The pure translation module of the job's batch API."""
    from urllib.parse import urlsplit

    name = prepared.api
    if name in ("openai", "openai-responses"):
        from outform.batch.openai_batch import OpenAIBatch

        return OpenAIBatch(urlsplit(prepared.resolved.endpoint.base_url).path.rstrip("/"))
    if name == "anthropic":
        from outform.batch.anthropic_batch import AnthropicBatch

        return AnthropicBatch()
    if name == "gemini":
        from outform.batch.gemini_batch import GeminiBatch

        version = urlsplit(prepared.resolved.endpoint.base_url).path.strip("/") or "v1beta"
        return GeminiBatch(version)
    if name == "bedrock":
        from outform.batch.bedrock_batch import BedrockBatch

        return BedrockBatch()
    raise UsageError(f"{prepared.spec.model} has no batch API here", where="model")
