"""How a stream is framed, as a new-user trial met it: SSE lines ended by a lone CR (which
the SSE specification allows), and an Ollama server that answers a stream request with JSON.

Over real HTTP: the fake server on 127.0.0.1 (tests/providers/fake.py) plays the providers'
wires; the reader is also fed every split of a stream into two chunks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest

import outform
from outform.errors import ProviderError
from outform.transport import Endpoint, RetryPolicy, Transport, _EventReader
from tests.providers import openai_wire
from tests.providers.fake import FakeServer, sse
from tests.test_generate_providers import PROVIDERS as REPLIES
from tests.test_stream_providers import PROVIDERS as STREAMS

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
ADA = {"name": "Ada", "age": 36}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def transport() -> Iterator[Transport]:
    with Transport(retry=RetryPolicy(retries=0)) as sender:
        yield sender


# -- SSE: a line ends with CRLF, LF or a lone CR ------------------------------------------------

STREAM = b': keep-alive\nevent: message\ndata: {"a":\ndata: 1}\n\ndata: {"b": 2}\n\n'
EVENTS = [{"a": 1, "type": "message"}, {"b": 2}]


def read(*chunks: bytes) -> list[Mapping[str, Any]]:
    reader = _EventReader(Endpoint("openai", "http://127.0.0.1"), "sse", 200)
    events = []
    for chunk in chunks:
        events += reader.feed(chunk)
    return events + reader.finish()


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_of_the_sse_specification_reads_the_same_events(end: bytes) -> None:
    """A lone CR was no line end: every event of such a stream ran into the next, and the
    call failed with "a stream event that is not JSON"."""
    stream = STREAM.replace(b"\n", end)
    assert read(stream) == EVENTS
    for cut in range(len(stream) + 1):  # wherever the network splits it
        assert read(stream[:cut], b"", stream[cut:]) == EVENTS, cut


def test_a_crlf_split_between_two_chunks_ends_one_line_not_two() -> None:
    """The CR ends the line at once; the LF opening the next chunk is the rest of the CRLF,
    not a blank line (which would end an event before its second `data:` line)."""
    assert read(b'data: {"a":\r', b"\ndata: 1}\r\n\r\n") == [{"a": 1}]


@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_a_provider_stream_ended_by_lone_crs_is_read(
    server: FakeServer, transport: Transport, name: str
) -> None:
    events, _ = STREAMS[name].events(orjson.dumps(ADA).decode())
    server.stream([sse(event).replace(b"\n", b"\r") for event in events])
    run = outform.stream(
        STREAMS[name].model, "Ada, 36", PERSON, base_url=server.url,
        api_key="test-key-not-secret", transport=transport,
    )  # fmt: skip
    assert list(run)[-1].data == ADA


# -- what a wrong content type says it asked for -------------------------------------------------


def test_an_ollama_json_answer_to_a_stream_names_the_type_the_request_asked_for(
    server: FakeServer, transport: Transport
) -> None:
    """The error said it asked for application/json-seq; the request's Accept was
    application/x-ndjson."""
    server.json(REPLIES["ollama"].reply(orjson.dumps(ADA).decode(), "stop"))
    run = outform.stream(
        "ollama:llama3.2", "Ada, 36", PERSON, base_url=server.url, transport=transport
    )
    with pytest.raises(ProviderError) as caught:
        list(run)
    accept = server.last.headers["accept"]
    assert accept == "application/x-ndjson"
    assert f"asked for an event stream ({accept})" in caught.value.what


def test_an_openai_json_answer_to_a_stream_names_text_event_stream(
    server: FakeServer, transport: Transport
) -> None:
    server.json(openai_wire.chat_completion(content=orjson.dumps(ADA).decode()))
    run = outform.stream(
        "openai:gpt-4o", "Ada, 36", PERSON, base_url=server.url + "/v1",
        api_key="test-key-not-secret", transport=transport,
    )  # fmt: skip
    with pytest.raises(ProviderError) as caught:
        list(run)
    assert server.last.headers["accept"] == "text/event-stream"
    assert "asked for an event stream (text/event-stream)" in caught.value.what
