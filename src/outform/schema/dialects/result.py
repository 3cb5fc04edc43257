"""The outcome of a translation: the wire schema, its ledger, and the value mappings."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from outform.jsontext import dumps_text
from outform.schema.dialects import codec as codecs
from outform.schema.dialects.rules import DialectRules
from outform.schema.ledger import Ledger


@dataclass(frozen=True)
class DialectResult:
    """A schema translated into one dialect.

    `schema` is what goes on the wire (for Gemini's OpenAPI form, with upper-case types and
    `nullable`); `validation_schema` is the same schema as standard JSON Schema, which outform
    uses to check values in the wire shape. `ledger` says, for every keyword of the original,
    whether the provider enforces it, outform checks it after the reply, or nobody can.

    The reply is mapped back with `reverse` and then validated against the ORIGINAL schema,
    which is why a keyword moved out of the wire schema is still checked.
    """

    dialect: str
    schema: dict[str, Any]
    ledger: Ledger
    wrapped_root: bool
    original: Mapping[str, Any]
    validation_schema: dict[str, Any]
    rules: DialectRules
    codec: codecs.Codec | None = field(default=None, repr=False)
    definitions: Mapping[str, codecs.Codec | None] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def _context(self) -> codecs.Context:
        return codecs.Context(self.validation_schema, self.definitions)

    @functools.cached_property
    def reshapes(self) -> bool:
        """Whether a value can differ between the original and the wire (else `reverse` is
        the identity and a reply needs no mapping back)."""
        return codecs.reshapes(self.codec, self.definitions)

    def payload(self) -> dict[str, Any] | str:
        """The schema as the provider's request field takes it (a JSON string for Bedrock)."""
        if self.rules.payload == "string":
            return dumps_text(self.schema)
        return self.schema

    def forward(self, value: Any) -> Any:
        """The value a provider would write, under the wire schema, for an original value.

        Raises `NotRepresentableError` when the wire schema cannot express the value (a key the
        dialect's closed objects leave out, say); the ledger lists every such narrowing.
        """
        return codecs.forward(self.codec, value, self._context, "")

    def reverse(self, value: Any) -> Any:
        """A value written under the wire schema, in the original's shape. Never raises: what
        does not fit is returned unchanged, for validation against the original to report."""
        return codecs.reverse(self.codec, value, self._context)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialect": self.dialect,
            "provider": self.rules.provider,
            "wire": self.rules.wire,
            "schema": self.schema,
            "wrapped_root": self.wrapped_root,
            "counts": self.ledger.counts(),
            "ledger": self.ledger.to_list(),
        }


__all__ = ["DialectResult"]
