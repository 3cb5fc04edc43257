"""The neutral request and response every provider adapter translates to and from.

Adapters are pure: `build(request) -> WireRequest` and `parse(request, body) -> Response`,
plus a stream decoder turning wire events into `Delta`s. They never do I/O, never see
credentials, and never rewrite schemas: by the time a request reaches an adapter, the output
mechanism is decided (`NativeSchema`, `ForcedTool`, `JsonObject` or `FreeText`) and its schema
is already in the provider's dialect.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

from outform import usage as _usage

Usage = _usage.Usage
"""Token usage (`outform.usage`): the one model, re-exported here with the rest of the
neutral response."""

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "refusal", "other"]
"""One vocabulary for every provider's stop reason."""
StreamFormat = Literal["sse", "ndjson", "aws-event-stream"]
Auth = Literal["bearer", "x-api-key", "x-goog-api-key", "sigv4", "google", "none"]
"""How transport authenticates: a key in a header, AWS SigV4, Google OAuth tokens, or nothing."""


# -- messages ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image by URL, or inline bytes with their media type."""

    url: str | None = None
    data: bytes | None = None
    media_type: str = "image/png"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data or b"").decode()

    @property
    def data_url(self) -> str:
        return self.url or f"data:{self.media_type};base64,{self.base64}"


Part = TextPart | ImagePart


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. `arguments` is the JSON text as the provider sent it."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        return orjson.loads(self.arguments) if self.arguments.strip() else {}

    def object_arguments(self, provider: str, where: str | None = None) -> dict[str, Any]:
        """The arguments as a JSON object, for APIs that take a past call's arguments as one
        (Anthropic, Bedrock, Gemini, Ollama); UsageError when they are not an object."""
        try:
            value = self.parsed_arguments()
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            from outform.errors import UsageError

            raise UsageError(
                f"{provider}: the arguments of tool call {self.id!r} ({self.name}) are not a "
                "JSON object",
                where=where or f"tool call {self.name}",
                fix="pass the arguments as the JSON object text the model produced",
            )
        return value


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    """Assistant messages: the calls the model made."""
    tool_call_id: str | None = None
    """Tool messages: the call this message answers."""
    name: str | None = None
    """Tool messages: the name of the tool that answered."""

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @classmethod
    def user(cls, *content: str | Part) -> Message:
        return cls("user", _parts(content))

    @classmethod
    def assistant(cls, text: str = "", tool_calls: Sequence[ToolCall] = ()) -> Message:
        return cls("assistant", (TextPart(text),) if text else (), tuple(tool_calls))

    @classmethod
    def tool_result(cls, call_id: str, content: str, name: str | None = None) -> Message:
        return cls("tool", (TextPart(content),), tool_call_id=call_id, name=name)


def _parts(content: Sequence[str | Part]) -> tuple[Part, ...]:
    return tuple(TextPart(c) if isinstance(c, str) else c for c in content)


def as_message(value: Message | Mapping[str, Any]) -> Message:
    """Accept OpenAI-style dicts (`{"role": "user", "content": "..."}`) as well as Messages."""
    if isinstance(value, Message):
        return value
    role = value.get("role")
    if role not in ("system", "user", "assistant", "tool", "developer"):
        from outform.errors import UsageError

        raise UsageError(
            f"a message needs a role of system, user, assistant or tool, got {role!r}",
            fix="pass {'role': 'user', 'content': '...'} or outform.Message.user('...')",
        )
    content = value.get("content")
    parts: tuple[Part, ...]
    if content is None:
        parts = ()
    elif isinstance(content, str):
        parts = (TextPart(content),)
    else:
        parts = tuple(_part_from_dict(p) for p in content)
    calls = tuple(
        ToolCall(c["id"], c["function"]["name"], c["function"].get("arguments", ""))
        for c in value.get("tool_calls") or ()
    )
    return Message(
        "system" if role == "developer" else role,
        parts,
        calls,
        value.get("tool_call_id"),
        value.get("name"),
    )


def _part_from_dict(part: Any) -> Part:
    if isinstance(part, str):
        return TextPart(part)
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        return TextPart(part.get("text", ""))
    if kind in ("image_url", "input_image"):
        url = part.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        return ImagePart(url=url)
    return TextPart(orjson.dumps(part).decode())


# -- tools and thinking --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    parameters: Mapping[str, Any]
    """JSON Schema of the arguments, in the provider's dialect when `strict`."""
    description: str | None = None
    strict: bool | None = None


@dataclass(frozen=True, slots=True)
class NamedTool:
    """Force a call to this tool."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedTool


@dataclass(frozen=True, slots=True)
class Thinking:
    """Reasoning settings. `enabled=False` asks the provider to turn thinking off where it can."""

    enabled: bool = True
    budget_tokens: int | None = None
    effort: Literal["minimal", "low", "medium", "high", "xhigh", "max"] | None = None


# -- output mechanisms ---------------------------------------------------------------------


SchemaForm = Literal["json_schema", "openapi"]
"""The language a wire schema is written in: JSON Schema, or the OpenAPI 3.0 `Schema` object
(upper-case types, `nullable`) that Gemini's `responseSchema` takes."""


@dataclass(frozen=True, slots=True)
class NativeSchema:
    """The provider's response-format field with a schema (already in its dialect)."""

    name: str
    schema: Mapping[str, Any]
    strict: bool | None = None
    description: str | None = None
    form: SchemaForm = "json_schema"
    """Which language `schema` is in; an API with a field per language picks it by this."""


@dataclass(frozen=True, slots=True)
class ForcedTool:
    """One tool whose arguments are the output; the model is forced to call it. The adapter
    surfaces the arguments as the reply text."""

    name: str
    schema: Mapping[str, Any]
    strict: bool | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class JsonObject:
    """The provider's JSON-object mode: any JSON object."""


@dataclass(frozen=True, slots=True)
class FreeText:
    """No constraint on the wire (instructions-only mode, or plain text)."""


Output = NativeSchema | ForcedTool | JsonObject | FreeText


# -- request and response ------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    model: str
    messages: tuple[Message, ...]
    output: Output = FreeText()
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    stream: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific body fields, merged into the wire body as they are."""


@dataclass(frozen=True)
class Response:
    text: str
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    thinking: str | None = None
    model: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    end_stated: bool = True
    """Whether the provider said the reply ended (a stop reason): False for a stream that
    stopped without one, which may have been cut anywhere."""


DeltaKind = Literal["text", "thinking", "refusal", "tool_call", "usage", "finish"]


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a streamed reply. `usage` deltas are increments: their sum over a stream
    is the reply's usage."""

    kind: DeltaKind
    text: str = ""
    """text / thinking / refusal fragments, or a tool call's argument fragment."""
    index: int = 0
    """Which tool call a `tool_call` fragment belongs to."""
    tool_call_id: str | None = None
    tool_name: str | None = None
    usage: Usage | None = None
    finish_reason: FinishReason | None = None


# -- the adapter contract ------------------------------------------------------------------


def merge_extra(body: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Apply `Request.extra` last, the same way in every adapter: nested objects merge key by
    key (so `{"generationConfig": {"topK": 5}}` keeps the schema beside it), anything else
    (scalars, lists) replaces."""
    for key, value in extra.items():
        current = body.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            body[key] = merge_extra(dict(current), value)
        else:
            body[key] = value
    return body


@dataclass(frozen=True, slots=True)
class WireRequest:
    """What transport sends: the path under the provider's base URL, the JSON body, headers
    that carry no secret, and how a streamed reply is framed."""

    path: str
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    stream: StreamFormat | None = None
    method: str = "POST"


class StreamDecoder(Protocol):
    def feed(self, event: Mapping[str, Any]) -> list[Delta]:
        """Deltas carried by one wire event (possibly none)."""
        ...


class Adapter(Protocol):
    """A pure translation between the neutral model and one provider API."""

    name: str
    auth: Auth

    def build(self, request: Request) -> WireRequest: ...

    def parse(self, request: Request, body: Mapping[str, Any]) -> Response: ...

    def decoder(self, request: Request) -> StreamDecoder: ...
