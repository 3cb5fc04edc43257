"""Where the gateway keeps responses (`store: true`), for retrieval and `previous_response_id`.

One record per response: the Response object as served, the input items of its request (what
`GET /v1/responses/{id}/input_items` lists), and the conversation up to and including its
output (what the next turn continues from), so that following a chain of any length is one
read. `instructions` are never part of the conversation: the spec says they do not carry over.

The rules every store keeps (docs/stores.md):

* **Acknowledged means committed.** `save` and `update` return once the row is committed;
  the gateway answers only after that, so a crash never loses an answered response.
* **A record belongs to a tenant** (a keyed hash of the client's API key, `""` without keys).
  `load`, `delete` and `find_item` see only the caller's tenant's rows: another tenant's
  record is indistinguishable from a missing one.
* **An item id names its newest existing copy.** Clients may reuse input item ids across
  requests (replaying earlier items), so several records can hold an item of one id. The
  item index keeps every (tenant, item id, record) in the order each record first stored
  that item; `find_item` answers the newest entry whose record still exists. Deleting,
  purging or re-saving a record without the item drops only its entries, so a reference
  then finds the newest copy left, never nothing while another record holds one.
* **Ids never hold NUL.** PostgreSQL's text cannot hold the character, so no store keeps
  one: a record whose id, previous id or item ids hold it is refused (UsageError), and a
  lookup of such an id finds nothing, without asking the database. The gateway refuses
  such ids in a request (400) before it stores anything, and answers 404 to a lookup.
* **Unfinished records have a live owner.** A record written before its end (a stream's
  `in_progress` row, a background job) names the gateway process (`worker`) running it;
  each process beats a heartbeat. A record whose worker stopped beating is read as `failed`,
  so that no response stays `in_progress` forever after a crash.

Implementations: `MemoryStore` (tests, single process), SQLite (`gateway/sqlite_store.py`,
the default) and PostgreSQL (`gateway/postgres_store.py`, for several gateway processes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from outform.errors import UsageError

NO_TENANT = ""
"""The tenant of every record of a gateway without client keys (single-tenant)."""

UNFINISHED = frozenset({"queued", "in_progress"})
"""Statuses of a response that is still running; every other status is final."""

HEARTBEAT_EVERY = 5.0
"""Seconds between two heartbeats of a gateway process (`Store.heartbeat`)."""

STALE_AFTER = 30.0
"""Seconds without a heartbeat after which a process's unfinished records read as failed."""

ABANDONED = (
    "The gateway process that was running this response stopped before it finished "
    "(crashed or was killed); the response was not completed."
)


@dataclass(frozen=True)
class StoredResponse:
    id: str
    created_at: int
    response: Mapping[str, Any]
    """The Response object exactly as the gateway served it (final state, also for streams)."""
    input_items: Sequence[Mapping[str, Any]]
    """The request's input items, each with an `id`, in order."""
    conversation: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    """Every input and output item of the chain up to and including this response, in the
    Responses item shape (messages, function_call, function_call_output), without
    instructions."""
    previous_response_id: str | None = None
    tenant: str = NO_TENANT
    """Whose record this is: a keyed hash of the client's API key (`gateway.tenancy`)."""
    worker: str | None = None
    """The gateway process running the response, while it is unfinished."""

    @property
    def status(self) -> str:
        return str(self.response.get("status") or "completed")

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED

    def items(self) -> list[Mapping[str, Any]]:
        """The items an `item_reference` may name: the input items, then the output items."""
        output = self.response.get("output")
        found = [*self.input_items, *(output if isinstance(output, list) else ())]
        return [item for item in found if isinstance(item, Mapping)]

    def item_ids(self) -> list[str]:
        """Their ids, each once."""
        return list(dict.fromkeys(str(item["id"]) for item in self.items() if item.get("id")))

    def find_item(self, item_id: str) -> dict[str, Any] | None:
        """The input or output item with this id (the latest one when an id repeats)."""
        for item in reversed(self.items()):
            if item.get("id") == item_id:
                return dict(item)
        return None


def storable_id(value: str) -> bool:
    """Whether a store can keep and find this id: it holds no NUL character (PostgreSQL's
    text cannot). No stored record has an id that is not."""
    return "\x00" not in value


def check_storable(record: StoredResponse) -> None:
    """A UsageError for a record no store can keep: an id, its previous response's id or an
    item's id holding NUL (the gateway refuses those in requests, with a 400)."""
    ids = [record.id, record.previous_response_id or "", *record.item_ids()]
    if not all(storable_id(value) for value in ids):
        raise UsageError(
            f"response {record.id!r}: an id holding a NUL character cannot be stored",
            fix="refuse such ids where they come in (the gateway answers 400)",
        )


def settle(record: StoredResponse, worker_alive: bool) -> StoredResponse:
    """The record as a reader should see it: an unfinished record whose worker stopped
    beating is `failed` (its process died; nobody will finish it)."""
    if record.finished or worker_alive:
        return record
    response = {
        **record.response,
        "status": "failed",
        "error": {"code": "server_error", "message": ABANDONED},
    }
    return dataclasses.replace(record, response=response, worker=None)


def new_worker_id() -> str:
    """An id for one gateway process's lifetime (not its pid: pids repeat, hosts differ)."""
    return f"wrk_{secrets.token_hex(12)}"


class ResponseStore(Protocol):
    async def check(self) -> None:
        """Connect, create or upgrade the tables, and prove the store is writable; a
        StoreError (or ConfigError) says why not. The gateway calls it before serving."""
        ...

    async def tenant_salt(self) -> bytes:
        """The store's random salt for tenant hashes (created with the store, kept in it)."""
        ...

    async def save(self, record: StoredResponse) -> None:
        """Insert or replace the record; returns once it is committed."""
        ...

    async def update(self, record: StoredResponse) -> bool:
        """Replace an unfinished record of the same id and tenant (with its next state, or
        its final one), committed on return. False, and nothing written, when that record is
        already finished (cancelled, possibly by another process) or gone (deleted)."""
        ...

    async def load(self, response_id: str, tenant: str = NO_TENANT) -> StoredResponse | None:
        """The tenant's record (settled: see `settle`), or None."""
        ...

    async def delete(self, response_id: str, tenant: str = NO_TENANT) -> bool:
        """True when the tenant's record was deleted, False when there was none."""
        ...

    async def find_item(self, item_id: str, tenant: str = NO_TENANT) -> dict[str, Any] | None:
        """The input or output item with this id of the tenant's record that stored it
        most recently (of those that still exist), or None."""
        ...

    async def heartbeat(self, worker: str, place: str = "", pid: int = 0) -> None:
        """Record that this gateway process is alive (its unfinished records stay so);
        `place` and `pid` say where it runs (`background.place`)."""
        ...

    async def workers(self, place: str) -> list[tuple[str, int]]:
        """The (worker, pid) recorded at `place`: a process restarting there retires those
        whose pid is gone, so their unfinished records read as failed at once."""
        ...

    async def retire(self, worker: str) -> None:
        """This gateway process stops: forget its heartbeat."""
        ...

    async def unfinished(self, ids: Iterable[str]) -> set[str]:
        """Which of these records exist and are still unfinished (the others were
        cancelled or deleted, possibly by another gateway process)."""
        ...

    async def purge(self, before: int) -> int:
        """Delete records created before `before` (unix seconds); returns how many."""
        ...

    async def flush(self) -> None:
        """Return once every record saved before the call is durable."""
        ...

    async def close(self) -> None:
        """Flush, then release the store (the gateway calls it on shutdown)."""
        ...


class MemoryStore:
    """A dict: for tests and single-process use; lost on restart."""

    def __init__(self) -> None:
        self._records: dict[str, StoredResponse] = {}
        self._items: dict[tuple[str, str], dict[str, None]] = {}
        """(tenant, item id): the ids of the records holding it, oldest first."""
        self._beats: dict[str, tuple[float, str, int]] = {}
        self._salt = secrets.token_bytes(32)
        self._lock = asyncio.Lock()

    async def check(self) -> None:
        return None

    async def tenant_salt(self) -> bytes:
        return self._salt

    async def save(self, record: StoredResponse) -> None:
        check_storable(record)
        async with self._lock:
            self._put(record)

    async def update(self, record: StoredResponse) -> bool:
        check_storable(record)
        async with self._lock:
            current = self._records.get(record.id)
            if current is None or current.tenant != record.tenant or current.finished:
                return False
            self._put(record)
            return True

    def _put(self, record: StoredResponse) -> None:
        old = self._records.get(record.id)
        self._records[record.id] = record
        if old is not None:
            self._unindex(old, keep=set() if old.tenant != record.tenant else record.item_ids())
        for item_id in record.item_ids():  # a holder already listed keeps its place
            self._items.setdefault((record.tenant, item_id), {}).setdefault(record.id, None)

    def _unindex(self, record: StoredResponse, keep: Iterable[str] = ()) -> None:
        """Drop the record's index entries, but for the item ids in `keep`."""
        kept = set(keep)
        for item_id in record.item_ids():
            holders = self._items.get((record.tenant, item_id))
            if item_id in kept or holders is None:
                continue
            holders.pop(record.id, None)
            if not holders:
                del self._items[(record.tenant, item_id)]

    async def load(self, response_id: str, tenant: str = NO_TENANT) -> StoredResponse | None:
        record = self._records.get(response_id) if storable_id(response_id) else None
        if record is None or record.tenant != tenant:
            return None
        return settle(record, self._alive(record.worker))

    def _alive(self, worker: str | None) -> bool:
        beat = self._beats.get(worker or "")
        return beat is not None and time.monotonic() - beat[0] < STALE_AFTER

    async def delete(self, response_id: str, tenant: str = NO_TENANT) -> bool:
        async with self._lock:
            record = self._records.get(response_id) if storable_id(response_id) else None
            if record is None or record.tenant != tenant:
                return False
            del self._records[response_id]
            self._unindex(record)
            return True

    async def find_item(self, item_id: str, tenant: str = NO_TENANT) -> dict[str, Any] | None:
        holders = self._items.get((tenant, item_id)) if storable_id(item_id) else None
        for response_id in reversed(holders or {}):  # the newest holder: deletes unindex
            record = self._records.get(response_id)
            if record is not None and record.tenant == tenant:
                return record.find_item(item_id)
        return None

    async def heartbeat(self, worker: str, place: str = "", pid: int = 0) -> None:
        self._beats[worker] = (time.monotonic(), place, pid)

    async def workers(self, place: str) -> list[tuple[str, int]]:
        return [(worker, pid) for worker, (_, at, pid) in self._beats.items() if at == place]

    async def retire(self, worker: str) -> None:
        self._beats.pop(worker, None)

    async def unfinished(self, ids: Iterable[str]) -> set[str]:
        return {i for i in ids if (r := self._records.get(i)) is not None and not r.finished}

    async def purge(self, before: int) -> int:
        async with self._lock:
            old = [key for key, record in self._records.items() if record.created_at < before]
            for key in old:
                self._unindex(self._records.pop(key))
            return len(old)

    async def flush(self) -> None:
        return None

    async def close(self) -> None:
        self._records.clear()
        self._items.clear()
