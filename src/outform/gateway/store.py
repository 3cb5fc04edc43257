"""Where the gateway keeps responses (`store: true`), for retrieval and `previous_response_id`.

One record per response: the Response object as served, the input items of its request (what
`GET /v1/responses/{id}/input_items` lists), and the conversation up to and including its
output (what the next turn continues from), so that following a chain of any length is one
read. `instructions` are never part of the conversation: the spec says they do not carry over.

Implementations: `MemoryStore` (tests, single process), SQLite (`gateway/sqlite_store.py`,
the default) and PostgreSQL (`gateway/postgres_store.py`, for several gateway processes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


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


class ResponseStore(Protocol):
    async def save(self, record: StoredResponse) -> None: ...

    async def load(self, response_id: str) -> StoredResponse | None: ...

    async def delete(self, response_id: str) -> bool:
        """True when a record was deleted, False when there was none."""
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
        self._lock = asyncio.Lock()

    async def save(self, record: StoredResponse) -> None:
        async with self._lock:
            self._records[record.id] = record

    async def load(self, response_id: str) -> StoredResponse | None:
        return self._records.get(response_id)

    async def delete(self, response_id: str) -> bool:
        async with self._lock:
            return self._records.pop(response_id, None) is not None

    async def purge(self, before: int) -> int:
        async with self._lock:
            old = [key for key, record in self._records.items() if record.created_at < before]
            for key in old:
                del self._records[key]
            return len(old)

    async def flush(self) -> None:
        return None

    async def close(self) -> None:
        self._records.clear()
