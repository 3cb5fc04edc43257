"""outform's batch calls have the shapes the official SDKs send: each SDK is pointed at the
same recording fake as outform, and the requests are compared (method, path, query keys,
content type, JSON key structure). The wire shape is the SDK's, not a guess."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest

from tests.batch.conftest import AWS_ENV, ROLE_ARN, Scripted, s3_client, submit
from tests.batch.fakes import BatchFake
from tests.providers.fake import Recorded

_VERSION = re.compile(r"v\d+(beta)?")


def shape(request: Recorded) -> tuple[Any, ...]:
    parts = urlsplit(request.path)
    segments = [
        s if _VERSION.fullmatch(s) or not re.search(r"\d", s) else "{id}"
        for s in parts.path.split("/")
    ]
    kind = (request.headers.get("content-type") or "").split(";")[0] if request.body else ""
    body: Any = None
    if "upload_id" in parts.query:
        body = "bytes"  # a file's content, whatever the content-type says
    elif kind == "application/json" and request.body:
        try:
            body = keys(orjson.loads(request.body))
        except orjson.JSONDecodeError:
            body = "bytes"  # a file's content
    elif kind == "multipart/form-data":
        body = sorted(re.findall(rb'; name="([^"]+)"', request.body))
    return request.method, "/".join(segments), tuple(sorted(parse_qs(parts.query))), kind, body


def keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: keys(v) for k, v in sorted(value.items()) if k not in ("params", "request")}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return type(value).__name__


def shapes(requests: Iterable[Recorded]) -> set[tuple[Any, ...]]:
    return {repr(shape(r)) for r in requests}  # type: ignore[misc]


def _job(fake: BatchFake, model: str, prefix: str, tmp_path: Path, **options: Any) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "r1", "text": "a"}\n{"id": "r2", "text": "b"}\n')
    submit(rows, model, tmp_path / "m.sqlite3", fake.url + prefix, **options)


def test_openai_files_and_batches(tmp_path: Path) -> None:
    import openai

    with BatchFake("openai", Scripted(), polls=1) as fake:
        client = openai.OpenAI(base_url=fake.url + "/v1", api_key="k", max_retries=0)
        line = b'{"custom_id": "r1", "method": "POST", "url": "/v1/chat/completions", '
        line += b'"body": {"model": "m"}}'
        uploaded = client.files.create(file=("in.jsonl", line), purpose="batch")
        created = client.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"outform_job": "j", "outform_batch": "b"},
        )
        client.batches.retrieve(created.id)
        client.batches.list(limit=100)
        done = client.batches.retrieve(created.id)
        assert done.output_file_id is not None
        client.files.content(done.output_file_id)
        sdk = shapes(fake.requests)
        fake.requests.clear()
        fake.polls = 0
        _job(fake, "openai:gpt-5-mini", "/v1", tmp_path)
        ours = shapes(fake.requests)
        upload = next(r for r in fake.requests if r.path == "/v1/files")
    assert ours <= sdk | shapes([]), ours - sdk
    assert len(ours) == 4  # upload, create, retrieve, content (list only when recovering)
    assert b'name="purpose"\r\n\r\nbatch' in upload.body
    line = orjson.loads(re.findall(rb"\{\"custom_id.*", upload.body)[0])
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert line["body"]["response_format"]["type"] == "json_schema"


def test_anthropic_message_batches(tmp_path: Path) -> None:
    import anthropic

    from tests.providers import anthropic_wire

    with BatchFake("anthropic", Scripted()) as fake:
        client = anthropic.Anthropic(base_url=fake.url, api_key="k", max_retries=0)
        params: Any = {
            "model": "claude-x",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
        created = client.messages.batches.create(requests=[{"custom_id": "r1", "params": params}])
        client.messages.batches.list(limit=100)
        client.messages.batches.retrieve(created.id)
        list(client.messages.batches.results(created.id))
        sdk = shapes(fake.requests)
        fake.requests.clear()
        _job(fake, "anthropic:claude-sonnet-4-5", "", tmp_path)
        ours = shapes(fake.requests)
        create = next(r for r in fake.requests if r.method == "POST")
    assert ours <= sdk, ours - sdk
    for request in orjson.loads(create.body)["requests"]:
        assert set(request) == {"custom_id", "params"}
        anthropic_wire.check_request(request["params"])


def test_gemini_upload_and_batch(tmp_path: Path) -> None:
    from google import genai
    from google.genai import types

    with BatchFake("gemini", Scripted()) as fake:
        client = genai.Client(
            api_key="k", http_options=types.HttpOptions(base_url=fake.url, api_version="v1beta")
        )
        file = client.files.upload(
            file=io.BytesIO(b'{"key": "r1", "request": {"model": "m"}}\n'),
            config=types.UploadFileConfig(mime_type="application/jsonl", display_name="in"),
        )
        job = client.batches.create(
            model="gemini-2.5-flash", src=str(file.name), config={"display_name": "outform-j-b"}
        )
        done = client.batches.get(name=str(job.name))
        list(client.batches.list(config={"page_size": 100}))
        assert done.dest is not None and done.dest.file_name
        client.files.download(file=done.dest.file_name)
        sdk = shapes(fake.requests)
        fake.requests.clear()
        _job(fake, "gemini:gemini-2.5-flash", "/v1beta", tmp_path)
        ours = shapes(fake.requests)
        start = next(r for r in fake.requests if r.path.endswith("/files"))
    assert ours <= sdk, ours - sdk
    for header in (
        "x-goog-upload-protocol",
        "x-goog-upload-command",
        "x-goog-upload-header-content-type",
    ):
        assert header in start.headers


def test_bedrock_invocation_jobs_through_s3(
    moto_s3: str, bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import botocore.session

    s3 = s3_client(moto_s3)
    for name, value in {**AWS_ENV, "AWS_ENDPOINT_URL_S3": moto_s3}.items():
        monkeypatch.setenv(name, value)
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"id": "r{i}", "text": "#r{i}"}}\n' for i in range(1, 121)))
    with BatchFake("bedrock", Scripted(), s3=s3) as fake:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK", fake.url)
        monkeypatch.setenv("BEDROCK_BASE_URL", fake.url)
        client = botocore.session.get_session().create_client(
            "bedrock",
            region_name="us-east-1",
            endpoint_url=fake.url,
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        s3.put_object(
            Bucket=bucket, Key="sdk/in.jsonl", Body=b'{"recordId": "r1", "modelInput": {}}\n'
        )
        arn = client.create_model_invocation_job(
            jobName="outform-sdk-b",
            roleArn=ROLE_ARN,
            clientRequestToken="outform-sdk-b",
            modelId="anthropic.claude-sonnet-4-5-v1:0",
            inputDataConfig={
                "s3InputDataConfig": {
                    "s3Uri": f"s3://{bucket}/sdk/in.jsonl",
                    "s3InputFormat": "JSONL",
                }
            },
            outputDataConfig={"s3OutputDataConfig": {"s3Uri": f"s3://{bucket}/sdk/out/"}},
            modelInvocationType="Converse",
        )["jobArn"]
        client.get_model_invocation_job(jobIdentifier=arn)
        client.list_model_invocation_jobs(nameContains="outform-sdk-", maxResults=100)
        sdk = shapes(fake.requests)
        fake.requests.clear()
        out = tmp_path / "out.jsonl"
        submit(
            rows,
            "bedrock:anthropic.claude-sonnet-4-5-v1:0",
            tmp_path / "m.sqlite3",
            output=out,
            api_key=None,
            rounds=2,
            s3_uri=f"s3://{bucket}/outform/",
            role_arn=ROLE_ARN,
            max_requests=100,
        )
        ours = shapes(r for r in fake.requests if not r.path.endswith("/converse"))
        create = next(r for r in fake.requests if r.path == "/model-invocation-job")
    assert ours <= sdk, ours - sdk
    assert "aws4-hmac-sha256" in create.headers["authorization"].lower()
    body = orjson.loads(create.body)
    assert body["modelInvocationType"] == "Converse"
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(lines) == 120 and {line["status"] for line in lines} <= {"ok", "repaired"}
    r7 = next(line for line in lines if line["id"] == "r7")  # invalid in the job, then live
    assert [(r["round"], r.get("batch"), r["outcome"]) for r in r7["rounds"]] == [
        (0, "r0b0", "invalid")
    ]
    # 100 + 20 rows: the 20 are fewer than a Bedrock job takes and went live (Converse)
    assert len([r for r in fake.requests if r.path == "/model-invocation-job"]) == 1
    # round 0: 100 rows in a job, the last 20 live; round 1: the 14 invalid of the job, live
    # (fewer than a job takes), the 3 invalid of the live rows re-asked at once
    assert len([r for r in fake.requests if r.path.endswith("/converse")]) == 20 + 14 + 3
