"""Canonical JSON of a schema, and its hash: equal schemas hash equally whatever their key order."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def canonical_json(schema: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the form every hash and cache key is computed from."""
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)


def schema_hash(schema: Any) -> str:
    """sha256 (hex) of the canonical JSON."""
    return hashlib.sha256(canonical_json(schema)).hexdigest()
