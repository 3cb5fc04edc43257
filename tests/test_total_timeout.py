"""`total_timeout` ends a call at its deadline, whatever the provider does meanwhile.

httpx's `timeout` is the idle limit, applied to each read: a provider that goes silent for
less than it (a stall mid-body, mid-stream, or after the last event without closing) held the
call until it spoke again or closed, and a call could succeed past its deadline (found by a
trial). The servers here stall far longer than `total_timeout` and far shorter than the idle
limit, until the test ends; the call must end with the error naming `total_timeout`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from outform.errors import ConnectionFailedError
from outform.providers.base import StreamFormat, WireRequest
from outform.transport import AsyncTransport, Endpoint, RetryPolicy, Transport
from tests.providers.fake import FakeServer, Reply

IDLE = 60.0
"""The idle limit: far longer than any stall lasts (each ends with its test)."""
TOTAL = 0.5
LATE = r"within the total timeout of 0\.5 s"

BODY = {"choices": [{"message": {"content": '{"a": 1}'}}], "padding": "x" * 200}
EVENTS = [{"n": 1}, {"n": 2}, {"n": 3}]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def endpoint(server: FakeServer) -> Endpoint:
    return Endpoint("fake", server.url)


def transport() -> Transport:
    return Transport(timeout=IDLE, total_timeout=TOTAL)


def assert_names_the_total_timeout(error: ConnectionFailedError) -> None:
    assert "0.5 s" in str(error) and "total_timeout" in str(error)
    assert error.fix is not None and "total_timeout" in error.fix


WHOLE = WireRequest("/v1/chat", {"hello": "world"})


def streamed(framing: StreamFormat) -> WireRequest:
    return WireRequest("/v1/chat", {"hello": "world"}, stream=framing)


# -- a whole body ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [Reply(body=BODY, stall_after=40), Reply(body=BODY, stall_after=0), Reply(unanswered=True)],
    ids=["mid-body", "after-the-headers", "before-the-headers"],
)
def test_a_body_held_past_the_deadline_ends_the_call_there(
    server: FakeServer, reply: Reply
) -> None:
    server.reply(reply)
    with transport() as client, pytest.raises(ConnectionFailedError, match=LATE) as caught:
        client.send(endpoint(server), WHOLE)
    assert_names_the_total_timeout(caught.value)
    assert len(server.requests) == 1  # past the deadline, nothing is retried


def test_a_retry_does_not_outlive_the_deadline(server: FakeServer) -> None:
    """The deadline covers the retries: a dropped answer, then one held up."""
    server.reply(Reply(body=BODY, drop_after=1), Reply(unanswered=True))
    quick = RetryPolicy(backoff=0.01)  # (a back-off that reached the deadline would end it)
    with (
        Transport(timeout=IDLE, total_timeout=TOTAL, retry=quick) as client,
        pytest.raises(ConnectionFailedError, match=LATE),
    ):
        client.send(endpoint(server), WHOLE)
    assert len(server.requests) == 2


# -- a stream -------------------------------------------------------------------------------


@pytest.mark.parametrize("framing", ["sse", "ndjson"])
def test_a_stream_that_stalls_past_the_deadline_ends_the_call_there(
    server: FakeServer, framing: Any
) -> None:
    server.stream(EVENTS, framing, stall_after=1)
    received = []
    with transport() as client, pytest.raises(ConnectionFailedError, match=LATE) as caught:
        for event in client.stream(endpoint(server), streamed(framing)):
            received.append(event)
    assert received == [{"n": 1}]
    assert_names_the_total_timeout(caught.value)


@pytest.mark.parametrize("ended_by_close", [False, True], ids=["chunked", "ended-by-close"])
def test_a_stream_complete_but_not_ended_by_the_deadline_is_no_success(
    server: FakeServer, ended_by_close: bool
) -> None:
    """Every event sent, then silence without the end of the stream: the answer did not end
    within the deadline, so the call fails there rather than succeeding when it closes (nor
    when the connection cut at the deadline reads as the end of a stream ended by close)."""
    server.stream(EVENTS, stall_after=len(EVENTS), ended_by_close=ended_by_close)
    received = []
    with transport() as client, pytest.raises(ConnectionFailedError, match=LATE):
        for event in client.stream(endpoint(server), streamed("sse")):
            received.append(event)
    assert received == EVENTS


def test_a_stream_whose_headers_are_held_past_the_deadline_ends_there(
    server: FakeServer,
) -> None:
    server.reply(Reply(unanswered=True))
    with transport() as client, pytest.raises(ConnectionFailedError, match=LATE):
        list(client.stream(endpoint(server), streamed("sse")))
    assert len(server.requests) == 1


def test_the_transport_serves_the_next_call_after_a_deadline(server: FakeServer) -> None:
    """The connection cut at the deadline is not reused: the next call is answered."""
    server.stream(EVENTS, stall_after=1)
    server.stream(EVENTS)
    with transport() as client:
        with pytest.raises(ConnectionFailedError, match=LATE):
            list(client.stream(endpoint(server), streamed("sse")))
        assert list(client.stream(endpoint(server), streamed("sse"))) == EVENTS


# -- the async transport --------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        Reply(body=BODY, stall_after=40),
        Reply(unanswered=True),
        Reply(events=EVENTS, stall_after=1),
        Reply(events=EVENTS, stall_after=len(EVENTS)),
        Reply(events=EVENTS, framing="ndjson", stall_after=1),
    ],
    ids=["mid-body", "before-the-headers", "mid-stream", "stream-not-ended", "mid-ndjson"],
)
def test_the_async_transport_ends_a_held_call_at_the_deadline_too(
    server: FakeServer, reply: Reply
) -> None:
    server.reply(reply)
    received: list[Any] = []

    async def main() -> None:
        async with AsyncTransport(
            timeout=IDLE, total_timeout=TOTAL, retry=RetryPolicy(retries=0)
        ) as client:
            if reply.events is None:
                await client.send(endpoint(server), WHOLE)
                return
            async for event in client.stream(endpoint(server), streamed(reply.framing)):
                received.append(event)

    with pytest.raises(ConnectionFailedError, match=LATE) as caught:
        asyncio.run(main())
    assert_names_the_total_timeout(caught.value)
    if reply.events is not None:
        assert received == list(reply.events)[: reply.stall_after]
