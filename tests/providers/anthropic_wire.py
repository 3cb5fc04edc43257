"""Checks of Anthropic wire bodies against the official `anthropic` SDK's types.

Requests go through pydantic with the SDK's `MessageCreateParams*` TypedDicts, and through a
stricter walk of the same types. TypedDicts let unknown keys pass, and pydantic checks
`Iterable` fields only lazily, so the walk reports unknown keys and missing required keys at
every depth. Responses and stream events are validated with the SDK's models (`Message`,
`RawMessageStreamEvent`, `ErrorResponse`) and walked the same way. The SDK models allow extra
fields, and the walk does not, so a field the SDK does not know fails the test.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any

import anthropic.types
import pydantic
import typing_extensions
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)

_REQUEST = pydantic.TypeAdapter(MessageCreateParamsNonStreaming)
_STREAM_REQUEST = pydantic.TypeAdapter(MessageCreateParamsStreaming)
_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)
_REQUIRED: Any = typing_extensions.Required
_SEQUENCES = (list, collections.abc.Iterable, collections.abc.Sequence)


def check_request(body: Any) -> None:
    """Raise AssertionError unless `body` is a valid `POST /v1/messages` body."""
    adapter = _STREAM_REQUEST if body.get("stream") else _REQUEST
    adapter.validate_python(body)
    tp = MessageCreateParamsStreaming if body.get("stream") else MessageCreateParamsNonStreaming
    problems = errors(body, tp)
    assert not problems, "\n".join(problems)


def check_message(body: Any) -> anthropic.types.Message:
    """Validate a non-streamed reply; returns the SDK's parse of it."""
    message = anthropic.types.Message.model_validate(body)
    problems = errors(body, anthropic.types.Message)
    assert not problems, "\n".join(problems)
    return message


def check_event(event: Any) -> None:
    """Validate one SSE event (its data, with the `type` the SDK discriminates on)."""
    if event.get("type") == "ping":
        return  # keep-alive: the SDK has no type for it and skips it
    if event.get("type") == "error":
        check_error(event)
        return
    _EVENT.validate_python(event)
    problems = errors(event, anthropic.types.RawMessageStreamEvent)
    assert not problems, "\n".join(problems)


def check_error(body: Any) -> None:
    anthropic.types.ErrorResponse.model_validate(body)
    problems = errors(body, anthropic.types.ErrorResponse)
    assert not problems, "\n".join(problems)


def errors(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Where `value` does not fit the type `tp`, unknown keys included."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return []
    if origin is typing.Annotated:
        return errors(value, args[0], path)
    if origin is typing.Union or origin is types.UnionType:
        # Report the errors of the arm the value was meant for: same JSON kind, same `type`.
        best: list[str] | None = None
        for arm in sorted(args, key=lambda arm: not _meant_for(value, arm)):
            found = errors(value, arm, path)
            if not found:
                return []
            if best is None:
                best = found
        return best or [f"{path}: no type of the union fits"]
    if origin is typing.Literal:
        return [] if value in args else [f"{path}: {value!r} is not one of {args}"]
    if tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
    if typing_extensions.is_typeddict(tp):
        return _typed_dict(value, tp, path)
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return _model(value, tp, path)
    if origin in _SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: expected an array"]
        return [e for i, item in enumerate(value) for e in errors(item, args[0], f"{path}[{i}]")]
    if origin in (dict, collections.abc.Mapping):
        if not isinstance(value, dict):
            return [f"{path}: expected an object"]
        return [e for k, v in value.items() for e in errors(v, args[1], f"{path}.{k}")]
    return _scalar(value, tp, path)


def _typed_dict(value: Any, tp: Any, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object"]
    # The SDK's modules postpone annotations, which hides `Required` from `__required_keys__`:
    # read it from the resolved hints instead.
    hints = typing_extensions.get_type_hints(tp, include_extras=True)
    required = {k for k, h in hints.items() if typing.get_origin(h) is _REQUIRED}
    hints = {k: _unwrap(h) for k, h in hints.items()}
    found = [f"{path}: unknown key {key!r}" for key in value if key not in hints]
    found += [f"{path}: missing {key!r}" for key in sorted(required) if key not in value]
    for key, item in value.items():
        if key in hints:
            found += errors(item, hints[key], f"{path}.{key}")
    return found


def _meant_for(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _meant_for(value, typing.get_args(tp)[0])
    if isinstance(value, list):
        return origin in _SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr"
    if not isinstance(value, dict):
        return not typing_extensions.is_typeddict(tp) and origin not in _SEQUENCES
    if typing_extensions.is_typeddict(tp):
        kind = _unwrap(typing_extensions.get_type_hints(tp, include_extras=True).get("type"))
    elif isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        field = tp.model_fields.get("type")
        kind = field.annotation if field else None
    else:
        return origin in (dict, collections.abc.Mapping)
    return typing.get_origin(kind) is not typing.Literal or value.get("type") in typing.get_args(
        kind
    )


def _unwrap(hint: Any) -> Any:
    while typing.get_origin(hint) in (
        typing_extensions.Required,
        typing_extensions.NotRequired,
        typing_extensions.ReadOnly,
    ):
        hint = typing.get_args(hint)[0]
    return hint


def _model(value: Any, tp: type[pydantic.BaseModel], path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object"]
    fields = tp.model_fields
    found = [f"{path}: unknown key {key!r}" for key in value if key not in fields]
    found += [
        f"{path}: missing {name!r}"
        for name, field in fields.items()
        if field.is_required() and name not in value
    ]
    for key, item in value.items():
        if key in fields:
            found += errors(item, fields[key].annotation, f"{path}.{key}")
    return found


def _scalar(value: Any, tp: Any, path: str) -> list[str]:
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is str:
        ok = isinstance(value, str)
    else:
        return []  # file inputs and other client-side types: not on the wire
    return [] if ok else [f"{path}: {value!r} is not a {tp.__name__}"]
