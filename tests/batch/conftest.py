"""Shared pieces of the batch tests: an input file, a schema, a scripted model, S3 (moto's
server mode), and the manifest on SQLite or PostgreSQL."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform import batch
from tests.batch.fakes import Error

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


def write_rows(path: Path, count: int) -> Path:
    lines = (orjson.dumps({"id": f"r{i}", "text": f"person #r{i}"}) for i in range(1, count + 1))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


class Scripted:
    """Replies by row number: every 7th invalid on its first ask (fixed when re-asked), every
    5th fenced with the age as a string (repaired), every 11th a transient provider error on
    its first ask, the rest valid as sent."""

    def __init__(self, *, invalid: int = 7, fenced: int = 5, errors: int = 0) -> None:
        self.invalid, self.fenced, self.errors = invalid, fenced, errors
        self.asked: Counter[str] = Counter()

    def __call__(self, custom_id: str, body: Mapping[str, Any]) -> str | Error:
        self.asked[custom_id] += 1
        n = int(custom_id.lstrip("r"))
        first = self.asked[custom_id] == 1
        if self.errors and n % self.errors == 0 and first:
            return Error(500)
        if n % self.invalid == 0 and first:
            return f'{{"name": "P{n}", "age": "unknown"}}'
        if n % self.fenced == 0:
            return f'```json\n{{"name": "P{n}", "age": "{n}"}}\n```'
        return f'{{"name": "P{n}", "age": {n}}}'


def submit(
    rows: Path, model: str, manifest: str | Path, url: str | None = None, **options: Any
) -> batch.JobStatus:
    """`batch.submit` with the tests' defaults: SCHEMA, the prompt "{text}", a key, fast
    polls, and the fake's URL as the base URL."""
    settings = {"prompt": "{text}", "api_key": "k", "poll_interval": 0.001, **options}
    if url is not None:
        settings["base_url"] = url
    return batch.submit(rows, model, SCHEMA, manifest=manifest, **settings)


@pytest.fixture
def rows(tmp_path: Path) -> Path:
    return write_rows(tmp_path / "rows.jsonl", 30)


@pytest.fixture
def postgres_manifest(request: pytest.FixtureRequest) -> Iterator[str]:
    """A manifest location (as --manifest takes it) in a new schema on the test PostgreSQL
    server; the module loads tests/postgres.py (`pytest_plugins = ["tests.postgres"]`)."""
    server = request.getfixturevalue("postgres_server")
    schema, dsn = server.schema()
    try:
        yield f"postgres:{dsn}"
    finally:
        server.drop(schema)


@pytest.fixture(params=["sqlite", "postgres"])
def manifest(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A manifest location: a SQLite file, then a PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "m.sqlite3")
    return str(request.getfixturevalue("postgres_manifest"))


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[str]:
    """An S3 server on 127.0.0.1 (moto's server mode); its URL."""
    server_module = pytest.importorskip("moto.server", reason="pip install 'moto[server]'")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def s3_client(url: str) -> Any:
    import botocore.session

    return botocore.session.get_session().create_client(
        "s3",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


@pytest.fixture
def bucket(moto_s3: str) -> str:
    """A new, empty bucket on the S3 server."""
    name = f"jobs-{uuid.uuid4().hex[:12]}"
    s3_client(moto_s3).create_bucket(Bucket=name)
    return name


AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_REGION": "us-east-1",
}
ROLE_ARN = "arn:aws:iam::123456789012:role/batch"
