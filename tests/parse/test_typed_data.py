"""What `result.data` is for a typed output: the JSON the type read, on every path
(docs/pipeline.md#what-comes-back)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

import outform


class Order(BaseModel):
    item: str
    quantity: int = 1
    tags: list[str] = Field(default_factory=list)


@pytest.mark.parametrize("reply", ['{"item": "tea"}', '```json\n{"item": "tea"}\n```'])
def test_the_type_fills_its_defaults_in_value_and_data_is_what_it_read(reply: str) -> None:
    result = outform.parse(reply, type=Order)
    assert result.value == Order(item="tea", quantity=1, tags=[])
    assert result.data == {"item": "tea"}
    assert result.value.model_dump(mode="json") == {"item": "tea", "quantity": 1, "tags": []}


def test_a_dict_schema_s_data_has_the_declared_defaults() -> None:
    result = outform.parse('{"item": "tea"}', Order.model_json_schema())
    assert result.data == {"item": "tea", "quantity": 1}
