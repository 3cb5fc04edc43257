"""A Retry-After that ends past the call's deadline is not waited for.

A trial found a 429 asking for 20 s, on a call with a total timeout of 5 s, reported as "did
not finish its answer within the total timeout of 5 s": the transport slept until the
deadline, and the rate limit was never named. The rule: when the provider asks to wait longer
than the call has left, the call stops at once with the provider's own error (a
RateLimitError for a 429), which names the Retry-After and the total timeout. A wait that fits
is still waited, and the error of the last retry allowed is the provider's, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest

from outform.errors import ProviderError, RateLimitError, ServerError
from outform.providers.base import WireRequest
from outform.transport import AsyncTransport, Endpoint, RetryPolicy, Transport
from tests.providers.fake import FakeServer, Reply

WIRE = WireRequest("/v1/chat", {"hello": "world"})
TOTAL = 5.0


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def endpoint(server: FakeServer) -> Endpoint:
    return Endpoint("fake", server.url)


def rate_limited(seconds: str) -> Reply:
    return Reply(
        status=429, body={"error": {"message": "rate limited"}}, headers={"retry-after": seconds}
    )


def send(server: FakeServer, waits: list[float]) -> None:
    with Transport(total_timeout=TOTAL, sleep=waits.append) as transport:
        transport.send(endpoint(server), WIRE)


def asend(server: FakeServer, waits: list[float]) -> None:
    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def main() -> None:
        async with AsyncTransport(total_timeout=TOTAL, sleep=sleep) as transport:
            await transport.send(endpoint(server), WIRE)

    asyncio.run(main())


Call = Callable[[FakeServer, list[float]], None]
TRANSPORTS = pytest.mark.parametrize("call", [send, asend], ids=["sync", "async"])


def assert_names_the_wait_and_the_deadline(error: ProviderError, message: str) -> None:
    assert message in error.what  # the provider's own
    assert "20 s (Retry-After)" in error.what
    assert "total timeout of 5 s" in error.what
    assert error.fix is not None and "total_timeout" in error.fix
    assert error.retry_after == 20.0


@TRANSPORTS
def test_a_rate_limit_asking_for_more_than_the_call_has_left_ends_it_at_once(
    server: FakeServer, call: Call
) -> None:
    server.reply(rate_limited("20"))
    waits: list[float] = []
    with pytest.raises(RateLimitError) as caught:
        call(server, waits)
    assert waits == []  # not a second slept
    assert len(server.requests) == 1  # and nothing sent again
    assert_names_the_wait_and_the_deadline(caught.value, "rate limited")
    assert "did not finish its answer" not in caught.value.what  # no timeout is told


@TRANSPORTS
def test_any_retried_status_asking_for_too_long_a_wait_ends_the_same_way(
    server: FakeServer, call: Call
) -> None:
    busy = {"error": {"message": "overloaded"}}
    server.reply(Reply(status=503, body=busy, headers={"retry-after": "20"}))
    with pytest.raises(ServerError) as caught:
        call(server, [])
    assert caught.value.status == 503
    assert_names_the_wait_and_the_deadline(caught.value, "overloaded")


@TRANSPORTS
def test_a_wait_that_fits_before_the_deadline_is_still_waited(
    server: FakeServer, call: Call
) -> None:
    server.reply(rate_limited("3"))
    server.json({"ok": 1})
    waits: list[float] = []
    call(server, waits)
    assert waits == [3.0]
    assert len(server.requests) == 2


def test_the_last_retry_allowed_gives_the_providers_error_as_it_is(server: FakeServer) -> None:
    """No retry was left: the wait does not matter, and is not told as the reason."""
    server.reply(rate_limited("20"))
    with (
        Transport(total_timeout=TOTAL, retry=RetryPolicy(retries=0)) as transport,
        pytest.raises(RateLimitError) as caught,
    ):
        transport.send(endpoint(server), WIRE)
    assert caught.value.retry_after == 20.0
    assert "Retry-After" not in caught.value.what
