"""Regular expressions from schemas, run on the validator's linear-time engine.

A schema's `pattern` or `patternProperties` key is written by someone else; run on Python's
backtracking `re`, a pattern like `^(a+)+$` takes seconds on a short hostile string. outform
therefore never runs a schema's regex itself: it asks jsonschema-rs, the validator, whose
engine (Rust's `regex`, with `fancy-regex` and its backtracking limit only for look-around and
back-references) matches in linear time, and whose dialect (ECMA 262) is the one the schema
was written in. A pattern that engine cannot compile is refused with a SchemaError.
"""

from __future__ import annotations

import functools

import jsonschema_rs

from outform.errors import SchemaError


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (JSON Schema's unanchored match)."""
    return bool(_matcher(pattern).is_valid(text))


@functools.lru_cache(maxsize=1024)
def _matcher(pattern: str) -> jsonschema_rs.Validator:
    try:
        return jsonschema_rs.validator_for({"pattern": pattern})
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        raise SchemaError(
            f"the regular expression {pattern!r} cannot be compiled: {str(exc).splitlines()[0]}",
            fix="write the pattern in the ECMA 262 syntax JSON Schema uses",
        ) from None
