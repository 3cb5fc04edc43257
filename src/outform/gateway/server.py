"""`outform serve`: the gateway under uvicorn (httptools, and uvloop when installed).

The listening socket is bound before anything is announced: a busy port or an address that
is not this machine's is a configuration error (exit 2, one line) before start-up, and the
address announced is the one listened on (`port = 0` announces the port the system chose).

Shutdown is graceful: on SIGTERM or Ctrl-C uvicorn stops accepting connections and waits up to
`shutdown_timeout` seconds for in-flight requests, streams included, to finish; a stream still
open shortly before that (the last quarter of the grace, at most its last second) is stopped
with its terminal event and stored as failed by the shutdown (`GatewayApp.drain`); only then
are the store and the backend connections closed. A request's headers must arrive within
`header_timeout` (`header_deadline`), or its connection gets 408 and is closed. The access
log is one JSON object per line on standard error (logger `outform.gateway.access`), without
headers, keys, bodies or query strings.
"""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import logging
import socket
import sys
from collections.abc import Callable
from typing import Any

import orjson
import uvicorn

from outform.errors import ConfigError
from outform.gateway.app import GatewayApp, create_app
from outform.gateway.limits import release_memory
from outform.gateway.settings import GatewaySettings
from outform.gateway.stores import check_store


def uvicorn_config(app: Any, settings: GatewaySettings, **extra: Any) -> Any:
    loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "http": header_deadline(settings.header_timeout),
        "loop": loop,
        "lifespan": "on",
        "access_log": False,  # the gateway writes its own, structured and without secrets
        "timeout_graceful_shutdown": settings.shutdown_timeout,
        "server_header": False,
        "log_level": "info",
    }
    options.update(extra)
    return uvicorn.Config(app, **options)


_LATE_HEADERS = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


def header_deadline(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol (what `http="httptools"` serves) with a deadline on each
    request's headers: `seconds` from the connection's opening, or from the first byte of the
    next request on a kept-alive connection. uvicorn bounds neither (its `timeout_keep_alive`
    only bounds silence after an answer, and is reset by any byte), so a client sending a
    header line now and then would hold a connection for ever. A client still short of its
    headers at the deadline gets 408 (`request_timeout`, in OpenAI's error shape) and the
    connection is closed; one that sent nothing is closed. uvicorn takes a protocol class for
    `http` (`uvicorn.Config`); the hooks are httptools' parser callbacks."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    message = (
        f"The request's headers did not arrive within {seconds:g} seconds (the gateway's "
        "header_timeout, set in [gateway] or with --header-timeout); the connection is closed."
    )
    body = orjson.dumps(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": "request_timeout",
            }
        }
    )
    late = _LATE_HEADERS % (len(body), body)

    class HeaderDeadlineProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None
        _begun = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._begun = True
            if self._header_timer is None:
                self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            self._begun = False
            super().on_headers_complete()

        def _arm(self) -> None:
            self._header_timer = self.loop.call_later(seconds, self._headers_late)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                self._arm()  # a request is being answered: the next one's turn comes after
                return
            if self.transport.is_closing():
                return
            if self._begun:
                self.transport.write(late)
            self.transport.close()

    return HeaderDeadlineProtocol


def configure_access_log() -> None:
    """Access lines on standard error, as they are (each line is already JSON)."""
    access = logging.getLogger("outform.gateway.access")
    # This process is the gateway: records need no thread or process names (a few µs each).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False


def configure_warnings() -> None:
    """The gateway's warnings and errors on standard error. The `outform` logger is quiet by
    default (a library must not print); `outform serve` is an application, and its operator
    must see, say, that it listens beyond the loopback without client keys."""
    gateway = logging.getLogger("outform.gateway")
    if not gateway.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s: %(name)s: %(message)s"))
        gateway.addHandler(handler)
        gateway.setLevel(logging.WARNING)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port`, or a ConfigError that says why there cannot be one."""
    where = f"[gateway] host / port ({host}:{port})"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(
            f"cannot listen on {host}:{port}: the host is not known ({exc})",
            where=where,
            fix="use an address of this machine: 127.0.0.1, ::1, 0.0.0.0 or a local name",
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        busy = exc.errno == errno.EADDRINUSE
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            where=where,
            fix="stop what is using the port, or choose another with --port"
            if busy
            else "use an address of this machine and a port you may open",
        ) from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class _Server(uvicorn.Server):
    """uvicorn's server, which tells the app when its graceful shutdown starts (`drain`)."""

    def __init__(self, config: uvicorn.Config, app: GatewayApp) -> None:
        super().__init__(config)
        self._gateway_app = app

    def handle_exit(self, sig: int, frame: Any) -> None:
        if not self.should_exit:
            self._gateway_app.drain(self.config.timeout_graceful_shutdown or 0.0)
        super().handle_exit(sig, frame)


def serve(settings: GatewaySettings, *, announce: Callable[[str], None] = print) -> None:
    """Run the gateway until SIGTERM / Ctrl-C; `announce(url)` once it listens there."""
    release_memory()
    app = create_app(settings)
    check_store(settings.store_spec(), base_dir=settings.store_base_dir)  # before listening
    configure_warnings()
    if settings.access_log:
        configure_access_log()
    sock = listen(settings.host, settings.port)
    try:
        announce(url_of(sock))
        _Server(uvicorn_config(app, settings), app).run(sockets=[sock])
    finally:
        sock.close()


__all__ = [
    "configure_access_log",
    "configure_warnings",
    "listen",
    "serve",
    "url_of",
    "uvicorn_config",
]
