"""The gateway's lean HTTP/1.1 client against a raw asyncio server that misbehaves on cue:
keep-alive reuse, a server that drops idle connections, bodies ended by closing the
connection, chunked streams larger than the buffer, timeouts, refused connections."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from outform.gateway.client import (
    BackendClosedError,
    BackendTimeoutError,
    BackendUnreachableError,
    HttpClient,
)
from outform.gateway.settings import Timeouts
from tests.gateway.harness import free_port

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return head + (await reader.readexactly(length) if length else b"")


def _ok(body: bytes, *extra: bytes) -> bytes:
    headers = b"".join(h + b"\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), headers, body)


def serve(handler: Handler, test: Callable[[HttpClient, list[int]], Awaitable[Any]]) -> Any:
    """Run `test(client, connections)` against a server running `handler` per connection."""

    async def main() -> Any:
        connections: list[int] = []

        async def counted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            connections.append(1)
            try:
                await handler(reader, writer)
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(counted, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = HttpClient(
            f"http://127.0.0.1:{port}/v1", timeouts=Timeouts(2, 2, 2), max_connections=4
        )
        try:
            return await test(client, connections)
        finally:
            await client.aclose()
            server.close()

    return asyncio.run(main())


def test_keep_alive_connections_are_reused() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await _request(reader)
            assert request.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
            writer.write(_ok(b'{"n": 1}'))

    async def test(client: HttpClient, connections: list[int]) -> None:
        for _ in range(3):
            response = await client.request(b"POST", "/chat/completions", b"{}")
            assert (response.status, response.body) == (200, b'{"n": 1}')
        assert len(connections) == 1

    serve(handler, test)


def test_a_connection_the_server_dropped_while_idle_is_replaced() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(_ok(b"first"))  # keep-alive promised, then closed anyway
        await writer.drain()

    async def test(client: HttpClient, connections: list[int]) -> None:
        assert (await client.request(b"GET", "/models")).body == b"first"
        await asyncio.sleep(0.05)
        assert (await client.request(b"GET", "/models")).body == b"first"
        assert len(connections) == 2

    serve(handler, test)


def test_a_body_ended_by_closing_the_connection_is_read_whole() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nall of it")
        await writer.drain()

    async def test(client: HttpClient, connections: list[int]) -> None:
        assert (await client.request(b"GET", "/models")).body == b"all of it"

    serve(handler, test)


def test_a_chunked_stream_larger_than_the_buffer_arrives_in_order() -> None:
    pieces = [b"%06d" % i * 1000 for i in range(200)]  # 1.2 MB

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        for piece in pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await _request(reader)  # the connection is reused afterwards
        writer.write(_ok(b"again"))
        await writer.drain()
        await reader.read()

    async def test(client: HttpClient, connections: list[int]) -> None:
        response = await client.stream(b"POST", "/chat/completions", b"{}")
        received = []
        async for chunk in response:
            received.append(chunk)
            await asyncio.sleep(0)  # a slow reader: the client pauses the socket
        assert b"".join(received) == b"".join(pieces)
        assert (await client.request(b"GET", "/x")).body == b"again"
        assert len(connections) == 1

    serve(handler, test)


def test_a_stream_cut_in_the_middle_raises() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()

    async def test(client: HttpClient, connections: list[int]) -> None:
        response = await client.stream(b"POST", "/chat/completions", b"{}")
        with pytest.raises(BackendClosedError):
            async for _ in response:
                pass

    serve(handler, test)


def test_silence_is_a_timeout_and_a_closed_port_is_unreachable() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        await asyncio.sleep(5)

    async def test(client: HttpClient, connections: list[int]) -> None:
        client.timeouts = Timeouts(connect=2, idle=0.2, total=2)
        with pytest.raises(BackendTimeoutError) as stream_idle:
            await client.stream(b"POST", "/chat/completions", b"{}")
        assert stream_idle.value.limit == "idle"  # a stream's first byte: the idle limit
        client.timeouts = Timeouts(connect=2, idle=0.1, total=0.3)
        with pytest.raises(BackendTimeoutError) as whole:
            await client.request(b"POST", "/chat/completions", b"{}")
        assert whole.value.limit == "total"  # a whole answer's first byte: total only
        closed = HttpClient(f"http://127.0.0.1:{free_port()}", timeouts=Timeouts(1, 1, 1))
        with pytest.raises(BackendUnreachableError):
            await closed.request(b"GET", "/models")

    serve(handler, test)
