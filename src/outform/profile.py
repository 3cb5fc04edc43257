"""The settings of one step: built-in defaults, overlaid by `[defaults]`, overlaid by
`[profiles.NAME]`, overlaid by the call's own arguments (see docs/profiles.md).

A call names its profile (`generate(..., profile="invoice_extract")`, `parse(...,
profile=...)`, the gateway's `x-outform-profile` header); `[defaults]` applies to every call.
The profile's name is the `step` label of the call's trace events, and its `agent` and `tags`
keys label them too (`Step.labels`; the call's own labels win, see `outform.trace.caller`).
While a call runs, its profile name is the *active profile* (`active_profile()`).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from outform.config import settings
from outform.errors import ConfigError
from outform.parse.allowlist import Allowlist
from outform.trace.caller import Labels, active_profile
from outform.trace.caller import profiled as active

T = TypeVar("T")

BUILT_IN: dict[str, Any] = {
    "enabled": True,
    "mode": "auto",
    "level": None,
    "tolerant_level": None,
    "max_unescape_depth": None,
    "anyof_strategy": "first-pass",
    "retries": 2,
    "coercions": None,
    "step": None,
    "agent": None,
    "tags": (),
}
"""None: the `[parse]` section (or the level's own default) decides. `step`, `agent`, `tags`:
the trace labels (`step` only in `[defaults]`: a profile's step is its name)."""

PRECHECK_BUILT_IN: dict[str, Any] = {
    "enabled": False,
    "required_context": [],
    "plan": "none",
    "validator_model": None,
    "max_tokens": 200,
    "score_threshold": None,
    "consensus_samples": 0,
    "consensus_threshold": 0.5,
    "inject_feedback": "prepend",
    "feedback_prefix": "Before you answer, take this feedback on your plan into account:",
    "feedback_key": "precheck_feedback",
}

_PARSE_OPTION = {
    "tolerant_level": "tolerance",
    "max_unescape_depth": "unescape_depth",
    "anyof_strategy": "anyof_strategy",
    "coercions": "coercions",
}
"""Profile keys that are pipeline options, and the option each sets."""


@dataclass(frozen=True)
class Step:
    """The effective settings of a step, and where each came from."""

    profile: str | None
    values: Mapping[str, Any]
    precheck: Mapping[str, Any]
    sources: Mapping[str, str] = field(default_factory=dict)
    """Per key (precheck keys as `precheck.KEY`): "built-in", "[defaults]" or
    "[profiles.NAME]"."""

    @property
    def enabled(self) -> bool:
        return bool(self.values["enabled"])

    @property
    def mode(self) -> str:
        return "off" if not self.enabled else str(self.values["mode"])

    @property
    def level(self) -> str | None:
        return "off" if not self.enabled else self.values["level"]

    @property
    def retries(self) -> int:
        return 0 if not self.enabled else int(self.values["retries"])

    @functools.cached_property
    def labels(self) -> Labels:
        """The trace labels of the step: `step` is the profile's name (or `[defaults]`'s
        `step`), `agent` the most specific, `tags` those of `[defaults]` and the profile."""
        step = self.profile if self.profile is not None else self.values["step"]
        return Labels(step, self.values["agent"], tuple(self.values["tags"]))

    @property
    def coercions(self) -> Allowlist | None:
        found: Allowlist | None = self.values["coercions"]
        return found

    def parse_options(self) -> dict[str, Any]:
        """The pipeline options this step sets (the rest come from `[parse]`)."""
        if not self.enabled:
            return {}
        return {
            option: self.values[key]
            for key, option in _PARSE_OPTION.items()
            if self.sources[key] != "built-in"
        }


@functools.lru_cache(maxsize=256)
def step(profile: str | None = None) -> Step:
    """The settings of a step run under `profile` (None: `[defaults]` alone); ConfigError
    naming the file and the profiles there are, for a name the file does not define.
    Cached until `outform.config.reload()`."""
    found = settings()
    values = dict(BUILT_IN)
    precheck = dict(PRECHECK_BUILT_IN)
    sources = dict.fromkeys(values, "built-in") | {
        f"precheck.{key}": "built-in" for key in precheck
    }
    layers: list[tuple[str, Mapping[str, Any]]] = [("[defaults]", found.defaults)]
    if profile is not None and not profile.strip():
        known = ", ".join(sorted(found.profiles)) or "none are defined"
        raise ConfigError(
            f"the profile name is empty ({profile!r})",
            where="profile",
            fix=f"name a [profiles.NAME] of outform.toml ({known}), or pass no profile for "
            "[defaults] alone",
        )
    if profile is not None:
        table = found.profiles.get(profile)
        if table is None:
            known = ", ".join(sorted(found.profiles)) or "none are defined"
            raise ConfigError(
                f"unknown profile {profile!r}",
                where=str(found.source) if found.source else "no outform.toml was found",
                fix=f"define [profiles.{profile}] in outform.toml, or use one of: {known}",
            )
        layers.append((f"[profiles.{profile}]", table))
    for label, layer in layers:
        for key, value in layer.items():
            if key == "precheck":
                for inner, setting in value.items():
                    precheck[inner] = setting
                    sources[f"precheck.{inner}"] = label
            elif key == "tags":  # labels add up, as trace labels do everywhere
                values[key] = tuple(dict.fromkeys((*values[key], *value)))
                sources[key] = label
            else:
                values[key] = value
                sources[key] = label
    return Step(profile, values, precheck, sources)


# -- the active profile: `active(profile)` around a call; `active_profile()` inside ---------


def labelled(items: Iterator[T], profile: str | None) -> Iterator[T]:
    """`items`, with `profile` active while each one is produced (and not while the consumer
    holds it: a generator must not leave its context variables set between items)."""
    while True:
        with active(profile):
            try:
                item = next(items)
            except StopIteration:
                return
        yield item


async def alabelled(items: AsyncIterator[T], profile: str | None) -> AsyncIterator[T]:
    """`labelled`, for async iterators."""
    while True:
        with active(profile):
            try:
                item = await items.__anext__()
            except StopAsyncIteration:
                return
        yield item


__all__ = ["BUILT_IN", "PRECHECK_BUILT_IN", "Step", "active", "active_profile", "labelled", "step"]
