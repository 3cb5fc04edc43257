"""Edges of the gateway's HTTP surface found by the security trial: how long a client may take
to send its headers, a path with a trailing slash, and what a chain from a queued background
response is told.

* uvicorn bounds no request's headers: a connection sending a header line every 2 s stayed
  open for as long as the client liked (slowloris). `header_timeout` (10 s) now bounds them:
  408 and the connection closed.
* `POST /v1/responses/` answered 307 with a `Location` built from the client's own `Host`
  header (`Host: evil.example` sent the client to `http://evil.example/...`); a path with a
  trailing slash is now an unknown path: 404 in OpenAI's error shape, no redirect.
"""

from __future__ import annotations

import select
import socket
from urllib.parse import urlsplit

import openai
import pytest

from tests.gateway.conftest import MakeGateway
from tests.gateway.harness import HeldReply, Running, in_front_of_fake
from tests.providers.openai_wire import chat_completion

DEADLINE = 0.5


def _connect(gw: Running) -> socket.socket:
    parts = urlsplit(gw.url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.settimeout(60)  # a gateway that never closes fails the test here, not hangs it
    return sock


def _rest(sock: socket.socket) -> bytes:
    """Everything the gateway still sends, until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_client_that_trickles_its_headers_gets_408_and_is_closed() -> None:
    with in_front_of_fake(header_timeout=DEADLINE) as (backend, gw), _connect(gw) as sock:
        sock.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: gateway\r\n")
        for _ in range(600):  # a header line every 0.1 s, for far longer than the deadline
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                break
            sock.sendall(b"x-slow: yes\r\n")
        answer = _rest(sock)
        assert answer.startswith(b"HTTP/1.1 408 ")
        body = answer.partition(b"\r\n\r\n")[2]
        assert b'"code":"request_timeout"' in body and b"header_timeout" in body
        assert backend.requests == []


def test_a_connection_that_sends_nothing_is_closed() -> None:
    with in_front_of_fake(header_timeout=DEADLINE) as (_, gw), _connect(gw) as sock:
        assert _rest(sock) == b""


def test_headers_sent_in_time_are_served_on_every_request_of_a_connection() -> None:
    request = b"GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n"
    with in_front_of_fake(header_timeout=DEADLINE) as (_, gw), _connect(gw) as sock:
        for _ in range(3):
            sock.sendall(request)
            answer = sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")


def test_a_trailing_slash_is_an_unknown_path_not_a_redirect_to_the_clients_host() -> None:
    with in_front_of_fake() as (_, gw), _connect(gw) as sock:
        sock.sendall(
            b"POST /v1/responses/ HTTP/1.1\r\nhost: evil.example\r\n"
            b"content-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
        )
        answer = _rest(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404 ")
    assert b"location" not in head.lower() and b"evil.example" not in answer
    assert b'"code":"not_found"' in body


def test_a_chain_from_a_queued_response_says_it_is_queued(make_gateway: MakeGateway) -> None:
    gw = make_gateway(background_max_running=1)
    hold = HeldReply(body=chat_completion(content="slow"))
    gw.backend.reply(hold)
    running = gw.client.responses.create(model="m", input="x", background=True)
    assert hold.reached.wait(20)
    waiting = gw.client.responses.create(model="m", input="y", background=True)
    assert gw.client.responses.retrieve(waiting.id).status == "queued"
    with pytest.raises(openai.BadRequestError) as refused:
        gw.client.responses.create(model="m", input="z", previous_response_id=waiting.id)
    assert refused.value.code == "previous_response_in_progress"
    assert f"'{waiting.id}' is still queued" in refused.value.message
    with pytest.raises(openai.BadRequestError) as refused:
        gw.client.responses.create(model="m", input="z", previous_response_id=running.id)
    assert f"'{running.id}' is still in_progress" in refused.value.message
    gw.backend.json(chat_completion(content="done"))
    hold.gate.set()
