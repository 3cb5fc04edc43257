"""Fixtures: a fake backend, the gateway in front of it, and checked clients.

`gw` is the default set-up; `make_gateway(**settings)` builds others. At teardown every body
and event the clients received is validated against OpenAI's OpenAPI document and the SDK's
types (`harness.check_exchange`), and every request the backend received against
`CreateChatCompletionRequest`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

import outform.config
from outform.gateway.settings import GatewaySettings
from outform.gateway.store import MemoryStore, ResponseStore
from tests.gateway.harness import ChatFake, Recorder, Running, check_exchange, running
from tests.providers.openai_wire import Conformance
from tests.providers.openapi import load


@pytest.fixture(scope="session")
def conforms() -> Conformance:
    return Conformance(load())


@dataclass
class Harness:
    backend: ChatFake
    gateway: Running
    recorder: Recorder
    client: openai.OpenAI
    http: httpx2.Client

    @property
    def url(self) -> str:
        return self.gateway.url

    @property
    def store(self) -> ResponseStore:
        return self.gateway.store

    def sent(self) -> dict[str, Any]:
        """The last Chat request the backend received."""
        body: dict[str, Any] = self.backend.last.json
        return body

    def check(self, conforms: Conformance) -> int:
        checked = sum(check_exchange(conforms, e) for e in self.recorder.exchanges)
        for body in self.backend.chat_requests():
            kind = (body.get("response_format") or {}).get("type", "text")
            unknown = ("response_format",) if kind not in _SPEC_FORMATS else ()
            conforms("CreateChatCompletionRequest", body, minus=unknown)
        return checked


_SPEC_FORMATS = ("text", "json_object", "json_schema")
"""Format types of the spec; another one is forwarded on purpose and left out of the check."""


MakeGateway = Callable[..., Harness]


@pytest.fixture
def make_gateway(conforms: Conformance) -> Iterator[MakeGateway]:
    stack = ExitStack()
    made: list[Harness] = []

    def make(
        *,
        store: ResponseStore | None = None,
        env: dict[str, str] | None = None,
        env_for: Callable[[ChatFake], dict[str, str]] | None = None,
        api_key: str = "sk-client",
        **settings: Any,
    ) -> Harness:
        """`env`: the environment the gateway reads (keys); `env_for(backend)` adds to it
        what depends on the fake backend's address."""
        backend = ChatFake()
        stack.enter_context(backend)
        env = {**(env or {}), **(env_for(backend) if env_for else {})}
        options: dict[str, Any] = {
            "backend": backend.base,
            "store": "memory",
            "backend_timeout": 5.0,
            "access_log": False,
        }
        options.update(settings)
        gateway = stack.enter_context(
            running(GatewaySettings(**options), store=store or MemoryStore(), env=env)
        )
        recorder = Recorder()
        http = stack.enter_context(httpx2.Client(transport=recorder, timeout=20))
        client = openai.OpenAI(
            base_url=gateway.url + "/v1",
            api_key=api_key,
            max_retries=0,
            http_client=http,
            _strict_response_validation=True,
        )
        harness = Harness(backend, gateway, recorder, client, http)
        made.append(harness)
        return harness

    try:
        yield make
        for harness in made:
            harness.check(conforms)
    finally:
        stack.close()


@pytest.fixture
def gw(make_gateway: MakeGateway) -> Harness:
    return make_gateway()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh working directory without outform.toml, settings read anew."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OUTFORM_CONFIG", raising=False)
    outform.config.reload()
    yield tmp_path
    monkeypatch.undo()
    outform.config.reload()
