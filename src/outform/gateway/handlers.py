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

import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import orjson

from outform.gateway import background, chain, references, translate
from outform.gateway.backend import Backend, Body, ChatStream
from outform.gateway.enforce import Checker, Enforced, checkable, enforce, wanted
from outform.gateway.events import DONE, data_frame
from outform.gateway.keeper import Keeper
from outform.gateway.output import Shell, response_from_completion
from outform.gateway.replies import (
    GatewayError,
    Headers,
    Reply,
    StreamReply,
    bad_request,
    not_found,
)
from outform.gateway.scrub import Scrubber
from outform.gateway.settings import GatewaySettings
from outform.gateway.store import NO_TENANT, ResponseStore, StoredResponse
from outform.gateway.stream import (
    StreamTranslator,
    chat_error,
    completion_chunks,
    failure_message,
)

Log = dict[str, Any]


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

    # -- POST /v1/responses ----------------------------------------------------------------------

    async def create_response(
        self,
        raw: bytes,
        enforce_header: bytes | None,
        log: Log,
        tenant: str = NO_TENANT,
        profile: bytes | None = None,
    ) -> Reply | StreamReply:
        started = time.perf_counter()
        req = _json_object(raw)
        in_background = background.requested(req)
        await references.resolve(self.store, req, tenant)
        translate.check_request(req)
        model = req["model"]
        stream = req.get("stream") is True
        log["model"] = model
        log["stream"] = stream
        text = req.get("text")
        fmt = None
        if wanted(self.settings.enforce, enforce_header):
            fmt = checkable(text.get("format") if text else None)
        value = req.get("input")
        items = chain.input_items(value if value is not None else [])
        try:
            previous = await chain.load_previous(
                self.store, req.get("previous_response_id"), tenant
            )
        except chain.ChainError as exc:
            raise _chain_error(exc) from None
        chat = translate.chat_request(
            req,
            self.model_map.get(model, model),
            chain.conversation_for(previous, items),
            stream=stream and fmt is None,
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
        if in_background:
            assert keeper is not None  # background.requested() refuses store: false
            produce = _producer(self, chat, fmt, profile)
            return Reply(200, orjson.dumps(await self.worker.submit(keeper, shell, produce)))
        headers: Headers = []
        waited = 0.0
        if fmt is not None:
            called = time.perf_counter()
            enforced = await self._enforce(chat, fmt, profile)
            waited = time.perf_counter() - called
            log["enforce"] = enforced.attempts
            completion = enforced.completion
            headers = enforced.headers()
            if stream:
                if keeper is not None:
                    await keeper.begin(shell.build("in_progress", []))
                chunks = _replay(completion_chunks(completion))
                return StreamReply(200, self._events(shell, chunks, None, keeper), headers=headers)
        elif stream:
            backend_stream = await self.backend.stream(chat)
            if keeper is not None:
                try:  # committed before response.created names the id
                    await keeper.begin(shell.build("in_progress", []))
                except BaseException:
                    await backend_stream.aclose()
                    raise
            return StreamReply(200, self._events(shell, None, backend_stream, keeper))
        else:
            called = time.perf_counter()
            completion = (await self.backend.complete(chat)).json()
            waited = time.perf_counter() - called
        response = response_from_completion(shell, completion)
        if keeper is not None:
            await keeper.save(response)  # committed before the answer leaves
        body = orjson.dumps(response)
        headers.append(_overhead(started, waited))
        return Reply(200, body, headers=headers)

    async def _enforce(
        self, chat: dict[str, Any], fmt: Any, profile: bytes | None = None
    ) -> Enforced:
        return await enforce(
            self.backend,
            chat,
            fmt,
            retries=self.settings.enforce_retries,
            checker=self.checker,
            profile=profile,
        )

    async def _events(
        self,
        shell: Shell,
        chunks: AsyncIterator[dict[str, Any]] | None,
        backend_stream: ChatStream | None,
        keeper: Keeper | None,
    ) -> AsyncIterator[bytes]:
        translator = StreamTranslator(shell)
        source = chunks if chunks is not None else backend_stream.chunks()  # type: ignore[union-attr]
        try:
            yield translator.start()
            closing = b""
            try:
                async for chunk in source:
                    out = translator.feed(chunk)
                    if out:
                        yield out
                closing = translator.finish()
            except Exception as exc:  # whatever broke, the stream ends with response.failed
                translator.abort(failure_message(exc))
            if keeper is not None:  # committed before the terminal event, or the stream fails
                await keeper.end_stream(translator)
            yield closing + translator.terminal()
        finally:
            if keeper is not None:  # a stream cut short is stored as failed
                await keeper.abandon(translator)
            if backend_stream is not None:
                await backend_stream.aclose()

    # -- GET / DELETE /v1/responses/{id} -----------------------------------------------------------

    async def retrieve(self, response_id: str, tenant: str = NO_TENANT) -> Reply:
        record = await self._load(response_id, tenant)
        return Reply(200, orjson.dumps(record.response))

    async def delete(self, response_id: str, tenant: str = NO_TENANT) -> Reply:
        if not await self.store.delete(response_id, tenant):
            raise _missing(response_id)
        self.worker.cancel_local(response_id)  # a background job of it stops here
        body = {"id": response_id, "object": "response", "deleted": True}
        return Reply(200, orjson.dumps(body))

    async def cancel(self, response_id: str, tenant: str = NO_TENANT) -> Reply:
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
                f"Invalid 'limit': {raw_limit!r} is not an integer.", "limit"
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
        record = await self.store.load(response_id, tenant)
        if record is None:
            raise _missing(response_id)
        return record

    # -- POST /v1/chat/completions -----------------------------------------------------------------

    async def chat_completions(
        self, raw: bytes, enforce_header: bytes | None, log: Log, profile: bytes | None = None
    ) -> Reply | StreamReply:
        """Pass-through: the body goes to the backend as received (its model renamed when the
        model map says so), and the answer comes back as the backend sent it."""
        started = time.perf_counter()
        req = _json_object(raw)
        model = req.get("model")
        if not isinstance(model, str) or not model:
            raise bad_request("Missing required parameter: 'model'.", "model", "missing_required")
        stream = req.get("stream") is True
        log["model"] = model
        log["stream"] = stream
        target = self.model_map.get(model, model)
        body: Body = raw if target == model else orjson.dumps({**req, "model": target})
        fmt = None
        if wanted(self.settings.enforce, enforce_header):
            fmt = checkable(req.get("response_format"), "response_format")
        if fmt is not None:
            called = time.perf_counter()
            enforced = await self._enforce({**req, "model": target}, fmt, profile)
            log["enforce"] = enforced.attempts
            if stream:
                frames = [data_frame(c) for c in completion_chunks(enforced.completion)]
                return StreamReply(200, _replay([*frames, DONE]), headers=enforced.headers())
            headers = [*enforced.headers(), _overhead(started, time.perf_counter() - called)]
            return Reply(200, orjson.dumps(enforced.completion), headers=headers)
        if stream:
            backend_stream = await self.backend.stream(body)
            return StreamReply(200, _relay(backend_stream), backend_stream.content_type)
        called = time.perf_counter()
        reply = await self.backend.complete(body)
        reply.json()  # a 200 that is not a Chat Completions answer is a 502, not a success
        headers = [_overhead(started, time.perf_counter() - called)]
        return Reply(reply.status, reply.body, reply.content_type, headers)

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


# -- helpers -------------------------------------------------------------------------------


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"The body is not valid JSON: {exc}.", None, "invalid_json") from None
    if not isinstance(data, dict):
        raise bad_request("The body must be a JSON object.", None, "invalid_json")
    return data


def _overhead(started: float, waited: float) -> tuple[bytes, bytes]:
    """Milliseconds the gateway itself spent on the request (everything but the backend)."""
    spent = (time.perf_counter() - started - waited) * 1000
    return (b"x-outform-overhead-ms", b"%.3f" % spent)


def _missing(response_id: str) -> GatewayError:
    return not_found(f"Response with id '{response_id}' not found.", "response_id")


def _chain_error(exc: chain.ChainError) -> GatewayError:
    return GatewayError(exc.status, exc.what, param=exc.param, code=exc.code)


def _producer(
    gateway: Gateway, chat: dict[str, Any], fmt: Any, profile: bytes | None
) -> background.Produce:
    """What a background job runs: the backend call (enforced when asked), whole."""

    async def produce() -> dict[str, Any]:
        if fmt is not None:
            return (await gateway._enforce(chat, fmt, profile)).completion
        return (await gateway.backend.complete(chat)).json()

    return produce


async def _replay(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def _relay(backend_stream: ChatStream) -> AsyncIterator[bytes]:
    """The backend's SSE bytes as they come; a break becomes an `error` event, which the
    OpenAI SDK raises as an APIError (the status line was sent long ago)."""
    try:
        async for chunk in backend_stream.raw():
            yield chunk
    except Exception as exc:
        yield data_frame(chat_error(exc))
    finally:
        await backend_stream.aclose()


__all__ = ["Gateway"]
