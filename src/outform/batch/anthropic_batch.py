"""Anthropic Message Batches: the requests inline in one create call.

Shapes as the official `anthropic` SDK sends them (`messages.batches.create`, `retrieve`,
`list`, `results`), checked in tests/batch against a recording server. Each request is
`{"custom_id", "params"}` with `params` the Messages body the adapter builds. Limits: 100,000
requests or 256 MB per batch, whichever comes first (Anthropic's batch processing guide).

Message Batches carry no metadata. A batch created but not recorded before a crash is found
again by listing: created after the submission was recorded, holding the same number of
requests, and not already claimed by another batch of the job; its results are then checked
against the rows it should hold (`custom_id`s outside them are ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from outform.batch.api import BatchState, Framing, Limits, NotAResultError, Outcome, result_object
from outform.providers.base import WireRequest

_RETRYABLE: Final = frozenset(
    {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
)


class AnthropicBatch:
    name = "anthropic"
    limits = Limits(max_requests=100_000, max_bytes=256 * 1024 * 1024)
    framing = Framing(head=b'{"requests":[', separator=b",", tail=b"]}")

    def line(self, custom_id: str, wire: WireRequest) -> bytes:
        return orjson.dumps({"custom_id": custom_id, "params": wire.body})

    # -- calls ---------------------------------------------------------------------------------

    @staticmethod
    def create() -> WireRequest:
        """POST /messages/batches under the versioned base URL; the body is the requests."""
        return WireRequest("/messages/batches", {})

    @staticmethod
    def created_id(body: Mapping[str, Any]) -> str:
        return str(body["id"])

    @staticmethod
    def retrieve(provider_id: str) -> WireRequest:
        return WireRequest(f"/messages/batches/{provider_id}", {}, method="GET")

    @staticmethod
    def listing(after: str | None) -> WireRequest:
        query = "?limit=100" + (f"&after_id={after}" if after else "")
        return WireRequest(f"/messages/batches{query}", {}, method="GET")

    @staticmethod
    def listed(body: Mapping[str, Any]) -> tuple[list[tuple[str, float, int]], str | None]:
        """(id, created as Unix time, number of requests) of each listed batch, and the
        cursor of the next page, if any."""
        listed = []
        data = body.get("data") or []
        for batch in data:
            counts = batch.get("request_counts") or {}
            total = sum(int(v) for v in counts.values() if isinstance(v, int))
            listed.append((str(batch["id"]), _unix(batch.get("created_at")), total))
        after = (str(body.get("last_id") or "") or None) if body.get("has_more") else None
        return listed, after

    @staticmethod
    def download(output: str) -> WireRequest:
        return WireRequest(output, {}, method="GET", headers={"accept": "application/binary"})

    # -- reading -------------------------------------------------------------------------------

    def state(self, body: Mapping[str, Any]) -> BatchState:
        counts = dict(body.get("request_counts") or {})
        if body.get("processing_status") != "ended":
            return BatchState("running", counts=counts)
        url = str(body.get("results_url") or "")
        if not url:
            return BatchState("failed", message="the batch ended without a results_url")
        parts = urlsplit(url)
        # Only the path is kept: results are fetched from the configured base URL, with its key,
        # never from a host named in a reply.
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return BatchState("ended", (path,), counts=counts)

    def outcome(self, line: bytes) -> Outcome:
        """`{"custom_id", "result": {"type": ...}}`, the type `succeeded` (with its
        `message`), `errored` (with its `error`), `canceled` or `expired` (Message Batches'
        results). Anything else is NotAResultError: a `custom_id` alone, a result of another type,
        a success without a message object."""
        item, custom_id = result_object(line, "custom_id")
        result = item.get("result")
        if not isinstance(result, dict):
            raise NotAResultError("not a result: no result object", custom_id)
        kind = result.get("type")
        if kind == "succeeded":
            message = result.get("message")
            if not isinstance(message, dict):
                raise NotAResultError("not a result: a success without a message object", custom_id)
            return Outcome(custom_id, "reply", message)
        if kind == "expired":
            return Outcome(custom_id, "expired", error="the batch expired before this request ran")
        if kind == "canceled":
            return Outcome(custom_id, "error", error="the batch was canceled", retryable=True)
        if kind != "errored":
            raise NotAResultError(f"not a result: a result of type {kind!r}", custom_id)
        error = result.get("error")
        if not isinstance(error, dict):
            raise NotAResultError(
                "not a result: an error result without an error object", custom_id
            )
        inner: dict[str, Any] = error["error"] if isinstance(error.get("error"), dict) else error
        error_type = str(inner.get("type") or "error")
        return Outcome(
            custom_id,
            "error",
            error=f"{error_type}: {inner.get('message', '')}",
            retryable=error_type in _RETRYABLE,
        )


def _unix(value: Any) -> float:
    if not isinstance(value, str):
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
