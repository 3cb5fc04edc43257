"""The shapes of the gateway's bodies, for its OpenAPI document (`/openapi.json`, `/docs`).

These pydantic models only describe: the hot path never validates a body with them (it reads
JSON with orjson and checks by hand, `gateway.translate`). They follow OpenAI's own document
for the parts of the Responses and Chat Completions APIs the gateway serves, with the
gateway's additions said where they are: `text.format` in both shapes, fields it forwards to
the backend as they are (`additionalProperties`), the error codes of its own errors.
`components()` gives every model as OpenAPI components; tests validate real answers against
them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


# -- the spec's enums and limits: stated once, here; translate.py checks requests by them ----

Verbosity = Literal["low", "medium", "high"]
ImageDetail = Literal["low", "high", "auto", "original"]
Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
Summary = Literal["auto", "concise", "detailed"]
CacheRetention = Literal["in_memory", "24h"]
ServiceTier = Literal["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"]
Truncation = Literal["auto", "disabled"]
Includable = Literal[
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
]
METADATA_KEYS, METADATA_KEY, METADATA_VALUE = 16, 64, 512
"""The spec's `Metadata`: at most 16 pairs, keys of at most 64 characters, string values of
at most 512."""


# -- the request: text.format ----------------------------------------------------------------


class TextFormatText(_Closed):
    """Free text (the default)."""

    type: Literal["text"]


class TextFormatJsonObject(_Closed):
    """Any JSON object."""

    type: Literal["json_object"]


class TextFormatJsonSchema(_Closed):
    """JSON matching `schema`; forwarded to a Chat backend as
    `response_format: {"type": "json_schema", "json_schema": {name, schema, strict,
    description}}`, the schema byte for byte."""

    type: Literal["json_schema"]
    name: str = Field(description="The format's name (required, as OpenAI requires it).")
    schema_: dict[str, Any] = Field(alias="schema", description="A JSON Schema object.")
    description: str | None = None
    strict: bool | None = None


class JsonSchemaSpec(_Closed):
    name: str = Field(description="The format's name (required, as OpenAI requires it).")
    schema_: dict[str, Any] = Field(alias="schema", description="A JSON Schema object.")
    description: str | None = None
    strict: bool | None = None


class TextFormatJsonSchemaNested(_Closed):
    """The same format in Chat's nested shape, accepted as well and echoed as sent."""

    type: Literal["json_schema"]
    json_schema: JsonSchemaSpec


TextFormat = (
    TextFormatText | TextFormatJsonObject | TextFormatJsonSchema | TextFormatJsonSchemaNested
)


class TextParam(_Closed):
    format: TextFormat | None = None
    verbosity: Verbosity | None = Field(None, description="Forwarded as Chat's `verbosity`.")


# -- the request: input items ------------------------------------------------------------------


class InputText(_Closed):
    type: Literal["input_text"]
    text: str


class OutputTextIn(_Open):
    type: Literal["output_text"]
    text: str


class InputImage(_Open):
    type: Literal["input_image"]
    image_url: str = Field(description="A URL or a data URL (file ids need OpenAI's store).")
    detail: ImageDetail | None = None


class InputFile(_Open):
    type: Literal["input_file"]
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class InputAudio(_Open):
    type: Literal["input_audio"]
    input_audio: dict[str, Any]


class RefusalPart(_Closed):
    type: Literal["refusal"]
    refusal: str


InputContent = Annotated[
    InputText | OutputTextIn | InputImage | InputFile | InputAudio | RefusalPart,
    Field(discriminator="type"),
]


class InputMessage(_Open):
    """A message; `type` may be left out, `developer` becomes a Chat `system` message."""

    type: Literal["message"] | None = None
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[InputContent]


class FunctionCallInput(_Open):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str


class FunctionCallOutputInput(_Open):
    type: Literal["function_call_output"]
    call_id: str
    output: str | list[InputText | OutputTextIn]


class ReasoningInput(_Open):
    """Accepted and dropped: a Chat backend cannot take reasoning back."""

    type: Literal["reasoning"]


InputItem = InputMessage | FunctionCallInput | FunctionCallOutputInput | ReasoningInput


# -- the request: tools ------------------------------------------------------------------------


class FunctionTool(_Open):
    type: Literal["function"]
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolChoiceFunction(_Closed):
    """`name` names a function tool of the request's `tools` (else a 400)."""

    type: Literal["function"]
    name: str


class ToolChoiceCustom(_Closed):
    type: Literal["custom"]
    name: str


class AllowedTool(_Closed):
    type: Literal["function"]
    name: str


class ToolChoiceAllowed(_Closed):
    """Each tool names a function tool of the request's `tools` (else a 400)."""

    type: Literal["allowed_tools"]
    mode: Literal["auto", "required"]
    tools: list[AllowedTool]


ToolChoice = (
    Literal["none", "auto", "required"] | ToolChoiceFunction | ToolChoiceCustom | ToolChoiceAllowed
)


class ReasoningParam(_Open):
    effort: Effort | None = Field(None, description="Forwarded as Chat's `reasoning_effort`.")
    summary: Summary | None = Field(
        None, description="Echoed only: a Chat backend has no summaries."
    )


Metadata = dict[
    Annotated[str, Field(max_length=METADATA_KEY)], Annotated[str, Field(max_length=METADATA_VALUE)]
]
"""The spec's `Metadata` (at most `METADATA_KEYS` pairs: checked by translate.py)."""


class CreateResponse(_Open):
    """A Responses request. Fields not listed here go to the backend as they are (a backend's
    own parameters, such as vLLM's `top_k`). `background`, `conversation`, `prompt`,
    `context_management`, `moderation`, hosted tools and logprobs in `include` get a 400."""

    model: str = Field(description="Renamed by the gateway's model map, if it names it.")
    input: str | list[InputItem] | None = None
    instructions: str | None = Field(None, description="A leading system message.")
    previous_response_id: str | None = None
    text: TextParam | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_output_tokens: int | None = Field(
        None, ge=16, description="Forwarded as `max_tokens` (at least 16, as OpenAI requires)."
    )
    reasoning: ReasoningParam | None = None
    stream: bool | None = Field(None, description="Answer with Server-Sent Events.")
    store: bool | None = Field(None, description="Keep the response (default true).")
    metadata: Metadata | None = Field(
        None, max_length=16, description="At most 16 pairs, echoed in the Response."
    )
    user: str | None = None
    safety_identifier: str | None = Field(None, max_length=64)
    prompt_cache_key: str | None = None
    prompt_cache_retention: CacheRetention | None = None
    service_tier: ServiceTier | None = None
    include: list[Includable] | None = Field(
        None, description="`message.output_text.logprobs` gets a 400 (no logprobs)."
    )
    top_logprobs: int | None = Field(None, ge=0, le=20, description="Echoed only.")
    truncation: Truncation | None = Field(None, description="Echoed only.")
    max_tool_calls: int | None = Field(None, description="Echoed only (hosted tools).")


# -- the answer --------------------------------------------------------------------------------


class OutputText(_Closed):
    type: Literal["output_text"]
    text: str
    annotations: list[Any]
    logprobs: list[Any] | None = None


OutputContent = Annotated[OutputText | RefusalPart, Field(discriminator="type")]


class OutputMessage(_Closed):
    id: str
    type: Literal["message"]
    role: Literal["assistant"]
    status: Literal["in_progress", "completed", "incomplete"]
    content: list[OutputContent]


class FunctionCallOutputItem(_Closed):
    id: str
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    status: Literal["in_progress", "completed", "incomplete"]


class ReasoningText(_Closed):
    type: Literal["reasoning_text"]
    text: str


class ReasoningOutputItem(_Closed):
    id: str
    type: Literal["reasoning"]
    summary: list[Any]
    content: list[ReasoningText]
    status: Literal["in_progress", "completed", "incomplete"]


OutputItem = Annotated[
    OutputMessage | FunctionCallOutputItem | ReasoningOutputItem, Field(discriminator="type")
]


class ResponseError(_Closed):
    code: str = Field(description="`server_error` for a backend that failed mid-stream.")
    message: str = Field(description="What happened (which timeout, a cut-off stream...).")


class IncompleteDetails(_Closed):
    reason: Literal["max_output_tokens", "content_filter"]


class InputTokensDetails(_Closed):
    cached_tokens: int
    cache_write_tokens: int


class OutputTokensDetails(_Closed):
    reasoning_tokens: int


class ResponseUsage(_Closed):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class Response(_Open):
    """A Response, echoing the request (`text` exactly as received)."""

    id: str
    object: Literal["response"]
    created_at: int
    status: Literal["completed", "incomplete", "failed", "in_progress", "queued", "cancelled"]
    background: bool
    completed_at: int | None
    error: ResponseError | None
    incomplete_details: IncompleteDetails | None
    instructions: str | None
    max_output_tokens: int | None
    model: str
    output: list[OutputItem]
    parallel_tool_calls: bool
    previous_response_id: str | None
    reasoning: dict[str, Any]
    store: bool
    temperature: float
    text: dict[str, Any]
    tool_choice: Any
    tools: list[dict[str, Any]]
    top_p: float
    truncation: str
    usage: ResponseUsage | None = None
    metadata: dict[str, Any]


# -- stream events -----------------------------------------------------------------------------


class _Event(_Closed):
    sequence_number: int = Field(description="0, 1, 2... with no gaps.")


class ResponseLifecycleEvent(_Event):
    """The first two events, and exactly one terminal event at the end of every stream."""

    type: Literal[
        "response.created",
        "response.in_progress",
        "response.completed",
        "response.incomplete",
        "response.failed",
    ]
    response: Response


class OutputItemEvent(_Event):
    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: OutputItem


class ContentPartEvent(_Event):
    type: Literal["response.content_part.added", "response.content_part.done"]
    item_id: str
    output_index: int
    content_index: int
    part: OutputText | RefusalPart | ReasoningText


class TextDeltaEvent(_Event):
    type: Literal["response.output_text.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[Any]


class TextDoneEvent(_Event):
    type: Literal["response.output_text.done"]
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[Any]


class RefusalDeltaEvent(_Event):
    type: Literal["response.refusal.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str


class RefusalDoneEvent(_Event):
    type: Literal["response.refusal.done"]
    item_id: str
    output_index: int
    content_index: int
    refusal: str


class ReasoningDeltaEvent(_Event):
    type: Literal["response.reasoning_text.delta"]
    item_id: str
    output_index: int
    content_index: int
    delta: str


class ReasoningDoneEvent(_Event):
    type: Literal["response.reasoning_text.done"]
    item_id: str
    output_index: int
    content_index: int
    text: str


class ArgumentsDeltaEvent(_Event):
    type: Literal["response.function_call_arguments.delta"]
    item_id: str
    output_index: int
    delta: str


class ArgumentsDoneEvent(_Event):
    type: Literal["response.function_call_arguments.done"]
    item_id: str
    output_index: int
    name: str
    arguments: str


ResponseStreamEvent = (
    ResponseLifecycleEvent
    | OutputItemEvent
    | ContentPartEvent
    | TextDeltaEvent
    | TextDoneEvent
    | RefusalDeltaEvent
    | RefusalDoneEvent
    | ReasoningDeltaEvent
    | ReasoningDoneEvent
    | ArgumentsDeltaEvent
    | ArgumentsDoneEvent
)


class ResponseStreamEvents(BaseModel):
    """The `data` of each Server-Sent Event (its `event:` line equals `type`)."""

    event: ResponseStreamEvent


# -- the other bodies --------------------------------------------------------------------------


class ErrorDetail(_Closed):
    message: str
    type: str
    param: str | None
    code: str | None = Field(
        description="The gateway's own: `invalid_api_key`, `not_found`, `request_too_large`, "
        "`server_busy` (503, with Retry-After), `output_invalid` (422), `backend_error`, "
        "`backend_unreachable` (502), `backend_connect_timeout`, `backend_idle_timeout`, "
        "`backend_total_timeout` (504), `store_error` (503)... A backend's own error is "
        "passed on with its status and body."
    )


class Error(_Closed):
    error: ErrorDetail


class DeletedResponse(_Closed):
    id: str
    object: Literal["response"]
    deleted: Literal[True]


class ResponseItemList(_Closed):
    object: Literal["list"]
    data: list[dict[str, Any]] = Field(description="Input items, each with an `id`.")
    first_id: str
    last_id: str
    has_more: bool


class ChatMessage(_Open):
    role: str
    content: Any = None


class CreateChatCompletion(_Open):
    """Passed through to the backend as received (the model renamed by the model map);
    `response_format` is checked only in enforcement mode."""

    model: str
    messages: list[ChatMessage]
    stream: bool | None = None
    response_format: dict[str, Any] | None = None


class ChatChoice(_Open):
    index: int
    message: dict[str, Any]
    finish_reason: str | None


class ChatCompletion(_Open):
    """The backend's answer, as it sent it (a 502 when it is not one of these)."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice] = Field(min_length=1)
    usage: dict[str, Any] | None = None


class ChatCompletionChunk(_Open):
    """One event of a streamed answer. The stream ends with `[DONE]`, or with an event
    `{"error": {...}}` when the backend's stream broke, stalled or was cut off."""

    id: str | None = None
    object: str | None = None
    choices: list[dict[str, Any]] | None = None
    error: ErrorDetail | None = None


class Model(_Open):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str


class ModelList(_Closed):
    object: Literal["list"]
    data: list[Model]


class Health(_Closed):
    status: Literal["ok", "starting"]


MODELS: tuple[type[BaseModel], ...] = (
    CreateResponse,
    Response,
    ResponseStreamEvents,
    Error,
    DeletedResponse,
    ResponseItemList,
    CreateChatCompletion,
    ChatCompletion,
    ChatCompletionChunk,
    ModelList,
    Health,
)


def components() -> dict[str, Any]:
    """Every model above as OpenAPI 3.1 `components.schemas` (JSON Schema 2020-12)."""
    _, schemas = models_json_schema(
        [(model, "validation") for model in MODELS],
        ref_template="#/components/schemas/{model}",
    )
    defs: dict[str, Any] = schemas["$defs"]
    events = defs.pop("ResponseStreamEvents")
    defs["ResponseStreamEvent"] = events["properties"]["event"]
    return defs


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def body(name: str) -> dict[str, Any]:
    """A route's `openapi_extra`: its JSON request body is component `name`."""
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": ref(name)}}}
    }


def answers(name: str, *, stream: str | None = None) -> dict[int | str, dict[str, Any]]:
    """A route's `responses`: 200 with component `name` (or, with `stream: true` in the body,
    Server-Sent Events whose data is component `stream`), any other status an `Error`."""
    content: dict[str, Any] = {"application/json": {"schema": ref(name)}}
    description = "The answer."
    if stream is not None:
        content["text/event-stream"] = {"schema": ref(stream)}
        description = "JSON, or Server-Sent Events (each event's data) with `stream: true`."
    return {
        200: {"description": description, "content": content},
        "default": {
            "description": "An error of the gateway, or the backend's own, passed on.",
            "content": {"application/json": {"schema": ref("Error")}},
        },
    }


def document(base: dict[str, Any]) -> dict[str, Any]:
    """FastAPI's document with these components, and without the 422 FastAPI adds for its own
    parameter validation (the gateway never answers with that shape)."""
    for path in base.get("paths", {}).values():
        for operation in path.values():
            responses = operation.get("responses", {})
            if "HTTPValidationError" in str(responses.get("422", "")):
                del responses["422"]
    schemas = base.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas.update(components())
    return base


__all__ = ["MODELS", "answers", "body", "components", "document", "ref"]
