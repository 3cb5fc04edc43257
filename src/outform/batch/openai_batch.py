"""OpenAI Batch: a JSONL file uploaded with purpose `batch`, then a batch over one endpoint.

Shapes as the official `openai` SDK sends them (`files.create`, `batches.create`,
`batches.retrieve`, `batches.list`, `files.content`), checked in tests/batch against a
recording server. Input line: `{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body"}`. The batch carries the job and batch key in `metadata`, so a restarted job finds a
batch it created but did not record. Limits: 50,000 requests and 200 MB per input file
(OpenAI's API reference, `CreateBatchRequest.input_file_id`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from outform.batch.api import (
    BATCH_KEY,
    JOB_KEY,
    JSONL,
    BatchState,
    Found,
    Limits,
    NotAResultError,
    Outcome,
    result_object,
    retryable_status,
)
from outform.providers.base import WireRequest

_RUNNING: Final = frozenset({"validating", "in_progress", "finalizing", "cancelling"})


class OpenAIBatch:
    name = "openai"
    limits = Limits(max_requests=50_000, max_bytes=200 * 1024 * 1024)
    framing = JSONL

    def __init__(self, version_prefix: str = "/v1") -> None:
        self.prefix = version_prefix

    def endpoint_of(self, wire: WireRequest) -> str:
        """The batch's `endpoint` (and each line's `url`): the adapter's path under /v1."""
        return self.prefix + wire.path

    def line(self, custom_id: str, wire: WireRequest) -> bytes:
        return orjson.dumps(
            {
                "custom_id": custom_id,
                "method": "POST",
                "url": self.endpoint_of(wire),
                "body": wire.body,
            }
        )

    # -- calls ---------------------------------------------------------------------------------

    @staticmethod
    def upload() -> WireRequest:
        """POST /files, multipart: `purpose=batch` and the file (the runner adds the bytes)."""
        return WireRequest("/files", {"purpose": "batch"})

    @staticmethod
    def uploaded_id(body: Mapping[str, Any]) -> str:
        return str(body["id"])

    @staticmethod
    def create(file_id: str, endpoint: str, job: str, key: str) -> WireRequest:
        return WireRequest(
            "/batches",
            {
                "completion_window": "24h",
                "endpoint": endpoint,
                "input_file_id": file_id,
                "metadata": {JOB_KEY: job, BATCH_KEY: key},
            },
        )

    @staticmethod
    def created_id(body: Mapping[str, Any]) -> str:
        return str(body["id"])

    @staticmethod
    def retrieve(provider_id: str) -> WireRequest:
        return WireRequest(f"/batches/{provider_id}", {}, method="GET")

    @staticmethod
    def listing(after: str | None) -> WireRequest:
        query = "?limit=100" + (f"&after={after}" if after else "")
        return WireRequest(f"/batches{query}", {}, method="GET")

    @staticmethod
    def found(body: Mapping[str, Any], job: str) -> tuple[list[Found], str | None]:
        """The job's batches on one page of the listing, and the cursor of the next page."""
        found = []
        data = body.get("data") or []
        for batch in data:
            metadata = batch.get("metadata") or {}
            if metadata.get(JOB_KEY) == job and BATCH_KEY in metadata:
                found.append(Found(str(batch["id"]), str(metadata[BATCH_KEY])))
        after = str(data[-1]["id"]) if data and body.get("has_more") else None
        return found, after

    @staticmethod
    def download(output: str) -> WireRequest:
        return WireRequest(f"/files/{output}/content", {}, method="GET")

    # -- reading -------------------------------------------------------------------------------

    def state(self, body: Mapping[str, Any]) -> BatchState:
        status = str(body.get("status"))
        outputs = tuple(str(body[k]) for k in ("output_file_id", "error_file_id") if body.get(k))
        counts = dict(body.get("request_counts") or {})
        if status in _RUNNING:
            return BatchState("running", counts=counts)
        if status == "completed":
            return BatchState("ended", outputs, counts=counts)
        if status == "expired":
            return BatchState("expired", outputs, "the 24h completion window passed", counts)
        if status == "cancelled":
            return BatchState("cancelled", outputs, "the batch was cancelled", counts)
        errors = (body.get("errors") or {}).get("data") or []
        message = "; ".join(
            f"{e.get('message')}" + (f" (line {e['line']})" if e.get("line") else "")
            for e in errors[:5]
        )
        return BatchState("failed", outputs, message or f"batch status {status}", counts)

    def outcome(self, line: bytes) -> Outcome:
        """`{"custom_id", "response": {"status_code", "body"}, "error": null}`, or
        `{"custom_id", "response": null, "error": {"code", "message"}}` (OpenAI's batch
        output and error files). Anything else is NotAResultError: a `custom_id` alone, a
        `response` without an integer `status_code` or with a `body` that is no object."""
        item, custom_id = result_object(line, "custom_id")
        error = item.get("error")
        if error:
            if not isinstance(error, dict):
                raise NotAResultError("not a result: its error is not an object", custom_id)
            code = str(error.get("code") or "")
            if code == "batch_expired":
                return Outcome(custom_id, "expired", error=str(error.get("message") or code))
            return Outcome(custom_id, "error", error=f"{code}: {error.get('message')}")
        response = item.get("response")
        if not isinstance(response, dict):
            raise NotAResultError("not a result: neither a response nor an error", custom_id)
        status = response.get("status_code")
        body = response.get("body")
        if not isinstance(status, int) or isinstance(status, bool) or not isinstance(body, dict):
            raise NotAResultError(
                "not a result: its response has no integer status_code and body object",
                custom_id,
            )
        if status == 200:
            return Outcome(custom_id, "reply", body)
        message = body.get("error")
        text = message.get("message") if isinstance(message, dict) else None
        return Outcome(
            custom_id,
            "error",
            error=f"HTTP {status}: {text or 'no error message'}",
            retryable=retryable_status(status),
        )
