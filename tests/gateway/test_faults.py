"""Every answer is truthful under backend faults: the right status, exactly one end to every
stream, and what is stored matches what was answered.

The backend is `faults.FaultServer` (500, 429, reset, stall, stall mid-answer, drop, malformed
JSON, an HTML page, a truncated stream, `Connection: close` truncation, an error event), the
gateway runs with short timeouts (the stalls outlast them), and `faults.judge` checks each
answer as benchmarks/bench_gateway.py does under load. A client timeout well above the
gateway's is the "hung connection" check: a hang fails the test with a read timeout.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import orjson
import pytest

from outform.gateway.settings import GatewaySettings
from tests.gateway.faults import FAULTS, FaultServer, judge, sse_data
from tests.gateway.harness import RecordingStore, Running, free_port, running

IDLE, TOTAL, STALL = 0.5, 2.0, 4.0
PATHS = {"responses": "/v1/responses", "chat": "/v1/chat/completions"}


@pytest.fixture(scope="module")
def faulty() -> Iterator[FaultServer]:
    with FaultServer(stall=STALL) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(faulty: FaultServer) -> Iterator[tuple[Running, RecordingStore]]:
    store = RecordingStore()
    settings = GatewaySettings(
        backend=faulty.base,
        store="memory",
        backend_idle_timeout=IDLE,
        backend_timeout=TOTAL,
        access_log=False,
    )
    with running(settings, store=store) as gw:
        yield gw, store


def body_for(api: str, fault: str, stream: bool) -> dict[str, Any]:
    if api == "responses":
        return {"model": fault, "input": "x", "stream": stream}
    return {"model": fault, "messages": [{"role": "user", "content": "x"}], "stream": stream}


def call(gw: Running, api: str, fault: str, stream: bool) -> httpx.Response:
    with httpx.Client(timeout=STALL * 3) as http:  # a hang fails here, with a read timeout
        return http.post(gw.url + PATHS[api], json=body_for(api, fault, stream))


def verdict(
    gateway: tuple[Running, RecordingStore], api: str, fault: str, stream: bool
) -> list[str]:
    """What is wrong with the gateway's answer to one faulty request (empty: nothing)."""
    gw, store = gateway
    answer = call(gw, api, fault, stream)
    return judge(
        fault,
        stream=stream,
        api=api,  # type: ignore[arg-type]
        status=answer.status_code,
        headers=answer.headers,
        body=answer.content,
        store=store,
    )


@pytest.mark.parametrize("api", ["responses", "chat"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_gets_a_truthful_answer(
    gateway: tuple[Running, RecordingStore], fault: str, stream: bool, api: str
) -> None:
    assert verdict(gateway, api, fault, stream) == []
    assert gateway[1].left_unfinished() == {}


def test_a_truncated_stream_says_it_was_cut_off_and_is_stored_failed(
    gateway: tuple[Running, RecordingStore],
) -> None:
    gw, store = gateway
    for fault in ("truncated", "truncated-close"):
        answer = call(gw, "responses", fault, True)
        failed = orjson.loads(sse_data(answer.content)[-1])
        assert failed["type"] == "response.failed"
        assert "without a finish_reason or [DONE]" in failed["response"]["error"]["message"]
        # what had arrived is kept, marked incomplete, not passed off as the whole answer
        message = failed["response"]["output"][0]
        assert message["status"] == "incomplete"
        assert message["content"][0]["text"] == "Hel"
        assert store.final(failed["response"]["id"]) == "failed"


def test_an_html_page_for_a_stream_is_a_502_before_the_stream_starts(
    gateway: tuple[Running, RecordingStore],
) -> None:
    gw, _ = gateway
    answer = call(gw, "responses", "html", True)
    assert answer.status_code == 502
    assert answer.headers["content-type"] == "application/json"
    assert "text/html" in answer.json()["error"]["message"]


def test_a_stall_names_the_limit_that_ran_out(gateway: tuple[Running, RecordingStore]) -> None:
    gw, _ = gateway
    whole = call(gw, "responses", "stall", False).json()["error"]
    assert whole["code"] == "backend_total_timeout"
    assert f"within {TOTAL:g} s (total timeout, backend_timeout)" in whole["message"]
    streamed = call(gw, "responses", "stall", True).json()["error"]
    assert streamed["code"] == "backend_idle_timeout"
    mid = orjson.loads(sse_data(call(gw, "responses", "stall-mid", True).content)[-1])
    assert f"sent nothing for {IDLE:g} s (idle timeout" in mid["response"]["error"]["message"]
    chat = orjson.loads(sse_data(call(gw, "chat", "stall-mid", True).content)[-1])
    assert chat["error"]["code"] == "backend_idle_timeout"


def test_faults_under_concurrency_leave_nothing_hung_or_unfinished(
    gateway: tuple[Running, RecordingStore],
) -> None:
    """Every fault at once, on both endpoints, streamed and not: the same verdicts."""
    cases = [(api, f, s) for api in PATHS for f in FAULTS for s in (False, True)]
    with ThreadPoolExecutor(16) as pool:
        verdicts = dict(zip(cases, pool.map(lambda c: verdict(gateway, *c), cases), strict=True))
    assert {case: v for case, v in verdicts.items() if v} == {}
    assert gateway[1].left_unfinished() == {}


def test_a_native_providers_stream_cut_before_its_stop_reason_fails() -> None:
    """The same rule through an adapter: Anthropic's stream without `message_delta` (the stop
    reason) and `message_stop` is cut off, not complete."""
    from tests.gateway.test_native import stream as claude_stream
    from tests.providers.fake import FakeServer

    cut = claude_stream("Hel", "lo")[:-2]
    with FakeServer() as claude:
        env = {"ANTHROPIC_BASE_URL": claude.url, "ANTHROPIC_API_KEY": "sk-ant-test"}
        store = RecordingStore()
        settings = GatewaySettings(backend="anthropic", store="memory", access_log=False)
        with running(settings, store=store, env=env) as gw, httpx.Client(timeout=10) as http:
            claude.stream(cut)
            answer = http.post(
                gw.url + "/v1/responses",
                json={"model": "claude-sonnet-4-5", "input": "x", "stream": True},
            )
            failed = orjson.loads(sse_data(answer.content)[-1])
            assert failed["type"] == "response.failed"
            assert "cut off" in failed["response"]["error"]["message"]
            assert store.final(failed["response"]["id"]) == "failed"
            claude.stream(cut)
            chat = http.post(
                gw.url + "/v1/chat/completions",
                json={
                    "model": "claude-sonnet-4-5",
                    "messages": [{"role": "user", "content": "x"}],
                    "stream": True,
                },
            )
            last = orjson.loads(sse_data(chat.content)[-1])
            assert last["error"]["code"] == "backend_stream_truncated"


def test_a_native_provider_keeps_the_back_off_and_names_the_idle_timeout(
    faulty: FaultServer,
) -> None:
    """Found by a new-user trial: through a provider of the registry (`backend = "openai"`),
    a 429 reached the client without its `Retry-After`, and a stream that stalled said
    "ReadTimeout" without naming the gateway's setting."""
    env = {"OPENAI_BASE_URL": faulty.base, "OPENAI_API_KEY": "sk-test"}
    settings = GatewaySettings(
        backend="openai",
        store="memory",
        backend_idle_timeout=IDLE,
        backend_timeout=TOTAL,
        access_log=False,
    )
    with running(settings, store=RecordingStore(), env=env) as gw:
        limited = call(gw, "responses", "status-429", False)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "7"
        stalled = orjson.loads(sse_data(call(gw, "responses", "stall-mid", True).content)[-1])
        assert stalled["type"] == "response.failed"
        assert "backend_idle_timeout" in stalled["response"]["error"]["message"]
        # Reached, then broken off: the backend's error, as for a URL backend (a trial found
        # it named `backend_unreachable`).
        for fault in ("drop", "reset"):
            broken = call(gw, "responses", fault, False)
            assert broken.status_code == 502
            assert broken.json()["error"]["code"] == "backend_error", fault


def test_a_native_provider_no_attempt_reached_is_unreachable() -> None:
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "OPENAI_API_KEY": "sk-test"}
    settings = GatewaySettings(backend="openai", store="memory", access_log=False)
    with running(settings, store=RecordingStore(), env=env) as gw:
        refused = call(gw, "responses", "ok", False)
        assert refused.status_code == 502
        assert refused.json()["error"]["code"] == "backend_unreachable"
