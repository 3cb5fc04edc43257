"""Gemini REST bodies checked against the official `google-genai` SDK (installed in the venv).

The SDK has no type for the REST request itself: `generate_content` turns its
`GenerateContentParameters` into the REST body with `models._GenerateContentParameters_to_mldev`
(contents, generationConfig) and `_GenerateContentConfig_to_mldev` (which lifts
systemInstruction, tools, toolConfig, ... to the top level). So a request is checked piece by
piece: each top-level key must be one that converter writes, and its value must validate as the
SDK type that converter reads. `generationConfig` is `types.GenerationConfig`, restricted to the
keys the Developer-API converter writes (it raises on Vertex-only ones).

Every SDK type forbids unknown keys (`_common.BaseModel`: `extra='forbid'`), but also accepts
snake_case names (`populate_by_name=True`). To insist on the REST camelCase spelling, a value
must survive a round trip: validated from JSON and dumped back by alias, it has to come out
unchanged. A snake_case key, a dropped field or a wrong enum spelling all fail that; the
warnings the SDK gives for unknown enum values and mistyped fields are raised as errors.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Mapping
from functools import cache
from typing import Any

import orjson
from google.genai import models as sdk_models
from google.genai import types
from pydantic import TypeAdapter

REQUEST_TYPES: dict[str, Any] = {
    "contents": list[types.Content],
    "systemInstruction": types.Content,
    "generationConfig": types.GenerationConfig,
    "tools": list[types.Tool],
    "toolConfig": types.ToolConfig,
    "safetySettings": list[types.SafetySetting],
    "cachedContent": str,
}


@cache
def sdk_request_keys() -> frozenset[str]:
    """Top-level REST keys the SDK's Developer-API converters write."""
    params = inspect.getsource(sdk_models._GenerateContentParameters_to_mldev)
    config = inspect.getsource(sdk_models._GenerateContentConfig_to_mldev)
    keys = set(re.findall(r"setv\(\s*to_object,\s*\[\s*'(\w+)'", params))
    keys |= set(re.findall(r"setv\(\s*parent_object,\s*\[\s*'(\w+)'", config))
    return frozenset(keys - {"_url"})


@cache
def sdk_generation_config_keys() -> frozenset[str]:
    """`generationConfig` keys the SDK's Developer-API converter writes."""
    config = inspect.getsource(sdk_models._GenerateContentConfig_to_mldev)
    return frozenset(re.findall(r"setv\(\s*to_object,\s*\[\s*'(\w+)'", config))


def round_trip(tp: Any, value: Any, where: str) -> Any:
    """Validate `value` as SDK type `tp` from JSON; it must dump back (by alias) unchanged."""
    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    with warnings.catch_warnings():
        # the SDK only warns on an unknown enum value or a mistyped field (forward
        # compatibility); for checking what outform sends, those are errors
        warnings.simplefilter("error")
        model = adapter.validate_json(orjson.dumps(value))
    again = adapter.dump_python(model, by_alias=True, exclude_none=True, mode="json")
    if again != value:
        raise AssertionError(
            f"{where} is not in the SDK's REST (camelCase) form:\n"
            f"  sent:      {orjson.dumps(value).decode()}\n"
            f"  SDK reads: {orjson.dumps(again).decode()}"
        )
    return model


def validate_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """Check a `generateContent` request body; return it parsed into SDK types."""
    unknown = set(body) - set(REQUEST_TYPES)
    assert not unknown, f"top-level keys the request has no place for: {sorted(unknown)}"
    assert set(body) <= sdk_request_keys(), sorted(set(body) - sdk_request_keys())
    assert "contents" in body, "a request needs contents"
    config = body.get("generationConfig", {})
    extra = set(config) - sdk_generation_config_keys()
    assert not extra, f"generationConfig keys the Developer API does not take: {sorted(extra)}"
    return {key: round_trip(REQUEST_TYPES[key], value, key) for key, value in body.items()}


def as_sdk_types(body: Mapping[str, Any]) -> dict[str, Any]:
    """A request body read into SDK types, whatever the key spelling: for comparing what outform
    sends with what the SDK sends (which mixes in snake_case keys)."""
    return {
        key: TypeAdapter(REQUEST_TYPES[key]).validate_json(orjson.dumps(value))
        for key, value in body.items()
    }


def validate_response(body: Mapping[str, Any]) -> types.GenerateContentResponse:
    """Check a `GenerateContentResponse` (or one streamed chunk) as the SDK reads it."""
    model: types.GenerateContentResponse = round_trip(
        types.GenerateContentResponse, dict(body), "response"
    )
    return model


def sdk_read(body: Mapping[str, Any]) -> types.GenerateContentResponse:
    """The response as `client.models.generate_content` hands it over: the SDK's own
    REST-to-SDK conversion (a private function, used on purpose), then its response type."""
    converted = sdk_models._GenerateContentResponse_from_mldev(dict(body))
    return types.GenerateContentResponse._from_response(response=converted, kwargs={})
