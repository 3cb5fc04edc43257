"""`/openapi.json` publishes the real shapes of the gateway's bodies.

The document is a valid OpenAPI 3.1 document (openapi-spec-validator), every route names its
request and answer schemas (`text.format` in both its shapes included), and real traffic
through the gateway (requests and answers, whole, streamed, errors) validates against them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.gateway.faults import sse_data
from tests.gateway.harness import ChatFake, in_front_of_fake
from tests.providers.openai_wire import chat_completion, text_stream

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
FORMATS = [
    {"type": "json_schema", "name": "A", "schema": SCHEMA, "strict": True},
    {"type": "json_schema", "json_schema": {"name": "A", "schema": SCHEMA}},
    {"type": "json_object"},
    {"type": "text"},
]


class Published:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        resource: Resource[Any] = DRAFT202012.create_resource(document)
        self.registry: Registry[Any] = Registry().with_resource("urn:gateway", resource)

    def problems(self, name: str, instance: Any) -> list[str]:
        ref = {"$ref": f"urn:gateway#/components/schemas/{name}"}
        validator = Draft202012Validator(ref, registry=self.registry)
        return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


@pytest.fixture
def gw() -> Iterator[tuple[ChatFake, httpx.Client, str, Published]]:
    with in_front_of_fake() as (backend, gateway), httpx.Client(timeout=30) as http:
        document = http.get(gateway.url + "/openapi.json").json()
        yield backend, http, gateway.url, Published(document)


def test_the_document_is_valid_openapi_and_names_every_body(
    gw: tuple[ChatFake, httpx.Client, str, Published],
) -> None:
    _, _, _, published = gw
    document = published.document
    validate(document)  # raises on an invalid OpenAPI 3.1 document
    paths = document["paths"]
    create = paths["/v1/responses"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CreateResponse"
    }
    answers = create["responses"]["200"]["content"]
    assert answers["application/json"]["schema"]["$ref"].endswith("/Response")
    assert answers["text/event-stream"]["schema"]["$ref"].endswith("/ResponseStreamEvent")
    for path, methods in paths.items():
        for method, operation in methods.items():
            assert "422" not in operation["responses"], (path, method)
            if method == "post" and path.endswith("/cancel"):
                assert "requestBody" not in operation, path  # cancelling takes no body
            elif method == "post":
                body = operation["requestBody"]["content"]["application/json"]["schema"]
                assert body != {"type": "object"}, path
    schemas = document["components"]["schemas"]
    assert "schema" in schemas["TextFormatJsonSchema"]["required"]
    assert schemas["TextFormatJsonSchemaNested"]["properties"]["json_schema"]["$ref"]
    for fmt in FORMATS:
        request = {"model": "m", "input": "x", "text": {"format": fmt}}
        assert published.problems("CreateResponse", request) == []
    empty = {"model": "m", "input": "x", "text": {"format": {"type": "json_schema", "name": "A"}}}
    assert published.problems("CreateResponse", empty) != []  # no schema: not a valid format


def test_real_traffic_matches_the_published_schemas(
    gw: tuple[ChatFake, httpx.Client, str, Published],
) -> None:
    backend, http, url, published = gw
    request = {
        "model": "m",
        "instructions": "Extract.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "a is 1"}]}],
        "text": {"format": FORMATS[0]},
        "tools": [{"type": "function", "name": "f", "parameters": SCHEMA}],
        "tool_choice": "auto",
        "metadata": {"k": "v"},
    }
    assert published.problems("CreateResponse", request) == []
    checked: list[tuple[str, Any]] = []

    backend.json(chat_completion(content='{"a": 1}'))
    whole = http.post(url + "/v1/responses", json=request).json()
    checked.append(("Response", whole))
    backend.stream(text_stream('{"a": ', "1}"))
    streamed = http.post(url + "/v1/responses", json={**request, "stream": True})
    events = [orjson.loads(data) for data in sse_data(streamed.content)]
    checked += [("ResponseStreamEvent", event) for event in events]
    checked.append(
        ("ResponseItemList", http.get(f"{url}/v1/responses/{whole['id']}/input_items").json())
    )
    checked.append(("Response", http.get(f"{url}/v1/responses/{whole['id']}").json()))
    checked.append(("DeletedResponse", http.delete(f"{url}/v1/responses/{whole['id']}").json()))
    checked.append(("Error", http.get(f"{url}/v1/responses/{whole['id']}").json()))
    checked.append(("Error", http.post(url + "/v1/responses", json={"input": "x"}).json()))
    chat_request = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert published.problems("CreateChatCompletion", chat_request) == []
    backend.json(chat_completion(content="ok"))
    checked.append(
        ("ChatCompletion", http.post(url + "/v1/chat/completions", json=chat_request).json())
    )
    backend.stream(text_stream("o", "k"))
    chat_stream = http.post(url + "/v1/chat/completions", json={**chat_request, "stream": True})
    frames = sse_data(chat_stream.content)
    assert frames[-1] == b"[DONE]"
    checked += [("ChatCompletionChunk", orjson.loads(f)) for f in frames[:-1]]
    backend.json({"object": "list", "data": []})
    checked.append(("ModelList", http.get(url + "/v1/models").json()))
    checked.append(("Health", http.get(url + "/healthz").json()))
    assert {e["type"] for e in events} >= {"response.created", "response.completed"}
    problems = {
        f"{i} {name}": found
        for i, (name, body) in enumerate(checked)
        if (found := published.problems(name, body))
    }
    assert problems == {}
