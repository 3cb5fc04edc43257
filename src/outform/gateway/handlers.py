"""The gateway's endpoints as plain async functions: bytes and headers in, a Reply out.

`POST /v1/responses` (the hot path): parse the body with orjson, check it by hand, continue
the stored chain, translate to a Chat request, call the backend, translate back, store, answer.
No pydantic model, no deep copy, one JSON parse and one JSON dump per body.

Every handler that touches stored responses takes the caller's `tenant` (`gateway.tenancy`);
stored responses are written through a `Keeper`, which commits them before they are
acknowledged (`gateway.keeper`); `background: true` runs on the `Worker`
(`gateway.background`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from typing import Any

import orjson

from outform.gateway import background, chain, references, tracing, translate
from outform.gateway.backend import Backend, Body, ChatStream
from outform.gateway.enforce import (
    Checker,
    Enforced,
    checkable,
    enforce,
    profile_named,
    wanted,
)
from outform.gateway.events import DONE, data_frame
from outform.gateway.keeper import CLIENT_GONE, Keeper
from outform.gateway.output import Shell, response_from_completion
from outform.gateway.replies import (
    GatewayError,
    Headers,
    Reply,
    StreamReply,
    bad_request,
    not_found,
)
from outform.gateway.routing import provider_model
from outform.gateway.scrub import Scrubber
from outform.gateway.settings import DEFAULT_REQUEST_DEPTH, GatewaySettings
from outform.gateway.store import NO_TENANT, ResponseStore, StoredResponse, storable_id
from outform.gateway.stream import (
    StreamTranslator,
    chat_error,
    completion_chunks,
    failure_message,
)
from outform.gateway.tracing import StreamCall
from outform.trace.caller import Labels
from outform.trace.tracer import RunTrace

Log = dict[str, Any]
CLIENT_LEFT = "the client went away"
"""Why a stream stopped when its client left (the run's error; the stored response says
`keeper.CLIENT_GONE`)."""


class Gateway:
    def __init__(
        self,
        settings: GatewaySettings,
        backend: Backend,
        store: ResponseStore,
        worker: background.Worker,
        scrubber: Scrubber | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.store = store
        self.worker = worker
        self.scrubber = scrubber or Scrubber()
        self.model_map = dict(settings.model_map)
        self.checker = Checker(settings)
        self.provider = settings.backend if settings.native else None
        """The provider runs are recorded under (None for a Chat Completions URL backend)."""
        self.stopping = False
        """The process is shutting down and its grace is nearly over: the streams still open
        are being stopped (`GatewayApp.drain`), each ending with its terminal event."""

    # -- POST /v1/responses ----------------------------------------------------------------------

    async def create_response(
        self,
        raw: bytes,
        enforce_header: bytes | None,
        log: Log,
        *,
        labels: Labels | None = None,
        tenant: str = NO_TENANT,
        profile: bytes | None = None,
    ) -> Reply | StreamReply:
        """`labels` and `profile`: what the request's `x-outform-*` headers say of it (its
        run's labels; the profile's parse settings and step)."""
        started = time.perf_counter()
        req = _json_object(raw, self.settings.max_request_depth)
        _within_items(req, "input", self.settings.max_input_items)
        named = profile_named(profile)
        enforcing = wanted(self.settings.enforce, enforce_header)
        in_background = background.requested(req)
        translate.check_request(req, references=True)  # before the store or the backend
        target = self._target(req["model"])
        value = req.get("input")
        await references.resolve(self.store, req, tenant)
        if req.get("input") is not value:  # the stored items in the references' places
            translate.check_request(req)
        model = req["model"]
        stream = req.get("stream") is True
        log["model"] = model
        log["stream"] = stream
        text = req.get("text")
        fmt = self._checked(text.get("format") if text else None, "text.format", enforcing)
        value = req.get("input")
        items = chain.input_items(value if value is not None else [])
        try:
            previous = await chain.load_previous(
                self.store, req.get("previous_response_id"), tenant
            )
        except chain.ChainError as exc:
            raise _chain_error(exc) from None
        chat = translate.chat_request(
            req, target, chain.conversation_for(previous, items), stream=stream and fmt is None
        )
        shell = Shell(req, chain.new_id("resp"), int(time.time()))
        log["response_id"] = shell.id
        keeper = None
        if req.get("store") is not False:
            keeper = Keeper(
                self.store,
                self.scrubber,
                tenant=tenant,
                worker=self.worker.id,
                items=items,
                previous=previous,
            )
        run = self._run(
            target, stream, fmt, enforce_header, labels=labels, profile=named, now=not in_background
        )
        if in_background:
            assert keeper is not None  # background.requested() refuses store: false
            produce = _producer(self, chat, fmt, named, run)
            return Reply(200, orjson.dumps(await self.worker.submit(keeper, shell, produce)))
        headers: Headers = []
        waited = 0.0
        if fmt is not None:
            called = time.perf_counter()
            enforced = await self._enforce(chat, fmt, named, run)
            waited = time.perf_counter() - called
            log["enforce"] = enforced.attempts
            completion = enforced.completion
            headers = enforced.headers()
            if stream:
                chunks = _replay(completion_chunks(completion))  # (before the row exists)
                if keeper is not None:
                    await keeper.begin(shell.build("in_progress", []))
                settle = Settle(StreamTranslator(shell), keeper, gateway=self)
                return StreamReply(200, _events(settle, chunks), headers=headers, close=settle)
        elif stream:
            call = StreamCall(run)
            backend_stream = await _opened(self.backend.stream(chat), call)
            if keeper is not None:
                try:  # committed before response.created names the id
                    await keeper.begin(shell.build("in_progress", []))
                except BaseException as error:
                    call.end(error)
                    await backend_stream.aclose()
                    raise
            settle = Settle(StreamTranslator(shell), keeper, call, backend_stream, self)
            return StreamReply(200, _events(settle, backend_stream.chunks()), close=settle)
        else:
            called = time.perf_counter()
            completion = await _answered(self.backend, chat, run)
            waited = time.perf_counter() - called
        response = response_from_completion(shell, completion)
        if keeper is not None:
            await keeper.save(response)  # committed before the answer leaves
        body = orjson.dumps(response)
        headers.append(_overhead(started, waited))
        return Reply(200, body, headers=headers)

    def _target(self, model: str) -> str:
        """The backend's name for the client's `model` (the model map's); behind a native
        backend, a 403 before anything is done when it names a provider the operator did not
        allow (`gateway.routing`)."""
        target = self.model_map.get(model, model)
        if self.settings.native:
            provider_model(target, self.settings.backend, self.settings.allowed_providers)
        return target

    def _checked(self, fmt: Any, where: str, enforcing: bool) -> dict[str, Any] | None:
        """The format enforcement checks replies against (None: not enforcing, or a format
        with nothing to check). The gateway compiles a `json_schema` format's schema itself
        when it enforces it, and so does a native backend's adapter (it plans how the
        provider enforces it): then the schema is checked here, before the backend is
        called, so that a fault is a 400 naming its path in the client's request (`where`,
        the format's: `text.format`, Chat's `response_format`)."""
        if not enforcing and not self.settings.native:
            return None
        checked = checkable(fmt, where)
        return checked if enforcing else None

    async def _enforce(
        self,
        chat: dict[str, Any],
        fmt: Any,
        profile: str | None,
        run: RunTrace,
        param: str = "text.format",
    ) -> Enforced:
        return await enforce(
            self.backend,
            chat,
            fmt,
            retries=self.settings.enforce_retries,
            checker=self.checker,
            run=run,
            profile=profile,
            param=param,
        )

    # -- GET / DELETE /v1/responses/{id} -----------------------------------------------------------

    async def retrieve(
        self, response_id: str, tenant: str = NO_TENANT, query: Mapping[str, str] | None = None
    ) -> Reply:
        """The stored response; `query` is the request's (`stream=true`, which asks to replay
        its events, is a 400: the gateway keeps the Response, not its stream)."""
        stream = (query or {}).get("stream")
        if stream is not None and stream.lower() != "false":
            raise bad_request(
                "Streaming a stored response is not supported by this gateway: retrieve it "
                "without 'stream' (the Response as it was served, streamed ones too).",
                "stream",
                "unsupported",
            )
        record = await self._load(response_id, tenant)
        return Reply(200, orjson.dumps(record.response))

    async def delete(self, response_id: str, tenant: str = NO_TENANT) -> Reply:
        if not storable_id(response_id) or not await self.store.delete(response_id, tenant):
            raise _missing(response_id)
        self.worker.cancel_local(response_id)  # a background job of it stops here
        body = {"id": response_id, "object": "response", "deleted": True}
        return Reply(200, orjson.dumps(body))

    async def cancel(self, response_id: str, tenant: str = NO_TENANT) -> Reply:
        if not storable_id(response_id):
            raise _missing(response_id)
        response = await background.cancel(self.store, self.worker, response_id, tenant)
        return Reply(200, orjson.dumps(response))

    async def input_items(
        self, response_id: str, query: Mapping[str, str], tenant: str = NO_TENANT
    ) -> Reply:
        record = await self._load(response_id, tenant)
        raw_limit = query.get("limit", "20")
        try:
            limit = int(raw_limit)
        except ValueError:
            raise bad_request(
                f"Invalid 'limit': {raw_limit!r} is not an integer.", "limit", "invalid_type"
            ) from None
        try:
            page = chain.page(
                record.input_items,
                limit=limit,
                order=query.get("order", "desc"),
                after=query.get("after"),
                before=query.get("before"),
            )
        except chain.ChainError as exc:
            raise _chain_error(exc) from None
        return Reply(200, orjson.dumps(page))

    async def _load(self, response_id: str, tenant: str) -> StoredResponse:
        """The tenant's record, or a 404 (without asking the store for an id no record can
        have: `store.storable_id`)."""
        record = await self.store.load(response_id, tenant) if storable_id(response_id) else None
        if record is None:
            raise _missing(response_id)
        return record

    # -- POST /v1/chat/completions -----------------------------------------------------------------

    async def chat_completions(
        self,
        raw: bytes,
        enforce_header: bytes | None,
        log: Log,
        *,
        labels: Labels | None = None,
        profile: bytes | None = None,
    ) -> Reply | StreamReply:
        """Pass-through: the body goes to the backend as received (its model renamed when the
        model map says so), and the answer comes back as the backend sent it."""
        started = time.perf_counter()
        req = _json_object(raw, self.settings.max_request_depth)
        _within_items(req, "messages", self.settings.max_input_items)
        named = profile_named(profile)
        enforcing = wanted(self.settings.enforce, enforce_header)
        model = translate.model_name(req)
        if req.get("stream") is not None:
            translate.check_value(req["stream"], "stream", translate.BOOLEAN)
        stream = req.get("stream") is True
        log["model"] = model
        log["stream"] = stream
        target = self._target(model)
        body: Body = raw if target == model else orjson.dumps({**req, "model": target})
        fmt = self._checked(req.get("response_format"), "response_format", enforcing)
        run = self._run(target, stream, fmt, enforce_header, labels=labels, profile=named)
        if fmt is not None:
            called = time.perf_counter()
            enforced = await self._enforce(
                {**req, "model": target}, fmt, named, run, "response_format"
            )
            log["enforce"] = enforced.attempts
            if stream:
                frames = [data_frame(c) for c in completion_chunks(enforced.completion)]
                return StreamReply(200, _replay([*frames, DONE]), headers=enforced.headers())
            headers = [*enforced.headers(), _overhead(started, time.perf_counter() - called)]
            return Reply(200, orjson.dumps(enforced.completion), headers=headers)
        if stream:
            call = StreamCall(run)
            backend_stream = await _opened(self.backend.stream(body), call)
            settle = Settle(None, None, call, backend_stream, self)
            relayed = _relay(settle, backend_stream, self.scrubber)
            return StreamReply(200, relayed, backend_stream.content_type, close=settle)
        called = time.perf_counter()
        # a 200 that is not a Chat Completions answer is a 502, not a success
        with run.recording():
            reply, completion = await tracing.complete(self.backend, body, run)
        run.end("valid", tokens=tracing.usage_of(completion.get("usage")))
        headers = [_overhead(started, time.perf_counter() - called)]
        return Reply(reply.status, reply.body, reply.content_type, headers)

    def _run(
        self,
        model: str,
        stream: bool,
        fmt: Any,
        enforce_header: bytes | None,
        *,
        labels: Labels | None,
        profile: str | None,
        now: bool = True,
    ) -> RunTrace:
        """The run of one request (docs/observability.md); `now`: it starts at once (a
        background job's starts when the job does)."""
        why = None
        if fmt is not None:
            why = "x-outform-enforce" if enforce_header is not None else "[gateway] enforce"
        return tracing.begin(
            labels,
            model,
            profile=profile,
            provider=self.provider,
            streaming=stream,
            enforced=why,
            start=now,
        )

    # -- GET /v1/models ----------------------------------------------------------------------------

    async def models(self) -> Reply:
        listed = await self.backend.models()
        ids = {model["id"] for model in listed}
        mapped = [
            {"id": name, "object": "model", "created": 0, "owned_by": "outform"}
            for name in self.model_map
            if name not in ids
        ]
        return Reply(200, orjson.dumps({"object": "list", "data": mapped + listed}))


class Settle:
    """Ends the work of one streamed answer, once, however its stream stops: whole, broken,
    cut short by the client, or never started at all (a client that left before the first
    byte). The run's exchange ends (`StreamCall.end`), a response not stored in a final state
    is stored as failed (`Keeper.abandon`), and the backend's stream is closed. The stream's
    own `finally` calls it, and so does the app once the answer is over (`StreamReply.close`):
    a stream that never started has no `finally` to run."""

    __slots__ = ("backend_stream", "call", "done", "failure", "gateway", "keeper", "translator")

    def __init__(
        self,
        translator: StreamTranslator | None,
        keeper: Keeper | None,
        call: StreamCall | None = None,
        backend_stream: ChatStream | None = None,
        gateway: Gateway | None = None,
    ) -> None:
        self.translator = translator
        self.keeper = keeper
        self.call = call
        self.backend_stream = backend_stream
        self.gateway = gateway
        """Whose shutdown may stop the stream (`Gateway.stopping`)."""
        self.failure: BaseException | str | None = CLIENT_LEFT
        """Why the stream stopped (None: it was whole); the client's leaving until it ends."""
        self.done = False

    async def __call__(self) -> None:
        if self.done:
            return
        self.done = True
        try:
            if self.call is not None:
                self.call.end(self.failure)
            if self.keeper is not None and self.translator is not None:
                reason = SHUT_DOWN if _stopped(self) else CLIENT_GONE
                await self.keeper.abandon(self.translator, reason)
        finally:
            if self.backend_stream is not None:
                await self.backend_stream.aclose()


# -- helpers -------------------------------------------------------------------------------


def _json_object(raw: bytes, max_depth: int = DEFAULT_REQUEST_DEPTH) -> dict[str, Any]:
    """The body as a JSON object, nested at most `max_depth` levels (`max_request_depth`),
    or a 400: the gateway refuses any request it could not write again."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):  # orjson's own limit, 1024 levels
            raise _too_deep(max_depth, None) from None
        raise bad_request(f"The body is not valid JSON: {exc}.", None, "invalid_json") from None
    if not isinstance(data, dict):
        raise bad_request("The body must be a JSON object.", None, "invalid_json")
    # A body with no more brackets than the limit cannot nest deeper: most are never tried.
    if raw.count(b"{") + raw.count(b"[") > max_depth:
        found = _deeper_than(data, max_depth)
        if found is not None:
            raise _too_deep(max_depth, found)
    return data


def _within_items(body: dict[str, Any], field: str, limit: int) -> None:
    """A 400 for a body whose `field` (a list of items) holds more than `limit`
    (`max_input_items`): checked before any of them is looked at."""
    items = body.get(field)
    if type(items) is list and len(items) > limit:
        raise bad_request(
            f"The request's {field} holds {len(items):,} items, more than this gateway accepts "
            f"({limit:,}: its max_input_items, set in [gateway]).",
            field,
            "too_many_input_items",
        )


def _deeper_than(body: dict[str, Any], limit: int) -> str | None:
    """The top-level field under which `body` (level 1) nests objects and lists deeper than
    `limit` levels, or None. The check is orjson's own, at C speed: `body`, wrapped in
    `_WRITABLE - limit` more levels, is written only if it nests `limit` levels at most (a
    walk in Python costs several times the parse); the field is found the same way."""
    if _writes(body, _WRITABLE - limit):
        return None
    for key, value in body.items():
        if (type(value) is dict or type(value) is list) and not _writes(
            value, _WRITABLE - limit + 1
        ):
            return key
    return None  # (unreachable: a body too deep has a field too deep)


def _writes(value: Any, levels: int) -> bool:
    """Whether orjson writes `value` wrapped in `levels` lists. Anything orjson read it
    writes, but for its depth: nothing else can fail here."""
    for _ in range(levels):
        value = [value]
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def _writable_depth() -> int:
    """The deepest nesting orjson writes (it reads 1,024 levels but writes 254 in orjson 3),
    found once by trying."""
    low, high = 1, 2_048  # low levels are written; high are not (or high is the cap)
    while high - low > 1:
        middle = (low + high) // 2
        if _writes([], middle - 1):
            low = middle
        else:
            high = middle
    return low


_WRITABLE = _writable_depth()


def _too_deep(limit: int, param: str | None) -> GatewayError:
    return bad_request(
        f"The body nests JSON deeper than this gateway accepts ({limit} levels, the body "
        "itself the first: its max_request_depth, set in [gateway]).",
        param,
        "request_too_deep",
    )


def _overhead(started: float, waited: float) -> tuple[bytes, bytes]:
    """Milliseconds the gateway itself spent on the request (everything but the backend)."""
    spent = (time.perf_counter() - started - waited) * 1000
    return (b"x-outform-overhead-ms", b"%.3f" % spent)


def _missing(response_id: str) -> GatewayError:
    return not_found(f"Response with id '{response_id}' not found.", "response_id")


def _chain_error(exc: chain.ChainError) -> GatewayError:
    return GatewayError(exc.status, exc.what, param=exc.param, code=exc.code)


def _producer(
    gateway: Gateway, chat: dict[str, Any], fmt: Any, profile: str | None, run: RunTrace
) -> background.Produce:
    """What a background job runs: the backend call (enforced when asked), whole; the
    request's run starts and ends with it (a job cancelled while it waited is no run)."""

    async def produce() -> dict[str, Any]:
        run.start()
        if fmt is not None:
            return (await gateway._enforce(chat, fmt, profile, run)).completion
        return await _answered(gateway.backend, chat, run)

    return produce


async def _replay(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def _events(settle: Settle, source: AsyncIterator[dict[str, Any]]) -> AsyncIterator[bytes]:
    """A Chat stream as Responses events; a stream that breaks ends with `response.failed`,
    and the final state is stored before the terminal event (`Keeper.end_stream`). Whatever
    raises while it streams (the backend, the translation, a bug), the end is reached by code
    that cannot fail the same way: `abort`, `end_stream` and `terminal` never raise, each
    falling back to the failed Response built from the request alone."""
    translator, keeper, call = settle.translator, settle.keeper, settle.call
    assert translator is not None
    try:
        yield translator.start()
        closing = b""
        try:
            async for chunk in source:
                if call is not None:
                    call.chunk(chunk)
                out = translator.feed(chunk)
                if out:
                    yield out
            closing = translator.finish()
            settle.failure = None
        except Exception as exc:  # whatever broke, the stream ends with response.failed
            settle.failure = exc
            translator.abort(failure_message(exc))
        except asyncio.CancelledError:
            if not _stopped(settle):
                raise  # the client went away
            settle.failure = SHUT_DOWN
            translator.abort(SHUT_DOWN)
        if keeper is not None:  # committed before the terminal event, or the stream fails
            await keeper.end_stream(translator)
        yield closing + translator.terminal()
    finally:
        await settle()


async def _relay(
    settle: Settle, backend_stream: ChatStream, scrubber: Scrubber
) -> AsyncIterator[bytes]:
    """The backend's SSE bytes as they come, whole events each scrubbed as a JSON reader
    sees it (`Scrubber.events`: a secret written in escapes); a break becomes an `error`
    event, which the OpenAI SDK raises as an APIError (the status line was sent long ago)."""
    try:
        async for chunk in backend_stream.raw():
            if settle.call is not None:
                settle.call.data()
            yield scrubber.events(chunk)
        settle.failure = None
    except Exception as exc:
        settle.failure = exc
        yield data_frame(chat_error(exc))
    except asyncio.CancelledError:
        if not _stopped(settle):
            raise  # the client went away
        settle.failure = SHUT_DOWN
        yield data_frame(chat_error(GatewayError(503, SHUT_DOWN, code="shutting_down")))
    finally:
        await settle()


SHUT_DOWN = "The gateway shut down before the response was complete."
"""Why a stream the process's shutdown stopped ended (its terminal event, its stored row)."""


def _stopped(settle: Settle) -> bool:
    """Whether a cancelled stream was stopped by its gateway's shutdown (not its client)."""
    return settle.gateway is not None and settle.gateway.stopping


async def _answered(backend: Backend, chat: Mapping[str, Any], run: RunTrace) -> dict[str, Any]:
    """A whole answer for the run, which ends with it."""
    with run.recording():
        _, completion = await tracing.complete(backend, chat, run)
    run.end("valid", tokens=tracing.usage_of(completion.get("usage")))
    result: dict[str, Any] = completion
    return result


async def _opened(opening: Awaitable[ChatStream], call: StreamCall) -> ChatStream:
    """The backend's stream (how a native backend enforces the format recorded first), or
    its refusal recorded as the call's (and the run's) end."""
    try:
        backend_stream = await opening
    except BaseException as error:
        call.end(error)
        raise
    tracing.planned(call.run, backend_stream)
    return backend_stream


__all__ = ["Gateway"]
