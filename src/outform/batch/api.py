"""What every batch API module provides: pure translations, no I/O.

A batch API module turns the adapters' `WireRequest`s into the lines of that API's input file
(or inline list), describes the calls that create, read and list batches, and reads back the
provider's batch objects and result lines. The runner (`outform.batch.runner`) does the I/O
through transport; these modules only shape and read bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

from outform.providers.base import WireRequest

BatchPhase = Literal["running", "ended", "failed", "expired", "cancelled"]
"""Where a provider batch is: still working, done (results to read), or stopped early."""
OutcomeKind = Literal["reply", "error", "expired"]

JOB_KEY = "outform_job"
BATCH_KEY = "outform_batch"


@dataclass(frozen=True)
class Limits:
    """What one provider batch may hold. The defaults are the providers' documented limits;
    each can be lowered (never raised past what the provider accepts) in settings."""

    max_requests: int
    max_bytes: int
    min_requests: int = 1
    """Fewer rows than this are sent live instead (Bedrock requires a minimum per job)."""


@dataclass(frozen=True)
class Framing:
    """How request lines are joined into what is uploaded: a JSONL file, or (Anthropic) the
    JSON body of the create call, written the same way so it never sits whole in memory."""

    head: bytes = b""
    separator: bytes = b"\n"
    tail: bytes = b"\n"


JSONL = Framing()


@dataclass(frozen=True)
class BatchState:
    phase: BatchPhase
    outputs: tuple[str, ...] = ()
    """Where the results are: file ids, a results URL path, or S3 keys (per API)."""
    message: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """One result line: the reply body for a custom id, a provider error, or an expiry."""

    custom_id: str
    kind: OutcomeKind
    body: Mapping[str, Any] | None = None
    error: str = ""
    retryable: bool = False
    """A transient provider failure (overload, server error): worth sending again."""


class NotAResultError(ValueError):
    """A line of a batch's results that is JSON but not a result of the API's documented
    shape (a custom id and nothing else, a reply body that is no object, a result of no known
    type). It is no row's answer, whatever id it carries: the runner counts it unreadable, and
    a later well-formed line for the same row is still taken."""

    def __init__(self, detail: str, custom_id: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.custom_id = custom_id


def result_object(line: bytes, id_key: str) -> tuple[dict[str, Any], str]:
    """A results line read as a JSON object, and the custom id it carries under `id_key`:
    orjson.JSONDecodeError when it is not JSON, NotAResultError when it is no object or its id is
    no non-empty string."""
    item = orjson.loads(line)
    if not isinstance(item, dict):
        raise NotAResultError(f"not a result: a JSON {type(item).__name__}, not an object")
    custom_id = item.get(id_key)
    if not isinstance(custom_id, str) or not custom_id:
        shown = None if custom_id is None else str(custom_id)
        raise NotAResultError(f"not a result: no {id_key} string", shown)
    return item, custom_id


@dataclass(frozen=True)
class Found:
    """A provider batch found by listing: its id and the batch key it carries."""

    provider_id: str
    key: str


class BatchApi(Protocol):
    name: str
    limits: Limits
    framing: Framing

    def line(self, custom_id: str, wire: WireRequest) -> bytes:
        """One request as a line of the input (no trailing newline)."""
        ...

    def state(self, body: Mapping[str, Any]) -> BatchState:
        """A provider batch object, read."""
        ...

    def outcome(self, line: bytes) -> Outcome:
        """One line of the results, read: orjson.JSONDecodeError when it is not JSON,
        NotAResultError when it is not a result of the API's documented shape."""
        ...


def retryable_status(status: int | None) -> bool:
    return status is not None and (status == 429 or status >= 500)


def batch_label(job: str, key: str) -> str:
    """The name a provider batch carries, so that a restarted job can find its batches by
    listing: letters, digits and dashes only (Bedrock job names)."""
    return f"outform-{job}-{key}"


def parse_label(label: str, job: str) -> str | None:
    prefix = f"outform-{job}-"
    return label[len(prefix) :] if label.startswith(prefix) else None
