"""Bounded memory: request bodies share one budget (`max_buffered_bytes`).

A body that would go past the budget gets 503 with `Retry-After` before the gateway reads it,
small requests still pass beside the big one that holds the budget, and the budget is given
back once an answer is sent (the refused request then succeeds). The big body is held open in
the middle of its upload, so the test knows it is in flight by the budget it holds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from tests.gateway.harness import ChatFake, Running, in_front_of_fake
from tests.providers.openai_wire import chat_completion

KiB = 1024


@pytest.fixture
def gateway() -> Iterator[tuple[ChatFake, Running]]:
    with in_front_of_fake(max_body_bytes=64 * KiB, max_buffered_bytes=100 * KiB) as pair:
        yield pair


def _big(size: int) -> bytes:
    return orjson.dumps({"model": "m", "input": "x" * (size - 40)})


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_past_the_budget_gets_503_with_retry_after(
    gateway: tuple[ChatFake, Running], declared: bool
) -> None:
    backend, gw = gateway
    budget = gw.app.budget
    first = _big(60 * KiB)
    resume = threading.Event()
    answers: list[httpx.Response] = []

    def upload() -> Iterator[bytes]:
        yield first[: 55 * KiB]
        resume.wait(30)
        yield first[55 * KiB :]

    def send() -> None:
        headers = {"content-length": str(len(first))} if declared else {}
        with httpx.Client(timeout=30) as http:
            answers.append(http.post(gw.url + "/v1/responses", content=upload(), headers=headers))

    holder = threading.Thread(target=send)
    for _ in range(3):
        backend.json(chat_completion(content="ok"))
    holder.start()
    try:
        deadline = time.monotonic() + 30  # a guard against a hang, not a measurement
        while budget.used < 55 * KiB:
            assert time.monotonic() < deadline, "the first body never reached the gateway"
            time.sleep(0.005)
        with httpx.Client(timeout=30) as http:
            refused = http.post(gw.url + "/v1/responses", content=_big(60 * KiB))
            small = http.post(gw.url + "/v1/responses", json={"model": "m", "input": "hi"})
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "1"
        error: dict[str, Any] = refused.json()["error"]
        assert error["code"] == "server_busy"
        assert f"max_buffered_bytes = {100 * KiB}" in error["message"]
        assert small.status_code == 200
    finally:
        resume.set()
        holder.join(30)
    assert [a.status_code for a in answers] == [200]
    assert budget.used == 0  # every lease was given back
    with httpx.Client(timeout=30) as http:
        again = http.post(gw.url + "/v1/responses", content=_big(60 * KiB))
    assert again.status_code == 200
