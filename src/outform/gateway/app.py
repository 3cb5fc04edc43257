"""The ASGI app: `create_app(settings, store=..., backend=...)`.

FastAPI is the framework: it holds every route, serves the gateway's OpenAPI document
(`/openapi.json`, `/docs`) and runs start-up and shutdown. In front of it sits a thin ASGI
layer that every HTTP request passes through once: bearer auth, the structured access log,
and a fast path that sends the two hot endpoints (`POST /v1/responses`,
`POST /v1/chat/completions`) straight to their handlers, skipping FastAPI's per-request
routing and dependency machinery (measured: it halved throughput; benchmarks/bench_gateway.py).
The FastAPI routes of those endpoints run the very same code (`_Delegate`), so the documented
app and the fast path cannot drift apart.

Bodies are read by hand, up to `max_body_bytes` (413 beyond, checked against Content-Length
before reading when there is one), each chunk taking its bytes from the budget of
`max_buffered_bytes` shared by every request in flight as it arrives (503 with Retry-After
beyond it, `gateway.limits`) until the answer is sent; the whole body must arrive within
`body_timeout` (408 and the connection closed beyond it). A streamed reply is pumped while a
watcher waits for the client to go away; if it does, the backend's stream is closed at once.

Authentication names the caller's tenant (`gateway.tenancy`), which every handler of stored
responses receives; error bodies, streams and log records pass the secrets scrubber
(`gateway.scrub`) on their way out. At start-up the store is checked (reachable, writable)
before anything is served, and this process starts beating its heartbeat and running
background responses (`gateway.background`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

import orjson
from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Route

from outform import __version__
from outform.errors import OutformError, StoreError
from outform.gateway import chain, schemas
from outform.gateway.backend import Backend, HttpChatBackend
from outform.gateway.background import Worker
from outform.gateway.handlers import SHUT_DOWN, Gateway
from outform.gateway.limits import BodyBudget, Lease
from outform.gateway.replies import GatewayError, PassthroughError, Reply, StreamReply
from outform.gateway.scrub import Scrubber, check_client_keys, configured_secrets, log_scrubbing
from outform.gateway.settings import ENFORCE_HEADER, PROFILE_HEADER, GatewaySettings
from outform.gateway.store import NO_TENANT, ResponseStore
from outform.gateway.tenancy import Tenancy, open_warning
from outform.gateway.tracing import labels_of
from outform.trace.redact import register_secret

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Handler = Callable[[Scope, Receive], Awaitable[Reply | StreamReply]]

access_logger = logging.getLogger("outform.gateway.access")
logger = logging.getLogger("outform.gateway")

_ENFORCE = ENFORCE_HEADER.encode()
_PROFILE = PROFILE_HEADER.encode()
_OPEN_PATHS = frozenset({"/healthz"})
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}
"""The `code` of the errors FastAPI's routing raises (an unknown path, a method it lacks)."""
_TENANT = "outform.tenant"
STORE_UNAVAILABLE = "The response store is unavailable; try again later."
DASHBOARD = "/dashboard"


def create_app(
    settings: GatewaySettings,
    *,
    store: ResponseStore | None = None,
    backend: Backend | None = None,
    env: Mapping[str, str] = os.environ,
) -> GatewayApp:
    """The gateway as an ASGI app. Without `store` / `backend`, they are made from the
    settings at start-up (and closed at shutdown); given ones are left for the caller to close.
    Client keys are read from the environment now, so a missing one fails before serving."""
    return GatewayApp(settings, store=store, backend=backend, env=env)


def make_backend(
    settings: GatewaySettings,
    env: Mapping[str, str] = os.environ,
    learn: Callable[[str], None] | None = None,
) -> Backend:
    """The backend of the settings; `learn` is told each credential a native backend is
    about to send (its key, a token), for the scrubbers."""
    if settings.native:
        from outform.gateway.native import NativeBackend

        return NativeBackend(
            settings.backend,
            timeouts=settings.timeouts,
            env=env,
            allowed=settings.allowed_providers,
            learn=learn,
        )
    return HttpChatBackend(
        settings.backend,
        api_key=settings.backend_key(env),
        timeouts=settings.timeouts,
        max_connections=settings.max_connections,
    )


class GatewayApp:
    def __init__(
        self,
        settings: GatewaySettings,
        *,
        store: ResponseStore | None,
        backend: Backend | None,
        env: Mapping[str, str],
    ) -> None:
        self.settings = settings
        self._env = env
        self._keys = settings.client_keys(env)
        check_client_keys(self._keys, settings.api_keys)
        check_client_keys(
            settings.dashboard_keys(env), settings.dashboard_api_keys, "dashboard_api_keys"
        )
        secrets = configured_secrets(settings, env)
        self.scrubber = Scrubber(secrets)
        """The gateway's boundaries: error bodies, streams, stored rows, log records."""
        for secret in secrets:
            register_secret(secret)  # and the trace sinks (outform.trace.redact)
        self._tenancy: Tenancy | None = None
        self._given_store = store
        self._given_backend = backend
        self._owned: list[Callable[[], Awaitable[None]]] = []
        self._stop_scrubbing: Callable[[], None] | None = None
        self._pumps: set[asyncio.Task[None]] = set()
        self._answering: set[asyncio.Task[Any]] = set()
        """The requests whose handler is still at work (waiting for the backend, say)."""
        """The streams being sent (stopped at shutdown: `drain`)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self.gateway: Gateway | None = None
        self.dashboard: Starlette | None = None
        """`/dashboard` over the trace store, when `[trace]` has one (behind the same keys)."""
        self.budget = BodyBudget(settings.max_buffered_bytes)
        self.fastapi = _fastapi(self)
        self._fast: dict[tuple[str, str], Handler] = {
            ("POST", "/v1/responses"): self._create_response,
            ("POST", "/v1/chat/completions"): self._chat_completions,
        }

    # -- lifecycle -------------------------------------------------------------------------------

    def drain(self, grace: float) -> None:
        """The process is shutting down and gives its streams `grace` seconds (uvicorn's
        graceful shutdown, which then cancels what is left, cutting a stream off without its
        terminal event and storing it as its client's leaving, and answering a request still
        waiting for the backend with a plain-text 500). Shortly before the grace ends, each
        stream still open is stopped here instead: it ends with `response.failed` (or an
        `error` event), stored as the gateway's shutdown; and each request still waiting is
        answered 503, `shutting_down`. Safe from a signal handler."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._stop_streams_later, grace)

    def _stop_streams_later(self, grace: float) -> None:
        assert self._loop is not None
        self._loop.call_later(max(0.0, grace - min(1.0, grace / 4)), self._stop_streams)

    def _stop_streams(self) -> None:
        if self.gateway is None:
            return
        self.gateway.stopping = True
        for task in [*self._pumps, *self._answering]:
            task.cancel()

    async def startup(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_scrubbing = log_scrubbing(self.scrubber)
        warning = open_warning(self.settings.host, bool(self._keys))
        if warning:
            logger.warning(warning)
        store = self._given_store
        if store is None:
            from outform.gateway.stores import open_store

            store = open_store(
                self.settings.store_spec(self._env), base_dir=self.settings.store_base_dir
            )
            self._owned.append(store.close)
        await store.check()  # reachable and writable, or no start
        self._tenancy = Tenancy(self._keys, await store.tenant_salt())
        backend = self._given_backend
        if backend is None:
            backend = make_backend(self.settings, self._env, self._learn)
            self._owned.append(backend.aclose)
        worker = Worker(
            store,
            max_running=self.settings.background_max_running,
            max_queued=self.settings.background_max_queued,
            grace=self.settings.shutdown_timeout,
        )
        await worker.start()
        self._owned.insert(0, worker.stop)  # first: its last writes need the store
        self.gateway = Gateway(self.settings, backend, store, worker, self.scrubber)
        self._owned.append(self.gateway.checker.aclose)
        self.dashboard = self._dashboard()

    def _learn(self, secret: str) -> None:
        """A credential the backend is about to send: kept out of everything the gateway
        writes from now on (bodies, streams, rows, logs, trace sinks)."""
        self.scrubber.learn(secret)
        register_secret(secret)

    def _dashboard(self) -> Starlette | None:
        """The dashboard over the store this process records into (`[trace]`,
        `OUTFORM_TRACE`); None when recording is off, or when the store cannot be opened: the
        gateway serves on, and says why in its log."""
        from outform.config import settings
        from outform.gateway.dashboard import mounted
        from outform.trace.runtime import open_store as open_trace_store

        configured = settings().trace
        try:
            spec = configured.store_spec()
            store = open_trace_store(spec, base_dir=configured.store_base_dir) if spec else None
        except OutformError as exc:
            logger.warning("the dashboard is off: the trace store cannot be opened: %s", exc.what)
            return None
        if store is None:
            return None

        async def close() -> None:
            store.close()

        keys = self.settings.dashboard_keys(self._env)
        if not keys and len(self._keys) > 1:
            # The runs are every tenant's: a client key may not read the others'.
            logger.warning(
                "the dashboard is off: it shows the runs of every client key, and the gateway "
                "has %d; set [gateway] dashboard_api_keys to the keys that may see them",
                len(self._keys),
            )
            store.close()
            return None
        self._owned.append(close)
        return mounted(store, keys=keys or self._keys)

    async def shutdown(self) -> None:
        self.gateway = None
        owned, self._owned = self._owned, []
        for close in owned:
            try:
                await close()
            except Exception:
                logger.exception("closing the gateway's store or backend failed")
        if self._stop_scrubbing is not None:
            self._stop_scrubbing()
            self._stop_scrubbing = None

    # -- ASGI ------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.fastapi(scope, receive, send)
            return
        started = time.perf_counter()
        log: dict[str, Any] = {}
        scope["outform.log"] = log
        status = 0

        async def send_logged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        path: str = scope["path"]
        try:
            if self.dashboard is not None and _under(path, DASHBOARD):
                # The page asks for the key itself: its data routes check it (the same keys).
                await self.dashboard(scope, receive, send_logged)
                return
            if self._keys and path not in _OPEN_PATHS and not self._authorized(scope):
                await _send_reply(self._scrubbed(_unauthorized(scope)), send_logged)
                return
            handler = self._fast.get((scope["method"], path))
            if handler is not None:
                await self.serve(handler, scope, receive, send_logged)
            else:
                await self.fastapi(scope, receive, send_logged)
        finally:
            if (
                self.settings.access_log
                and path not in _OPEN_PATHS  # health probes would drown the log
                and access_logger.isEnabledFor(logging.INFO)
            ):
                self._log(scope, status, started, log)

    def _authorized(self, scope: Scope) -> bool:
        """A configured key was presented: its tenant goes in the scope."""
        value = _header(scope, b"authorization")
        if value is None or value[:7].lower() != b"bearer " or self._tenancy is None:
            return False
        tenant = self._tenancy.tenant(value[7:].strip())
        if tenant is None:
            return False
        scope[_TENANT] = tenant
        return True

    def _log(self, scope: Scope, status: int, started: float, log: dict[str, Any]) -> None:
        client = scope.get("client")
        line = {
            "event": "access",
            "time": round(time.time(), 3),
            "method": scope["method"],
            "path": scope["path"],  # never the query string, never a header
            "status": status,
            "ms": round((time.perf_counter() - started) * 1000, 3),
            "client": client[0] if client else None,
            **log,
        }
        access_logger.info(orjson.dumps(line).decode())

    # -- serving ---------------------------------------------------------------------------------

    async def serve(self, handler: Handler, scope: Scope, receive: Receive, send: Send) -> None:
        """Run a handler; its errors become OpenAI-shaped error bodies. The request's share
        of the body budget is given back once its answer has been sent."""
        lease = scope["outform.lease"] = self.budget.lease()
        try:
            await self._serve(handler, scope, receive, send)
        finally:
            lease.release()

    async def _serve(self, handler: Handler, scope: Scope, receive: Receive, send: Send) -> None:
        task = asyncio.current_task()
        try:
            if self.gateway is None:
                raise GatewayError(503, "The gateway is starting or stopping.", type="server_error")
            if task is not None:
                self._answering.add(task)
            try:
                reply = await handler(scope, receive)
            finally:
                self._answering.discard(task)
        except asyncio.CancelledError:
            if task is None or self.gateway is None or not self.gateway.stopping:
                raise
            # Stopped by the shutdown before its answer (nothing of it was stored or sent):
            # an error the client can read, rather than uvicorn's plain-text 500.
            task.uncancel()
            reply = GatewayError(503, SHUT_DOWN, type="server_error", code="shutting_down").reply()
        except (GatewayError, PassthroughError) as exc:
            reply = exc.reply()
        except chain.ChainError as exc:
            reply = Reply(exc.status, orjson.dumps(exc.body()))
        except StoreError as exc:  # the details name the database: the log only
            logger.error("the response store failed: %s", exc.what)
            reply = GatewayError(
                503, STORE_UNAVAILABLE, type="server_error", code="store_error"
            ).reply()
        except _ClientGone:
            return
        except Exception:
            logger.exception("internal error serving %s %s", scope["method"], scope["path"])
            reply = GatewayError(
                500, "Internal error in the gateway (see its log).", type="server_error"
            ).reply()
        if isinstance(reply, StreamReply):
            if self.scrubber:
                reply.chunks = self.scrubber.stream(reply.chunks)
            await _send_stream(reply, receive, send, self._pumps)
        else:
            await _send_reply(self._scrubbed(reply), send)

    def _scrubbed(self, reply: Reply) -> Reply:
        """No body carries a configured secret: an error's (the backend's included), nor an
        answer's (a model that writes the key: the stream, and the stored row, say `***`)."""
        if self.scrubber:
            reply.body = self.scrubber.body(reply.body)
        return reply

    async def _create_response(self, scope: Scope, receive: Receive) -> Reply | StreamReply:
        body = await self._body(scope, receive)
        assert self.gateway is not None
        return await self.gateway.create_response(
            body,
            _header(scope, _ENFORCE),
            scope.setdefault("outform.log", {}),
            labels=labels_of(scope["headers"]),
            tenant=tenant(scope),
            profile=_header(scope, _PROFILE),
        )

    async def _chat_completions(self, scope: Scope, receive: Receive) -> Reply | StreamReply:
        body = await self._body(scope, receive)
        assert self.gateway is not None
        return await self.gateway.chat_completions(
            body,
            _header(scope, _ENFORCE),
            scope.setdefault("outform.log", {}),
            labels=labels_of(scope["headers"]),
            profile=_header(scope, _PROFILE),
        )

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        """The whole body, within `body_timeout` (408 beyond it: the budget the body holds
        is given back with the answer, and the connection is closed)."""
        limit = self.settings.max_body_bytes
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        wait = self.settings.body_timeout
        try:
            async with asyncio.timeout(wait):
                return await _read_body(receive, scope["outform.lease"], limit)
        except TimeoutError:
            raise _too_slow(wait) from None


async def _read_body(receive: Receive, lease: Lease, limit: int) -> bytes:
    """Each chunk takes its bytes from the budget as it arrives, never what Content-Length
    promises: a client that declares 16 MiB and sends one byte holds one byte."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        lease.take(len(chunk))
        chunks.append(chunk)
        if not message.get("more_body"):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def tenant(scope: Scope) -> str:
    """The caller's tenant, as authentication found it (`""` without client keys)."""
    found: str = scope.get(_TENANT, NO_TENANT)
    return found


class _ClientGone(Exception):  # noqa: N818 - the client hung up; nothing to answer
    pass


def _too_large(limit: int) -> GatewayError:
    return GatewayError(
        413,
        f"The request body is larger than this gateway accepts ({limit} bytes: its "
        "max_body_bytes, set in [gateway] or with --max-body-bytes).",
        code="request_too_large",
    )


def _too_slow(wait: float) -> GatewayError:
    return GatewayError(
        408,
        f"The request body did not arrive within {wait:g} seconds (the gateway's "
        "body_timeout, set in [gateway] or with --body-timeout); the connection is closed.",
        code="request_timeout",
        headers=[(b"connection", b"close")],
    )


def _unauthorized(scope: Scope) -> Reply:
    missing = _header(scope, b"authorization") is None
    message = (
        "Missing bearer authentication in header (Authorization: Bearer <key>)."
        if missing
        else "Incorrect API key provided."
    )
    return GatewayError(401, message, code="invalid_api_key").reply()


def _under(path: str, mount: str) -> bool:
    return path == mount or path.startswith(mount + "/")


def _header(scope: Scope, name: bytes) -> bytes | None:
    """A request header's value; one sent several times is its values joined by commas, as
    HTTP reads a repeated field (RFC 9110, 5.3): `x-outform-enforce: 1` then `0` is `1, 0`,
    refused like any value it does not take, never read as its first line alone."""
    values = [bytes(value) for key, value in scope["headers"] if key == name]
    if not values:
        return None
    return values[0] if len(values) == 1 else b", ".join(values)


async def _send_reply(reply: Reply, send: Send) -> None:
    headers = [
        (b"content-type", reply.content_type),
        (b"content-length", b"%d" % len(reply.body)),
        *reply.headers,
    ]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


async def _send_stream(
    reply: StreamReply, receive: Receive, send: Send, pumps: set[asyncio.Task[None]]
) -> None:
    """Send the stream until it ends or the client goes away, then end its work
    (`StreamReply.close`), in every case: a client that left before the first byte leaves a
    stream that may never have started, and a server may raise `OSError` from `send` once
    the client is gone (the ASGI spec allows it)."""
    headers = [
        (b"content-type", reply.content_type),
        (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no"),
        *reply.headers,
    ]
    chunks = reply.chunks

    async def pump() -> None:
        try:
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        pumping = asyncio.ensure_future(pump())
        pumps.add(pumping)  # (stopped at shutdown: `GatewayApp.drain`)
        pumping.add_done_callback(pumps.discard)
        watching = asyncio.ensure_future(gone())
        try:
            await asyncio.wait({pumping, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            if not pumping.done():  # the client went away: stop reading the backend
                pumping.cancel()
            await asyncio.wait({pumping})  # the stream's own ending runs first
        failed = None if pumping.cancelled() else pumping.exception()
        if failed is not None and not isinstance(failed, OSError):
            logger.error("sending a stream failed: %s", failed, exc_info=failed)
    except OSError:  # the server says the client is gone
        pass
    finally:
        if reply.close is not None:
            await reply.close()


class _Delegate(Response):
    """A route's answer that runs a gateway handler with the raw ASGI channel."""

    def __init__(self, app: GatewayApp, handler: Handler) -> None:
        super().__init__()
        self._app = app
        self._handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app.serve(self._handler, scope, receive, send)


def _fastapi(app: GatewayApp) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await app.startup()
        try:
            yield
        finally:
            await app.shutdown()

    api = FastAPI(
        title="outform gateway",
        version=__version__,
        description=(
            "The OpenAI Responses API (and Chat Completions pass-through) in front of a "
            "Chat Completions backend or a native provider, with structured output forwarded "
            "faithfully and, on request, enforced. See docs/gateway.md."
        ),
        lifespan=lifespan,
        redoc_url=None,
        # A path with a trailing slash is an unknown path (404 in OpenAI's error shape), not a
        # 307 whose Location is built from the client's own Host header.
        redirect_slashes=False,
    )

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            base = get_openapi(
                title=api.title,
                version=api.version,
                description=api.description,
                routes=api.routes,
            )
            api.openapi_schema = schemas.document(base)
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """Unknown paths and methods answer in OpenAI's error shape too: 404 `not_found`,
        405 `method_not_allowed` (with `Allow`, naming the methods the path takes). The
        method and path are the client's own words, scrubbed like every error body: a key
        pasted into a URL comes back as `***`."""
        message = f"{exc.detail}: {request.method} {request.url.path}"
        code = _HTTP_CODES.get(exc.status_code)
        reply = app._scrubbed(GatewayError(exc.status_code, message, code=code).reply())
        headers = None
        if exc.status_code == 405:  # every route of the path (Starlette's names its first)
            path = request.scope["path"]
            methods = {
                method
                for route in api.routes
                if isinstance(route, Route) and route.methods and route.path_regex.match(path)
                for method in route.methods
            }
            headers = {"allow": ", ".join(sorted(methods))}
        return Response(reply.body, reply.status, headers=headers, media_type="application/json")

    def gateway() -> Gateway:
        if app.gateway is None:
            raise GatewayError(503, "The gateway is starting or stopping.", type="server_error")
        return app.gateway

    @api.post(
        "/v1/responses",
        openapi_extra=schemas.body("CreateResponse"),
        responses=schemas.answers("Response", stream="ResponseStreamEvent"),
        tags=["responses"],
    )
    async def create_response(request: Request) -> Response:
        """Create a model response (OpenAI Responses API)."""
        return _Delegate(app, app._create_response)

    @api.get(
        "/v1/responses/{response_id}", responses=schemas.answers("Response"), tags=["responses"]
    )
    async def retrieve_response(
        request: Request, response_id: str, *, stream: str | None = None
    ) -> Response:
        """A stored response, as it was served (`stream=true`, replaying its events, is a
        400: the gateway keeps the Response, not its stream)."""
        query = dict(parse_qsl(request.url.query))
        return _Delegate(
            app, lambda scope, _: gateway().retrieve(response_id, tenant(scope), query)
        )

    @api.delete(
        "/v1/responses/{response_id}",
        responses=schemas.answers("DeletedResponse"),
        tags=["responses"],
    )
    async def delete_response(response_id: str) -> Response:
        """Delete a stored response."""
        return _Delegate(app, lambda scope, _: gateway().delete(response_id, tenant(scope)))

    @api.post(
        "/v1/responses/{response_id}/cancel",
        responses=schemas.answers("Response"),
        tags=["responses"],
    )
    async def cancel_response(response_id: str) -> Response:
        """Cancel a background response (`background: true`) that has not finished."""
        return _Delegate(app, lambda scope, _: gateway().cancel(response_id, tenant(scope)))

    @api.get(
        "/v1/responses/{response_id}/input_items",
        responses=schemas.answers("ResponseItemList"),
        tags=["responses"],
    )
    async def list_input_items(
        request: Request,
        response_id: str,
        *,
        limit: str | None = None,
        order: str | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> Response:
        """The input items of a stored response: `limit` (1-100, default 20), `order`
        (`desc`, the default, or `asc`), `after` / `before` (item ids)."""
        query = dict(parse_qsl(request.url.query))
        return _Delegate(
            app, lambda scope, _: gateway().input_items(response_id, query, tenant(scope))
        )

    @api.post(
        "/v1/chat/completions",
        openapi_extra=schemas.body("CreateChatCompletion"),
        responses=schemas.answers("ChatCompletion", stream="ChatCompletionChunk"),
        tags=["chat"],
    )
    async def chat_completions(request: Request) -> Response:
        """Chat Completions, passed through to the backend."""
        return _Delegate(app, app._chat_completions)

    @api.get("/v1/models", responses=schemas.answers("ModelList"), tags=["models"])
    async def list_models() -> Response:
        """The backend's models and the names of the model map."""
        return _Delegate(app, lambda scope, receive: gateway().models())

    @api.get("/healthz", responses=schemas.answers("Health"), tags=["operations"])
    async def healthz() -> Response:
        """Liveness: 200 once the gateway has started (no authentication)."""
        ready = app.gateway is not None
        body = {"status": "ok" if ready else "starting"}
        return Response(orjson.dumps(body), 200 if ready else 503, media_type="application/json")

    return api


__all__ = ["GatewayApp", "create_app", "make_backend"]
