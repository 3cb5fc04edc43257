"""`background: true` and `POST /v1/responses/{id}/cancel`, with the official SDK as the
client: a background response runs on the server, is polled with `retrieve`, can be
cancelled (a late result is then dropped), and, over PostgreSQL, any gateway process serves
the poll and the cancellation of a job another process runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.gateway import served
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import ChatFake, HeldReply
from tests.providers.openai_wire import chat_completion

pytest_plugins = ["tests.gateway.postgres"]


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def poll(client: openai.OpenAI, response_id: str) -> Any:
    """The response once it finished (the SDK user's polling loop)."""

    def finished() -> bool:
        return client.responses.retrieve(response_id).status not in ("queued", "in_progress")

    until(finished, "the background response did not finish")
    return client.responses.retrieve(response_id)


def test_a_background_response_runs_and_is_polled(gw: Harness) -> None:
    gw.backend.json(chat_completion(content='{"name": "Ada"}'))
    queued = gw.client.responses.create(model="m", input="Ada", background=True)
    assert queued.status == "queued" and queued.background is True and queued.output == []
    done = poll(gw.client, queued.id)
    assert done.status == "completed" and done.background is True
    assert done.output_text == '{"name": "Ada"}'
    item = gw.client.responses.input_items.list(queued.id).data[0]
    assert item.content[0].text == "Ada"  # type: ignore[union-attr,index]
    gw.backend.json(chat_completion(content="more"))
    follow = gw.client.responses.create(model="m", input="more", previous_response_id=queued.id)
    assert follow.previous_response_id == queued.id


def test_a_failing_backend_fails_the_background_response(gw: Harness) -> None:
    gw.backend.json({"error": {"message": "slow down", "type": "rate_limit"}}, status=429)
    failed = poll(gw.client, gw.client.responses.create(model="m", input="x", background=True).id)
    assert failed.status == "failed"
    assert failed.error is not None
    assert (failed.error.code, failed.error.message) == ("rate_limit_exceeded", "slow down")


def test_cancelling_a_running_response_stops_it_and_drops_its_result(
    make_gateway: MakeGateway,
) -> None:
    gw = make_gateway()
    hold = HeldReply(body=chat_completion(content="too late"))
    gw.backend.reply(hold)
    started = gw.client.responses.create(model="m", input="x", background=True)
    assert hold.reached.wait(20)
    assert gw.client.responses.retrieve(started.id).status == "in_progress"
    with pytest.raises(openai.BadRequestError, match="still in_progress"):
        gw.client.responses.create(model="m", input="y", previous_response_id=started.id)
    cancelled = gw.client.responses.cancel(started.id)
    assert cancelled.status == "cancelled" and cancelled.id == started.id
    assert hold.abandoned.wait(20), "the gateway kept waiting for the backend"
    hold.gate.set()
    worker = gw.gateway.app.gateway.worker  # type: ignore[union-attr]
    until(lambda: not worker._jobs, "the job did not end")
    assert gw.client.responses.retrieve(started.id).status == "cancelled"
    assert gw.client.responses.cancel(started.id).status == "cancelled"  # again: the same


def test_a_full_background_queue_answers_429_with_retry_after(
    make_gateway: MakeGateway,
) -> None:
    gw = make_gateway(background_max_running=1, background_max_queued=0)
    hold = HeldReply(body=chat_completion(content="slow"))
    gw.backend.reply(hold)
    running = gw.client.responses.create(model="m", input="x", background=True)
    assert hold.reached.wait(20)
    with pytest.raises(openai.RateLimitError) as refused:
        gw.client.with_options(max_retries=0).responses.create(
            model="m", input="y", background=True
        )
    assert refused.value.code == "too_many_background_responses"
    assert refused.value.response.headers["retry-after"] == "5"
    # (the trial's count said 3 running for 1 running and 2 waiting, naming no setting)
    said = refused.value.response.json()["error"]["message"]
    assert "1 background responses running (background_max_running = 1)" in said
    assert "0 waiting (background_max_queued = 0)" in said
    hold.gate.set()
    assert poll(gw.client, running.id).status == "completed"


def test_continuing_from_a_cancelled_response_keeps_the_whole_conversation(
    make_gateway: MakeGateway,
) -> None:
    """Found by a trial: a response cancelled (or failed when its process died) never had its
    conversation written, and the next turn was sent without any history, with a 200."""
    gw = make_gateway()
    gw.backend.json(chat_completion(content="Noted."))
    first = gw.client.responses.create(model="m", input="The code word is PINEAPPLE.")
    hold = HeldReply(body=chat_completion(content="too late"))
    gw.backend.reply(hold)
    second = gw.client.responses.create(
        model="m", input="Remember it.", previous_response_id=first.id, background=True
    )
    assert hold.reached.wait(20)
    assert gw.client.responses.cancel(second.id).status == "cancelled"
    hold.gate.set()
    gw.backend.json(chat_completion(content="PINEAPPLE"))
    gw.client.responses.create(
        model="m", input="What was the code word?", previous_response_id=second.id
    )
    sent = [(m["role"], m["content"]) for m in gw.backend.chat_requests()[-1]["messages"]]
    assert sent == [
        ("user", "The code word is PINEAPPLE."),
        ("assistant", "Noted."),
        ("user", "Remember it."),
        ("user", "What was the code word?"),
    ]


def test_what_cannot_be_cancelled(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="done"))
    plain = gw.client.responses.create(model="m", input="x")
    with pytest.raises(openai.BadRequestError, match="background"):
        gw.client.responses.cancel(plain.id)
    gw.backend.json(chat_completion(content="done"))
    finished = poll(gw.client, gw.client.responses.create(model="m", input="x", background=True).id)
    with pytest.raises(openai.BadRequestError, match="already completed"):
        gw.client.responses.cancel(finished.id)
    with pytest.raises(openai.NotFoundError):
        gw.client.responses.cancel("resp_" + "0" * 50)


def test_deleting_a_running_response_stops_it(make_gateway: MakeGateway) -> None:
    gw = make_gateway()
    hold = HeldReply(body=chat_completion(content="nobody wants this"))
    gw.backend.reply(hold)
    started = gw.client.responses.create(model="m", input="x", background=True)
    assert hold.reached.wait(20)
    gw.client.responses.delete(started.id)
    assert hold.abandoned.wait(20)
    hold.gate.set()
    with pytest.raises(openai.NotFoundError):
        gw.client.responses.retrieve(started.id)


def test_two_gateway_processes_over_one_postgres_share_background_responses(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue("postgres_server")
    schema, dsn = server.schema()
    request.addfinalizer(lambda: server.drop(schema))
    env = {"OUTFORM_TEST_STORE": dsn}
    store = "postgres:$OUTFORM_TEST_STORE"
    backend = ChatFake()
    with (
        backend,
        served.serving(backend.base, store, tmp_path, env=env) as one,
        served.serving(backend.base, store, tmp_path, env=env) as two,
    ):
        first = openai.OpenAI(base_url=one.url + "/v1", api_key="x", max_retries=0)
        second = openai.OpenAI(base_url=two.url + "/v1", api_key="x", max_retries=0)
        backend.json(chat_completion(content="served by one, polled at two"))
        done = poll(second, first.responses.create(model="m", input="x", background=True).id)
        assert done.output_text == "served by one, polled at two"

        hold = HeldReply(body=chat_completion(content="too late"))
        backend.reply(hold)
        running = first.responses.create(model="m", input="x", background=True)
        assert hold.reached.wait(20)
        assert second.responses.retrieve(running.id).status == "in_progress"
        assert second.responses.cancel(running.id).status == "cancelled"
        assert hold.abandoned.wait(20), "process one did not notice the cancellation"
        hold.gate.set()
        assert first.responses.retrieve(running.id).status == "cancelled"
