"""Caller labels: which `step` of an application, which `agent`, which free `tags` a call
belongs to, so that the health report can say *where* repairs and re-asks happen.

Labels come from three places, the most specific winning key by key:

1. a call's own `labels=` (generate(), stream(); for the gateway, the request's headers);
2. the innermost `with outform.trace.labels(step=...)` block around the call (a context
   variable: it follows threads started inside it only when copied, and asyncio tasks);
3. a profile of `outform.toml` (`[trace.profiles.NAME]`), named by `profile=` in either of the
   above, and the `[trace]` defaults (`step`, `agent`, `tags`).

Tags are merged (defaults, then the profile, then the block, then the call), without repeats.
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
    profile: str | None = None
    """A `[trace.profiles.NAME]` entry whose labels fill in what this leaves unset."""

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
            profile=self.profile if self.profile is not None else base.profile,
        )

    @classmethod
    def of(cls, value: Labels | Mapping[str, Any] | None) -> Labels:
        """Labels from a `Labels`, a mapping with the same keys, or None."""
        if value is None:
            return _EMPTY
        if isinstance(value, Labels):
            return value
        unknown = set(value) - {"step", "agent", "tags", "profile"}
        if unknown:
            raise ConfigError(
                f"unknown label(s): {', '.join(sorted(unknown))}",
                where="labels",
                fix="use step, agent, tags and profile",
            )
        return cls(
            step=_text(value.get("step"), "step"),
            agent=_text(value.get("agent"), "agent"),
            tags=_tags(value.get("tags") or ()),
            profile=_text(value.get("profile"), "profile"),
        )


_EMPTY = Labels()


class Block:
    """One `labels(...)` block: hashed by identity, so that counting fast-path tallies per
    block costs C-level hashing only (`Labels` hashes by value, in Python)."""

    __slots__ = ("labels",)

    def __init__(self, labels: Labels) -> None:
        self.labels = labels


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
    profile: str | None = None,
) -> Iterator[Labels]:
    """Label every call made inside the block (blocks nest; the inner one wins key by key)."""
    inner = Labels(step, agent, _tags(tags), profile).over(_labels_now())
    token = _current.set(Block(inner))
    try:
        yield inner
    finally:
        _current.reset(token)


def current() -> Labels:
    """The labels of the innermost `labels(...)` block (empty outside any)."""
    return _labels_now()


def resolve(call: Labels | Mapping[str, Any] | None = None) -> Labels:
    """The labels a call gets: its own, over the current block's, over its profile and the
    configured defaults. Raises ConfigError for a profile that outform.toml does not define."""
    from outform.config import settings

    configured = settings().trace
    merged = Labels.of(call).over(_labels_now())
    base = configured.defaults
    if merged.profile is not None:
        profile = configured.profiles.get(merged.profile)
        if profile is None:
            known = ", ".join(sorted(configured.profiles)) or "none are defined"
            raise ConfigError(
                f"unknown trace profile {merged.profile!r}",
                where="labels profile",
                fix=f"define [trace.profiles.{merged.profile}] in outform.toml ({known})",
            )
        base = profile.over(base)
    return merged.over(base)


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
