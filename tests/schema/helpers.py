"""Assertions shared by the dialect tests."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

from outform.schema.dialects import DialectResult, check_rules
from outform.schema.dialects.codec import same
from outform.schema.ledger import LedgerEntry


def entry(result: DialectResult, path: str, keyword: str) -> LedgerEntry:
    """The ledger entry for a keyword of the original (fails the test when there is none)."""
    found = result.ledger.get(path, keyword)
    assert found is not None, f"no ledger entry for {keyword!r} at {path!r}"
    return found


def obeys_rules(result: DialectResult) -> None:
    problems = check_rules(result.schema, result.dialect)
    assert not problems, "\n".join(map(str, problems))


def round_trip(result: DialectResult, value: Any) -> Any:
    """forward -> valid under the wire schema -> reverse == value; returns the wire value."""
    wire_value = result.forward(value)
    validator = jsonschema_rs.validator_for(result.validation_schema, validate_formats=True)
    errors = [str(error) for error in validator.iter_errors(wire_value)]
    assert not errors, f"forward({value!r}) = {wire_value!r} breaks the wire schema: {errors[:2]}"
    back = result.reverse(wire_value)
    assert same(back, value), f"reverse(forward({value!r})) = {back!r}"
    return wire_value
