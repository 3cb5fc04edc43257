"""What a backend's answer must be for the gateway to take it: the fields it reads hold the
types the Chat Completions spec gives them.

A whole answer (`chat.completion`) and every chunk of a stream (`chat.completion.chunk`) are
checked here before anything of them is used, on both endpoints. For each choice:
`finish_reason` is a string or null; the message (`delta` of a chunk, an object or null)
holds `content` as a string, null, or a list of content parts (objects; a text part's `text` a
string, as some servers send); `refusal`, `reasoning_content` and `reasoning` as strings or
null; `tool_calls` as a list (or null) of objects whose `function` is an object, its `name` a
string (in a whole answer, a non-empty one) and its `arguments` a string (or an object, as a
few servers send, written as its JSON text); a call's `id` is a string (an id left out gets
one), a chunk's call `index` an integer. A chunk's `choices` is a list (or left out, as in a
usage-only chunk). `usage` follows its own rule (`gateway.usage`: an unreadable one is left
out, not refused).

Anything else is refused naming the place and what was there (`choices[0].message.tool_calls[0]
.id is 5, not a string`): a whole answer with a 502 `backend_error`, a stream with
`response.failed` (an `error` event on the Chat pass-through). Never an answer read as
something it did not say (`content: 5` as "5", a call without a name as a call to "").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Malformed(Exception):  # noqa: N818 - a verdict on the backend's answer
    """A field the gateway reads does not hold its type; the message names it."""

    def __init__(self, where: str, value: Any, expected: str) -> None:
        super().__init__(f"{where} is {described(value)}, not {expected}")


def check_completion(data: Mapping[str, Any]) -> None:
    """A `chat.completion` whose `choices` is a list of objects, each with its `message` an
    object: the types of the fields the gateway reads (raises `Malformed`)."""
    for index, choice in enumerate(data["choices"]):
        where = f"choices[{index}]"
        _choice(choice, where)
        message = choice.get("message")
        if not isinstance(message, Mapping):
            raise Malformed(f"{where}.message", message, "an object")
        _message(message, f"{where}.message", whole=True)


def _choice(choice: Any, where: str) -> None:
    """A choice, whole or streamed: an object whose `index` and `finish_reason` have their
    types (raises `Malformed`)."""
    if not isinstance(choice, Mapping):
        raise Malformed(where, choice, "an object")
    _index(choice, where)
    _text_or_null(choice, "finish_reason", where)


def check_chunk(event: Mapping[str, Any]) -> None:
    """A `chat.completion.chunk`: the types of the fields the gateway reads (raises
    `Malformed`)."""
    choices = event.get("choices")
    if choices is None:
        return
    if not isinstance(choices, list):
        raise Malformed("choices", choices, "a list")
    for index, choice in enumerate(choices):
        where = f"choices[{index}]"
        _choice(choice, where)
        delta = choice.get("delta")
        if delta is None:
            continue
        if not isinstance(delta, Mapping):
            raise Malformed(f"{where}.delta", delta, "an object")
        _message(delta, f"{where}.delta", whole=False)


def _message(message: Mapping[str, Any], where: str, *, whole: bool) -> None:
    content = message.get("content")
    if isinstance(content, list):
        for index, part in enumerate(content):
            at = f"{where}.content[{index}]"
            if not isinstance(part, Mapping):
                raise Malformed(at, part, "a content part (an object)")
            if part.get("type") in ("text", "output_text"):
                _text_or_null(part, "text", at)
    elif content is not None and not isinstance(content, str):
        raise Malformed(f"{where}.content", content, "a string, null or a list of parts")
    for key in ("refusal", "reasoning_content", "reasoning"):
        _text_or_null(message, key, where)
    calls = message.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise Malformed(f"{where}.tool_calls", calls, "a list")
    for index, call in enumerate(calls):
        _call(call, f"{where}.tool_calls[{index}]", whole=whole)


def _call(call: Any, where: str, *, whole: bool) -> None:
    if not isinstance(call, Mapping):
        raise Malformed(where, call, "an object")
    _text_or_null(call, "id", where)
    _text_or_null(call, "type", where)
    if not whole:
        _index(call, where)
    function = call.get("function")
    if function is None and not whole:
        return
    if not isinstance(function, Mapping):
        raise Malformed(f"{where}.function", function, "an object")
    name = function.get("name")
    if whole and not (isinstance(name, str) and name):
        raise Malformed(f"{where}.function.name", name, "the name of a function")
    _text_or_null(function, "name", f"{where}.function")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str | Mapping):
        raise Malformed(f"{where}.function.arguments", arguments, "a string of JSON")


def _index(value: Mapping[str, Any], where: str) -> None:
    index = value.get("index")
    if index is not None and (type(index) is not int or index < 0):
        raise Malformed(f"{where}.index", index, "a non-negative integer")


def _text_or_null(value: Mapping[str, Any], key: str, where: str) -> None:
    found = value.get(key)
    if found is not None and not isinstance(found, str):
        raise Malformed(f"{where}.{key}", found, "a string")


def described(value: Any) -> str:
    """A value of a backend's answer as an error names it: a number as written, else its
    JSON kind (the text itself may be long, or hold what should not be repeated)."""
    if value is None:
        return "missing (or null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


__all__ = ["Malformed", "check_chunk", "check_completion", "described"]
