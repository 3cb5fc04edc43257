"""Behind a native backend, a client reaches only the providers the operator configured, and
the credentials the gateway sends to any of them never come back out of it.

The trial: with `--backend anthropic`, a client sent `model: "openai:m"` and the gateway
called OpenAI with the operator's `OPENAI_API_KEY`; a reply echoing the Authorization header
showed `Bearer sk-openai-...` in the answer, the stream, the Chat endpoint and the stored
response (only the native backend's own key was scrubbed). Now another provider is a 403
naming `allowed_providers` unless the operator allowed it, and every key the gateway may send
(the backend's, each allowed provider's, each one as its adapter resolves it) is scrubbed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from outform.errors import ConfigError
from outform.gateway.settings import GatewaySettings
from outform.gateway.sqlite_store import SqliteStore
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import ChatFake, response_events, sse_events
from tests.gateway.served import run_until_exit
from tests.providers.openai_wire import chat_completion, text_stream

OPENAI_KEY = "sk-openai-operator-5e1f93c7a2"
ANTHROPIC_KEY = "sk-ant-operator-0d4b6e8f21"
ECHO = f"auth was: Bearer {OPENAI_KEY}"
"""What a provider (or a model) that echoes the request's credentials writes."""


@pytest.fixture
def openai_fake() -> Iterator[ChatFake]:
    fake = ChatFake()
    with fake:
        yield fake


def _native(
    make_gateway: MakeGateway, openai_fake: ChatFake, tmp_path: Path, **settings: Any
) -> Harness:
    return make_gateway(
        backend="anthropic",
        store=SqliteStore(tmp_path / "responses.sqlite"),
        env_for=lambda fake: {
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
            "OPENAI_BASE_URL": openai_fake.url,
            "OPENAI_API_KEY": OPENAI_KEY,
        },
        **settings,
    )


HI = [{"role": "user", "content": "hi"}]
REQUESTS = [
    ("/v1/responses", {"model": "openai:gpt-4o", "input": "hi"}),
    ("/v1/responses", {"model": "openai:gpt-4o", "input": "hi", "stream": True}),
    ("/v1/responses", {"model": "openai:gpt-4o", "input": "hi", "background": True}),
    ("/v1/chat/completions", {"model": "openai:gpt-4o", "messages": HI}),
    ("/v1/chat/completions", {"model": "openai:gpt-4o", "messages": HI, "stream": True}),
]


def test_a_provider_the_operator_did_not_allow_is_a_403_naming_the_setting(
    make_gateway: MakeGateway, openai_fake: ChatFake, tmp_path: Path
) -> None:
    gw = _native(make_gateway, openai_fake, tmp_path)
    for path, body in REQUESTS:
        answer = gw.http.post(gw.url + path, json=body)
        assert answer.status_code == 403, (path, body)
        error = answer.json()["error"]
        assert (error["code"], error["param"]) == ("provider_not_allowed", "model")
        assert "allowed_providers in [gateway]" in error["message"]
        assert "--allow-provider openai" in error["message"]
    assert openai_fake.requests == []  # OpenAI was never called with the operator's key
    assert gw.backend.requests == []


def test_a_model_map_to_a_provider_not_allowed_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError) as caught:
        GatewaySettings(backend="anthropic", model_map={"gpt-4o": "openai:gpt-4o"})
    assert "add 'openai' to allowed_providers" in caught.value.render()
    allowed = GatewaySettings(
        backend="anthropic",
        model_map={"gpt-4o": "openai:gpt-4o"},
        allowed_providers=("openai",),
    )
    assert allowed.allowed_providers == ("openai",)


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"backend": "anthropic", "allowed_providers": ("opneai",)}, "not a provider"),
        ({"backend": "http://127.0.0.1:8000/v1", "allowed_providers": ("openai",)}, "a URL"),
    ],
)
def test_allowed_providers_must_name_providers_of_a_native_backend(
    settings: dict[str, Any], said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        GatewaySettings(**settings)
    assert said in caught.value.what


def test_serve_refuses_an_unknown_provider_flag(tmp_path: Path) -> None:
    done = run_until_exit(
        "--backend", "anthropic", "--allow-provider", "nosuch", "--store", "memory", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "--allow-provider" in done.stderr


def test_an_allowed_provider_is_reached_and_its_key_never_comes_back(
    make_gateway: MakeGateway,
    openai_fake: ChatFake,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = _native(make_gateway, openai_fake, tmp_path, allowed_providers=("openai",))
    openai_fake.json(chat_completion(content=ECHO))
    whole = gw.client.responses.create(model="openai:gpt-4o", input="hi")
    assert openai_fake.last.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert whole.output_text == "auth was: Bearer ***"
    assert gw.client.responses.retrieve(whole.id).output_text == "auth was: Bearer ***"

    openai_fake.stream(text_stream(ECHO))
    with httpx.Client(timeout=30) as http:
        streamed = http.post(
            gw.url + "/v1/responses",
            json={"model": "openai:gpt-4o", "input": "hi", "stream": True},
        )
    assert OPENAI_KEY not in streamed.text
    final = response_events(streamed.content)[-1]["response"]
    assert final["output"][0]["content"][0]["text"] == "auth was: Bearer ***"
    assert gw.client.responses.retrieve(final["id"]).output_text == "auth was: Bearer ***"

    openai_fake.json(chat_completion(content=ECHO))
    chat = gw.client.chat.completions.create(
        model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}]
    )
    assert chat.choices[0].message.content == "auth was: Bearer ***"

    openai_fake.stream(text_stream(ECHO))
    with httpx.Client(timeout=30) as http:
        relayed = http.post(
            gw.url + "/v1/chat/completions",
            json={
                "model": "openai:gpt-4o",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
            },
        )
    assert OPENAI_KEY not in relayed.text
    assert b"auth was: Bearer ***" in b"".join(data for _, data in sse_events(relayed.content))
    assert OPENAI_KEY not in caplog.text
    assert ANTHROPIC_KEY not in caplog.text


def test_the_backends_own_models_still_reach_it(
    make_gateway: MakeGateway, openai_fake: ChatFake, tmp_path: Path
) -> None:
    """`claude-...` and `anthropic:claude-...` are the backend's; a prefix that names no
    provider is part of the backend's model name."""
    gw = _native(make_gateway, openai_fake, tmp_path)
    for model, sent in (
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("custom:tuned-1", "custom:tuned-1"),
    ):
        gw.backend.json(_anthropic_message("hi"))
        assert gw.client.responses.create(model=model, input="x").output_text == "hi"
        assert gw.backend.last.json["model"] == sent
    assert openai_fake.requests == []


def _anthropic_message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
