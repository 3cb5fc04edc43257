"""Responses request -> Chat Completions request, as pure functions on dicts.

What is forwarded, and how (docs/gateway.md has the table):

* `text.format`: `json_object` -> `response_format: {"type": "json_object"}`; `json_schema`
  -> `{"type": "json_schema", "json_schema": {...}}` holding the received `name`, `schema`,
  `strict` and `description` in the order received, the schema being the very object the
  client sent (so it is serialised byte for byte as received); the nested form some clients
  send (`{"type": "json_schema", "json_schema": {...}}`, Chat's shape) is read the same way;
  a `json_schema` format without a schema object is a 400, never an empty schema forwarded;
  `text` or no format -> no `response_format`; any other type -> the format forwarded as it
  is, for the backend to judge. `text.verbosity` -> `verbosity`.
* `instructions` -> a leading system message (never taken from earlier turns).
* `input` items -> messages: easy and typed messages with string or part content (`developer`
  becomes `system`, which every Chat server's template knows); consecutive `function_call`
  items -> one assistant message with several `tool_calls` (joined to the assistant text
  before them); `function_call_output` -> a `tool` message; `reasoning` items are dropped
  (a Chat backend cannot take them back).
* function tools -> Chat's nested tools, `strict` included; `tool_choice` in every form ->
  Chat's shape. Hosted tools (web search, file search...) do not exist on a Chat backend and
  are refused with a 400 rather than silently dropped.
* `max_output_tokens` -> `max_tokens` (the field every compatible server reads),
  `reasoning.effort` -> `reasoning_effort`; `stream` -> `stream` plus
  `stream_options.include_usage`, so the final event can carry usage; `user`,
  `safety_identifier`, `prompt_cache_key`, `prompt_cache_retention`, `prompt_cache_options`
  and `service_tier` under the same names.
* Fields the gateway does not know (a backend's own parameters, such as vLLM's `top_k`, sent
  with the SDK's `extra_body`) go to the backend as they are: nothing is dropped unseen.
  Fields of the Responses API that a Chat backend cannot honour and whose loss would change
  the answer (`background`, `conversation`, `prompt`, `context_management`, `moderation`,
  logprobs in `include`) are a 400 naming them; the rest are the gateway's own (`store`,
  `metadata`, `previous_response_id`) or only echoed (`truncation`, `max_tool_calls`,
  `top_logprobs`, `reasoning.summary`, `stream_options`, other `include` values).

`check_request` runs before the store or the backend is asked anything: every field the
gateway reads, echoes or forwards is held to the type and bounds the OpenAPI document gives
it (`metadata`'s limits included), item and part fields likewise, and ids are strings
without NUL (no store can keep one); each refusal is a 400 naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from outform.gateway import schemas
from outform.gateway.references import is_reference
from outform.gateway.replies import GatewayError, bad_request
from outform.gateway.store import storable_id

Item = Mapping[str, Any]

_ROLES = frozenset({"user", "assistant", "system", "developer"})
_ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
_CHOICE_MODES = frozenset({"none", "auto", "required"})
_UNSUPPORTED = {
    "conversation": "conversations (use previous_response_id)",
    "prompt": "stored prompts",
    "context_management": "context management (compaction)",
    "moderation": "moderation of the input and output",
}
_SAME_NAME = (
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "prompt_cache_options",
    "service_tier",
)
"""Responses fields that Chat Completions has under the same name and meaning."""
_OWN = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "text",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "top_p",
        "max_output_tokens",
        "reasoning",
        "stream",
        "stream_options",
        "store",
        "metadata",
        "include",
        "top_logprobs",
        "truncation",
        "max_tool_calls",
        *_UNSUPPORTED,
        *_SAME_NAME,
    }
)
"""Every field the gateway reads; any other goes to the backend as it is."""
_LOGPROBS = "message.output_text.logprobs"
"""The includable the gateway refuses: it returns no logprobs."""


# -- validation ----------------------------------------------------------------------------
#
# Every field the gateway reads, echoes in the Response or forwards under its own name is held
# to the type the OpenAPI document gives it (and to the bounds it gives: ranges, the values of
# an enum, lengths); a value outside is a 400 naming the field, before the store or the
# backend is asked anything. `null` is the field left out. Fields the gateway does not know
# are the backend's and go as they are.


@dataclass(frozen=True, slots=True)
class _Field:
    """What the spec allows for one scalar field: `kind` (str, bool, int, or float for any
    number), its bounds, the values of its enum, its longest length."""

    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    max_length: int | None = None


_KIND = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
BOOLEAN = _Field(bool)
_ITEM_STATUSES = ("in_progress", "completed", "incomplete")
_SCALARS: dict[str, _Field] = {
    "instructions": _Field(str),
    "previous_response_id": _Field(str),
    "stream": BOOLEAN,
    "store": BOOLEAN,
    "parallel_tool_calls": BOOLEAN,
    "temperature": _Field(float, 0, 2),
    "top_p": _Field(float, 0, 1),
    "max_output_tokens": _Field(int, 16),
    "top_logprobs": _Field(int, 0, 20),
    "max_tool_calls": _Field(int),
    "truncation": _Field(str, choices=get_args(schemas.Truncation)),
    "user": _Field(str),
    "safety_identifier": _Field(str, max_length=64),
    "prompt_cache_key": _Field(str),
    "prompt_cache_retention": _Field(str, choices=get_args(schemas.CacheRetention)),
    "service_tier": _Field(str, choices=get_args(schemas.ServiceTier)),
}
"""The scalar fields of `CreateResponse`, as the spec gives them."""
_OBJECTS: dict[str, dict[str, _Field]] = {
    "prompt_cache_options": {
        "ttl": _Field(str, choices=("30m",)),
        "mode": _Field(str, choices=("implicit", "explicit")),
    },
    "stream_options": {"include_obfuscation": BOOLEAN},
}
"""Object fields, and the fields of each the spec types."""
_SUMMARY = _Field(str, choices=get_args(schemas.Summary))
FORMAT_TYPE = _Field(
    str,
    choices=tuple(
        dict.fromkeys(
            get_args(member.model_fields["type"].annotation)[0]
            for member in get_args(schemas.TextFormat)
        )
    ),
)
"""A format's `type` (Responses' `text.format`, Chat's `response_format`) the gateway can
enforce or translate: one of the spec's. Passed through, other types (a backend's extension,
such as a grammar) go to the backend as sent, for it to judge."""
_REASONING = {
    "effort": _Field(str, choices=get_args(schemas.Effort)),
    "summary": _SUMMARY,
    "generate_summary": _SUMMARY,
}
_VERBOSITY = _Field(str, choices=get_args(schemas.Verbosity))
_FORMAT_FIELDS = {"name": _Field(str), "description": _Field(str), "strict": BOOLEAN}
_TOOL_FIELDS = {"description": _Field(str), "strict": BOOLEAN}
_INCLUDABLE = frozenset(get_args(schemas.Includable))
MAX_METADATA_KEYS = schemas.METADATA_KEYS
MAX_METADATA_KEY = schemas.METADATA_KEY
MAX_METADATA_VALUE = schemas.METADATA_VALUE
_IMAGE_DETAILS = get_args(schemas.ImageDetail)
_AUDIO = {"data": _Field(str), "format": _Field(str)}
_FILE_FIELDS = {"file_data": _Field(str), "file_id": _Field(str), "filename": _Field(str)}


def model_name(req: Mapping[str, Any]) -> str:
    """The request's `model`: a 400 naming what is wrong when it is missing or no string."""
    model = req.get("model")
    if model is None or model == "":
        raise bad_request("Missing required parameter: 'model'.", "model", "missing_required")
    if not isinstance(model, str):
        raise bad_request(
            f"Invalid type for 'model': expected a string, got {type(model).__name__}.",
            "model",
            "invalid_type",
        )
    return model


def check_value(value: Any, where: str, field: _Field) -> None:
    """`value` (not None) is what the spec allows for the field at `where`, or a 400."""
    kind = field.kind
    if kind is int and _huge(value):
        raise _out_of_range(value, where, field)
    if not _is(value, kind):
        raise bad_request(
            f"Invalid type for '{where}': expected {_KIND[kind]}, got {type(value).__name__}.",
            where,
            "invalid_type",
        )
    if field.choices and value not in field.choices:
        allowed = ", ".join(repr(choice) for choice in field.choices)
        raise bad_request(
            f"Invalid value for '{where}': {_shown(value)}; expected one of {allowed}.",
            where,
            "invalid_value",
        )
    low, high = field.low, field.high
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"from {low:g} to {high:g}"
            if low is not None and high is not None
            else f"of at least {low:g}"
            if low is not None
            else f"of at most {high:g}"
        )
        raise bad_request(
            f"Invalid value for '{where}': {_shown(value)}; expected {_KIND[kind]} {bounds}.",
            where,
            "invalid_value",
        )
    if field.max_length is not None and len(value) > field.max_length:
        raise bad_request(
            f"Invalid value for '{where}': {len(value)} characters; at most "
            f"{field.max_length} are allowed.",
            where,
            "invalid_value",
        )


INT_RANGE = (-(2**63), 2**64 - 1)
"""The integers a request can hold: JSON read by orjson gives an integer literal outside
this range as a float, so `100000000000000000000000` arrives as 1e+23."""


def _huge(value: Any) -> bool:
    """A number sent for an integer field that is out of the range of integers a request
    can hold (an integer literal too long to read as one, or a float as large)."""
    low, high = INT_RANGE
    return type(value) is float and not low <= value <= high


def _out_of_range(value: float, where: str, field: _Field) -> GatewayError:
    """The 400 for `value` (`_huge`) at the integer field `where`: out of range, naming the
    range the field takes (never "got float": the client may well have sent an integer)."""
    low = INT_RANGE[0] if field.low is None else field.low
    high = INT_RANGE[1] if field.high is None else field.high
    return bad_request(
        f"Invalid value for '{where}': {value:.6g} is out of range; expected an integer from "
        f"{int(low)} to {int(high)}.",
        where,
        "invalid_value",
    )


def _is(value: Any, kind: type) -> bool:
    """`value` is of the JSON type `kind` stands for (a bool is no number)."""
    if isinstance(value, bool) or kind is bool:
        return isinstance(value, bool) and kind is bool
    return isinstance(value, int | float) if kind is float else isinstance(value, kind)


def _shown(value: Any) -> str:
    """A value as an error repeats it: at most 80 characters of its repr."""
    shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _check_fields(parent: Mapping[str, Any], fields: Mapping[str, _Field], prefix: str) -> None:
    for key, field in fields.items():
        value = parent.get(key)
        if value is not None:
            check_value(value, f"{prefix}{key}", field)


def check_id(value: Any, where: str) -> None:
    """An id the client sends (an item's, `previous_response_id`): a string, without NUL
    (no store can keep one: PostgreSQL's text cannot hold it), or a 400."""
    if not isinstance(value, str):
        raise bad_request(
            f"Invalid type for '{where}': expected a string, got {type(value).__name__}.",
            where,
            "invalid_type",
        )
    if not storable_id(value):
        raise bad_request(
            f"Invalid value for '{where}': an id cannot hold a NUL character (\\u0000).",
            where,
            "invalid_value",
        )


def _check_unique_id(item_id: Any, index: int, first_of: dict[str, int]) -> None:
    """An item's id (`first_of`: the index of each id seen before it) is not the id of an
    earlier item, or a 400 naming this one. Ids identify the items of a stored response
    (the spec calls each "the unique ID" of its item): `input_items` lists them and pages by
    them (`after`, `before`), and an `item_reference` finds one by its id. A reference counts
    with the id of the item it brings in; an item without an id gets its own."""
    if not isinstance(item_id, str) or not item_id:
        return
    first = first_of.setdefault(item_id, index)
    if first != index:
        raise bad_request(
            f"Duplicate value for 'input[{index}].id': {_shown(item_id)} is already the id of "
            f"input[{first}]. Item ids are unique within a request (they identify the stored "
            "items that input_items lists): give each item its own id, or leave 'id' out to "
            "have one assigned.",
            f"input[{index}].id",
            "duplicate_item_id",
        )


def check_request(req: Mapping[str, Any], *, references: bool = False) -> None:
    """Reject, with the API's 400 error shape, what cannot be translated or would be echoed
    or forwarded against the spec. `references`: `item_reference` input items are allowed
    (their ids checked), for a request whose references are resolved after this check."""
    model_name(req)
    _check_fields(req, _SCALARS, "")
    previous = req.get("previous_response_id")
    if previous is not None:
        check_id(previous, "previous_response_id")
        if previous == "":
            raise bad_request(
                "Invalid value for 'previous_response_id': an empty string names no response; "
                "send the id of a stored response, or leave the field out.",
                "previous_response_id",
                "invalid_value",
            )
    value = req.get("input")
    if value is not None and not isinstance(value, str):
        if not isinstance(value, list):
            raise bad_request(
                "'input' must be a string or a list of items.", "input", "invalid_type"
            )
        first_of: dict[str, int] = {}
        for index, item in enumerate(value):
            _check_item(item, f"input[{index}]", references)
            _check_unique_id(item.get("id"), index, first_of)
    if not previous and not req.get("instructions"):
        _check_something_to_send(value)
    reasoning = req.get("reasoning")
    if reasoning is not None and (
        not isinstance(reasoning, dict) or not isinstance(reasoning.get("effort"), str | None)
    ):
        raise bad_request(
            "'reasoning' must be an object, its 'effort' a string (e.g. {\"effort\": \"low\"}).",
            "reasoning",
            "invalid_type",
        )
    if reasoning is not None:
        _check_fields(reasoning, _REASONING, "reasoning.")
    for key, fields in _OBJECTS.items():
        found = req.get(key)
        if found is not None:
            if not isinstance(found, dict):
                raise bad_request(
                    f"Invalid type for '{key}': expected an object, got {type(found).__name__}.",
                    key,
                    "invalid_type",
                )
            _check_fields(found, fields, f"{key}.")
    _check_text(req.get("text"))
    _check_metadata(req.get("metadata"))
    for key, what in _UNSUPPORTED.items():
        if req.get(key):
            raise bad_request(f"This gateway does not support {what}.", key, "unsupported")
    _check_include(req.get("include"))
    _check_tools(req.get("tools"))
    if req.get("tool_choice") is not None:
        chat_tool_choice(req["tool_choice"])
        _check_chosen_tools(req["tool_choice"], req.get("tools"))


def _check_something_to_send(value: Any) -> None:
    """A request without `instructions` or `previous_response_id` sends its `input`, which
    must hold something a Chat backend takes: not absent (`missing_required`), not an empty
    list, nor one of `reasoning` items alone, which are dropped (`invalid_value`). The
    backend would get no message at all, and answer as it likes."""
    if value is None:
        raise bad_request(
            "Missing required parameter: 'input' (or 'instructions', or "
            "'previous_response_id' to go on from a stored response).",
            "input",
            "missing_required",
        )
    if isinstance(value, list) and all(_dropped(item) for item in value):
        what = "an empty list" if not value else "reasoning items alone (a Chat backend drops them)"
        raise bad_request(
            f"Invalid value for 'input': {what} sends nothing to the model; send at least one "
            "message (or 'instructions', or 'previous_response_id' to go on from a stored "
            "response).",
            "input",
            "invalid_value",
        )


def _dropped(item: Any) -> bool:
    """An (already checked) input item translation drops: a `reasoning` item."""
    return isinstance(item, Mapping) and item.get("type") == "reasoning"


def _check_text(text: Any) -> None:
    if text is None:
        return
    if not isinstance(text, dict):
        raise bad_request("'text' must be an object.", "text", "invalid_type")
    if text.get("verbosity") is not None:
        check_value(text["verbosity"], "text.verbosity", _VERBOSITY)
    fmt = text.get("format")
    if fmt is not None and not isinstance(fmt, dict):
        raise bad_request(
            "'text.format' must be an object with a 'type' (e.g. {\"type\": \"json_schema\", "
            "...}).",
            "text.format",
            "invalid_type",
        )
    if fmt is not None and not isinstance(fmt.get("type"), str):
        raise bad_request(
            "'text.format' must be an object with a 'type' (text, json_object or json_schema).",
            "text.format.type",
            _refusal(fmt.get("type")),
        )
    check_format(fmt, "text.format")


def format_fields(fmt: Any, where: str) -> str:
    """Where the fields of a `json_schema` format (`name`, `schema`...) are in the request
    the client sent, the format being at `where`: `where` itself for the flat shape,
    `where.json_schema` for the nested one. Every error about a format's field, its schema
    included, names its path under this one: a path of the client's own request, whichever
    shape and endpoint (`text.format`, Chat's `response_format`) it used."""
    nested = isinstance(fmt, Mapping) and fmt.get("json_schema") is not None
    return f"{where}.json_schema" if nested else where


def check_format(fmt: Any, where: str) -> None:
    """A `json_schema` format at `where` (either shape): its `name`, `description` and
    `strict` of the spec's types, and a `schema` object; each refusal a 400 naming the field
    where the client sent it. Other formats are left to whoever reads them."""
    flat = flat_format(fmt, where)
    if not isinstance(flat, dict) or flat.get("type") != "json_schema":
        return
    fields = format_fields(fmt, where)
    _check_fields(flat, _FORMAT_FIELDS, f"{fields}.")
    schema = flat.get("schema")
    if schema is None:
        raise bad_request(
            f"Missing required parameter: '{fields}.schema': a json_schema format needs a "
            "'schema' object (the JSON Schema the reply must match).",
            f"{fields}.schema",
            "missing_required",
        )
    if not isinstance(schema, dict):
        raise bad_request(
            f"Invalid type for '{fields}.schema': expected an object (the JSON Schema the "
            f"reply must match), got {type(schema).__name__}.",
            f"{fields}.schema",
            "invalid_type",
        )
    if flat.get("name") is None:
        raise bad_request(
            f"Missing required parameter: '{fields}.name': a json_schema format needs a "
            "'name' (a-z, A-Z, 0-9, underscores and dashes; the spec requires it).",
            f"{fields}.name",
            "missing_required",
        )


def _check_metadata(metadata: Any) -> None:
    """The spec's `Metadata`: string keys and values, within its limits."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise bad_request(
            f"Invalid type for 'metadata': expected an object, got {type(metadata).__name__}.",
            "metadata",
            "invalid_type",
        )
    if len(metadata) > MAX_METADATA_KEYS:
        raise bad_request(
            f"Invalid 'metadata': {len(metadata)} keys; at most {MAX_METADATA_KEYS} are allowed.",
            "metadata",
            "invalid_value",
        )
    for key, value in metadata.items():
        if len(key) > MAX_METADATA_KEY:
            raise bad_request(
                f"Invalid 'metadata': a key of {len(key)} characters; keys have at most "
                f"{MAX_METADATA_KEY}.",
                "metadata",
                "invalid_value",
            )
        check_value(value, f"metadata.{key}", _Field(str, max_length=MAX_METADATA_VALUE))


def _check_include(include: Any) -> None:
    if include is None:
        return
    if not isinstance(include, list):
        raise bad_request(
            f"Invalid type for 'include': expected a list, got {type(include).__name__}.",
            "include",
            "invalid_type",
        )
    for index, value in enumerate(include):
        where = f"include[{index}]"
        check_value(value, where, _Field(str))
        if value not in _INCLUDABLE:
            raise bad_request(
                f"Invalid value for '{where}': {_shown(value)} is not a value 'include' takes.",
                where,
                "invalid_value",
            )
    if _LOGPROBS in include:
        raise bad_request(
            f"This gateway does not return logprobs ('{_LOGPROBS}' in 'include').",
            "include",
            "unsupported",
        )


def _check_tool_object(tool: Any, where: str) -> None:
    """A tool at `where` (of `tools`, or of `tool_choice.tools`) is an object with a type."""
    if not isinstance(tool, dict):
        raise bad_request(
            f"Invalid type for '{where}': expected an object, got {type(tool).__name__}.",
            where,
            "invalid_type",
        )
    _check_type(tool.get("type"), f"{where}.type", "a tool")


def _check_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise bad_request("'tools' must be a list.", "tools", "invalid_type")
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        _check_tool_object(tool, where)
        if tool["type"] != "function":
            raise bad_request(
                f"Tool type {_shown(tool['type'])} is not supported: a Chat Completions "
                "backend has function tools only.",
                f"{where}.type",
                "unsupported_tool",
            )
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise bad_request(
                "A function tool needs a 'name' (a non-empty string).",
                f"tools[{index}].name",
                "invalid_value" if tool.get("name") == "" else _refusal(tool.get("name")),
            )
        _check_fields(tool, _TOOL_FIELDS, f"tools[{index}].")
        parameters = tool.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise bad_request(
                f"Invalid type for 'tools[{index}].parameters': expected an object (a JSON "
                f"Schema), got {type(parameters).__name__}.",
                f"tools[{index}].parameters",
                "invalid_type",
            )


def _check_type(kind: Any, where: str, what: str) -> None:
    """The `type` (at `where`) of `what` (a tool, a content part) is a string, or a 400:
    `missing_required` when it was left out, `invalid_type` for another JSON type (never
    an unsupported type "None")."""
    if kind is None:
        raise bad_request(
            f"Missing required parameter: '{where}': {what} needs a 'type'.",
            where,
            "missing_required",
        )
    check_value(kind, where, _Field(str))


def _check_item(item: Any, where: str, references: bool = False) -> None:
    if not isinstance(item, dict):
        raise bad_request("An input item must be an object.", where, "invalid_type")
    if item.get("id") is not None:
        check_id(item["id"], f"{where}.id")
    if references and is_reference(item):
        if not item.get("id"):
            raise bad_request(
                "An item_reference needs the 'id' of a stored item.",
                f"{where}.id",
                "invalid_value" if item.get("id") == "" else "missing_required",
            )
        return
    kind = item.get("type", "message" if "role" in item else None)
    if kind is None:
        raise bad_request(
            "An input item needs a 'type' (or a 'role', for a message).",
            f"{where}.type",
            "missing_required",
        )
    check_value(kind, f"{where}.type", _Field(str))
    if kind not in _ITEM_TYPES:
        raise bad_request(
            f"Input item type {_shown(kind)} is not supported by this gateway.",
            f"{where}.type",
            "unsupported_item",
        )
    if kind != "reasoning" and item.get("status") is not None:
        check_value(item["status"], f"{where}.status", _Field(str, choices=_ITEM_STATUSES))
    if kind == "message":
        role = item.get("role")
        if role not in _ROLES:
            raise bad_request(
                "A message needs a role of user, assistant, system or developer.",
                f"{where}.role",
                "invalid_value" if isinstance(role, str) else _refusal(role),
            )
        content = item.get("content")
        if not isinstance(content, str) and not (
            isinstance(content, list) and all(isinstance(part, dict) for part in content)
        ):
            raise bad_request(
                "Message content must be a string or a list of parts.",
                f"{where}.content",
                _refusal(content),
            )
        for index, part in enumerate(content if isinstance(content, list) else ()):
            _check_part(part, f"{where}.content[{index}]", assistant=role == "assistant")
    elif kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str):
                raise bad_request(
                    f"A function_call item needs a string '{key}'.",
                    f"{where}.{key}",
                    _refusal(item.get(key)),
                )
    elif kind == "function_call_output":
        if not isinstance(item.get("call_id"), str):
            raise bad_request(
                "A function_call_output item needs a string 'call_id'.",
                f"{where}.call_id",
                _refusal(item.get("call_id")),
            )
        output = item.get("output")
        if not isinstance(output, str | list):
            raise bad_request(
                "A function_call_output item needs an 'output': a string or a list of parts"
                + (f", not {type(output).__name__}" if output is not None else "")
                + " (write an object as JSON text).",
                f"{where}.output",
                _refusal(output),
            )
        for index, part in enumerate(output if isinstance(output, list) else ()):
            if not isinstance(part, dict) or part.get("type") not in ("input_text", "output_text"):
                raise bad_request(
                    "A Chat backend takes text tool outputs only (input_text parts).",
                    f"{where}.output[{index}]",
                    "unsupported_content",
                )
            _check_text_part(part, f"{where}.output[{index}]")


def _check_text_part(part: Mapping[str, Any], where: str) -> None:
    if not isinstance(part.get("text"), str):
        if part.get("text") is None:
            raise bad_request(
                f"Missing required parameter: '{where}.text'.", f"{where}.text", "missing_required"
            )
        check_value(part["text"], f"{where}.text", _Field(str))


def _check_part(part: Mapping[str, Any], where: str, *, assistant: bool) -> None:
    """One content part of a message: a type the Chat message of its role takes, and the
    fields translation reads of the types the spec gives them."""
    kind = part.get("type")
    _check_type(kind, f"{where}.type", "a content part")
    if kind in _TEXT_PARTS:
        _check_text_part(part, where)
    elif assistant and kind == "refusal":
        if part.get("refusal") is None:
            raise bad_request(
                f"Missing required parameter: '{where}.refusal'.",
                f"{where}.refusal",
                "missing_required",
            )
        check_value(part["refusal"], f"{where}.refusal", _Field(str))
    elif assistant:
        raise bad_request(
            f"Content part type {_shown(kind)} is not supported in an assistant message: a Chat "
            "backend takes text and refusal parts there.",
            f"{where}.type",
            "unsupported_content",
        )
    elif kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str):
            raise bad_request(
                "An input_image needs an 'image_url' string (file ids need OpenAI's file store).",
                f"{where}.image_url",
                "unsupported_content",
            )
        if part.get("detail") is not None:
            check_value(part["detail"], f"{where}.detail", _Field(str, choices=_IMAGE_DETAILS))
    elif kind == "input_file":
        if part.get("file_url"):
            raise bad_request(
                "An input_file with a 'file_url' cannot be sent to a Chat backend (send "
                "'file_data' instead).",
                f"{where}.file_url",
                "unsupported_content",
            )
        _check_fields(part, _FILE_FIELDS, f"{where}.")
    elif kind == "input_audio":
        audio = part.get("input_audio")
        if not isinstance(audio, dict):
            raise bad_request(
                "An input_audio part needs an 'input_audio' object (data and format).",
                f"{where}.input_audio",
                _refusal(audio),
            )
        _check_fields(audio, _AUDIO, f"{where}.input_audio.")
    else:
        raise bad_request(
            f"Content part type {_shown(kind)} is not supported.",
            f"{where}.type",
            "unsupported_content",
        )


# -- the request ---------------------------------------------------------------------------


def chat_request(
    req: Mapping[str, Any], model: str, items: Sequence[Item], *, stream: bool
) -> dict[str, Any]:
    """The Chat Completions body for a (checked) Responses request whose conversation, prior
    turns included, is `items`."""
    messages: list[dict[str, Any]] = []
    instructions = req.get("instructions")
    if instructions:
        messages.append({"role": "system", "content": instructions})
    messages.extend(chat_messages(items))
    body: dict[str, Any] = {"model": model, "messages": messages}
    text = req.get("text")
    if text:
        response_format = chat_response_format(flat_format(text.get("format"), "text.format"))
        if response_format is not None:
            body["response_format"] = response_format
        if text.get("verbosity") is not None:
            body["verbosity"] = text["verbosity"]
    tools = req.get("tools")
    if tools:
        body["tools"] = [chat_tool(tool) for tool in tools]
        if req.get("parallel_tool_calls") is not None:
            body["parallel_tool_calls"] = req["parallel_tool_calls"]
    choice = req.get("tool_choice")
    if choice is not None:
        body["tool_choice"] = chat_tool_choice(choice)
    for key in ("temperature", "top_p"):
        if req.get(key) is not None:
            body[key] = req[key]
    if req.get("max_output_tokens") is not None:
        body["max_tokens"] = req["max_output_tokens"]
    reasoning = req.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("effort"):
        body["reasoning_effort"] = reasoning["effort"]
    for key in _SAME_NAME:
        if req.get(key) is not None:
            body[key] = req[key]
    for key, value in req.items():
        if key not in _OWN and key not in body:
            body[key] = value  # the backend's own parameter: it decides what it means
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def flat_format(fmt: Any, where: str) -> Any:
    """A `json_schema` format in the flat Responses shape. The nested shape (`{"type":
    "json_schema", "json_schema": {"name", "schema", ...}}`, Chat's, which some Responses
    clients send too) is read as the same format; both at once is a 400."""
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return fmt
    nested = fmt.get("json_schema")
    if nested is None:
        return fmt
    if not isinstance(nested, Mapping):
        raise bad_request(
            f"Invalid type for '{where}.json_schema': expected an object, got "
            f"{type(nested).__name__}.",
            f"{where}.json_schema",
            "invalid_type",
        )
    both = [key for key in ("name", "schema", "strict", "description") if key in fmt]
    if both:
        raise bad_request(
            f"'{where}' has '{both[0]}' both at its top and inside 'json_schema': send one "
            "shape (the flat one: type, name, schema, strict, description).",
            f"{where}.{both[0]}",
            "invalid_value",
        )
    return {"type": "json_schema", **{k: v for k, v in nested.items() if k != "type"}}


def chat_response_format(fmt: Any) -> dict[str, Any] | None:
    """`text.format` as Chat's `response_format` (None: send none)."""
    if not isinstance(fmt, dict):
        return None
    kind = fmt.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        # The received fields, in the order received; `schema` is the client's own object.
        nested = {k: v for k, v in fmt.items() if k in ("name", "schema", "strict", "description")}
        return {"type": "json_schema", "json_schema": nested}
    return fmt


def chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"]}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def chat_tool_choice(choice: Any) -> Any:
    """Every Responses `tool_choice` form in Chat's shape."""
    if isinstance(choice, str):
        if choice not in _CHOICE_MODES:
            raise bad_request(
                f"Invalid value for 'tool_choice': {_shown(choice)}; expected none, auto or "
                "required (or an object naming a tool).",
                "tool_choice",
                "invalid_value",
            )
        return choice
    if not isinstance(choice, dict):
        raise bad_request(
            f"Invalid type for 'tool_choice': expected a string or an object, got "
            f"{type(choice).__name__}.",
            "tool_choice",
            "invalid_type",
        )
    kind = choice.get("type")
    if not isinstance(kind, str):
        raise bad_request(
            "'tool_choice' as an object needs a string 'type' (function, custom or "
            'allowed_tools), e.g. {"type": "function", "name": ...}.',
            "tool_choice.type",
            _refusal(kind),
        )
    if kind in ("function", "custom"):
        name = _chosen_name(choice, "tool_choice")
        return {"type": kind, kind: {"name": name}}
    if kind == "allowed_tools":
        mode = choice.get("mode")
        if mode is None:
            raise bad_request(
                "Missing required parameter: 'tool_choice.mode' (auto or required).",
                "tool_choice.mode",
                "missing_required",
            )
        if mode not in ("auto", "required"):
            raise bad_request(
                f"Invalid value for 'tool_choice.mode': {mode!r}; expected 'auto' or 'required'.",
                "tool_choice.mode",
                "invalid_value",
            )
        listed = choice.get("tools")
        if not isinstance(listed, list):
            raise bad_request(
                "An allowed_tools tool_choice needs 'tools': a list of the tools the model may "
                'call (e.g. [{"type": "function", "name": ...}]).',
                "tool_choice.tools",
                _refusal(listed),
            )
        tools = []
        for index, tool in enumerate(listed):
            where = f"tool_choice.tools[{index}]"
            _check_tool_object(tool, where)
            if tool["type"] != "function":
                raise _hosted(tool["type"], where)
            name = _chosen_name(tool, where)
            tools.append({"type": "function", "function": {"name": name}})
        return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}
    raise _hosted(kind, "tool_choice")


def _chosen_name(choice: Mapping[str, Any], where: str) -> str:
    """The `name` of a tool a `tool_choice` names (at `where`), or a 400 naming
    `where.name`: missing, or not a string."""
    name = choice.get("name")
    if isinstance(name, str):
        return name
    if name is not None:
        raise bad_request(
            f"Invalid type for '{where}.name': expected a string, got {type(name).__name__}.",
            f"{where}.name",
            "invalid_type",
        )
    kind = str(choice.get("type"))
    chat = (
        f' ({{"type": "{kind}", "{kind}": {{"name": ...}}}} is the Chat Completions shape; '
        f'the Responses one is {{"type": "{kind}", "name": ...}})'
        if isinstance(choice.get(kind), dict)
        else ""
    )
    raise bad_request(
        f"Missing required parameter: '{where}.name': the name of the {kind} tool to call{chat}.",
        f"{where}.name",
        "missing_required",
    )


def _check_chosen_tools(choice: Any, tools: Any) -> None:
    """Every tool a (translatable) `tool_choice` names is a tool of the request's own
    `tools`, of its type, or a 400 naming the name: a backend asked to call a tool it was
    not given fails, or calls nothing, in its own way. Tools are the request's alone (a
    previous response's are not carried over)."""
    if choice == "required" and not tools:
        # "Call a tool" with none to call: a backend refuses it, or answers as it likes.
        raise bad_request(
            "Invalid value for 'tool_choice': 'required' asks the model to call a tool, and "
            "the request has no 'tools': add the tools it may call, or leave 'tool_choice' out.",
            "tool_choice",
            "invalid_value",
        )
    if not isinstance(choice, dict):
        return
    named = {(tool.get("type"), tool.get("name")) for tool in tools or () if isinstance(tool, dict)}
    if choice.get("type") == "allowed_tools" and not choice["tools"]:
        raise bad_request(
            "Invalid value for 'tool_choice.tools': an empty list allows no tool; name the "
            "tools the model may call, or leave 'tool_choice' out.",
            "tool_choice.tools",
            "invalid_value",
        )
    if choice.get("type") in ("function", "custom"):
        chosen = [(choice, "tool_choice")]
    else:  # allowed_tools
        chosen = [(tool, f"tool_choice.tools[{i}]") for i, tool in enumerate(choice["tools"])]
    for tool, where in chosen:
        kind, name = tool["type"], tool["name"]
        if (kind, name) in named:
            continue
        functions = sorted(str(n) for k, n in named if k == "function")
        has = (
            "; the request has no 'tools': add the tool to 'tools', or leave 'tool_choice' out"
            if not named
            else f"; its function tools are {', '.join(_shown(n) for n in functions[:10])}"
            + (", ..." if len(functions) > 10 else "")
            + ": name one of them, or add the tool to 'tools'"
        )
        custom = " (this gateway takes function tools only)" if kind == "custom" else ""
        raise bad_request(
            f"Invalid value for '{where}.name': {_shown(name)} names no {kind} tool of the "
            f"request's 'tools'{custom}{has}.",
            f"{where}.name",
            "invalid_value",
        )


def _hosted(kind: Any, where: str) -> GatewayError:
    """A tool of a type other than function, chosen at `where`."""
    return bad_request(
        f"Invalid '{where}': a tool of type {_shown(kind)} is not supported: a Chat "
        "Completions backend has function tools only.",
        where,
        "unsupported_tool",
    )


def _refusal(value: Any) -> str:
    """The code of a refused field whose value is `value`: `missing_required` when it was not
    sent (or sent as null, the field left out), `invalid_type` when it was sent as something
    else than it must be."""
    return "missing_required" if value is None else "invalid_type"


# -- items -> messages ---------------------------------------------------------------------


def chat_messages(items: Sequence[Item]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role == "assistant":
                messages.append(_assistant(item.get("content")))
            else:
                content = _content(item.get("content"), f"input[{index}].content")
                messages.append(
                    {"role": "system" if role == "developer" else role, "content": content}
                )
        elif kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and _joinable(items, index):
                last.setdefault("tool_calls", []).append(call)
                if not last.get("content"):
                    last["content"] = None
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item["call_id"],
                    "content": _tool_output(item["output"], f"input[{index}].output"),
                }
            )
        # reasoning items: a Chat backend has no way to take them back
    return messages


def _joinable(items: Sequence[Item], index: int) -> bool:
    """A function call joins the assistant message made from the item just before it."""
    before = items[index - 1] if index > 0 else None
    return before is not None and (
        before.get("type") == "function_call" or before.get("role") == "assistant"
    )


def _assistant(content: Any) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts, refusals = [], []
    for part in content or ():
        kind = part.get("type")
        if kind in ("output_text", "input_text", "text"):
            texts.append(part.get("text", ""))
        elif kind == "refusal":
            refusals.append(part.get("refusal", ""))
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if refusals:
        message["refusal"] = "".join(refusals)
    return message


def _content(content: Any, where: str) -> Any:
    """User / system content: a string stays a string, parts become Chat parts."""
    if isinstance(content, str):
        return content
    parts = [_part(part, where) for part in content]
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    return parts


def _part(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": part.get("text", "")}
    if kind == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str):
            raise bad_request(
                "An input_image needs an 'image_url' (file ids need OpenAI's file store).",
                where,
                "unsupported_content",
            )
        image: dict[str, Any] = {"url": url}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        if part.get("file_url"):
            raise bad_request(
                "An input_file with a 'file_url' cannot be sent to a Chat backend (send "
                "'file_data' instead).",
                where,
                "unsupported_content",
            )
        file = {k: part[k] for k in ("file_data", "file_id", "filename") if part.get(k)}
        return {"type": "file", "file": file}
    if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        return {"type": "input_audio", "input_audio": part["input_audio"]}
    raise bad_request(f"Content part type {kind!r} is not supported.", where, "unsupported_content")


def _tool_output(output: Any, where: str) -> Any:
    if isinstance(output, str):
        return output
    parts = []
    for part in output:
        if not isinstance(part, dict) or part.get("type") not in ("input_text", "output_text"):
            raise bad_request(
                "A Chat backend takes text tool outputs only.", where, "unsupported_content"
            )
        parts.append({"type": "text", "text": part.get("text", "")})
    return parts


__all__ = [
    "BOOLEAN",
    "MAX_METADATA_KEY",
    "MAX_METADATA_KEYS",
    "MAX_METADATA_VALUE",
    "chat_messages",
    "chat_request",
    "chat_response_format",
    "chat_tool",
    "chat_tool_choice",
    "check_format",
    "check_id",
    "check_request",
    "check_value",
    "flat_format",
    "format_fields",
]
