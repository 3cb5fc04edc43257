"""Gateway benchmarks: what `outform serve` adds over calling the Chat backend directly.

Run: `python -m benchmarks.bench_gateway [--write]` (`--write` updates docs/benchmarks.md).

In one run, three processes on this machine:

* a fake Chat Completions backend (raw asyncio on uvloop) that answers every request at once
  with the same `chat.completion`;
* the gateway, started as `outform serve --backend <fake> --store memory` (a subprocess, so
  its CPU time can be read from /proc/<pid>/stat);
* this process, the client: a raw asyncio HTTP/1.1 client (httptools), so that the client's
  own cost stays small next to what is measured.

Measured: sequential latency p50 / p99 of the backend called directly and of the gateway
(the difference is what the gateway adds); the gateway's CPU time per request (user + system
time of its process over the sequential requests); throughput with 64 concurrent clients on
keep-alive connections for a fixed time. Goals (issue 5): p50 overhead ≤ 1 ms, ≤ 0.5 ms of
gateway CPU per non-streamed request, ≥ 20× LiteLLM's throughput.

LiteLLM's proxy goes in the same table, in front of the same fake backend, measured the same
way (benchmarks/litellm_peer.py installs it in its own virtual environment on first use).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.report import machine, update_section

ROOT = Path(__file__).resolve().parents[1]
SEQUENTIAL = 3_000
WARMUP = 500
CONCURRENCY = 64
DURATION = 5.0

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "email": {"type": "string"},
    },
    "required": ["name", "age", "email"],
    "additionalProperties": False,
}
COMPLETION = {
    "id": "chatcmpl-CzT1a9Qm2kYbXw",
    "object": "chat.completion",
    "created": 1_767_225_600,
    "model": "bench-model",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": '{"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"}',
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43},
}
MESSAGES = [
    {"role": "system", "content": "Extract the person as JSON."},
    {"role": "user", "content": "Ada Lovelace, 36, ada@example.org"},
]
CHAT_BODY = orjson.dumps(
    {
        "model": "bench-model",
        "messages": MESSAGES,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Person", "schema": SCHEMA, "strict": True},
        },
    }
)
RESPONSES_BODY = orjson.dumps(
    {
        "model": "bench-model",
        "instructions": "Extract the person as JSON.",
        "input": "Ada Lovelace, 36, ada@example.org",
        "text": {
            "format": {"type": "json_schema", "name": "Person", "schema": SCHEMA, "strict": True}
        },
    }
)


# -- the fake backend ----------------------------------------------------------------------


def fake_backend(port: int) -> None:
    """Answer every request on 127.0.0.1:`port` at once with COMPLETION (keep-alive)."""
    import uvloop

    body = orjson.dumps(COMPLETION)
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
        % len(body)
        + body
    )

    class Backend(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: Any = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while True:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buffer[:end].lower()
                at = head.find(b"content-length:")
                length = int(head[at + 15 :].split(b"\r\n", 1)[0]) if at >= 0 else 0
                if len(self.buffer) < end + 4 + length:
                    return
                self.buffer = self.buffer[end + 4 + length :]
                self.transport.write(answer)

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Backend, "127.0.0.1", port)
        print("ready", flush=True)
        await server.serve_forever()

    uvloop.run(main())


# -- the client ----------------------------------------------------------------------------


class _Client(asyncio.Protocol):
    """One keep-alive connection; `post` sends a request and waits for the whole answer."""

    def __init__(self) -> None:
        import httptools

        self._parser_type = httptools.HttpResponseParser
        self.transport: Any = None
        self.done: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_message_complete(self) -> None:
        assert self.done is not None
        self.done.set_result(None)

    async def post(self, path: bytes, body: bytes, headers: bytes = b"") -> int:
        self.parser = self._parser_type(self)
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(
            b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            b"%scontent-length: %d\r\n\r\n%s" % (path, headers, len(body), body)
        )
        await self.done
        status: int = self.parser.get_status_code()
        return status


async def _connect(port: int) -> _Client:
    _, client = await asyncio.get_running_loop().create_connection(_Client, "127.0.0.1", port)
    return client


@dataclass
class Latency:
    p50: float
    p99: float
    cpu: float | None
    """Seconds of the gateway's CPU per request (None for the direct path)."""


async def sequential(
    port: int,
    path: bytes,
    body: bytes,
    pid: int | None,
    *,
    headers: bytes = b"",
    count: int = SEQUENTIAL,
    warmup: int = WARMUP,
) -> Latency:
    client = await _connect(port)
    for _ in range(warmup):
        await client.post(path, body, headers)
    before = cpu_seconds(pid) if pid else 0.0
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        status = await client.post(path, body, headers)
        samples.append(time.perf_counter() - start)
        if status != 200:
            raise RuntimeError(f"{path.decode()} answered {status}")
    cpu = (cpu_seconds(pid) - before) / count if pid else None
    client.transport.close()
    samples.sort()
    return Latency(samples[len(samples) // 2], samples[int(len(samples) * 0.99)], cpu)


async def throughput(port: int, path: bytes, body: bytes, headers: bytes = b"") -> float:
    clients = [await _connect(port) for _ in range(CONCURRENCY)]
    done = 0
    stop = time.perf_counter() + DURATION

    async def worker(client: _Client) -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await client.post(path, body, headers)
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in clients))
    elapsed = time.perf_counter() - start
    for client in clients:
        client.transport.close()
    return done / elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and every process under it, from /proc (a
    server that forks workers is measured whole)."""
    total = 0.0
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
            if _descends(int(entry.name), pid, parents):
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _descends(candidate: int, root: int, parents: dict[int, int]) -> bool:
    seen = 0
    while candidate and seen < 64:
        if candidate == root:
            return True
        try:
            stat = Path(f"/proc/{candidate}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return False
        candidate = parents.get(candidate) or int(stat[1])
        seen += 1
    return False


# -- processes -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_backend(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_gateway", "--fake-backend", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.readline()  # "ready"
    return process


STORE = "memory"
"""The gateway's store: `memory`, or `sqlite` (a file in the run's temporary directory, every
response committed before it is answered); `--store`."""


def start_gateway(backend_port: int, port: int, workdir: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "OUTFORM_CONFIG"}
    env["PYTHONPATH"] = str(ROOT / "src")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "outform.cli",
            "serve",
            "--backend",
            f"http://127.0.0.1:{backend_port}/v1",
            "--port",
            str(port),
            "--store",
            "memory" if STORE == "memory" else f"sqlite:{workdir}/responses.sqlite",
        ],
        cwd=workdir,  # no outform.toml up from here: the defaults
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # the access log (on, as by default) goes nowhere
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the gateway did not start")


# -- LiteLLM -------------------------------------------------------------------------------


@dataclass
class PeerRow:
    name: str
    latency: Latency
    overhead_p50: float
    overhead_p99: float
    throughput: float


LITELLM: Callable[[int, Latency], PeerRow | None] | None = None
"""LiteLLM's proxy in front of the same fake backend (benchmarks/litellm_peer.py): called with
the backend's port and its direct latency, returns its row (None when it could not run)."""


# -- the run -------------------------------------------------------------------------------


@dataclass
class Results:
    direct: Latency
    direct_throughput: float
    responses: Latency
    responses_throughput: float
    chat: Latency
    chat_throughput: float
    litellm: PeerRow | None


def run() -> Results:
    import uvloop

    backend_port, gateway_port = free_port(), free_port()
    backend = start_backend(backend_port)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            gateway = start_gateway(backend_port, gateway_port, workdir)
            try:

                async def measure() -> Results:
                    chat_path, responses_path = b"/v1/chat/completions", b"/v1/responses"
                    direct = await sequential(backend_port, chat_path, CHAT_BODY, None)
                    responses = await sequential(
                        gateway_port, responses_path, RESPONSES_BODY, gateway.pid
                    )
                    chat = await sequential(gateway_port, chat_path, CHAT_BODY, gateway.pid)
                    return Results(
                        direct,
                        await throughput(backend_port, chat_path, CHAT_BODY),
                        responses,
                        await throughput(gateway_port, responses_path, RESPONSES_BODY),
                        chat,
                        await throughput(gateway_port, chat_path, CHAT_BODY),
                        None,
                    )

                results = uvloop.run(measure())
            finally:
                gateway.terminate()
                gateway.wait(timeout=30)
        if LITELLM is not None:
            results.litellm = LITELLM(backend_port, results.direct)
        return results
    finally:
        backend.terminate()
        backend.wait(timeout=10)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def markdown(results: Results) -> str:
    direct = results.direct
    header = (
        "| path | p50 | p99 | added p50 | added p99 | gateway CPU / request "
        f"| throughput ({CONCURRENCY} clients) |"
    )
    rows = [header, "|---|---:|---:|---:|---:|---:|---:|"]
    rows.append(
        f"| fake Chat backend, called directly | {ms(direct.p50)} | {ms(direct.p99)} | – | – "
        f"| – | {results.direct_throughput:,.0f} req/s |"
    )
    for name, latency, rate in (
        ("outform gateway, `POST /v1/responses` (json_schema)", results.responses,
         results.responses_throughput),
        ("outform gateway, `POST /v1/chat/completions` (pass-through)", results.chat,
         results.chat_throughput),
    ):  # fmt: skip
        cpu = latency.cpu or 0.0
        rows.append(
            f"| {name} | {ms(latency.p50)} | {ms(latency.p99)} "
            f"| {ms(latency.p50 - direct.p50)} | {ms(latency.p99 - direct.p99)} "
            f"| {ms(cpu)} | {rate:,.0f} req/s |"
        )
    peer = results.litellm
    if peer is None:
        rows.append(
            "| LiteLLM proxy, `POST /v1/responses` | not measured in this run "
            "(`--no-litellm`, or it could not be installed) | | | | | |"
        )
    else:
        rows.append(
            f"| {peer.name} | {ms(peer.latency.p50)} | {ms(peer.latency.p99)} "
            f"| {ms(peer.overhead_p50)} | {ms(peer.overhead_p99)} "
            f"| {ms(peer.latency.cpu or 0.0)} | {peer.throughput:,.0f} req/s |"
        )
    table = "\n".join(rows)
    ratio = (
        f" ({results.responses_throughput / peer.throughput:,.0f}× LiteLLM's)"
        if peer is not None and peer.throughput
        else ""
    )
    return f"""## Gateway

Command: `python -m benchmarks.bench_gateway --write` ({machine()}, {os.cpu_count()} CPUs).

A fake Chat Completions backend that answers at once, the gateway (`outform serve --store
{STORE}`, access log on, one process) in front of it, and a raw asyncio client, all on this
machine. Latency: {SEQUENTIAL:,} sequential requests on one keep-alive connection after
{WARMUP} warm-up requests; *added* is the gateway's latency minus the direct call's. CPU: user
+ system time of the gateway process over those requests, per request. Throughput:
{CONCURRENCY} concurrent keep-alive clients for {DURATION:g} s; client, gateway and backend
share the machine's cores. The Responses request carries a `json_schema` format; the gateway
translates it to Chat, calls the backend, translates the answer back, stores the response.

{table}

Goals (issue 5): p50 overhead ≤ 1 ms, ≤ 0.5 ms of gateway CPU per non-streamed request,
≥ 20× LiteLLM's throughput. Gateway throughput on `/v1/responses`:
{results.responses_throughput:,.0f} req/s{ratio}.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--fake-backend", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-litellm", action="store_true", help="leave LiteLLM's proxy out of this run"
    )
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    args = parser.parse_args(argv)
    global STORE  # noqa: PLW0603 - the gateway's store for this run
    STORE = args.store
    if args.fake_backend:
        fake_backend(args.fake_backend)
        return 0
    global LITELLM  # noqa: PLW0603 - the peer hook, set for this run
    if not args.no_litellm:
        from benchmarks import litellm_peer

        LITELLM = litellm_peer.measure
    text = markdown(run())
    print(text)
    if args.write:
        update_section("gateway", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
