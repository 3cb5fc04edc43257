"""One response's life in the store: what was acknowledged is committed.

Every response with `store: true` is written through a `Keeper`, which commits each state
before the client can learn of it:

* a whole answer: `save(final)` before the body leaves the process;
* a stream: `begin(in_progress)` before `response.created` (the first event names the id),
  `end_stream` commits the final Response before the terminal event, and a stream that stops
  any other way (the client went away, a bug) is stored as failed by `abandon`;
* a background response: `begin(queued)` before the answer, `update(in_progress)` and
  `update(final)` as it runs (`gateway.background`).

Records carry the caller's tenant and this process's worker id (while unfinished), and are
scrubbed of the configured secrets here, the one door to the store for response records.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from outform.errors import StoreError
from outform.gateway.chain import Item, record_for
from outform.gateway.scrub import Scrubber
from outform.gateway.store import ResponseStore, StoredResponse
from outform.gateway.stream import INTERNAL, StreamTranslator

log = logging.getLogger("outform.gateway")

STORE_UNAVAILABLE = "The response could not be stored: the response store is unavailable."
"""What a client is told when the store fails (the details, which name the database, go to
the log only)."""

CLIENT_GONE = "The client disconnected before the response was complete."


class Keeper:
    def __init__(
        self,
        store: ResponseStore,
        scrubber: Scrubber,
        *,
        tenant: str,
        worker: str,
        items: Sequence[Item],
        previous: StoredResponse | None,
    ) -> None:
        self.store = store
        self.tenant = tenant
        self._scrubber = scrubber
        self._worker = worker
        self._items = items
        self._previous = previous
        self.ended = False
        """True once the response's final state is committed."""

    def record(self, response: Mapping[str, Any]) -> StoredResponse:
        record = record_for(
            response, self._items, self._previous, tenant=self.tenant, worker=self._worker
        )
        return self._scrubber.record(record)

    async def save(self, response: Mapping[str, Any]) -> None:
        """Commit a response written once, whole (a non-streamed answer)."""
        await self.store.save(self.record(response))
        self.ended = True

    async def begin(self, response: Mapping[str, Any]) -> None:
        """Commit the first, unfinished state (`in_progress`, `queued`)."""
        await self.store.save(self.record(response))

    async def update(self, response: Mapping[str, Any]) -> bool:
        """Commit the next state; False when the record was cancelled or deleted meanwhile
        (the new state is then dropped: the cancellation or deletion stands)."""
        done = await self.store.update(self.record(response))
        if done and str(response.get("status")) not in ("queued", "in_progress"):
            self.ended = True
        return done

    async def end_stream(self, translator: StreamTranslator) -> None:
        """Commit a stream's final Response before its terminal event is sent; when that
        fails, the stream ends as failed instead (never a terminal event for a response that
        was not stored). A store that is down leaves that to `abandon`; any other fault (a
        Response the store cannot take) is stored as failed without its output, here."""
        assert translator.response is not None, "finish() or abort() first"
        try:
            await self.update(translator.response)
            self.ended = True  # also when it was deleted meanwhile: nothing more to store
        except StoreError as exc:
            log.error("storing response %s failed: %s", translator.shell.id, exc.what)
            translator.abort(STORE_UNAVAILABLE)
        except Exception:
            log.exception("storing response %s failed", translator.shell.id)
            translator.abort(INTERNAL["message"], output=False)
            await self._failed(translator)

    async def abandon(self, translator: StreamTranslator, reason: str = CLIENT_GONE) -> None:
        """A stream that stopped before `end_stream` committed it: store what it had, as
        failed, or its final Response if it had one (a client that reconnects can read it);
        best effort, since the store may be why."""
        if self.ended:
            return
        if translator.response is None:
            translator.abort(reason)
        assert translator.response is not None
        try:
            await self.update(translator.response)
        except StoreError as exc:
            log.error("storing response %s failed: %s", translator.shell.id, exc.what)
        except Exception:
            log.exception("storing response %s failed", translator.shell.id)
            translator.abort(reason, output=False)
            await self._failed(translator)
        self.ended = True

    async def _failed(self, translator: StreamTranslator) -> None:
        """Store the bare failed Response `abort(..., output=False)` made: the request's echo
        and the error alone, which any store takes (best effort)."""
        assert translator.response is not None
        try:
            await self.update(translator.response)
            self.ended = True
        except Exception as exc:
            log.error("storing response %s as failed failed too: %s", translator.shell.id, exc)


__all__ = ["CLIENT_GONE", "STORE_UNAVAILABLE", "Keeper"]
