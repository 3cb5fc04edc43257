"""The types the bundled example reply is parsed into (`make demo`)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class Currency(StrEnum):
    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"


class Line(BaseModel):
    description: str
    quantity: int = Field(ge=1)
    unit_price: float = Field(ge=0)


class Invoice(BaseModel):
    """An invoice extracted from an e-mail."""

    number: str
    customer: str
    currency: Currency
    lines: list[Line]
    total: float
    paid: bool
    due_date: str | None = None
    tags: list[str] = []
