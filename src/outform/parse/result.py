"""What a parse returns: the value, and per JSON path what outform changed to get it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, Final, Generic, TypeVar

import orjson

from outform import jsontext
from outform.parse.hint import RetryHint, preview
from outform.trace.events import PREVIEW_CHARS, Event, EventStage
from outform.trace.events import Change as ChangeRecord

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
    `expected` and `actual` are JSON types (the ones the schema allows at `path`, the one the
    reply had there; `absent` for a field left out or dropped), set by the stages that compare
    with the schema. `branch_index`: the union branch chosen at or above `path` when the change
    was made under one.
    """

    path: str
    stage: EventStage
    transform: str
    before: Any
    after: Any
    detail: str = ""
    lost: int = 0
    expected: str | None = None
    actual: str | None = None
    branch_index: int | None = None
    attempt: int = 1

    @property
    def lossy(self) -> bool:
        return self.lost > 0

    def record(self, count: int = 1) -> ChangeRecord:
        """This change as the `data` of an `output.change` event: bounded previews (values of
        the semantic stage as JSON; the other stages already keep text previews; None where
        there was no value: before a fill, after a drop). `count`: the changes the event
        stands for (see `fold`)."""
        json = self.stage == "semantic"
        return ChangeRecord(
            _preview(self.before, json, absent=self.transform.startswith("fill_")),
            _preview(self.after, json, absent=self.transform == "drop_unexpected_key"),
            self.expected,
            self.actual,
            self.lost > 0,
            count,
        )

    def event(self, count: int = 1, **fields: Any) -> Event:
        """The `output.change` event of this change (`fields`: run, attempt, time...)."""
        return Event(
            "output.change",
            self.stage,
            transforms=(self.transform,),
            branch_index=self.branch_index,
            path=self.path,
            data=self.record(count),
            **fields,
        )

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
            "expected": self.expected,
            "actual": self.actual,
            "branch_index": self.branch_index,
        }


_VALUES = attrgetter("before", "after")
_CONTAINERS = (list, dict)


_GROUP = attrgetter("stage", "transform", "lossy")


def fold(changes: Sequence[Change], keep: int | None) -> list[tuple[Change, int]]:
    """The changes to store, each with how many it stands for: the first `keep` one by one,
    then one per stage, transform and lossiness, standing for all of its kind (`None`: keep
    every change). A reply with 80,000 coercions is then a few events in the trace, not
    80,000, and the store's counts stay exact (docs/observability.md)."""
    if keep is None or len(changes) <= keep:
        return [(change, 1) for change in changes]
    rest = changes[keep:]
    counts = Counter(map(_GROUP, rest))
    firsts = dict(zip(map(_GROUP, reversed(rest)), reversed(rest), strict=True))
    return [(change, 1) for change in changes[:keep]] + [
        (firsts[group], n) for group, n in counts.items()
    ]


def deferred_events(
    changes: Sequence[Change], keep: int | None = None, **fields: Any
) -> tuple[int, Callable[[], list[Event]]]:
    """The `output.change` events of `changes` (`fields`: run, attempt, schema_hash), folded
    past the first `keep` (see `fold`), stamped now and built when called: on the trace
    recorder's thread, off the caller's clock (turning 80,000 changes into events takes about
    half a second of Python). The lists and objects the changes hold are shared with the value
    returned, which its caller may change before then: they are copied now, with the rest, in
    one orjson call (a single linear step in C). Returns how many events, and the builder."""
    stored = fold(changes, keep)
    shown = [change for change, _ in stored]
    fields.setdefault("time", time.time())
    try:
        blob = orjson.dumps(list(map(_VALUES, shown)), option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # a value orjson cannot write (an integer beyond 64 bits): build now
        events = [c.event(count=n, **fields) for c, n in stored]
        return len(events), lambda: events

    def build() -> list[Event]:
        copied = list(shown)
        for i, (before, after) in enumerate(orjson.loads(blob)):
            if isinstance(before, _CONTAINERS) or isinstance(after, _CONTAINERS):
                copied[i] = replace(copied[i], before=before, after=after)
        return [c.event(count=n, **fields) for c, (_, n) in zip(copied, stored, strict=True)]

    return len(stored), build


def _preview(value: Any, json: bool, *, absent: bool) -> str | None:
    if value is None and (absent or not json):
        return None
    if isinstance(value, str) and not json:
        return value  # a text preview already (ChangeRecord bounds it)
    return preview(value, PREVIEW_CHARS)


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
            # orjson reads an integer beyond 64 bits as a float: such a text is read exactly
            # (only a text holding a run of 19 digits is read twice).
            self._data = jsontext.loads(self.text)
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
