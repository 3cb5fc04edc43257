"""Gemini batch mode: a JSONL file uploaded through the resumable upload protocol, then
`models/{model}:batchGenerateContent` over it.

Shapes as the official `google-genai` SDK sends them (`files.upload`, `batches.create`,
`batches.get`, `batches.list`, `files.download`), checked in tests/batch against a recording
server. Input line: `{"key", "request"}` with `request` the generateContent body the adapter
builds. Paths are relative to the API's origin and carry its version (`v1beta` by default).
The batch's `displayName` carries the job and batch key. Limit: 2 GB per input file (Gemini's
batch API guide); no request count is documented, so outform keeps each file to 100,000
requests, the same as the largest other API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from outform.batch.api import (
    JSONL,
    BatchState,
    Found,
    Limits,
    NotAResultError,
    Outcome,
    parse_label,
    result_object,
)
from outform.providers.base import WireRequest

_RUNNING: Final = frozenset(
    {"BATCH_STATE_PENDING", "BATCH_STATE_RUNNING", "JOB_STATE_PENDING", "JOB_STATE_RUNNING"}
)
_RETRYABLE: Final = frozenset(
    {"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"}
)
MEDIA_TYPE: Final = "application/jsonl"


class GeminiBatch:
    name = "gemini"
    limits = Limits(max_requests=100_000, max_bytes=2 * 1024 * 1024 * 1024)
    framing = JSONL

    def __init__(self, version: str = "v1beta") -> None:
        self.version = version

    def line(self, custom_id: str, wire: WireRequest) -> bytes:
        return orjson.dumps({"key": custom_id, "request": wire.body})

    # -- calls ---------------------------------------------------------------------------------

    def upload_start(self, size: int, label: str) -> WireRequest:
        return WireRequest(
            f"/upload/{self.version}/files",
            {"file": {"display_name": label, "mime_type": MEDIA_TYPE, "size_bytes": size}},
            headers={
                "x-goog-upload-protocol": "resumable",
                "x-goog-upload-command": "start",
                "x-goog-upload-header-content-length": str(size),
                "x-goog-upload-header-content-type": MEDIA_TYPE,
            },
        )

    @staticmethod
    def upload_finish(upload_path: str, size: int) -> WireRequest:
        return WireRequest(
            upload_path,
            {},
            headers={
                "x-goog-upload-protocol": "resumable",
                "x-goog-upload-command": "upload, finalize",
                "x-goog-upload-header-content-length": str(size),
                "x-goog-upload-header-content-type": MEDIA_TYPE,
                "x-goog-upload-offset": "0",
            },
        )

    @staticmethod
    def uploaded_id(body: Mapping[str, Any]) -> str:
        return str((body.get("file") or body)["name"])

    def create(self, model_path: str, file_name: str, label: str) -> WireRequest:
        """`model_path` as the adapter names it (`/models/gemini-2.5-flash:generateContent`)."""
        model = model_path.strip("/").split(":", 1)[0]
        return WireRequest(
            f"/{self.version}/{model}:batchGenerateContent",
            {"batch": {"inputConfig": {"fileName": file_name}, "displayName": label}},
        )

    @staticmethod
    def created_id(body: Mapping[str, Any]) -> str:
        return str(body["name"])

    def retrieve(self, provider_id: str) -> WireRequest:
        return WireRequest(f"/{self.version}/{provider_id}", {}, method="GET")

    def listing(self, after: str | None) -> WireRequest:
        query = "?pageSize=100" + (f"&pageToken={after}" if after else "")
        return WireRequest(f"/{self.version}/batches{query}", {}, method="GET")

    @staticmethod
    def found(body: Mapping[str, Any], job: str) -> tuple[list[Found], str | None]:
        found = []
        for operation in body.get("operations") or body.get("batches") or []:
            meta = operation.get("metadata") or operation
            key = parse_label(str(meta.get("displayName") or ""), job)
            if key is not None:
                found.append(Found(str(operation["name"]), key))
        return found, (str(body.get("nextPageToken") or "") or None)

    def download(self, output: str) -> WireRequest:
        return WireRequest(f"/{self.version}/{output}:download?alt=media", {}, method="GET")

    # -- reading -------------------------------------------------------------------------------

    def state(self, body: Mapping[str, Any]) -> BatchState:
        meta = body.get("metadata") or body
        state = str(meta.get("state") or "")
        if state in _RUNNING or not state:
            return BatchState("running")
        output = meta.get("output") or (body.get("response") or {})
        responses = output.get("responsesFile")
        outputs = (str(responses),) if responses else ()
        if state.endswith("SUCCEEDED"):
            return BatchState("ended", outputs)
        if state.endswith("EXPIRED"):
            return BatchState("expired", outputs, "the batch expired")
        if state.endswith("CANCELLED"):
            return BatchState("cancelled", outputs, "the batch was cancelled")
        error = body.get("error") or {}
        return BatchState("failed", outputs, str(error.get("message") or f"batch state {state}"))

    def outcome(self, line: bytes) -> Outcome:
        """`{"key", "response": GenerateContentResponse}` or `{"key", "error": Status}`
        (batchGenerateContent's responses file). Anything else is NotAResultError."""
        item, key = result_object(line, "key")
        if isinstance(item.get("response"), dict):
            return Outcome(key, "reply", item["response"])
        error = item.get("error") or item.get("status")
        if not isinstance(error, dict):
            raise NotAResultError("not a result: neither a response nor an error object", key)
        status = str(error.get("status") or error.get("code") or "error")
        return Outcome(
            key,
            "error",
            error=f"{status}: {error.get('message', '')}",
            retryable=status in _RETRYABLE or str(error.get("code")) in ("429", "500", "503"),
        )
