"""What a new-user trial of `outform serve` found, each as the HTTP exchange it saw.

1. `x-outform-enforce: yes` (or `on`, or any other word) was read as a value instead of being
   refused: the header takes `1` / `true` and `0` / `false` (any case), anything else is a
   400 naming the header and its values.
2. An error about a `json_schema` format named `response_format.schema`, a path in neither
   API, and `text.format.schema` for a client that sent the nested shape. The `param` of a
   schema or format error is now a path of the very request the client sent, down to the
   keyword the schema gets wrong when it is known.
3. `tool_choice: {"type": "function"}` (no `name`) was refused as a tool type "not
   supported"; a `tool_choice` naming a function missing from `tools` was forwarded.
4. Two input items with the same `id` were stored, and `input_items` (whose `after` /
   `before` cursors are ids) could not tell them apart.
"""

from __future__ import annotations

import re
from typing import Any

import httpx2
import openai
import pytest

from outform.gateway.enforce import schema_path
from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import RecordingStore
from tests.providers.openai_wire import chat_completion

ENFORCE = "x-outform-enforce"
SCHEMA: Any = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
VALID = '{"a": "x"}'
MESSAGES: Any = [{"role": "user", "content": "x"}]


def _error(answer: httpx2.Response, status: int = 400) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    return error


def _located(body: Any, param: str) -> Any:
    """The value `param` (`a.b[0]['odd key']`) names in `body`; KeyError when it names none:
    a param must be a path of the request the client sent."""
    node = body
    for name, index, quoted in re.findall(r"\.?([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]", param):
        if index:
            if not isinstance(node, list) or int(index) >= len(node):
                raise KeyError(param)
            node = node[int(index)]
        else:
            key = name or quoted
            if not isinstance(node, dict) or key not in node:
                raise KeyError(param)
            node = node[key]
    return node


# -- 1. the x-outform-enforce header ---------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "2", "enabled", "1,0", "truthy", ""])
def test_an_enforce_header_value_not_documented_is_a_400_naming_the_values(
    gw: Harness, value: str
) -> None:
    for path, body in (
        ("/v1/responses", {"model": "m", "input": "x"}),
        ("/v1/chat/completions", {"model": "m", "messages": MESSAGES}),
    ):
        answer = gw.http.post(gw.url + path, json=body, headers={ENFORCE: value})
        error = _error(answer)
        assert (error["param"], error["code"]) == (ENFORCE, "invalid_value")
        for allowed in ("'1'", "'true'", "'0'", "'false'"):
            assert allowed in error["message"]
        assert repr(value) in error["message"]
    assert gw.backend.requests == []


@pytest.mark.parametrize("values", [["1", "0"], ["0", "1"], ["0", "bogus"], ["1", "yes"]])
def test_an_enforce_header_sent_twice_is_read_whole_and_refused(
    gw: Harness, values: list[str]
) -> None:
    """HTTP reads a repeated field as its values joined by commas: `1` then `0` is `1, 0`,
    which the header does not take. Its first line alone was read, the rest ignored (a proxy
    that appends a header could turn enforcement off without a word)."""
    for path, body in (
        ("/v1/responses", {"model": "m", "input": "x"}),
        ("/v1/chat/completions", {"model": "m", "messages": MESSAGES}),
    ):
        answer = gw.http.post(
            gw.url + path, json=body, headers=[(ENFORCE, value) for value in values]
        )
        error = _error(answer)
        assert (error["param"], error["code"]) == (ENFORCE, "invalid_value")
        assert repr(", ".join(values)) in error["message"]
    assert gw.backend.requests == []


@pytest.mark.parametrize(("value", "on"), [("1", True), ("true", True), ("TRUE", True),
                                           ("True", True), ("0", False), ("false", False),
                                           ("FALSE", False)])  # fmt: skip
def test_the_documented_enforce_values_are_read_in_any_case(
    make_gateway: MakeGateway, value: str, on: bool
) -> None:
    fmt = {"type": "json_schema", "name": "A", "schema": SCHEMA}
    for default in (False, True):  # the header wins over the deployment's default
        gw = make_gateway(enforce=default)
        gw.backend.json(chat_completion(content=VALID))
        answer = gw.http.post(
            gw.url + "/v1/responses",
            json={"model": "m", "input": "x", "text": {"format": fmt}},
            headers={ENFORCE: value},
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers.get(ENFORCE) == ("valid" if on else None)


# -- 2. the param of a schema or format error --------------------------------------------------


@pytest.mark.parametrize("kind", ["json-schema", "jsonschema", "JSON_SCHEMA", "json"])
def test_a_format_type_enforcement_cannot_read_is_a_400_not_an_unchecked_200(
    make_gateway: MakeGateway, kind: str
) -> None:
    """Under enforcement a misspelt type was not enforced: the reply, missing a required
    field, came back 200. Passed through (not enforcing), a type the spec lacks goes to the
    backend as sent (a backend's extension, such as a grammar), for the backend to judge."""
    fmt = {"type": kind, "name": "A", "schema": SCHEMA}
    gw = make_gateway(enforce=True)
    gw.backend.json(chat_completion(content='{"b": 1}'))
    for path, body, param in (
        ("/v1/responses", {"model": "m", "input": "x", "text": {"format": fmt}}, "text.format"),
        ("/v1/chat/completions", {"model": "m", "messages": MESSAGES, "response_format": fmt},
         "response_format"),
    ):  # fmt: skip
        error = _error(gw.http.post(gw.url + path, json=body))
        assert (error["param"], error["code"]) == (f"{param}.type", "invalid_value")
        assert "'json_schema'" in error["message"]
    assert gw.backend.requests == []


BAD = {"type": "object", "properties": {"a": {"type": 5}}}
"""A schema with a wrong keyword at /properties/a/type."""


def _flat(schema: Any) -> Any:
    return {"type": "json_schema", "name": "A", "schema": schema}


def _nested(schema: Any) -> Any:
    return {"type": "json_schema", "json_schema": {"name": "A", "schema": schema}}


@pytest.mark.parametrize(
    ("fmt", "param"),
    [
        (_flat(BAD), "text.format.schema.properties.a.type"),
        (_nested(BAD), "text.format.json_schema.schema.properties.a.type"),
        (
            _flat({"anyOf": [{"type": "string"}, {"type": "nothing"}]}),
            "text.format.schema.anyOf[1].type",
        ),
        (
            _flat({"type": "object", "properties": {"first name": {"type": 5}}}),
            "text.format.schema.properties['first name'].type",
        ),
        (
            _flat({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}),
            "text.format.schema.properties.a.pattern",
        ),
        (_flat({"$ref": "#/$defs/missing"}), "text.format.schema.$ref"),
        (_nested({"$ref": "#/$defs/missing"}), "text.format.json_schema.schema.$ref"),
    ],
)
def test_a_schema_enforcement_cannot_use_is_named_where_the_client_sent_it(
    gw: Harness, fmt: Any, param: str
) -> None:
    body = {"model": "m", "input": "x", "text": {"format": fmt}}
    error = _error(gw.http.post(gw.url + "/v1/responses", json=body, headers={ENFORCE: "1"}))
    assert error["param"] == param
    assert f"'{param}'" in error["message"]
    _located(body, param)  # a path of the request as sent
    assert gw.backend.requests == []


@pytest.mark.parametrize(
    ("where", "param"),
    [
        (None, "text.format.schema"),
        ("schema", "text.format.schema"),  # an error that names no place: the schema
        ("schema at /", "text.format.schema"),
        ("schema at /items/1/$defs/a~1b", "text.format.schema.items[1].$defs['a/b']"),
        ("schema at /items/2", "text.format.schema"),  # a place the schema lacks
        ("schema at /nowhere", "text.format.schema"),
    ],
)
def test_a_schema_errors_place_becomes_a_request_path(where: str | None, param: str) -> None:
    schema = {"items": [True, {"$defs": {"a/b": {}}}]}
    assert schema_path("text.format.schema", schema, where) == param


@pytest.mark.parametrize(
    ("fmt", "param"),
    [
        (_flat(None), "text.format.schema"),
        ({"type": "json_schema", "json_schema": {"name": "A"}}, "text.format.json_schema.schema"),
        (
            {"type": "json_schema", "json_schema": {"name": 5, "schema": SCHEMA}},
            "text.format.json_schema.name",
        ),
    ],
)
def test_a_json_schema_format_without_its_schema_names_the_shape_sent(
    gw: Harness, fmt: Any, param: str
) -> None:
    body = {"model": "m", "input": "x", "text": {"format": fmt}}
    for headers in ({}, {ENFORCE: "1"}):
        error = _error(gw.http.post(gw.url + "/v1/responses", json=body, headers=headers))
        assert error["param"] == param
    assert gw.backend.requests == []


@pytest.mark.parametrize(
    ("response_format", "param"),
    [
        (_nested(BAD), "response_format.json_schema.schema.properties.a.type"),
        (_flat(BAD), "response_format.schema.properties.a.type"),  # the flat shape, accepted
        (
            {"type": "json_schema", "json_schema": {"name": "A"}},
            "response_format.json_schema.schema",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": 5, "schema": SCHEMA}},
            "response_format.json_schema.name",
        ),
        (
            {"type": "json_schema", "json_schema": {"schema": SCHEMA, "strict": "yes"}},
            "response_format.json_schema.strict",
        ),
    ],
)
def test_chat_completions_in_enforcement_mode_names_its_own_paths(
    gw: Harness, response_format: Any, param: str
) -> None:
    body = {"model": "m", "messages": MESSAGES, "response_format": response_format}
    answer = gw.http.post(gw.url + "/v1/chat/completions", json=body, headers={ENFORCE: "1"})
    error = _error(answer)
    assert error["param"] == param
    parent = param.rpartition(".")[0]
    assert isinstance(_located(body, parent), dict)  # the place of the field, as sent
    if error["code"] != "missing_required":
        _located(body, param)
    assert gw.backend.requests == []


def test_a_native_backend_names_a_bad_schema_at_the_clients_path(
    make_gateway: MakeGateway,
) -> None:
    """A native provider's adapter compiles the schema (it plans how the provider enforces
    it): its refusal used to name no param at all."""
    gw = make_gateway(
        backend="anthropic",
        env_for=lambda fake: {"ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "sk-ant-x"},
    )
    body = {"model": "claude-sonnet-4-5", "input": "x", "text": {"format": _nested(BAD)}}
    error = _error(gw.http.post(gw.url + "/v1/responses", json=body))
    assert error["param"] == "text.format.json_schema.schema.properties.a.type"
    chat = {"model": "claude-sonnet-4-5", "messages": MESSAGES, "response_format": _nested(BAD)}
    error = _error(gw.http.post(gw.url + "/v1/chat/completions", json=chat))
    assert error["param"] == "response_format.json_schema.schema.properties.a.type"
    assert gw.backend.requests == []


# -- 3. tool_choice ----------------------------------------------------------------------------

TOOLS: Any = [{"type": "function", "name": "get_weather", "parameters": SCHEMA}]


@pytest.mark.parametrize(
    ("fields", "param", "code", "said"),
    [
        ({"tool_choice": {"type": "function"}}, "tool_choice.name", "missing_required", None),
        (
            {"tool_choice": {"type": "function", "name": 5}},
            "tool_choice.name",
            "invalid_type",
            None,
        ),
        (  # Chat's shape, sent to the Responses API
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            "tool_choice.name",
            "missing_required",
            '{"type": "function", "name": ...}',
        ),
        (
            {"tool_choice": {"type": "function", "name": "get_time"}},
            "tool_choice.name",
            "invalid_value",
            "'get_weather'",
        ),
        (
            {"tool_choice": {"type": "function", "name": "get_weather"}, "tools": None},
            "tool_choice.name",
            "invalid_value",
            "no 'tools'",
        ),
        ({"tool_choice": {"type": "custom"}}, "tool_choice.name", "missing_required", None),
        (
            {"tool_choice": {"type": "custom", "name": "get_weather"}},
            "tool_choice.name",
            "invalid_value",
            "custom",
        ),
        (
            {
                "tool_choice": {
                    "type": "allowed_tools",
                    "mode": "auto",
                    "tools": [
                        {"type": "function", "name": "get_weather"},
                        {"type": "function", "name": "get_time"},
                    ],
                }
            },
            "tool_choice.tools[1].name",
            "invalid_value",
            "'get_weather'",
        ),
        (
            {
                "tool_choice": {
                    "type": "allowed_tools",
                    "mode": "required",
                    "tools": [{"type": "function"}],
                }
            },
            "tool_choice.tools[0].name",
            "missing_required",
            None,
        ),
        (  # the spec requires it, and the Response echoes tool_choice as sent
            {"tool_choice": {"type": "allowed_tools", "tools": []}},
            "tool_choice.mode",
            "missing_required",
            None,
        ),
    ],
)
def test_a_tool_choice_naming_no_tool_of_the_request_is_a_400_naming_the_name(
    gw: Harness, fields: dict[str, Any], param: str, code: str, said: str | None
) -> None:
    body = {"model": "m", "input": "x", "tools": TOOLS, **fields}
    for stream in (False, True):
        error = _error(gw.http.post(gw.url + "/v1/responses", json={**body, "stream": stream}))
        assert (error["param"], error["code"]) == (param, code)
        assert f"'{param}'" in error["message"]
        assert "not supported" not in error["message"]
        if said is not None:
            assert said in error["message"]
    assert gw.backend.requests == []


def test_a_tool_choice_naming_a_tool_of_the_request_is_forwarded(gw: Harness) -> None:
    choices: Any = (
        ({"type": "function", "name": "get_weather"}, {"name": "get_weather"}),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "get_weather"}],
            },
            None,
        ),
    )
    for choice, sent in choices:
        gw.backend.json(chat_completion(content="ok"))
        gw.client.responses.create(model="m", input="x", tools=TOOLS, tool_choice=choice)
        if sent is not None:
            assert gw.sent()["tool_choice"] == {"type": "function", "function": sent}


# -- 4. duplicate input item ids ---------------------------------------------------------------


def _item(item_id: str, text: str = "hi") -> Any:
    return {"id": item_id, "type": "message", "role": "user", "content": text}


@pytest.mark.parametrize(
    ("items", "first", "second"),
    [
        ([_item("msg_a"), _item("msg_a", "again")], 0, 1),
        ([_item("msg_a"), _item("msg_b"), _item("msg_b")], 1, 2),
        (
            [
                _item("msg_a"),
                {"id": "msg_a", "type": "function_call_output", "call_id": "c", "output": "1"},
            ],
            0,
            1,
        ),
    ],
)
def test_two_input_items_with_one_id_are_a_400_naming_the_second(
    make_gateway: MakeGateway, items: list[Any], first: int, second: int
) -> None:
    store = RecordingStore()
    gw = make_gateway(store=store)
    param = f"input[{second}].id"
    for stream in (False, True):
        body = {"model": "m", "input": items, "stream": stream}
        error = _error(gw.http.post(gw.url + "/v1/responses", json=body))
        assert (error["param"], error["code"]) == (param, "duplicate_item_id")
        assert f"'{param}'" in error["message"] and f"input[{first}]" in error["message"]
    assert gw.backend.requests == []
    assert store.saves == {}


def test_item_references_count_as_the_items_they_bring_in(gw: Harness) -> None:
    """A reference stands for the stored item, with its id: two references to one item, or
    a reference and an item of the same id, would list that id twice."""
    gw.backend.json(chat_completion(content="ok"))
    first = gw.client.responses.create(model="m", input=[_item("msg_kept")])
    reference: Any = {"type": "item_reference", "id": "msg_kept"}
    for items in ([reference, reference], [_item("msg_kept"), reference]):
        answer = gw.http.post(gw.url + "/v1/responses", json={"model": "m", "input": items})
        assert _error(answer)["param"] == "input[1].id"
    assert len(gw.backend.requests) == 1
    gw.backend.json(chat_completion(content="again"))
    again = gw.client.responses.create(model="m", input=[reference, _item("msg_new")])
    listed = gw.client.responses.input_items.list(again.id, order="asc")
    assert [item.id for item in listed.data] == ["msg_kept", "msg_new"]
    assert first.id != again.id


def test_items_without_ids_or_with_distinct_ids_are_accepted(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="ok"))
    plain: Any = {"role": "user", "content": "hi"}
    response = gw.client.responses.create(
        model="m", input=[plain, plain, _item("msg_a"), _item("msg_b")]
    )
    listed = gw.client.responses.input_items.list(response.id, order="asc")
    ids = [item.id for item in listed.data]
    assert len(set(ids)) == 4 and ids[2:] == ["msg_a", "msg_b"]
    with pytest.raises(openai.BadRequestError):  # and the SDK sees the refusal as one
        gw.client.responses.create(model="m", input=[_item("msg_a"), _item("msg_a")])


# -- 5. every request error carries a code ----------------------------------------------------

_REF: Any = {"type": "item_reference"}
_FN: Any = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        (
            {
                "text": {
                    "format": {
                        "type": "json_schema",
                        "name": "A",
                        "json_schema": {"name": "A", "schema": SCHEMA},
                    }
                }
            },
            "text.format.name",
            "invalid_value",
        ),
        (
            {"text": {"format": {"type": "json_schema", "json_schema": 5}}},
            "text.format.json_schema",
            "invalid_type",
        ),
        ({"text": {"format": "json"}}, "text.format", "invalid_type"),
        ({"text": {"format": {"name": "A"}}}, "text.format.type", "missing_required"),
        ({"text": {"format": {"type": 5}}}, "text.format.type", "invalid_type"),
        ({"text": "json"}, "text", "invalid_type"),
        ({"input": [_REF]}, "input[0].id", "missing_required"),
        ({"input": 5}, "input", "invalid_type"),
        ({"input": [5]}, "input[0]", "invalid_type"),
        ({"input": [{"type": "message", "content": "x"}]}, "input[0].role", "missing_required"),
        ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role", "invalid_value"),
        ({"input": [{"role": "user"}]}, "input[0].content", "missing_required"),
        ({"input": [{"role": "user", "content": 5}]}, "input[0].content", "invalid_type"),
        (
            {"input": [{"type": "function_call", "call_id": "c", "name": "f"}]},
            "input[0].arguments",
            "missing_required",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": 5, "output": "1"}]},
            "input[0].call_id",
            "invalid_type",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": {}}]},
            "input[0].output",
            "invalid_type",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "input[0].content[0].input_audio",
            "missing_required",
        ),
        ({"tools": {"type": "function"}}, "tools", "invalid_type"),
        ({"tools": [{"type": "function"}]}, "tools[0].name", "missing_required"),
        ({"tools": [{"type": "function", "name": 5}]}, "tools[0].name", "invalid_type"),
        ({"tool_choice": "sometimes"}, "tool_choice", "invalid_value"),
        ({"tool_choice": 5}, "tool_choice", "invalid_type"),
    ],
)
def test_every_request_error_names_its_code(
    gw: Harness, fields: dict[str, Any], param: str, code: str
) -> None:
    """Some 400s came with `code: null`; each request error is `invalid_type`,
    `invalid_value` or `missing_required` (or a more specific code), as documented."""
    body = {"model": "m", "input": "x", **fields}
    error = _error(gw.http.post(gw.url + "/v1/responses", json=body))
    assert (error["param"], error["code"]) == (param, code)
    assert gw.backend.requests == []


# -- 6. a json_schema format's schema that is sent but not an object -------------------------


@pytest.mark.parametrize(
    ("schema", "code"),
    [
        (False, "invalid_type"),
        ([1], "invalid_type"),
        ("hello", "invalid_type"),
        (None, "missing_required"),
        ("absent", "missing_required"),
    ],
)
def test_a_schema_that_is_not_an_object_is_invalid_type_not_missing(
    gw: Harness, schema: Any, code: str
) -> None:
    fmt: Any = {"type": "json_schema", "name": "A"}
    if schema != "absent":
        fmt["schema"] = schema
    for text, param in (
        ({"format": fmt}, "text.format.schema"),
        ({"format": {"type": "json_schema", "json_schema": fmt}}, "text.format.json_schema.schema"),
    ):
        body = {"model": "m", "input": "x", "text": text}
        error = _error(gw.http.post(gw.url + "/v1/responses", json=body))
        assert (error["param"], error["code"]) == (param, code)
        if code == "invalid_type":
            assert f"got {type(schema).__name__}" in error["message"]
    assert gw.backend.requests == []


# -- 7. tool_choice errors name the field at fault ---------------------------------------------


@pytest.mark.parametrize(
    ("choice", "param", "code"),
    [
        ({"type": "allowed_tools", "mode": "required"}, "tool_choice.tools", "missing_required"),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": {}},
            "tool_choice.tools",
            "invalid_type",
        ),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "web_search"}]},
            "tool_choice.tools[0]",
            "unsupported_tool",
        ),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [_FN, 5]},
            "tool_choice.tools[1]",
            "invalid_type",
        ),
        ({"name": "get_weather"}, "tool_choice.type", "missing_required"),
        ({"type": 5}, "tool_choice.type", "invalid_type"),
        ({"type": "web_search"}, "tool_choice", "unsupported_tool"),
    ],
)
def test_tool_choice_errors_name_the_field_at_fault(
    gw: Harness, choice: Any, param: str, code: str
) -> None:
    body = {"model": "m", "input": "x", "tools": [_FN], "tool_choice": choice}
    error = _error(gw.http.post(gw.url + "/v1/responses", json=body))
    assert (error["param"], error["code"]) == (param, code)
    assert "None" not in error["message"]
    assert gw.backend.requests == []


def test_every_400_the_gateway_raises_carries_a_code() -> None:
    """docs/gateway.md, "Errors": a 400 names its `code` (`missing_required`, `invalid_type`,
    `invalid_value`, or a more specific one). A trial found 29 raised with `code: null`; this
    reads every `bad_request(...)` call of the gateway's source, so a new one cannot leave
    it out."""
    import ast
    from pathlib import Path

    import outform.gateway

    package = Path(outform.gateway.__file__).parent
    missing = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "bad_request"
                and len(node.args) < 3
                and not any(keyword.arg == "code" for keyword in node.keywords)
            ):
                missing.append(f"{path.name}:{node.lineno}")
    assert missing == []


@pytest.mark.parametrize(
    ("choice", "tools", "param"),
    [
        ("required", None, "tool_choice"),
        ("required", [], "tool_choice"),
        ({"type": "allowed_tools", "mode": "required", "tools": []}, None, "tool_choice.tools"),
    ],
)
def test_a_tool_choice_that_leaves_no_tool_to_call_is_a_400(
    gw: Harness, choice: Any, tools: Any, param: str
) -> None:
    """Forwarded before: OpenAI refuses `tool_choice: "required"` without tools, and an
    empty `allowed_tools` list allows nothing."""
    body: dict[str, Any] = {"model": "m", "input": "x", "tool_choice": choice}
    if tools is not None:
        body["tools"] = tools
    error = _error(gw.http.post(gw.url + "/v1/responses", json=body))
    assert (error["param"], error["code"]) == (param, "invalid_value")
    assert gw.backend.requests == []
