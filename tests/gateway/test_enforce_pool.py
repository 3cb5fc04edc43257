"""Enforcement mode never runs the pipeline on the event loop.

The check of a reply runs in a worker process (`gateway.workers`). The tests hold a check in
the middle (`slow_jobs.held`) and watch the order of events: `/healthz` and other requests are
answered while it is in flight; a check that outlives its deadline has its worker stopped and
the request gets a 422 naming the limit, and the pool goes on serving.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from outform.gateway.checks import check_reply
from tests.gateway.harness import ChatFake, Running, in_front_of_fake
from tests.gateway.slow_jobs import held
from tests.providers.openai_wire import chat_completion

ON = {"x-outform-enforce": "1"}
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}
REQUEST = {
    "model": "m",
    "input": "x",
    "text": {"format": {"type": "json_schema", "name": "A", "schema": SCHEMA}},
}


@pytest.fixture
def setup() -> Iterator[tuple[ChatFake, Running]]:
    with in_front_of_fake(enforce_workers=1, enforce_time_limit=0.25) as pair:
        yield pair


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30  # a guard against a hang, not a measurement
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.005)


def _post(gw: Running, answers: list[httpx.Response]) -> threading.Thread:
    def send() -> None:
        with httpx.Client(timeout=60) as http:
            answers.append(http.post(gw.url + "/v1/responses", json=REQUEST, headers=ON))

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def test_healthz_and_other_requests_are_answered_while_a_check_is_in_flight(
    setup: tuple[ChatFake, Running], tmp_path: Path
) -> None:
    backend, gw = setup
    checker = gw.app.gateway.checker  # type: ignore[union-attr]
    checker.time_limit = 30.0  # this check is held on purpose: no deadline in the way
    release, started = tmp_path / "release", tmp_path / "started"
    checker.job = functools.partial(held, str(release), str(started))
    backend.json(chat_completion(content='{"a": 1}'))
    backend.json(chat_completion(content="plain"))
    answers: list[httpx.Response] = []
    request = _post(gw, answers)
    try:
        _wait_for(started)  # the check is running in the worker, and cannot finish
        with httpx.Client(timeout=10) as http:
            health = http.get(gw.url + "/healthz")
            other = http.post(gw.url + "/v1/responses", json={"model": "m", "input": "y"})
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert other.status_code == 200 and other.json()["output"][0]["content"][0]["text"]
        assert request.is_alive() and answers == []  # ...while the check was still held
    finally:
        release.touch()
        request.join(30)
    (answer,) = answers
    assert answer.status_code == 200
    assert orjson.loads(answer.json()["output"][0]["content"][0]["text"]) == {"a": 1}
    assert answer.headers["x-outform-enforce"] == "valid"


def test_a_check_past_its_deadline_is_stopped_and_the_pool_goes_on(
    setup: tuple[ChatFake, Running], tmp_path: Path
) -> None:
    backend, gw = setup
    checker = gw.app.gateway.checker  # type: ignore[union-attr]
    never = tmp_path / "never-released"
    checker.job = functools.partial(held, str(never), str(tmp_path / "started"))
    backend.json(chat_completion(content='{"a": 1}'))
    with httpx.Client(timeout=30) as http:
        stuck = http.post(gw.url + "/v1/responses", json=REQUEST, headers=ON)
        assert stuck.status_code == 422
        error: dict[str, Any] = stuck.json()["error"]
        assert error["code"] == "output_invalid"
        assert "longer than 0.5 s (twice enforce_time_limit)" in error["message"]
        checker.job = check_reply  # the same single worker slot serves the next request
        backend.json(chat_completion(content='Here: {"a": "2"}'))
        fine = http.post(gw.url + "/v1/responses", json=REQUEST, headers=ON)
    assert fine.status_code == 200
    assert fine.headers["x-outform-enforce"] == "repaired"
    assert orjson.loads(fine.json()["output"][0]["content"][0]["text"]) == {"a": 2}
