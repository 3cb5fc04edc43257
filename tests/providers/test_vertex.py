"""Vertex AI (`vertex:`): the Gemini adapter under a project and location, with OAuth tokens.

Credentials are Google's application-default credentials, read by google-auth itself: the
tests point GOOGLE_APPLICATION_CREDENTIALS at a workload-identity (`external_account`) file
whose token endpoint is a fake on 127.0.0.1, so google-auth's real token exchange runs
against it. The official google-genai
SDK, in Vertex mode and pointed at the same fake, shows the path and headers outform must send.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import orjson
import pytest
from google import genai
from google.genai import types
from google.oauth2 import credentials as oauth2
from pydantic import BaseModel

import outform
from outform.errors import AuthenticationError, UsageError
from outform.providers.credentials import GoogleCredentials, application_default
from outform.providers.gemini import Gemini
from outform.providers.registry import resolve
from outform.transport import AsyncTransport, RetryPolicy, Transport
from tests.providers.fake import FakeServer
from tests.providers.gemini_wire import as_sdk_types, validate_request
from tests.providers.test_registry import NoTokens

TOKEN = "ya29.a0AfB_byC-fake-access-token"
PATH = (
    "/v1beta1/projects/outform-test/locations/us-central1/publishers/google/models/"
    "gemini-2.5-flash:generateContent"
)


class Person(BaseModel):
    name: str
    age: int


def reply(text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 12},
        "modelVersion": "gemini-2.5-flash",
    }


@pytest.fixture
def tokens() -> Iterator[FakeServer]:
    """Google's OAuth token endpoint."""
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """Vertex AI."""
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def adc(tokens: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Application-default credentials of the workload-identity kind: a subject token read
    from a file, exchanged for an access token at the (fake) token endpoint."""
    subject = tmp_path / "subject-token"
    subject.write_text("eyJhbGciOiJSUzI1NiJ9.fake-subject.signature")
    path = tmp_path / "application_default_credentials.json"
    info = {
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/123456789/locations/global/"
        "workloadIdentityPools/ci/providers/fake",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": f"{tokens.url}/token",
        "credential_source": {"file": str(subject)},
        "quota_project_id": "outform-test",
    }
    path.write_bytes(orjson.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "outform-test")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # never the real metadata server
    application_default.cache_clear()  # the process's credentials, read from this file
    yield path
    application_default.cache_clear()


def grant(tokens: FakeServer) -> None:
    tokens.json(
        {
            "access_token": TOKEN,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer",
            "expires_in": 3599,
        }
    )


def ask(server: FakeServer, transport: Transport, **options: Any) -> outform.Generation[Any]:
    return outform.generate(
        "vertex:gemini-2.5-flash",
        "Extract: Ada, 36",
        Person,
        base_url=server.url,
        transport=transport,
        **options,
    )


def test_a_call_fetches_a_token_once_and_posts_under_the_project(
    adc: Path, tokens: FakeServer, server: FakeServer
) -> None:
    grant(tokens)
    server.json(reply('{"name": "Ada", "age": 36}'))
    server.json(reply('{"name": "Ada", "age": 36}'))
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        first = ask(server, transport)
        ask(server, transport)
    assert first.value == Person(name="Ada", age=36)
    assert [r.path for r in server.requests] == [PATH, PATH]
    for request in server.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["x-goog-user-project"] == "outform-test"
        assert "x-goog-api-key" not in request.headers
        validate_request(request.json)
    assert len(tokens.requests) == 1  # the token is reused until it expires
    form = parse_qs(tokens.last.body.decode())
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:token-exchange"]
    assert form["subject_token"] == ["eyJhbGciOiJSUzI1NiJ9.fake-subject.signature"]
    assert form["scope"] == ["https://www.googleapis.com/auth/cloud-platform"]


def test_the_sdk_in_vertex_mode_sends_the_same_path_headers_and_body(
    adc: Path, tokens: FakeServer, server: FakeServer
) -> None:
    grant(tokens)
    server.json(reply('{"name": "Ada", "age": 36}'))
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        ask(server, transport, mode="native")
    ours = server.last
    schema = ours.json["generationConfig"]["responseJsonSchema"]
    server.json(reply('{"name": "Ada", "age": 36}'))
    client = genai.Client(
        vertexai=True,
        project="outform-test",
        location="us-central1",
        credentials=oauth2.Credentials(TOKEN),  # type: ignore[no-untyped-call]
        http_options=types.HttpOptions(base_url=server.url),
    )
    client.models.generate_content(
        model="gemini-2.5-flash",
        contents="Extract: Ada, 36",
        config={
            "system_instruction": ours.json.get("systemInstruction"),
            "response_mime_type": "application/json",
            "response_json_schema": schema,
        },
    )
    sdk = server.last
    assert sdk.path == ours.path == PATH
    assert sdk.headers["authorization"] == ours.headers["authorization"]
    assert as_sdk_types(sdk.json) == as_sdk_types(ours.json)


def test_the_async_driver_fetches_the_token_off_the_event_loop(
    adc: Path, tokens: FakeServer, server: FakeServer
) -> None:
    grant(tokens)
    server.json(reply('{"name": "Ada", "age": 36}'))

    async def main() -> Any:
        async with AsyncTransport(retry=RetryPolicy(retries=0)) as transport:
            return await outform.agenerate(
                "vertex:gemini-2.5-flash",
                "Extract: Ada, 36",
                Person,
                base_url=server.url,
                transport=transport,
            )

    assert asyncio.run(main()).value == Person(name="Ada", age=36)
    assert server.last.headers["authorization"] == f"Bearer {TOKEN}"


def test_the_location_picks_the_regional_host_and_global_the_global_one(adc: Path) -> None:
    regional = resolve(
        "vertex:gemini-2.5-flash",
        env={"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "europe-west4"},
    )
    assert regional.endpoint.base_url == (
        "https://europe-west4-aiplatform.googleapis.com/v1beta1/projects/p/locations/"
        "europe-west4/publishers/google"
    )
    default = resolve("vertex:gemini-2.5-flash", env={"GOOGLE_CLOUD_PROJECT": "p"})
    assert default.endpoint.base_url == (
        "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/publishers/google"
    )
    assert isinstance(default.adapter, Gemini)
    assert default.spec.profile_name == "gemini"


def test_a_base_url_with_a_version_or_a_whole_project_path_is_taken_as_given() -> None:
    env = {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-east5"}
    versioned = resolve("vertex:m", base_url="https://proxy.example/v1", env=env)
    assert versioned.endpoint.base_url == (
        "https://proxy.example/v1/projects/p/locations/us-east5/publishers/google"
    )
    whole = "https://proxy.example/v1/projects/q/locations/l/publishers/google"
    assert resolve("vertex:m", base_url=whole, env=env).endpoint.base_url == whole


def test_the_token_source_never_shows_the_token(
    adc: Path, tokens: FakeServer, server: FakeServer
) -> None:
    grant(tokens)
    resolved = resolve("vertex:gemini-2.5-flash", base_url=server.url)
    assert resolved.endpoint.tokens is not None
    headers = resolved.endpoint.tokens.headers()
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in repr(resolved.endpoint) and TOKEN not in repr(resolved)


def test_without_a_project_the_error_says_which_variable_to_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(UsageError, match="Google Cloud project") as caught:
        resolve("vertex:gemini-2.5-flash", credentials=NoTokens(), env={})
    assert caught.value.fix is not None and "GOOGLE_CLOUD_PROJECT" in caught.value.fix


def test_missing_credentials_fail_with_how_to_provide_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    with pytest.raises(AuthenticationError, match="application-default") as caught:
        GoogleCredentials().headers()
    assert caught.value.fix is not None and "gcloud auth application-default login" in (
        caught.value.fix
    )


def test_a_refused_refresh_fails_without_quoting_the_token_endpoint(
    adc: Path, tokens: FakeServer, server: FakeServer
) -> None:
    tokens.json({"error": "invalid_grant", "error_description": "secret-detail"}, status=400)
    refused = pytest.raises(AuthenticationError, match="could not be refreshed")
    with Transport(retry=RetryPolicy(retries=0)) as transport, refused as caught:
        ask(server, transport)
    assert "secret-detail" not in caught.value.render()
    assert server.requests == []


def test_an_api_key_is_refused_for_vertex() -> None:
    env = {"GOOGLE_CLOUD_PROJECT": "p"}
    with pytest.raises(UsageError, match="not an API key") as caught:
        resolve("vertex:gemini-2.5-flash", api_key="AIza-not-for-vertex", env=env)
    assert caught.value.fix is not None and "gemini:" in caught.value.fix
