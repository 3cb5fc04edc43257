"""Per-pipeline options and per-reply state shared by the stages."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from outform.errors import ConfigError, InputError
from outform.parse.allowlist import Allowlist, freeze
from outform.parse.result import Change
from outform.parse.values import first_surrogate
from outform.trace.events import Event, EventName, EventStage

Level = Literal["off", "minimal", "full"]
LEVELS: tuple[Level, ...] = ("off", "minimal", "full")
ANYOF_STRATEGIES = ("first-pass", "best")
STAGES = ("extract", "unescape", "decode", "coerce")
"""Stages that can be switched off; validation always runs."""

_LEVEL_STAGES: dict[str, frozenset[str]] = {
    "off": frozenset(),
    "minimal": frozenset(STAGES),
    "full": frozenset(STAGES),
}
_LEVEL_TOLERANCE = {"off": 0, "minimal": 0, "full": 2}

MAX_DEPTH = 250
"""The largest `max_depth`: orjson writes, and jsonschema-rs reports the violations of, values
of at most 254 levels, and coercion may add a level or two (a value wrapped in a list)."""


@dataclass(frozen=True, slots=True)
class Bound:
    """The values a numeric option takes: from `low` to `high` (None: no upper bound; the
    work is bounded by `time_limit`), a whole number unless `whole` is false."""

    low: float
    high: float | None = None
    whole: bool = True

    def accepts(self, value: Any) -> bool:
        kind = int if self.whole else int | float
        if isinstance(value, bool) or not isinstance(value, kind):
            return False
        return bool(value >= self.low) and (self.high is None or value <= self.high)

    @property
    def allowed(self) -> str:
        kind = "an integer" if self.whole else "a number"
        if self.high is None:
            return f"{kind} ≥ {self.low:g}"
        return f"{kind} from {self.low:g} to {self.high:g}"


BOUNDS: dict[str, Bound] = {
    "unescape_depth": Bound(0),
    "max_repair_chars": Bound(0),
    "max_repair_string": Bound(0),
    "max_chars": Bound(1),
    "max_depth": Bound(1, MAX_DEPTH),
    "time_limit": Bound(0, whole=False),
}
"""The numeric options, in one place for `Options` and for outform.toml's [parse]."""


@dataclass(frozen=True, slots=True)
class Options:
    """How a pipeline treats replies. Build with :meth:`for_level`, then override fields."""

    level: Level = "minimal"
    stages: frozenset[str] = frozenset(STAGES)
    tolerance: int = 0
    """Highest decode tier: 0 orjson only, 1 also pyjson5, 2 also json-repair."""
    lenient: bool = False
    """Also apply coercions that take a value out of a larger one (a number followed by a
    unit, an enum member inside a sentence, an object where a string is wanted)."""
    fill_defaults: bool = True
    """Add the `default` the schema declares for properties the reply left out."""
    unescape_depth: int = 2
    max_chars: int = 10_000_000
    max_depth: int = 200
    time_limit: float = 5.0
    """Seconds the slow path may spend on one reply before giving up with an error: checked
    inside the loops of every stage, so it is a bound, not a report after the fact."""
    max_repair_chars: int = 1_000_000
    """Largest region handed to json-repair (tier 2), and so the cost of one of its steps (the
    time limit interrupts it between steps, see repair.py); a larger region skips the tier,
    and the skip is recorded."""
    max_repair_string: int = 65_536
    """Longest string json-repair may read itself (one whose end outform leaves to it: long
    strings whose end it decides are held out, see held.py): json-repair copies a string at
    every character it adds, so one string costs it the square of its length. It is stopped
    in a longer one, and the tier is skipped, recorded as for `max_repair_chars`."""
    shadow: bool = False
    anyof_strategy: str = "first-pass"
    """Union branches: `first-pass` takes the first that fits, `best` the one needing the
    fewest changes (ties to the first)."""
    coercions: Allowlist | None = None
    """The type conversions allowed per target type (see `allowlist`); None allows all."""

    @classmethod
    def for_level(cls, level: str, **overrides: Any) -> Options:
        if level not in LEVELS:
            raise ConfigError(
                f"unknown level {level!r}",
                where="level",
                fix=f"use one of: {', '.join(LEVELS)}",
            )
        base = cls(
            level=level,
            stages=_LEVEL_STAGES[level],
            tolerance=_LEVEL_TOLERANCE[level],
            lenient=level == "full",
        )
        return base.replace(**overrides) if overrides else base

    def replace(self, **changes: Any) -> Options:
        from dataclasses import replace

        unknown = set(changes) - set(self.__dataclass_fields__)
        if unknown:
            raise ConfigError(
                f"unknown parse option(s): {', '.join(sorted(unknown))}",
                fix=f"use: {', '.join(sorted(self.__dataclass_fields__))}",
            )
        if "stages" in changes:
            changes["stages"] = _stages(changes["stages"])
        for name in _FLAGS:
            if name in changes and type(changes[name]) is not bool:
                raise ConfigError(
                    f"{name} must be True or False, got {changes[name]!r}",
                    where=name,
                    fix=f"set `{name}` to True or False",
                )
        for name, bound in BOUNDS.items():
            if name in changes and not bound.accepts(changes[name]):
                raise ConfigError(
                    f"{name} must be {bound.allowed}, got {changes[name]!r}",
                    where=name,
                    fix=f"set `{name}` to {bound.allowed}",
                )
        if "anyof_strategy" in changes and changes["anyof_strategy"] not in ANYOF_STRATEGIES:
            raise ConfigError(
                f"unknown anyof_strategy {changes['anyof_strategy']!r}",
                where="anyof_strategy",
                fix=f"use one of: {', '.join(ANYOF_STRATEGIES)}",
            )
        if "coercions" in changes:
            changes["coercions"] = freeze(changes["coercions"])
        if "tolerance" in changes and changes["tolerance"] not in (0, 1, 2):
            raise ConfigError(
                f"tolerance must be 0, 1 or 2, got {changes['tolerance']!r}",
                where="tolerance",
                fix="0 = strict JSON, 1 = also JSON5, 2 = also json-repair",
            )
        return replace(self, **changes)


_FLAGS = ("lenient", "fill_defaults", "shadow")
"""The options that are yes or no."""


def _stages(given: Any) -> frozenset[str]:
    """The `stages` option: stage names, or one name alone (`"decode"` is that stage, not its
    letters)."""
    if isinstance(given, str):
        given = (given,)
    if not isinstance(given, Iterable) or isinstance(given, bytes | Mapping):
        raise ConfigError(
            f"stages must be a list of stage names, got {given!r}",
            where="stages",
            fix=f"use a subset of: {', '.join(STAGES)}",
        )
    names = tuple(given)
    bad = [name for name in names if not isinstance(name, str) or name not in STAGES]
    if bad:
        raise ConfigError(
            f"unknown stage(s): {', '.join(map(repr, bad))}",
            where="stages",
            fix=f"use a subset of: {', '.join(STAGES)}",
        )
    return frozenset(names)


_FRAMES_PER_LEVEL = 8
"""Python frames the recursive stages (coercion, defaults) use per level of `max_depth`, at
most: the coercion walk's longest chain between two levels is six calls."""
_BASE_FRAMES = 1000
"""Python's default recursion limit: room for the caller's own frames."""


def _make_room() -> None:
    """Let the stages that walk a value recursively reach the largest `max_depth`: Python's
    recursion limit (1,000 frames by default, about 150 levels of a union's coercion) is raised
    to fit, once, when outform is imported (never lowered). Since Python 3.11 calls between
    Python functions do not grow the C stack, so the higher limit costs nothing until used."""
    needed = _BASE_FRAMES + _FRAMES_PER_LEVEL * MAX_DEPTH
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


_make_room()


def too_long(size: int, limit: int, *, streaming: bool = False) -> InputError:
    """The error of a reply over `max_chars` (the pipeline's, and the stream parser's at the
    chunk that crosses the limit)."""
    has = "has reached" if streaming else "has"
    return InputError(
        f"the reply {has} {size:,} characters, over the limit of {limit:,}",
        fix="raise the 'max_chars' option if such replies are expected",
        limit="max_chars",
    )


def refuse_surrogates(text: str, before: int = 0) -> None:
    """A reply holding a lone surrogate (half of a UTF-16 pair) is not Unicode text: no JSON
    encoder or validator can take it, so it is refused up front, naming where (`before`: the
    characters of the reply before `text`, for a streamed chunk). The pipeline's check, and
    the stream parser's at each chunk, so that a stream stops where `parse` would refuse."""
    position = first_surrogate(text)
    if position is not None:
        raise InputError(
            f"the reply is not valid Unicode: a lone surrogate (U+{ord(text[position]):04X})",
            where=f"character {before + position}",
            fix="decode the model's bytes as UTF-8 before parsing, replacing broken sequences "
            "with U+FFFD",
        )


def too_deep(limit: int, depth: int | None = None, where: str | None = None) -> InputError:
    """The error of a reply nested over `max_depth` (`depth`: how deep, when it is known)."""
    how = (
        f"{depth} levels deep, over the limit of {limit}"
        if depth
        else f"deeper than the limit of {limit} levels"
    )
    fix = (
        "raise the 'max_depth' option if such nesting is expected"
        if limit < MAX_DEPTH
        else f"the 'max_depth' option is at its maximum ({MAX_DEPTH}): outform reads no "
        "deeper value; ask the model for a flatter one"
    )
    return InputError(f"the reply nests {how}", where=where, fix=fix, limit="max_depth")


def too_slow(limit: float, stage: str, size: int) -> InputError:
    """The error of a reply whose parsing took longer than `time_limit`."""
    return InputError(
        f"parsing took longer than the time limit ({limit} s), in stage {stage!r}",
        where=f"reply of {size:,} characters" if size else None,
        fix="raise the 'time_limit' option, or send a shorter reply",
        limit="time_limit",
    )


clock = time.monotonic
"""The clock deadlines read (a module attribute, so that a test can drive it)."""


class Deadline:
    """The time limit of one reply, checked from inside the stages' loops.

    `tick()` is cheap enough to call per item: it reads the clock only every `_EVERY` calls.
    Code that does a large piece of work at once calls `check()` before it.
    """

    __slots__ = ("at", "limit", "size", "stage", "ticks")
    _EVERY = 256

    def __init__(self, limit: float, size: int = 0) -> None:
        self.limit = limit
        self.at = clock() + limit
        self.size = size
        self.stage = "extract"
        self.ticks = 0

    @classmethod
    def never(cls) -> Deadline:
        """No limit (for stages run outside a parse, such as the fast path's defaults)."""
        return cls(float("inf"))

    def tick(self) -> None:
        self.ticks += 1
        if not self.ticks % self._EVERY:
            self.check()

    def check(self) -> None:
        if clock() > self.at:
            raise too_slow(self.limit, self.stage, self.size)

    def enter(self, stage: str) -> None:
        """Check the clock, then name the stage now starting. Time past the limit found here
        was spent by the stage that ran until now: that one is named in the error."""
        self.check()
        self.stage = stage


@dataclass(slots=True)
class Run:
    """What happened while parsing one reply, or while carrying one of its candidates (a fork
    of the reply's run)."""

    schema_hash: str | None
    deadline: Deadline
    changes: list[Change] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    parent: Run | None = None
    """The reply's run, of a fork."""
    forked_at: tuple[int, int] = (0, 0)
    """How many of the parent's changes and events came before the fork."""
    settled: bool = True
    """Whether `changes` and `events` begin with the parent's from before the fork."""

    @classmethod
    def start(cls, schema_hash: str | None, options: Options, size: int = 0) -> Run:
        return cls(schema_hash, Deadline(options.time_limit, size))

    def fork(self) -> Run:
        """A run for one candidate, after what this run holds now. It holds only its own
        changes and events until `settle`: copying the reply's for every candidate would cost
        the product of a reply's pieces and the failures recorded before them."""
        forked_at = (len(self.changes), len(self.events))
        return Run(self.schema_hash, self.deadline, parent=self, forked_at=forked_at, settled=False)

    def settle(self) -> Run:
        """This run with the parent's changes and events from before the fork put in front
        (done once, for a candidate that is reported)."""
        if not self.settled and self.parent is not None:
            changes, events = self.forked_at
            self.changes[:0] = self.parent.changes[:changes]
            self.events[:0] = self.parent.events[:events]
            self.settled = True
        return self

    def later_changes(self) -> list[Change]:
        """The parent's changes made after the fork (none for a run that is no fork)."""
        return [] if self.parent is None else self.parent.changes[self.forked_at[0] :]

    def change(
        self,
        path: str,
        stage: EventStage,
        transform: str,
        before: Any,
        after: Any,
        *,
        detail: str = "",
        lost: int = 0,
    ) -> None:
        self.changes.append(Change(path, stage, transform, before, after, detail, lost))

    def emit(
        self,
        name: EventName,
        stage: EventStage,
        *,
        transforms: tuple[str, ...] = (),
        branch_index: int | None = None,
        path: str = "",
        detail: str = "",
    ) -> None:
        self.events.append(
            Event(name, stage, self.schema_hash, transforms, branch_index, path, detail)
        )
