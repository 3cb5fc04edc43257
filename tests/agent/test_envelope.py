"""The envelope: its schema in every dialect, generate() and stream() with every provider's
fake over real HTTP, and the text fallback."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import outform
from outform.agent import Envelope, Metadata
from outform.format import ResponseFormat
from outform.plan import plan
from outform.providers.registry import resolve
from outform.run import GenerationError
from outform.schema.derive import schema_of
from outform.schema.dialects import check_rules, names, translate
from outform.trace.events import Event
from outform.transport import RetryPolicy, Transport
from tests.echo import Echo
from tests.test_generate_providers import Call
from tests.test_stream_providers import MESSAGES, Case


class Invoice(BaseModel):
    number: str
    total: float


REPLY: dict[str, Any] = {
    "content": "Oslo will be mild.",
    "tool_calls": [
        {"function_name": "forecast", "arguments": {"city": "Oslo", "days": 3}, "reasoning": "x"}
    ],
    "metadata": {
        "confidence": 0.9,
        "sources": ["met.no"],
        "reasoning_steps": ["look up", "summarise"],
        "response_type": "tool_call",
    },
    "error": {"code": "partial", "message": "one day missing", "recoverable": True},
}


@pytest.mark.parametrize("output", [Envelope, Envelope[Invoice]], ids=["str", "Invoice"])
@pytest.mark.parametrize("dialect", names())
def test_the_schema_obeys_every_dialect_and_nothing_is_dropped(output: Any, dialect: str) -> None:
    result = translate(schema_of(output), dialect)
    assert check_rules(result.schema, dialect) == []
    assert result.ledger.counts()["dropped"] == 0
    value = {**REPLY, "content": {"number": "7", "total": 1.5}} if output is not Envelope else REPLY
    assert result.reverse(result.forward(value)) == value


def _wire_text(model: str, value: Any, *, streaming: bool = False) -> str:
    """The reply as the provider's model writes it: in the dialect the plan sends."""
    resolved = resolve(model, api_key="test-key-not-secret")
    call_plan = plan(
        ResponseFormat.of(Envelope),
        provider=resolved.spec.profile_name,
        model=resolved.model,
        streaming=streaming,
    )
    wire = call_plan.translation.forward(value) if call_plan.translation else value
    return orjson.dumps(wire).decode()


def test_generate_returns_an_envelope_from_every_provider(call: Call) -> None:
    call.reply(call.provider.reply(_wire_text(call.provider.model, REPLY), "stop"))
    result = call.generate(Envelope)
    assert result.value == Envelope.model_validate(REPLY)
    assert result.value.tool_calls[0].arguments == {"city": "Oslo", "days": 3}
    assert result.parse is not None  # nothing repaired: only the dialect's mapping back
    assert {c.transform for c in result.parse.changes} <= {"dialect_reverse"}


def test_stream_ends_with_the_envelope_from_every_provider(case: Case) -> None:
    case.send(_wire_text(case.provider.model, REPLY, streaming=True))
    with Transport(retry=RetryPolicy(retries=0)) as transport:
        run = outform.stream(
            case.provider.model, MESSAGES, Envelope, transport=transport, **case.options()
        )
        snapshots = list(run)
    assert snapshots[-1].final and snapshots[-1].value == Envelope.model_validate(REPLY)


# -- the text fallback ------------------------------------------------------------------------

PROSE = "Hello! I could not find any invoice in that message, {sadly}."


def test_a_reply_that_ignores_the_format_is_kept_as_text(echo: Echo) -> None:
    echo.reply(PROSE, PROSE)
    seen: list[Event] = []
    result = outform.generate(
        "echo:gpt-5", "Hi", Envelope, transport=echo.transport, retries=1, observers=[seen.append]
    )
    assert result.value == Envelope(content=PROSE, metadata=Metadata(response_type="text"))
    assert len(result.attempts) == 2 and result.attempts[-1].hint is not None
    assert result.parse is not None
    (change,) = result.parse.changes
    assert (change.stage, change.transform) == ("fallback", "text_fallback")
    names = [e.name for e in seen if e.name.startswith(("output.reask", "output.fallback"))]
    assert names == ["output.reask.attempt", "output.fallback.text"]


def test_a_typed_envelope_falls_back_to_a_text_envelope(echo: Echo) -> None:
    echo.reply(PROSE)
    result = outform.generate(
        "echo:gpt-5", "Hi", Envelope[Invoice], transport=echo.transport, retries=0
    )
    value: Any = result.value
    assert isinstance(value, Envelope)
    assert value.content == PROSE and value.metadata.response_type == "text"
    assert result.data["content"] == PROSE


def test_the_fallback_is_opt_out(echo: Echo) -> None:
    echo.reply(PROSE)
    with pytest.raises(GenerationError):
        outform.generate(
            "echo:gpt-5", "Hi", Envelope, transport=echo.transport, retries=0, text_fallback=False
        )


def test_json_that_does_not_match_is_not_turned_into_text(echo: Echo) -> None:
    echo.reply({"content": ["not", "a", "string"], "metadata": {"confidence": 7}})
    with pytest.raises(GenerationError):
        outform.generate("echo:gpt-5", "Hi", Envelope, transport=echo.transport, retries=0)


def test_other_output_types_have_no_fallback(echo: Echo) -> None:
    echo.reply(PROSE)
    with pytest.raises(GenerationError):
        outform.generate("echo:gpt-5", "Hi", Invoice, transport=echo.transport, retries=0)


def test_a_streamed_reply_that_ignores_the_format_is_kept_whole() -> None:
    from tests.providers.fake import FakeServer
    from tests.test_stream_providers import PROVIDERS

    with FakeServer() as server:
        case = Case("openai", server)
        case.provider = PROVIDERS["openai"]
        case.send(PROSE * 3)
        run = outform.stream(case.provider.model, MESSAGES, Envelope, retries=0, **case.options())
        final = list(run)[-1]
    assert final.value == Envelope(content=PROSE * 3, metadata=Metadata(response_type="text"))
