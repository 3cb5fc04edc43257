"""Token usage: what one call (or a run of them) cost, in the provider's tokens.

One model for the whole library: the provider layer reports it (`Response.usage`,
`Generation.usage`) and trace events carry it (`ProviderCall.tokens`, `RunEnd.tokens`). It sits
in a module of its own, below both, so that trace events can hold it without importing the
provider layer (`import outform` for parsing alone stays light).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_SHORT = {"input": "input_tokens", "output": "output_tokens", "reasoning": "reasoning_tokens",
          "cached": "cached_tokens"}  # fmt: skip
"""The keys the first trace rows were written with (still read)."""


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    def __sub__(self, other: Usage) -> Usage:
        """The increment from `other` (an earlier running total) to this one."""
        return Usage(
            self.input_tokens - other.input_tokens,
            self.output_tokens - other.output_tokens,
            self.reasoning_tokens - other.reasoning_tokens,
            self.cached_tokens - other.cached_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_tokens": self.cached_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """The usage `to_dict` wrote (unknown keys ignored)."""
        values = {_SHORT.get(k, k): v for k, v in (data or {}).items()}
        return cls(**{k: int(v or 0) for k, v in values.items() if k in _FIELDS})


_FIELDS = frozenset(Usage.__dataclass_fields__)
