"""What the providers send, read as JSON by its grammar, on every API (found by a new-user
trial): a reply holding an escaped lone surrogate (`"\\ud800"`, which a provider written in
Python sends for a broken character) was refused as "a stream event that is not JSON" (as "a
body that is not JSON", whole). It is JSON; the reply it carries reaches the parse pipeline,
which refuses the lone surrogate with its own error naming where it is. A byte order mark
before a body is dropped. Over real HTTP to the fake server, through generate() and stream().
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import outform
from outform.errors import InputError
from tests.providers.fake import FakeServer, Reply, json_bytes
from tests.providers.test_forced_calls import WIRES, Wire, prose

STAND_IN = '{"a": "xSTAND-INy"}'
"""The model's text. STAND-IN becomes a lone surrogate (where a character broke) once the
reply is built and checked against the official artifacts, whose readers refuse one."""


def _broken(value: Any) -> Any:
    """`value` with the stand-in swapped for the broken text, wherever it is."""
    if isinstance(value, str):
        return value.replace("STAND-IN", "\ud800")
    if isinstance(value, list | tuple):
        return type(value)(_broken(item) for item in value)
    if isinstance(value, dict):
        return {key: _broken(item) for key, item in value.items()}
    return value


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture
def server(aws: None) -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def _run(wire: Wire, server: FakeServer, *, streamed: bool) -> Any:
    ask = "Give the item."
    options: dict[str, Any] = {
        "base_url": server.url,
        "api_key": "test-key-not-secret",
        "retries": 0,
        "mode": "prompted",
    }
    schema = {"type": "object"}
    if streamed:
        run = outform.stream(wire.model, ask, schema, **options)
        for _ in run:
            pass
        return run.generation
    return outform.generate(wire.model, ask, schema, **options)


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_a_reply_with_an_escaped_lone_surrogate_is_refused_by_the_parser(
    wire: Wire, server: FakeServer, streamed: bool
) -> None:
    if streamed:
        events = _broken(wire.stream([prose(STAND_IN)]))
        framed = [(e["type"], e) for e in events] if wire.named_events else events
        server.stream(framed, framing=wire.framing)
    else:
        body = _broken(wire.reply([prose(STAND_IN)]))
        assert b"\\ud800" in json_bytes(body)  # escaped, as the provider would send it
        server.json(body)
    with pytest.raises(InputError, match=r"lone surrogate \(U\+D800\)") as caught:
        _run(wire, server, streamed=streamed)
    assert caught.value.where == "character 8"


def test_a_byte_order_mark_before_a_whole_reply_is_dropped(wire: Wire, server: FakeServer) -> None:
    server.reply(Reply(body=b"\xef\xbb\xbf" + json_bytes(wire.reply([prose('{"a": 1}')]))))
    assert _run(wire, server, streamed=False).value == {"a": 1}
