"""Amazon Bedrock batch inference: JSONL in S3, `CreateModelInvocationJob`, JSONL back in S3.

Shapes from botocore's `bedrock` service model (`create_model_invocation_job`,
`get_model_invocation_job`, `list_model_invocation_jobs`), checked in tests/batch against a
recording server. Input line: `{"recordId", "modelInput"}` with `modelInput` the Converse body
the adapter builds, sent with `modelInvocationType: "Converse"`. The job name carries the job
and batch key, and `clientRequestToken` makes the create call idempotent. Limits (Bedrock's
default quotas): 50,000 records and 1 GB per input file, at least 100 records per job; fewer
rows than that are sent live through Converse.

Batch inference takes neither `outputConfig` nor `toolConfig`, so the job plan uses the
schema in the instructions (see `outform.batch.job`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

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
    retryable_status,
)
from outform.providers.base import WireRequest

_RUNNING: Final = frozenset({"Submitted", "Validating", "Scheduled", "InProgress", "Stopping"})
OUTPUT_SUFFIX: Final = ".jsonl.out"


class BedrockBatch:
    name = "bedrock"
    limits = Limits(max_requests=50_000, max_bytes=1024 * 1024 * 1024, min_requests=100)
    framing = JSONL

    def line(self, custom_id: str, wire: WireRequest) -> bytes:
        return orjson.dumps({"recordId": custom_id, "modelInput": wire.body})

    # -- calls ---------------------------------------------------------------------------------

    @staticmethod
    def create(
        *, model: str, label: str, token: str, role_arn: str, input_uri: str, output_uri: str
    ) -> WireRequest:
        return WireRequest(
            "/model-invocation-job",
            {
                "jobName": label,
                "roleArn": role_arn,
                "clientRequestToken": token,
                "modelId": model,
                "inputDataConfig": {
                    "s3InputDataConfig": {"s3Uri": input_uri, "s3InputFormat": "JSONL"}
                },
                "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": output_uri}},
                "modelInvocationType": "Converse",
            },
        )

    @staticmethod
    def created_id(body: Mapping[str, Any]) -> str:
        return str(body["jobArn"])

    @staticmethod
    def retrieve(provider_id: str) -> WireRequest:
        return WireRequest(f"/model-invocation-job/{quote(provider_id, safe='')}", {}, method="GET")

    @staticmethod
    def listing(job: str, after: str | None) -> WireRequest:
        query = f"?nameContains=outform-{job}-&maxResults=100"
        query += f"&nextToken={quote(after, safe='')}" if after else ""
        return WireRequest(f"/model-invocation-jobs{query}", {}, method="GET")

    @staticmethod
    def found(body: Mapping[str, Any], job: str) -> tuple[list[Found], str | None]:
        found = []
        for summary in body.get("invocationJobSummaries") or []:
            key = parse_label(str(summary.get("jobName") or ""), job)
            if key is not None:
                found.append(Found(str(summary["jobArn"]), key))
        return found, (str(body.get("nextToken") or "") or None)

    # -- reading -------------------------------------------------------------------------------

    def state(self, body: Mapping[str, Any]) -> BatchState:
        status = str(body.get("status") or "")
        output = ((body.get("outputDataConfig") or {}).get("s3OutputDataConfig") or {}).get("s3Uri")
        outputs = (str(output),) if output else ()
        counts = {
            k: int(body[k])
            for k in (
                "totalRecordCount",
                "processedRecordCount",
                "successRecordCount",
                "errorRecordCount",
            )
            if isinstance(body.get(k), int)
        }
        if status in _RUNNING:
            return BatchState("running", counts=counts)
        if status in ("Completed", "PartiallyCompleted"):
            return BatchState("ended", outputs, str(body.get("message") or ""), counts)
        if status == "Expired":
            return BatchState("expired", outputs, "the job expired", counts)
        if status == "Stopped":
            return BatchState("cancelled", outputs, "the job was stopped", counts)
        return BatchState("failed", outputs, str(body.get("message") or f"job status {status}"))

    def outcome(self, line: bytes) -> Outcome:
        """`{"recordId", "modelInput", "modelOutput"}` or `{"recordId", "modelInput",
        "error": {"errorCode", "errorMessage"}}` (a job's `.jsonl.out` records). Anything else
        is NotAResultError."""
        item, record = result_object(line, "recordId")
        error = item.get("error")
        if error:
            code = error.get("errorCode") if isinstance(error, dict) else None
            message = error.get("errorMessage") if isinstance(error, dict) else str(error)
            return Outcome(
                record,
                "error",
                error=f"{code or 'error'}: {message}",
                retryable=retryable_status(code if isinstance(code, int) else None),
            )
        output = item.get("modelOutput")
        if isinstance(output, dict):
            return Outcome(record, "reply", output)
        raise NotAResultError("not a result: neither a modelOutput nor an error", record)
