"""An `echo:` provider on a real HTTP server (see tests/test_run.py): the loop's tests need
no provider's wire format, only replies in order and the requests that were sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from outform.providers import registry
from outform.transport import RetryPolicy, Transport
from tests.providers.fake import FakeServer


class Echo:
    def __init__(self, server: FakeServer, transport: Transport) -> None:
        self.server = server
        self.transport = transport

    def reply(self, *texts: str | dict[str, Any], usage: tuple[int, int] = (10, 5)) -> None:
        """Queue replies: text as written, a dict as its JSON."""
        for text in texts:
            body = text if isinstance(text, str) else orjson.dumps(text).decode()
            self.server.json({"text": body, "usage": usage})

    @property
    def sent(self) -> list[Any]:
        """The bodies of every request, in order."""
        return [request.json for request in self.server.requests]

    def texts(self, index: int = -1) -> list[str]:
        """The texts of the messages of one request."""
        return [m["text"] for m in self.sent[index]["messages"]]


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[Echo]:
    with FakeServer() as fake, Transport(retry=RetryPolicy(retries=0)) as transport:
        spec = registry.ProviderSpec(
            "echo", "tests.test_run:EchoAdapter", fake.url, profile="openai", key_required=False
        )
        monkeypatch.setitem(registry.PROVIDERS, "echo", spec)
        yield Echo(fake, transport)
