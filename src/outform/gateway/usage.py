"""A backend's `usage`, read by one rule wherever the gateway reads it.

The Responses answer (`ResponseUsage`), the sum over enforcement's attempts and the request's
run all read a Chat Completions `usage` through `read`. The rule: a usage is known only when
every count it holds is a non-negative integer — `prompt_tokens` and `completion_tokens`
(required), `total_tokens` (their sum when left out), `prompt_tokens_details.cached_tokens`
and `completion_tokens_details.reasoning_tokens` (each details object null or an object, each
count null or left out when unknown). A usage that breaks the rule (`"prompt_tokens": "a"`,
`-5`, a float, `prompt_tokens_details: 5`) is *unknown*: the answer goes on without it (a
Response without `usage`, a run without tokens) and the gateway's log says once per field
what was wrong. It is never a 500, and never read as other counts than the backend's (no
negative count, no `0` for a value that is not one).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from outform.gateway.answers import Malformed
from outform.usage import Usage

log = logging.getLogger("outform.gateway")

_REPORTED: set[str] = set()
"""The faults already logged (one line per field and kind for the process's lifetime: a
backend that always sends them would otherwise write one per request)."""


@dataclass(frozen=True, slots=True)
class Counts:
    """A usage the rule accepts."""

    prompt: int
    completion: int
    total: int
    cached: int
    reasoning: int
    details: tuple[bool, bool] = (False, False)
    """Whether the backend sent `prompt_tokens_details` / `completion_tokens_details`."""

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.prompt + other.prompt,
            self.completion + other.completion,
            self.total + other.total,
            self.cached + other.cached,
            self.reasoning + other.reasoning,
            (self.details[0] or other.details[0], self.details[1] or other.details[1]),
        )

    def chat(self) -> dict[str, Any]:
        """As a Chat Completions `usage`."""
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.total,
        }
        if self.details[0]:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached}
        if self.details[1]:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning}
        return usage

    def response(self) -> dict[str, Any]:
        """As the Responses API's `ResponseUsage`."""
        return {
            "input_tokens": self.prompt,
            "input_tokens_details": {"cached_tokens": self.cached, "cache_write_tokens": 0},
            "output_tokens": self.completion,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.total,
        }

    def tokens(self) -> Usage:
        """As outform's usage (the run's tokens)."""
        return Usage(self.prompt, self.completion, self.reasoning, self.cached)


class _Unknown(Malformed):
    """A usage field that is no count (answers.Malformed's message), and where it is."""

    def __init__(self, where: str, value: Any, expected: str) -> None:
        super().__init__(where, value, expected)
        self.where = where


def read(usage: Any) -> Counts | None:
    """The counts of a Chat Completions `usage`, or None when there is none or it is unknown
    (the rule above; the fault logged once per field)."""
    if usage is None:
        return None
    try:
        return _counts(usage)
    except _Unknown as unknown:
        if unknown.where not in _REPORTED:
            _REPORTED.add(unknown.where)
            log.warning(
                "the backend sent a usage the gateway cannot read (%s): the answer goes on "
                "without its usage (said once per field)",
                unknown,
            )
        return None


def tokens(usage: Any) -> Usage:
    """The run's tokens for a `usage` (zeros when there is none, or it is unknown)."""
    counts = read(usage)
    return counts.tokens() if counts is not None else Usage()


def _counts(usage: Any) -> Counts:
    if not isinstance(usage, Mapping):
        raise _Unknown("usage", usage, "an object")
    prompt = _count(usage, "prompt_tokens", "usage", required=True)
    completion = _count(usage, "completion_tokens", "usage", required=True)
    total = _count(usage, "total_tokens", "usage")
    prompt_details = _details(usage, "prompt_tokens_details")
    completion_details = _details(usage, "completion_tokens_details")
    return Counts(
        prompt,
        completion,
        prompt + completion if total is None else total,
        _count(prompt_details, "cached_tokens", "usage.prompt_tokens_details") or 0,
        _count(completion_details, "reasoning_tokens", "usage.completion_tokens_details") or 0,
        (prompt_details is not None, completion_details is not None),
    )


def _details(usage: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    value = usage.get(key)
    if value is None or isinstance(value, Mapping):
        return value
    raise _Unknown(f"usage.{key}", value, "an object")


def _count(where: Mapping[str, Any] | None, key: str, path: str, *, required: bool = False) -> Any:
    value = where.get(key) if where is not None else None
    if value is None:
        if required:
            raise _Unknown(f"{path}.{key}", value, "a count of tokens")
        return None
    if type(value) is not int or value < 0:
        raise _Unknown(f"{path}.{key}", value, "a non-negative integer")
    return value


__all__ = ["Counts", "read", "tokens"]
