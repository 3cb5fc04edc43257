"""Caller labels: which `step` of an application, which `agent`, which free `tags` a call
belongs to, so that the health report can say *where* repairs and re-asks happen.

Labels come from three places, the most specific winning key by key:

1. a call's own `labels=` (generate(), stream(); for the gateway, the request's headers);
2. the innermost `with outform.trace.labels(step=...)` block around the call (a context
   variable: it follows threads started inside it only when copied, and asyncio tasks);
3. the call's profile (`profile=`, the gateway's `x-outform-profile`): its name is the `step`,
   its `[profiles.NAME]` table may give `agent` and `tags`; then `[defaults]` (`step`,
   `agent`, `tags`) of `outform.toml` (see `outform.profile`).

Tags are merged (defaults, then the profile, then the block, then the call), without repeats.
The profile a call runs under rides in the same context variable as the block (`Block`), so
that a count taken on the fast path carries both at the cost of one reference.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from outform.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Labels:
    step: str | None = None
    agent: str | None = None
    tags: tuple[str, ...] = ()

    def over(self, base: Labels) -> Labels:
        """These labels, with `base` filling what they leave unset (tags: base's first)."""
        if base is _EMPTY or self == base:
            return self
        if self is _EMPTY:
            return base
        tags = base.tags if not self.tags else self.tags if not base.tags else None
        return Labels(
            step=self.step if self.step is not None else base.step,
            agent=self.agent if self.agent is not None else base.agent,
            tags=tags if tags is not None else tuple(dict.fromkeys((*base.tags, *self.tags))),
        )

    @classmethod
    def of(cls, value: Labels | Mapping[str, Any] | None) -> Labels:
        """Labels from a `Labels`, a mapping with the same keys, or None."""
        if value is None:
            return _EMPTY
        if isinstance(value, Labels):
            return value
        unknown = set(value) - {"step", "agent", "tags"}
        if unknown:
            fix = "use step, agent and tags"
            if "profile" in unknown:
                fix += "; a profile is named by the call's own profile= argument"
            raise ConfigError(
                f"unknown label(s): {', '.join(sorted(unknown))}", where="labels", fix=fix
            )
        return cls(
            step=_text(value.get("step"), "step"),
            agent=_text(value.get("agent"), "agent"),
            tags=_tags(value.get("tags") or ()),
        )


_EMPTY = Labels()


class Block:
    """One `labels(...)` block, or a call's profile taking effect: the labels and the profile
    of the calls inside. Hashed by identity, so that counting fast-path tallies per block costs
    C-level hashing only (`Labels` hashes by value, in Python)."""

    __slots__ = ("labels", "profile")

    def __init__(self, labels: Labels, profile: str | None = None) -> None:
        self.labels = labels
        self.profile = profile


_current: ContextVar[Block | None] = ContextVar("outform_trace_labels", default=None)
current_block = _current.get
"""The innermost block, None outside any (what the recorder's tally keeps)."""


def _labels_now() -> Labels:
    block = _current.get()
    return block.labels if block is not None else _EMPTY


@contextlib.contextmanager
def labels(
    *,
    step: str | None = None,
    agent: str | None = None,
    tags: Iterable[str] = (),
) -> Iterator[Labels]:
    """Label every call made inside the block (blocks nest; the inner one wins key by key)."""
    outer = _current.get()
    inner = Labels(step, agent, _tags(tags)).over(_labels_now())
    token = _current.set(Block(inner, outer.profile if outer is not None else None))
    try:
        yield inner
    finally:
        _current.reset(token)


@contextlib.contextmanager
def profiled(profile: str | None) -> Iterator[None]:
    """Run the calls inside under `profile` (None: under none), keeping the current labels:
    what `outform.profile.active` does for a call that names its profile."""
    outer = _current.get()
    if (outer.profile if outer is not None else None) == profile:
        yield
        return
    token = _current.set(Block(outer.labels if outer is not None else _EMPTY, profile))
    try:
        yield
    finally:
        _current.reset(token)


def active_profile() -> str | None:
    """The profile the call running now runs under (None outside a call or without one)."""
    block = _current.get()
    return block.profile if block is not None else None


def current() -> Labels:
    """The labels of the innermost `labels(...)` block (empty outside any)."""
    return _labels_now()


class Active:
    """`resolve(profile=ACTIVE)`: the profile the current block runs under."""


ACTIVE = Active()


def resolve(
    call: Labels | Mapping[str, Any] | None = None, profile: str | Active | None = ACTIVE
) -> Labels:
    """The labels a call gets: its own, over the current block's, over its profile's (`None`:
    no profile; by default the one active now) and `[defaults]`. Raises ConfigError for a
    profile that outform.toml does not define."""
    from outform.profile import step

    block = _current.get()
    merged = Labels.of(call).over(block.labels if block is not None else _EMPTY)
    if isinstance(profile, Active):
        profile = block.profile if block is not None else None
    return merged.over(step(profile).labels)


def _text(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"the label {key!r} must be a non-empty string", where="labels")
    return value


def _tags(values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str):
        raise ConfigError("tags must be a list of strings, not one string", where="labels tags")
    out = tuple(values)
    if not all(isinstance(tag, str) and tag.strip() for tag in out):
        raise ConfigError("every tag must be a non-empty string", where="labels tags")
    return tuple(dict.fromkeys(out))
