"""A schema that refers to another document is refused before any use: outform never fetches
a schema. `$ref` and `$dynamicRef` alike say so, and name where (a trial met a remote
`$dynamicRef` refused with the validator's own words: "Resource ... is not present in a
registry and retrieving it failed")."""

from __future__ import annotations

import pytest

import outform
from outform.errors import SchemaError


@pytest.mark.parametrize("keyword", ["$ref", "$dynamicRef"])
def test_a_reference_to_another_document_is_refused_as_never_fetched(keyword: str) -> None:
    schema = {
        "type": "object",
        "properties": {"address": {keyword: "https://example.com/address.json#meta"}},
    }
    with pytest.raises(SchemaError) as caught:
        outform.parse('{"address": {}}', schema)
    error = caught.value
    assert "refers to a remote document ('https://example.com/address.json#meta')" in error.what
    assert "outform never fetches schemas" in error.what
    assert error.where == f"schema at /properties/address/{keyword}"
    assert error.fix is not None and "$defs" in error.fix


def test_a_dynamic_reference_inside_the_document_is_used() -> None:
    schema = {
        "$dynamicAnchor": "node",
        "type": "object",
        "properties": {"child": {"$dynamicRef": "#node"}, "n": {"type": "integer"}},
    }
    assert outform.parse('{"n": 1, "child": {"n": 2}}', schema).data == {"n": 1, "child": {"n": 2}}
    with pytest.raises(outform.OutputError, match=r"at child\.n: expected integer"):
        outform.parse('{"n": 1, "child": {"n": "two"}}', schema)
