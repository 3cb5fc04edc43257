"""The envelope: one output type for assistants that answer, call tools and explain themselves.

`Envelope[T]` carries the answer (`content`, of type T; `str` for a bare `Envelope`), the tools
the model wants called, metadata people and programs read (confidence, sources, reasoning
steps, the kind of reply), and an error the model reports about the task itself. Every field
but `content` has a default, so a model that says little still produces a valid envelope.

Its JSON Schema translates into every provider dialect (the strict ones included): optional
fields become nullable-and-required where a dialect wants every field required, and the open
`arguments` object is carried in the form the dialect allows (see docs/dialects.md), mapped
back before validation.
"""

from __future__ import annotations

from typing import Any, Generic, Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypeVar as DefaultedTypeVar

T = DefaultedTypeVar("T", default=str)

ResponseType = Literal["answer", "tool_call", "clarification", "error", "text"]
RESPONSE_TYPES: tuple[ResponseType, ...] = ("answer", "tool_call", "clarification", "error", "text")


class ToolRequest(BaseModel):
    """One tool the model asks to have called."""

    function_name: str = Field(description="The name of one of the tools offered.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool's arguments, as a JSON object."
    )
    reasoning: str | None = Field(default=None, description="Why this call helps.")


class Metadata(BaseModel):
    confidence: float = Field(default=1.0, ge=0, le=1, description="From 0 (a guess) to 1.")
    sources: list[str] = Field(default_factory=list, description="Where the answer comes from.")
    reasoning_steps: list[str] = Field(
        default_factory=list, description="The steps that led to the answer, briefly."
    )
    response_type: ResponseType = Field(
        default="answer",
        description="answer; tool_call when tools must run first; clarification when a "
        "question is asked back; error when the task cannot be done",
    )


class ErrorInfo(BaseModel):
    """A problem with the task itself, reported by the model (not an exception)."""

    code: str
    message: str
    recoverable: bool = False


class Envelope(BaseModel, Generic[T]):
    """An assistant's reply: content, the tool calls it asks for, metadata and an error."""

    model_config = ConfigDict(title="Envelope")

    content: T
    tool_calls: list[ToolRequest] = Field(default_factory=list)
    metadata: Metadata = Field(default_factory=Metadata)
    error: ErrorInfo | None = None

    @classmethod
    def outform_from_text(cls, text: str) -> Envelope[Any]:
        """The text fallback: a reply that ignored the format, kept whole as the content.
        An `Envelope[str]` (whatever the content type asked for), `response_type` "text"."""
        return Envelope[str](content=text, metadata=Metadata(response_type="text"))


__all__ = ["RESPONSE_TYPES", "Envelope", "ErrorInfo", "Metadata", "ResponseType", "ToolRequest"]
