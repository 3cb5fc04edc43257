"""Checks of Bedrock Converse wire bodies against botocore's `bedrock-runtime` service model.

Requests are checked three ways:
* botocore's own `ParamValidator`, which is what boto3 runs before sending;
* botocore's rest-json serializer, which must produce the same path and the same JSON body;
* a walk of the shapes, which also checks what ParamValidator leaves out: upper bounds, enums
  and patterns.

Responses, stream events and error bodies get the same walk, against the output and event
shapes. It rejects unknown keys, missing required keys, wrong types and unions with other than
one member set.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

import botocore.session
import orjson
from botocore.serialize import create_serializer
from botocore.validate import ParamValidator

MODEL = botocore.session.get_session().get_service_model("bedrock-runtime")
_SERIALIZER = create_serializer("rest-json")


def operation(stream: bool) -> Any:
    return MODEL.operation_model("ConverseStream" if stream else "Converse")


def check_request(path: str, body: Any, model_id: str, *, stream: bool = False) -> None:
    """Raise AssertionError unless `path` and `body` are what boto3 would send for
    `Converse(modelId=model_id, **body)` (or ConverseStream)."""
    op = operation(stream)
    params = {"modelId": model_id, **body}
    report = ParamValidator().validate(params, op.input_shape)
    assert not report.has_errors(), report.generate_report()
    problems = errors(params, op.input_shape)
    assert not problems, "\n".join(problems)
    serialized = _SERIALIZER.serialize_to_request(_blobs_as_bytes(params, op.input_shape), op)
    assert serialized["url_path"] == path
    assert orjson.loads(serialized["body"]) == body


def check_response(body: Any) -> None:
    problems = errors(body, operation(False).output_shape)
    assert not problems, "\n".join(problems)


def check_event(event: Any) -> None:
    """One stream message as the transport yields it: `{eventName: payload}`."""
    ((name, payload),) = event.items()
    stream = operation(True).output_shape.members["stream"]
    assert name in stream.members, f"unknown event {name!r}"
    problems = errors(payload, stream.members[name], name)
    assert not problems, "\n".join(problems)


def check_error(name: str, body: Any) -> None:
    """An error body, e.g. `check_error("ValidationException", {"message": ...})`."""
    shape = MODEL.shape_for(name)
    assert shape.metadata.get("exception"), f"{name} is not an error shape"
    problems = errors(body, shape, name)
    assert not problems, "\n".join(problems)


def errors(value: Any, shape: Any, path: str = "$") -> list[str]:
    kind = shape.type_name
    if kind == "structure":
        return _structure(value, shape, path)
    if kind == "list":
        if not isinstance(value, list):
            return [f"{path}: expected a list"]
        found = _bounds(len(value), shape, path, "length")
        for i, item in enumerate(value):
            found += errors(item, shape.member, f"{path}[{i}]")
        return found
    if kind == "map":
        if not isinstance(value, dict):
            return [f"{path}: expected a map"]
        return [e for k, v in value.items() for e in errors(v, shape.value, f"{path}.{k}")]
    if kind == "string":
        if not isinstance(value, str):
            return [f"{path}: expected a string"]
        found = _bounds(len(value), shape, path, "length")
        if shape.enum and value not in shape.enum:
            found.append(f"{path}: {value!r} is not one of {shape.enum}")
        pattern = shape.metadata.get("pattern")
        if pattern and not re.fullmatch(pattern, value):
            found.append(f"{path}: {value!r} does not match {pattern}")
        return found
    if kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{path}: expected an integer"]
        return _bounds(value, shape, path, "value")
    if kind in ("float", "double"):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return [f"{path}: expected a number"]
        return _bounds(value, shape, path, "value")
    if kind == "boolean":
        return [] if isinstance(value, bool) else [f"{path}: expected a boolean"]
    if kind == "blob":
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, TypeError, ValueError):
            return [f"{path}: expected base64 text"]
        return _bounds(len(raw), shape, path, "length")
    if kind == "timestamp":
        return [] if isinstance(value, int | float | str) else [f"{path}: expected a timestamp"]
    return [f"{path}: unchecked shape type {kind}"]


def _structure(value: Any, shape: Any, path: str) -> list[str]:
    if shape.is_document_type:
        return []  # any JSON value
    if not isinstance(value, dict):
        return [f"{path}: expected an object"]
    members = shape.members
    found = [f"{path}: unknown key {k!r}" for k in value if k not in members]
    found += [f"{path}: missing {k!r}" for k in shape.required_members if k not in value]
    if shape.is_tagged_union and len(value) != 1:
        found.append(f"{path}: a union needs exactly one member, got {sorted(value)}")
    for key, item in value.items():
        if key in members:
            found += errors(item, members[key], f"{path}.{key}")
    return found


def _bounds(number: float, shape: Any, path: str, what: str) -> list[str]:
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and number < low:
        return [f"{path}: {what} {number} is below {low}"]
    if high is not None and number > high:
        return [f"{path}: {what} {number} is above {high}"]
    return []


def _blobs_as_bytes(value: Any, shape: Any) -> Any:
    """The params boto3 would be given: blobs as bytes (the JSON body holds them in base64)."""
    kind = shape.type_name
    if kind == "blob" and isinstance(value, str):
        return base64.b64decode(value)
    if kind == "structure" and not shape.is_document_type and isinstance(value, dict):
        return {
            k: _blobs_as_bytes(v, shape.members[k]) if k in shape.members else v
            for k, v in value.items()
        }
    if kind == "list" and isinstance(value, list):
        return [_blobs_as_bytes(v, shape.member) for v in value]
    return value
