"""A reply that is only a call of a tool the request did not offer (found by a new-user trial).

With no tools given, or in tool mode where the model called a tool other than outform's forced
output tool, the reply has no text: it was reported as "the reply is empty", which sent the
user looking at max_tokens. The rule (docs/generate.md, "Tool calls nobody asked for"): such a
reply is asked again like any reply without a value, the model told what it did; when no
attempt is left, the GenerationError names the call (`a call of tool 'NAME'`) and says how to
fix it. Every provider, whole replies and streams, over real HTTP to the fake server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import outform
from outform.errors import GenerationError
from outform.transport import RetryPolicy, Transport
from tests.providers.fake import FakeServer
from tests.providers.test_forced_calls import (
    ITEM_TOOL,
    ONE,
    PARIS,
    WIRES,
    Item,
    Wire,
    call,
    checked,
)


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture
def server(aws: None) -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def _queue(wire: Wire, server: FakeServer, name: str, streamed: bool) -> None:
    pieces = [call(PARIS, name)]
    if streamed:
        events = wire.stream(pieces)
        framed = [(e["type"], e) for e in events] if wire.named_events else events
        server.stream(framed, framing=wire.framing)
    else:
        server.json(wire.reply(pieces))


def _run(wire: Wire, server: FakeServer, output: Any, *, streamed: bool, **options: Any) -> Any:
    ask = [{"role": "user", "content": "Give the item."}]
    common: dict[str, Any] = {
        "base_url": server.url,
        "api_key": "test-key-not-secret",
        "retries": 0,
        **options,
    }
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        try:
            if streamed:
                run = outform.stream(wire.model, ask, output, transport=transport, **common)
                for _ in run:
                    pass
                return run.generation
            return outform.generate(wire.model, ask, output, transport=transport, **common)
        finally:
            checked(wire, server)


STREAMED = pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])


@STREAMED
@pytest.mark.parametrize("mode", ["prompted", "tool"])
def test_a_call_of_a_tool_nobody_offered_is_named_not_called_empty(
    wire: Wire, server: FakeServer, streamed: bool, mode: str
) -> None:
    _queue(wire, server, "get_weather", streamed)
    with pytest.raises(GenerationError) as caught:
        _run(wire, server, Item, streamed=streamed, mode=mode)
    error = caught.value
    shown = str(error)
    assert "empty" not in shown
    assert "a call of tool 'get_weather'" in shown
    if mode == "tool":
        assert f"not of the output tool '{ITEM_TOOL}'" in shown
    assert error.fix is not None and "tools=" in error.fix
    assert "level='full'" not in error.fix  # no repair level reads a tool call
    (attempt,) = error.attempts
    assert attempt.text == "" and attempt.hint is not None


def test_the_model_is_told_what_it_did_on_the_re_ask(server: FakeServer) -> None:
    wire = WIRES["openai"]
    _queue(wire, server, "get_weather", streamed=False)
    server.json(wire.reply([call(ONE, ITEM_TOOL)]))
    result = _run(wire, server, Item, streamed=False, mode="tool", retries=1)
    assert result.value == Item(a=1)
    hint = result.attempts[0].hint
    assert hint is not None and "a call of tool 'get_weather'" in hint.message()
    told = str(server.requests[1].json["messages"])
    assert "a call of tool 'get_weather'" in told


@STREAMED
def test_a_text_output_does_not_take_a_stray_call_for_an_empty_text(
    server: FakeServer, streamed: bool
) -> None:
    """For plain text, an empty reply was a valid value: the call was dropped unsaid."""
    wire = WIRES["anthropic"]
    _queue(wire, server, "get_weather", streamed)
    with pytest.raises(GenerationError, match="a call of tool 'get_weather'"):
        _run(wire, server, None, streamed=streamed)


def test_a_call_of_the_callers_own_tool_is_still_returned(server: FakeServer) -> None:
    wire = WIRES["openai"]
    _queue(wire, server, "get_weather", streamed=False)
    weather = outform.Tool(
        "get_weather", {"type": "object", "properties": {"city": {"type": "string"}}}
    )
    result = _run(wire, server, Item, streamed=False, tools=[weather])
    assert [c.name for c in result.tool_calls] == ["get_weather"]
