"""What a parse returns: the value, and per JSON path what outform changed to get it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

import orjson

from outform.parse.hint import RetryHint
from outform.trace.events import Event, EventStage

T = TypeVar("T")
FROM_TEXT: Final = object()


@dataclass(frozen=True, slots=True)
class Change:
    """One intervention: at `path` (a JSON pointer, "" for the whole reply), `stage` applied
    `transform`, turning `before` into `after`. Text stages store short previews.

    `lost` counts the characters of the reply's content the change discarded (see "Loss" in
    docs/pipeline.md); a change with `lost > 0` is `lossy`. `attempt` is the call of a
    `generate()` whose reply the change was made to (1, then 2 after a re-ask, ...): after a
    re-ask of some fields, the changes behind the fields kept from an earlier reply stay.
    """

    path: str
    stage: EventStage
    transform: str
    before: Any
    after: Any
    detail: str = ""
    lost: int = 0
    attempt: int = 1

    @property
    def lossy(self) -> bool:
        return self.lost > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "stage": self.stage,
            "transform": self.transform,
            "before": self.before,
            "after": self.after,
            "detail": self.detail,
            "lossy": self.lossy,
            "lost": self.lost,
            "attempt": self.attempt,
        }


@dataclass(slots=True)
class ParseResult(Generic[T]):
    """A reply that now matches its schema. Read-only by convention (not frozen: building a
    frozen instance costs more than the rest of the fast path for a small reply).

    `value` is typed when an output type was given, else equal to `data`, the plain JSON value.
    `changes` is empty when the reply was valid as sent. In shadow mode, `value` and `data` are
    what the reply gives without any repair and `changes` lists what *would* have been done.
    """

    value: T
    text: str
    changes: tuple[Change, ...] = ()
    events: tuple[Event, ...] = ()
    schema_hash: str | None = None
    level: str = "minimal"
    shadow: bool = False
    hint: RetryHint | None = None
    """Set only when the result is not valid: in shadow mode, or on an `OutputError`."""
    would_be: Any = None
    """Shadow mode only: the value the pipeline would have returned."""
    would_be_hint: RetryHint | None = None
    """Shadow mode only: what would still be wrong with `would_be` (None: it would be valid)."""
    _data: Any = field(default=None, repr=False)
    """The plain JSON value, or FROM_TEXT when it is the reply itself, decoded on first use
    (the typed fast path never needs it)."""

    @property
    def data(self) -> Any:
        """The validated value as plain JSON (dicts, lists, strings, numbers, booleans, None)."""
        if self._data is FROM_TEXT:
            self._data = orjson.loads(self.text)
        return self._data

    @property
    def ok(self) -> bool:
        return self.hint is None

    @property
    def repaired(self) -> bool:
        return bool(self.changes)

    @property
    def lossy(self) -> bool:
        """Whether any change discarded content of the reply (each such change says how much)."""
        return any(c.lost for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "data": self.data,
            "changes": [c.to_dict() for c in self.changes],
            "events": [e.to_dict() for e in self.events],
            "schema_hash": self.schema_hash,
            "level": self.level,
            "shadow": self.shadow,
            "hint": self.hint.to_dict() if self.hint else None,
            **(
                {
                    "would_be": self.would_be,
                    "would_be_hint": self.would_be_hint.to_dict() if self.would_be_hint else None,
                }
                if self.shadow
                else {}
            ),
        }
