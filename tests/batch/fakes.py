"""Fake batch servers for the four batch APIs: real HTTP on 127.0.0.1, with state.

One server plays one API: it stores uploaded files, creates batches, reports them running for
`polls` reads and then ended, and writes each batch's results by asking `model` for the reply
text of every request (`model(custom_id, request_body) -> str`, or an `Error` for a provider
error on that request). Bodies and results have the shapes the official SDKs read (built
with the helpers of tests/providers). Every request is recorded, and every custom id ever
submitted is counted, so a test can prove nothing was sent twice.

Fault injection: `stall(match)` makes the first request whose "METHOD path" matches block
(after its side effect, before its reply, or half-way through a download) until `release()`,
with `stalled` set meanwhile: the moment to kill -9 a client. `Relay` does the same in front
of another server (S3, for Bedrock's results).
"""

from __future__ import annotations

import email.message
import email.parser
import http.client
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from tests.providers import openai_wire
from tests.providers.fake import Recorded


@dataclass(frozen=True)
class Error:
    """A provider error for one request (status 500 is transient, 400 is not)."""

    status: int = 500
    message: str = "the server had an error"


@dataclass(frozen=True)
class Expired:
    """The batch runs out of time before this request: the batch ends expired, and the
    request has no result (OpenAI: a `batch_expired` line in the error file; Anthropic: an
    `expired` result; Gemini and Bedrock: no line at all)."""


Model = Callable[[str, Mapping[str, Any]], "str | Error | Expired"]


class _Handler(BaseHTTPRequestHandler):
    """Every method to `answer`, quietly, over HTTP/1.1."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def body(self) -> bytes | None:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else None

    def answer(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self.answer()

    def do_POST(self) -> None:
        self.answer()

    def do_PUT(self) -> None:
        self.answer()

    def do_HEAD(self) -> None:
        self.answer()


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client killed mid-request is what the kill tests do: not worth a traceback."""


class Server:
    """A threaded HTTP server on 127.0.0.1 that can stall one request (see the module)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.stalled = threading.Event()
        self._release = threading.Event()
        self._stall: str | None = None
        self._server = _Quiet(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def stall(self, match: str) -> None:
        self._stall = match
        self.stalled.clear()
        self._release.clear()

    def release(self) -> None:
        self._stall = None
        self._release.set()

    def maybe_stall(self, what: str) -> None:
        if self._stall is not None and self._stall in what:
            self._stall = None
            self.stalled.set()
            self._release.wait(30)


class Served:
    """A fake with its own server: its URL, a context manager, the stall controls."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = Server(handler)
        self.stalled = self.server.stalled
        self.stall, self.release = self.server.stall, self.server.release

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> Self:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


def send_body(handler: BaseHTTPRequestHandler, server: Server, data: bytes, what: str) -> None:
    """Write a body half, then (if `what` is the stalled request) stall, then the rest."""
    half = len(data) // 2
    handler.wfile.write(data[:half])
    handler.wfile.flush()
    server.maybe_stall(what)
    handler.wfile.write(data[half:])


class BatchFake(Served):
    def __init__(self, api: str, model: Model, *, polls: int = 0, s3: Any = None) -> None:
        self.api = api
        self.model = model
        self.polls = polls
        self.s3 = s3
        """A botocore S3 client (Bedrock): where job inputs are read and outputs written."""
        self.requests: list[Recorded] = []
        self.submitted: Counter[str] = Counter()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.reads: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__(self._handler())

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    # -- model replies -------------------------------------------------------------------------

    def _results(self, lines: list[Mapping[str, Any]]) -> tuple[bytes, bytes, bool]:
        """The results file, the error file (OpenAI's expired requests), and whether any
        request expired."""
        out: list[bytes] = []
        errors: list[bytes] = []
        expired = False
        for item in lines:
            custom_id, body = _request_of(self.api, item)
            answer = self.model(custom_id, body)
            if isinstance(answer, Expired):
                expired = True
                line = _expired(self.api, custom_id)
                if line is not None:
                    (errors if self.api == "openai" else out).append(orjson.dumps(line))
                continue
            out.append(orjson.dumps(_result(self.api, custom_id, body, answer)))
        return b"\n".join(out) + b"\n", b"\n".join(errors) + b"\n" if errors else b"", expired

    def _create(self, lines: list[Mapping[str, Any]], meta: Mapping[str, Any]) -> dict[str, Any]:
        for item in lines:
            self.submitted[_request_of(self.api, item)[0]] += 1
        batch_id = self._new_id({"openai": "batch_", "anthropic": "msgbatch_"}.get(self.api, ""))
        batch = {"id": batch_id, "lines": lines, "meta": dict(meta), "created": time.time()}
        self.batches[batch_id] = batch
        return batch

    def _finished(self, batch: dict[str, Any]) -> bool:
        self.reads[batch["id"]] += 1
        if self.reads[batch["id"]] > self.polls and "output" not in batch:
            output_id = self._new_id("files/out" if self.api == "gemini" else "out")
            self.files[output_id], errors, batch["expired"] = self._results(batch["lines"])
            batch["output"] = output_id
            if errors:
                batch["errors"] = self._new_id("err")
                self.files[batch["errors"]] = errors
        return "output" in batch

    # -- HTTP ----------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(_Handler):
            def answer(self) -> None:
                body = self.body() or b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append(Recorded(self.command, self.path, headers, body))
                with fake._lock:
                    status, reply, extra = route(fake, self.command, self.path, headers, body)
                what = f"{self.command} {urlsplit(self.path).path}"
                if isinstance(reply, bytes):
                    self._download(status, reply, what)
                    return
                fake.server.maybe_stall(what)
                raw = orjson.dumps(reply)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for key, value in extra.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            def _download(self, status: int, data: bytes, what: str) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/octet-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                send_body(self, fake.server, data, what)

        return Handler


class Relay(Served):
    """A pass-through to another HTTP server (moto's S3, for Bedrock jobs) that can stall one
    download half-way, as BatchFake can: the moment to kill -9 a client reading from S3."""

    def __init__(self, target: str) -> None:
        self.target = urlsplit(target)
        super().__init__(self._handler())

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        relay = self

        class Handler(_Handler):
            def answer(self) -> None:
                body = self.body()
                skip = {"host", "connection", "expect"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                connection = http.client.HTTPConnection(
                    relay.target.hostname or "127.0.0.1", relay.target.port, timeout=30
                )
                try:
                    connection.request(self.command, self.path, body=body, headers=headers)
                    reply = connection.getresponse()
                    data = reply.read()
                finally:
                    connection.close()
                self.send_response(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    send_body(
                        self, relay.server, data, f"{self.command} {urlsplit(self.path).path}"
                    )

        return Handler


def route(
    fake: BatchFake, method: str, raw_path: str, headers: Mapping[str, str], body: bytes
) -> tuple[int, Any, dict[str, str]]:
    parts = urlsplit(raw_path)
    path, query = unquote(parts.path), parse_qs(parts.query)
    handler = {
        "openai": _openai,
        "anthropic": _anthropic,
        "gemini": _gemini,
        "bedrock": _bedrock,
        "live": _live,
    }
    return handler[fake.api](fake, method, path, query, headers, body)


def _jsonl(data: bytes) -> list[Any]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


# -- OpenAI ------------------------------------------------------------------------------------


def _openai(
    fake: BatchFake, method: str, path: str, query: Any, headers: Any, body: bytes
) -> tuple[int, Any, dict[str, str]]:
    if method == "POST" and path == "/v1/files":
        form = _multipart(headers["content-type"], body)
        file_id = fake._new_id("file-")
        fake.files[file_id] = form["file"]
        return 200, _openai_file(file_id, form), {}
    if method == "POST" and path == "/v1/batches":
        request = orjson.loads(body)
        batch = fake._create(_jsonl(fake.files[request["input_file_id"]]), request)
        return 200, _openai_batch(fake, batch, finished=False), {}
    if method == "GET" and path == "/v1/batches":
        data = [_openai_batch(fake, b, finished=False) for b in reversed(fake.batches.values())]
        return 200, {"object": "list", "data": data, "has_more": False}, {}
    if method == "GET" and path.startswith("/v1/batches/"):
        batch = fake.batches[path.rsplit("/", 1)[1]]
        return 200, _openai_batch(fake, batch, finished=fake._finished(batch)), {}
    if method == "GET" and path.startswith("/v1/files/") and path.endswith("/content"):
        return 200, fake.files[path.split("/")[3]], {}
    return 404, {"error": {"message": f"no route {method} {path}"}}, {}


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    message = email.parser.BytesParser().parsebytes(
        b"content-type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    form: dict[str, bytes] = {}
    for part in message.get_payload():
        assert isinstance(part, email.message.Message)
        name = str(part.get_param("name", header="content-disposition"))
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        form[name] = payload
    return form


def _openai_file(file_id: str, form: Mapping[str, bytes]) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": len(form["file"]),
        "created_at": 1_767_225_600,
        "filename": "input.jsonl",
        "purpose": form["purpose"].decode(),
        "status": "processed",
    }


def _openai_batch(fake: BatchFake, batch: dict[str, Any], *, finished: bool) -> dict[str, Any]:
    meta = batch["meta"]
    done = finished or "output" in batch
    total = len(batch["lines"])
    return {
        "id": batch["id"],
        "object": "batch",
        "endpoint": meta["endpoint"],
        "input_file_id": meta["input_file_id"],
        "completion_window": "24h",
        "status": ("expired" if batch["expired"] else "completed") if done else "in_progress",
        "output_file_id": batch.get("output") if done else None,
        "error_file_id": batch.get("errors") if done else None,
        "created_at": int(batch["created"]),
        "request_counts": {"total": total, "completed": total if done else 0, "failed": 0},
        "metadata": meta.get("metadata"),
    }


def _live(
    fake: BatchFake, method: str, path: str, query: Any, headers: Any, body: bytes
) -> tuple[int, Any, dict[str, str]]:
    """A Chat Completions server with no batch API (vLLM, Ollama's /v1): one call a row. The
    custom id is read from the user message ("... #<id>")."""
    request = orjson.loads(body)
    text = request["messages"][-1]["content"]
    first = next(m["content"] for m in request["messages"] if m["role"] == "user")
    custom_id = str(first).rsplit("#", 1)[-1]
    if request["messages"][-1]["role"] != "user" or text == first:
        fake.submitted[custom_id] += 1
    answer = fake.model(custom_id, request)
    limits = {"x-ratelimit-remaining-requests": "100", "x-ratelimit-reset-requests": "1s"}
    if isinstance(answer, Error):
        return answer.status, {"error": {"message": answer.message}}, limits
    return 200, openai_wire.chat_completion(content=answer, model=str(request["model"])), limits


# -- Anthropic ---------------------------------------------------------------------------------


def _anthropic(
    fake: BatchFake, method: str, path: str, query: Any, headers: Any, body: bytes
) -> tuple[int, Any, dict[str, str]]:
    if method == "POST" and path == "/v1/messages/batches":
        batch = fake._create(orjson.loads(body)["requests"], {})
        return 200, _anthropic_batch(fake, batch), {}
    if method == "GET" and path == "/v1/messages/batches":
        data = [_anthropic_batch(fake, b) for b in reversed(fake.batches.values())]
        return 200, {"data": data, "has_more": False, "first_id": None, "last_id": None}, {}
    if method == "GET" and path.endswith("/results"):
        batch = fake.batches[path.split("/")[4]]
        return 200, fake.files[batch["output"]], {}
    if method == "GET" and path.startswith("/v1/messages/batches/"):
        batch = fake.batches[path.rsplit("/", 1)[1]]
        fake._finished(batch)
        return 200, _anthropic_batch(fake, batch), {}
    return 404, {"type": "error", "error": {"type": "not_found_error", "message": path}}, {}


def _anthropic_batch(fake: BatchFake, batch: dict[str, Any]) -> dict[str, Any]:
    done = "output" in batch
    total = len(batch["lines"])
    created = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(batch["created"]))
    created += f".{int(batch['created'] % 1 * 1e6):06d}Z"
    return {
        "id": batch["id"],
        "type": "message_batch",
        "processing_status": "ended" if done else "in_progress",
        "request_counts": {
            "processing": 0 if done else total,
            "succeeded": total if done else 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        },
        "created_at": created,
        "expires_at": created,
        "ended_at": created if done else None,
        "cancel_initiated_at": None,
        "archived_at": None,
        "results_url": f"{fake.url}/v1/messages/batches/{batch['id']}/results" if done else None,
    }


# -- Gemini ------------------------------------------------------------------------------------


def _gemini(
    fake: BatchFake, method: str, path: str, query: Any, headers: Any, body: bytes
) -> tuple[int, Any, dict[str, str]]:
    if method == "POST" and path.startswith("/upload/") and "upload_id" not in query:
        upload = fake._new_id("u")
        url = f"{fake.url}{path}?upload_id={upload}"
        return 200, {}, {"x-goog-upload-url": url, "x-goog-upload-status": "active"}
    if method == "POST" and path.startswith("/upload/"):
        name = f"files/{fake._new_id('f')}"
        fake.files[name] = body
        file = {"name": name, "mimeType": "application/jsonl", "sizeBytes": str(len(body))}
        return 200, {"file": {**file, "state": "ACTIVE"}}, {"x-goog-upload-status": "final"}
    if method == "POST" and path.endswith(":batchGenerateContent"):
        request = orjson.loads(body)["batch"]
        lines = _jsonl(fake.files[request["inputConfig"]["fileName"]])
        model = path.split("/", 2)[2].rsplit(":", 1)[0]
        batch = fake._create(lines, {"displayName": request.get("displayName"), "model": model})
        return 200, _gemini_operation(batch), {}
    if method == "GET" and path.endswith("/batches"):
        operations = [_gemini_operation(b) for b in reversed(fake.batches.values())]
        return 200, {"operations": operations}, {}
    if method == "GET" and "/batches/" in path:
        batch = fake.batches[path.rsplit("/", 1)[1]]
        fake._finished(batch)
        return 200, _gemini_operation(batch), {}
    if method == "GET" and path.endswith(":download"):
        return 200, fake.files[path.split("/", 2)[2].removesuffix(":download")], {}
    return 404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}}, {}


_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."


def _gemini_operation(batch: dict[str, Any]) -> dict[str, Any]:
    done = "output" in batch
    meta: dict[str, Any] = {
        "@type": _TYPE + "GenerateContentBatch",
        "name": f"batches/{batch['id']}",
        "model": batch["meta"]["model"],
        "displayName": batch["meta"]["displayName"],
        "state": (
            ("BATCH_STATE_EXPIRED" if batch["expired"] else "BATCH_STATE_SUCCEEDED")
            if done
            else "BATCH_STATE_RUNNING"
        ),
    }
    operation: dict[str, Any] = {"name": f"batches/{batch['id']}", "metadata": meta}
    if done:
        meta["output"] = {"responsesFile": batch["output"]}
        operation["done"] = True
        operation["response"] = {
            "@type": _TYPE + "GenerateContentBatchOutput",
            "responsesFile": batch["output"],
        }
    return operation


# -- Bedrock -----------------------------------------------------------------------------------


def _bedrock(
    fake: BatchFake, method: str, path: str, query: Any, headers: Any, body: bytes
) -> tuple[int, Any, dict[str, str]]:
    if method == "POST" and path.startswith("/model/") and path.endswith("/converse"):
        request = orjson.loads(body)  # a live Converse call (rows too few for a job)
        text = request["messages"][0]["content"][0]["text"]
        custom_id = str(text).rsplit("#", 1)[-1]
        fake.submitted[custom_id] += 1
        answer = fake.model(custom_id, request)
        assert isinstance(answer, str)
        return 200, _result("bedrock", custom_id, request, answer)["modelOutput"], {}
    if method == "POST" and path == "/model-invocation-job":
        request = orjson.loads(body)
        for batch in fake.batches.values():  # clientRequestToken: the same call, the same job
            if batch["meta"]["clientRequestToken"] == request["clientRequestToken"]:
                return 200, {"jobArn": batch["arn"]}, {}
        bucket, key = _s3(request["inputDataConfig"]["s3InputDataConfig"]["s3Uri"])
        data = fake.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        batch = fake._create(_jsonl(data), request)
        batch["arn"] = f"arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/{batch['id']}"
        batch["input_name"] = key.rsplit("/", 1)[1]
        fake.batches[batch["arn"]] = batch
        return 200, {"jobArn": batch["arn"]}, {}
    if method == "GET" and path == "/model-invocation-jobs":
        wanted = query.get("nameContains", [""])[0]
        seen = {id(b): b for b in fake.batches.values()}.values()
        summaries = [_bedrock_job(b) for b in seen if wanted in b["meta"]["jobName"]]
        return 200, {"invocationJobSummaries": summaries}, {}
    if method == "GET" and path.startswith("/model-invocation-job/"):
        batch = fake.batches[path.split("/", 2)[2]]
        if fake._finished(batch) and not batch.get("written"):
            out_bucket, out_prefix = _s3(
                batch["meta"]["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"]
            )
            job_id = batch["arn"].rsplit("/", 1)[1]
            key = f"{out_prefix}{job_id}/{batch['input_name']}.out"
            fake.s3.put_object(Bucket=out_bucket, Key=key, Body=fake.files[batch["output"]])
            fake.s3.put_object(
                Bucket=out_bucket, Key=f"{out_prefix}{job_id}/manifest.json.out", Body=b"{}"
            )
            batch["written"] = True
        return 200, _bedrock_job(batch), {}
    return (
        404,
        {"message": f"no route {method} {path}"},
        {"x-amzn-errortype": "ResourceNotFoundException"},
    )


def _s3(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


def _bedrock_job(batch: dict[str, Any]) -> dict[str, Any]:
    meta = batch["meta"]
    done = "output" in batch
    return {
        "jobArn": batch["arn"],
        "jobName": meta["jobName"],
        "modelId": meta["modelId"],
        "roleArn": meta["roleArn"],
        "status": ("Expired" if batch["expired"] else "Completed") if done else "InProgress",
        "submitTime": "2026-01-01T00:00:00Z",
        "inputDataConfig": meta["inputDataConfig"],
        "outputDataConfig": meta["outputDataConfig"],
    }


# -- request and result shapes per API ---------------------------------------------------------


def _request_of(api: str, item: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    if api == "openai":
        return str(item["custom_id"]), item["body"]
    if api == "anthropic":
        return str(item["custom_id"]), item["params"]
    if api == "gemini":
        return str(item["key"]), item["request"]
    return str(item["recordId"]), item["modelInput"]


def _result(api: str, custom_id: str, body: Mapping[str, Any], answer: str | Error) -> Any:
    if isinstance(answer, Error):
        return _error(api, custom_id, answer)
    if api == "openai":
        if "input" in body:  # the Responses API
            reply: Any = {
                "id": "resp_1",
                "object": "response",
                "created_at": 1_767_225_600,
                "status": "completed",
                "model": body["model"],
                "output": [openai_wire.message_item(openai_wire.output_text(answer))],
                "usage": openai_wire.response_usage(),
            }
        else:
            reply = openai_wire.chat_completion(content=answer, model=str(body["model"]))
        return {
            "id": f"batch_req_{custom_id}",
            "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": f"req_{custom_id}", "body": reply},
            "error": None,
        }
    if api == "anthropic":
        return {
            "custom_id": custom_id,
            "result": {"type": "succeeded", "message": _claude(body, answer)},
        }
    if api == "gemini":
        return {
            "key": custom_id,
            "response": {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": answer}]},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 20,
                    "candidatesTokenCount": 8,
                    "totalTokenCount": 28,
                },
                "modelVersion": "gemini-2.5-flash",
            },
        }
    return {
        "recordId": custom_id,
        "modelInput": body,
        "modelOutput": {
            "output": {"message": {"role": "assistant", "content": [{"text": answer}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 20, "outputTokens": 8, "totalTokens": 28},
            "metrics": {"latencyMs": 100},
        },
    }


def _expired(api: str, custom_id: str) -> Any:
    if api == "openai":
        error = {"code": "batch_expired", "message": "This request could not be executed"}
        return {"id": f"batch_req_{custom_id}", "custom_id": custom_id, "response": None,
                "error": error}  # fmt: skip
    if api == "anthropic":
        return {"custom_id": custom_id, "result": {"type": "expired"}}
    return None  # Gemini, Bedrock: no line


def _claude(body: Mapping[str, Any], answer: str) -> dict[str, Any]:
    tool = (body.get("tool_choice") or {}).get("name")
    content: list[dict[str, Any]]
    if tool:
        content = [
            {"type": "tool_use", "id": "toolu_01", "name": tool, "input": orjson.loads(answer)}
        ]
    else:
        content = [{"type": "text", "text": answer}]
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 8},
    }


def _error(api: str, custom_id: str, error: Error) -> Any:
    if api == "openai":
        body = {"error": {"message": error.message, "type": "server_error", "code": None}}
        return {
            "id": f"batch_req_{custom_id}",
            "custom_id": custom_id,
            "response": {"status_code": error.status, "request_id": "req", "body": body},
            "error": None,
        }
    if api == "anthropic":
        kind = "api_error" if error.status >= 500 else "invalid_request_error"
        inner = {"type": kind, "message": error.message}
        return {
            "custom_id": custom_id,
            "result": {"type": "errored", "error": {"type": "error", "error": inner}},
        }
    if api == "gemini":
        status = "INTERNAL" if error.status >= 500 else "INVALID_ARGUMENT"
        return {
            "key": custom_id,
            "error": {"code": error.status, "message": error.message, "status": status},
        }
    return {
        "recordId": custom_id,
        "error": {"errorCode": error.status, "errorMessage": error.message},
    }


Tamper = Callable[[int, list[bytes]], list[bytes]]


class TamperedFake(BatchFake):
    """A BatchFake whose results files pass through `tamper(n, lines)` (n: how many results
    files were made before this one; lines: its result lines) before they are served: a line
    dropped, doubled, garbled or foreign, as a provider's results file might be."""

    def __init__(self, api: str, model: Model, tamper: Tamper, **options: Any) -> None:
        self.tamper = tamper
        self.made = 0
        super().__init__(api, model, **options)

    def _results(self, lines: list[Mapping[str, Any]]) -> tuple[bytes, bytes, bool]:
        out, errors, expired = super()._results(lines)
        kept = self.tamper(self.made, [line for line in out.splitlines() if line.strip()])
        self.made += 1
        return b"\n".join(kept) + b"\n", errors, expired
