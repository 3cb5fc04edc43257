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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from outform.gateway.replies import GatewayError, bad_request

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


# -- validation ----------------------------------------------------------------------------


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


def check_request(req: Mapping[str, Any]) -> None:
    """Reject, with the API's 400 error shape, what cannot be translated."""
    model_name(req)
    value = req.get("input")
    if value is not None and not isinstance(value, str):
        if not isinstance(value, list):
            raise bad_request("'input' must be a string or a list of items.", "input")
        for index, item in enumerate(value):
            _check_item(item, f"input[{index}]")
    for key in ("instructions", "previous_response_id"):
        if req.get(key) is not None and not isinstance(req[key], str):
            raise bad_request(f"'{key}' must be a string.", key)
    if value is None and not req.get("previous_response_id") and not req.get("instructions"):
        raise bad_request(
            "Missing required parameter: 'input' (or 'instructions', or "
            "'previous_response_id' to go on from a stored response).",
            "input",
            "missing_required",
        )
    reasoning = req.get("reasoning")
    if reasoning is not None and (
        not isinstance(reasoning, dict) or not isinstance(reasoning.get("effort"), str | None)
    ):
        raise bad_request(
            "'reasoning' must be an object, its 'effort' a string (e.g. {\"effort\": \"low\"}).",
            "reasoning",
            "invalid_type",
        )
    for key in ("stream", "store", "parallel_tool_calls"):
        if req.get(key) is not None and not isinstance(req[key], bool):
            raise bad_request(f"'{key}' must be a boolean.", key)
    for key in ("temperature", "top_p"):
        number = req.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int | float)):
            raise bad_request(f"'{key}' must be a number.", key)
    tokens = req.get("max_output_tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)):
        raise bad_request("'max_output_tokens' must be an integer.", "max_output_tokens")
    text = req.get("text")
    if text is not None:
        if not isinstance(text, dict):
            raise bad_request("'text' must be an object.", "text")
        fmt = text.get("format")
        if fmt is not None and (not isinstance(fmt, dict) or not isinstance(fmt.get("type"), str)):
            raise bad_request("'text.format' must be an object with a 'type'.", "text.format")
        flat = flat_format(fmt, "text.format")
        schema = flat.get("schema") if isinstance(flat, dict) else None
        if (
            isinstance(flat, dict)
            and flat.get("type") == "json_schema"
            and not isinstance(schema, dict)
        ):
            raise bad_request(
                "A json_schema format needs a 'schema' object (the JSON Schema the reply "
                "must match).",
                "text.format.schema",
                "missing_required",
            )
    if req.get("metadata") is not None and not isinstance(req["metadata"], dict):
        raise bad_request("'metadata' must be an object.", "metadata")
    for key, what in _UNSUPPORTED.items():
        if req.get(key):
            raise bad_request(f"This gateway does not support {what}.", key, "unsupported")
    include = req.get("include")
    if include is not None and not isinstance(include, list):
        raise bad_request("'include' must be a list.", "include")
    if include and _LOGPROBS in include:
        raise bad_request(
            f"This gateway does not return logprobs ('{_LOGPROBS}' in 'include').",
            "include",
            "unsupported",
        )
    tools = req.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise bad_request("'tools' must be a list.", "tools")
        for index, tool in enumerate(tools):
            if not isinstance(tool, dict) or tool.get("type") != "function":
                kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
                raise bad_request(
                    f"Tool type {kind!r} is not supported: a Chat Completions backend has "
                    "function tools only.",
                    f"tools[{index}].type",
                    "unsupported_tool",
                )
            if not isinstance(tool.get("name"), str) or not tool["name"]:
                raise bad_request("A function tool needs a 'name'.", f"tools[{index}].name")


def _check_item(item: Any, where: str) -> None:
    if not isinstance(item, dict):
        raise bad_request("An input item must be an object.", where)
    kind = item.get("type", "message" if "role" in item else None)
    if kind is None:
        raise bad_request(
            "An input item needs a 'type' (or a 'role', for a message).",
            f"{where}.type",
            "missing_required",
        )
    if kind not in _ITEM_TYPES:
        raise bad_request(
            f"Input item type {kind!r} is not supported by this gateway.",
            f"{where}.type",
            "unsupported_item",
        )
    if kind == "message":
        if item.get("role") not in _ROLES:
            raise bad_request(
                "A message needs a role of user, assistant, system or developer.",
                f"{where}.role",
            )
        content = item.get("content")
        if not isinstance(content, str) and not (
            isinstance(content, list) and all(isinstance(part, dict) for part in content)
        ):
            raise bad_request(
                "Message content must be a string or a list of parts.", f"{where}.content"
            )
        for index, part in enumerate(content if isinstance(content, list) else ()):
            if part.get("type") in _TEXT_PARTS and not isinstance(part.get("text"), str):
                raise bad_request(
                    f"Missing required parameter: '{where}.content[{index}].text'.",
                    f"{where}.content[{index}].text",
                    "missing_required",
                )
    elif kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str):
                raise bad_request(f"A function_call item needs a string '{key}'.", where)
    elif kind == "function_call_output":
        if not isinstance(item.get("call_id"), str):
            raise bad_request("A function_call_output item needs a 'call_id'.", where)
        output = item.get("output")
        if not isinstance(output, str | list):
            raise bad_request(
                "A function_call_output item needs an 'output': a string or a list of parts"
                + (f", not {type(output).__name__}" if output is not None else "")
                + " (write an object as JSON text).",
                f"{where}.output",
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
        raise bad_request(f"'{where}.json_schema' must be an object.", f"{where}.json_schema")
    both = [key for key in ("name", "schema", "strict", "description") if key in fmt]
    if both:
        raise bad_request(
            f"'{where}' has '{both[0]}' both at its top and inside 'json_schema': send one "
            "shape (the flat one: type, name, schema, strict, description).",
            f"{where}.{both[0]}",
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
                f"Invalid 'tool_choice': {choice!r}; expected none, auto or required.",
                "tool_choice",
            )
        return choice
    if not isinstance(choice, dict):
        raise bad_request("'tool_choice' must be a string or an object.", "tool_choice")
    kind = choice.get("type")
    if kind == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    if kind == "custom" and isinstance(choice.get("name"), str):
        return {"type": "custom", "custom": {"name": choice["name"]}}
    if kind == "allowed_tools" and isinstance(choice.get("tools"), list):
        tools = []
        for tool in choice["tools"]:
            if not isinstance(tool, dict) or tool.get("type") != "function":
                raise _hosted(tool.get("type") if isinstance(tool, dict) else tool)
            tools.append({"type": "function", "function": {"name": tool.get("name")}})
        return {
            "type": "allowed_tools",
            "allowed_tools": {"mode": choice.get("mode", "auto"), "tools": tools},
        }
    raise _hosted(kind)


def _hosted(kind: Any) -> GatewayError:
    return bad_request(
        f"tool_choice of type {kind!r} is not supported: a Chat Completions backend has "
        "function tools only.",
        "tool_choice",
        "unsupported_tool",
    )


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
    "chat_messages",
    "chat_request",
    "chat_response_format",
    "chat_tool",
    "chat_tool_choice",
    "check_request",
    "flat_format",
]
