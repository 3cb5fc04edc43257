"""Canonical JSON of a schema, and its hash: equal schemas hash equally whatever their key order."""

from __future__ import annotations

import hashlib
from typing import Any

from outform.jsontext import dumps
from outform.schema.check import huge_integer


def canonical_json(schema: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the form every hash and cache key is computed from.
    (An integer beyond 64 bits, which orjson does not write, is written by the standard
    library's encoder; anything else it cannot write is a TypeError. An integer with more
    digits than Python writes as text is a SchemaError naming where it is.)"""
    try:
        return dumps(schema, sort_keys=True)
    except ValueError:
        error = huge_integer(schema)
        if error is not None:
            raise error from None
        raise


def schema_hash(schema: Any) -> str:
    """sha256 (hex) of the canonical JSON."""
    return hashlib.sha256(canonical_json(schema)).hexdigest()
