"""Canonical JSON of a schema, and its hash: equal schemas hash equally whatever their key order."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson


def canonical_json(schema: Any) -> bytes:
    """Sorted keys, no whitespace, UTF-8: the form every hash and cache key is computed from.
    (An integer beyond 64 bits, which orjson does not write, is written by the standard
    library's encoder; anything else it cannot write is a TypeError.)"""
    try:
        return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        if "64-bit" not in str(exc):
            raise
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode()


def schema_hash(schema: Any) -> str:
    """sha256 (hex) of the canonical JSON."""
    return hashlib.sha256(canonical_json(schema)).hexdigest()
