"""The official `openai` SDK (strict response validation) against the gateway.

Every scenario a real client runs: `responses.create` (plain, JSON object, JSON schema),
`responses.parse(text_format=...)`, `responses.stream(text_format=...)`,
`chat.completions.parse`, tool calls over two turns chained with `previous_response_id`
(streamed and not), retrieval, deletion and input items. The fake backend records what it
received, so each test asserts the exact Chat request the gateway forwarded; the fixtures
validate every body and event against the OpenAPI document.
"""

from __future__ import annotations

from typing import Any

import openai
import orjson
import pytest
from openai.types.responses import (
    FunctionToolParam,
    ResponseCompletedEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseIncompleteEvent,
)
from pydantic import BaseModel

from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import response_events
from tests.providers.openai_wire import (
    chat_completion,
    chat_usage,
    chunk,
    text_stream,
    tool_call,
)

ADA = '{"name":"Ada Lovelace","age":36}'


class Person(BaseModel):
    name: str
    age: int


WEATHER_TOOL: FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


def test_a_plain_request_becomes_one_user_message_and_no_response_format(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="Hello!"))
    response = gw.client.responses.create(model="gpt-5.2", input="Say hello")
    assert response.output_text == "Hello!"
    assert response.status == "completed"
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "text"
    assert response.usage is not None and response.usage.input_tokens == 31
    assert gw.sent() == {"model": "gpt-5.2", "messages": [{"role": "user", "content": "Say hello"}]}


def test_json_object_is_forwarded_as_chat_json_mode_and_echoed(gw: Harness) -> None:
    gw.backend.json(chat_completion(content='{"ok": true}'))
    response = gw.client.responses.create(
        model="m", input="Reply in JSON", text={"format": {"type": "json_object"}}
    )
    assert gw.sent()["response_format"] == {"type": "json_object"}
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "json_object"
    assert orjson.loads(response.output_text) == {"ok": True}


def test_json_schema_is_nested_with_every_field_as_received(gw: Harness) -> None:
    fmt: Any = {
        "type": "json_schema",
        "description": "A person.",
        "name": "person",
        "strict": False,
        "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    gw.backend.json(chat_completion(content='{"name":"Ada"}'))
    gw.client.responses.create(model="m", input="Who?", text={"format": fmt})
    forwarded = gw.sent()["response_format"]
    assert forwarded == {
        "type": "json_schema",
        "json_schema": {k: v for k, v in fmt.items() if k != "type"},
    }
    assert list(forwarded["json_schema"]) == ["description", "name", "strict", "schema"]
    echoed = orjson.loads(gw.recorder.exchanges[-1].body)["text"]
    assert echoed == {"format": fmt}  # exactly as received


def test_the_schema_reaches_the_backend_byte_for_byte(gw: Harness) -> None:
    schema = {
        "required": ["zeta", "alpha"],
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "zeta": {"description": 'Ünïcødé ✓ "quoted"', "type": "number", "maximum": 1e-7},
            "alpha": {"$ref": "#/$defs/Thing"},
        },
        "$defs": {"Thing": {"enum": ["b", "a", None, 1.5, 10], "title": "Thing"}},
    }
    sent = orjson.dumps(schema)
    body = orjson.dumps(
        {
            "model": "m",
            "input": "x",
            "text": {"format": {"type": "json_schema", "schema": schema, "name": "t"}},
        }
    )
    gw.backend.json(chat_completion(content='{"zeta": 0, "alpha": "a"}'))
    answer = gw.http.post(
        gw.url + "/v1/responses",
        content=body,
        headers={"authorization": "Bearer x", "content-type": "application/json"},
    )
    assert answer.status_code == 200
    received = gw.backend.last.body
    assert b'"response_format":{"type":"json_schema","json_schema":{"schema":' + sent in received
    assert orjson.loads(answer.content)["text"] == orjson.loads(body)["text"]


def test_an_unknown_format_type_is_forwarded_as_it_is(gw: Harness) -> None:
    fmt = {"type": "grammar", "syntax": "lark", "definition": "start: /yes|no/"}
    gw.backend.json(chat_completion(content="yes"))
    answer = gw.http.post(
        gw.url + "/v1/responses", json={"model": "m", "input": "?", "text": {"format": fmt}}
    )
    assert gw.sent()["response_format"] == fmt
    assert answer.json()["text"] == {"format": fmt}


def test_responses_parse_returns_output_parsed(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=ADA))
    parsed = gw.client.responses.parse(model="m", input="Ada, 36", text_format=Person)
    assert parsed.output_parsed == Person(name="Ada Lovelace", age=36)
    sdk_format = orjson.loads(gw.recorder.exchanges[-1].request)["text"]["format"]
    forwarded = gw.sent()["response_format"]
    assert forwarded["json_schema"] == {k: v for k, v in sdk_format.items() if k != "type"}
    assert (
        forwarded["json_schema"]["strict"] is True and forwarded["json_schema"]["name"] == "Person"
    )


def test_responses_stream_parses_the_full_text_and_carries_the_trailing_usage(
    gw: Harness,
) -> None:
    gw.backend.stream(
        text_stream('{"name":', '"Ada Lovelace",', '"age":36}', usage=chat_usage(50, 9))
    )
    with gw.client.responses.stream(model="m", input="Ada, 36", text_format=Person) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_parsed == Person(name="Ada Lovelace", age=36)
    assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (
        50,
        9,
    )
    assert kinds.count("response.output_text.delta") == 3
    sent = gw.sent()
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["response_format"]["type"] == "json_schema"


def test_streamed_and_whole_answers_build_the_same_response(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=ADA))
    whole = gw.http.post(gw.url + "/v1/responses", json={"model": "m", "input": "x"}).json()
    gw.backend.stream(text_stream('{"name":"Ada Lovelace",', '"age":36}'))
    streamed = gw.http.post(
        gw.url + "/v1/responses", json={"model": "m", "input": "x", "stream": True}
    )
    final = response_events(streamed.content)[-1]["response"]

    def shape(response: dict[str, Any]) -> Any:
        skip = ("id", "created_at", "completed_at")
        items = [{k: v for k, v in item.items() if k != "id"} for item in response["output"]]
        return {**{k: v for k, v in response.items() if k not in skip}, "output": items}

    assert shape(final) == shape(whole)


def test_chat_completions_parse_passes_the_body_through_unchanged(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=ADA))
    completion = gw.client.chat.completions.parse(
        model="m", messages=[{"role": "user", "content": "Ada, 36"}], response_format=Person
    )
    assert completion.choices[0].message.parsed == Person(name="Ada Lovelace", age=36)
    assert gw.backend.last.body == gw.recorder.exchanges[-1].request
    assert gw.backend.last.path == "/v1/chat/completions"


def test_chat_completions_stream_passes_the_chunks_through(gw: Harness) -> None:
    gw.backend.stream([*text_stream("Hel", "lo"), "[DONE]"])
    stream = gw.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Hello"


def test_tool_calls_over_two_turns_with_previous_response_id(gw: Harness) -> None:
    gw.backend.json(
        chat_completion(
            finish="tool_calls",
            tool_calls=[tool_call("call_7Qx", "get_weather", '{"city":"Paris"}')],
        )
    )
    first = gw.client.responses.create(
        model="m",
        input="Weather in Paris?",
        tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "name": "get_weather"},
    )
    assert [item.type for item in first.output] == ["function_call"]  # no empty message
    call = first.output[0]
    assert call.type == "function_call" and call.call_id == "call_7Qx"
    assert call.arguments == '{"city":"Paris"}'
    sent = gw.sent()
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather in a city",
                "parameters": WEATHER_TOOL["parameters"],
                "strict": True,
            },
        }
    ]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}

    gw.backend.json(chat_completion(content="It is sunny in Paris."))
    second = gw.client.responses.create(
        model="m",
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": "call_7Qx", "output": '{"sky":"clear"}'}
        ],
        tools=[WEATHER_TOOL],
    )
    assert second.output_text == "It is sunny in Paris."
    assert second.previous_response_id == first.id
    assert gw.sent()["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7Qx",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_7Qx", "content": '{"sky":"clear"}'},
    ]


def test_streamed_tool_calls_over_two_streamed_turns(gw: Harness) -> None:
    gw.backend.stream(
        [
            chunk({"role": "assistant", "content": None}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_A",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_B",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                        }
                    ]
                }
            ),
            chunk({}, finish="tool_calls"),
            chunk(usage=chat_usage()),
        ]
    )
    stream = gw.client.responses.create(
        model="m",
        input="Paris and Rome?",
        tools=[WEATHER_TOOL],
        stream=True,
    )
    events = list(stream)
    done = [e for e in events if isinstance(e, ResponseFunctionCallArgumentsDoneEvent)]
    # `name` is required by the spec; this SDK's model keeps it as an extra field
    assert [(e.model_dump()["name"], e.arguments, e.output_index) for e in done] == [
        ("get_weather", '{"city":"Paris"}', 0),
        ("get_weather", '{"city":"Rome"}', 1),
    ]
    final = events[-1]
    assert isinstance(final, ResponseCompletedEvent)
    assert [item.type for item in final.response.output] == ["function_call", "function_call"]

    gw.backend.stream(text_stream("Sunny ", "in both."))
    second = gw.client.responses.create(
        model="m",
        previous_response_id=final.response.id,
        input=[
            {"type": "function_call_output", "call_id": "call_A", "output": "sunny"},
            {"type": "function_call_output", "call_id": "call_B", "output": "sunny"},
        ],
        stream=True,
    )
    last = list(second)[-1]
    assert isinstance(last, ResponseCompletedEvent)
    assert last.response.output_text == "Sunny in both."
    messages = gw.sent()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["call_A", "call_B"]


def test_instructions_are_not_carried_over_to_the_next_turn(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="Bonjour."))
    first = gw.client.responses.create(model="m", instructions="Answer in French.", input="Hi")
    assert gw.sent()["messages"][0] == {"role": "system", "content": "Answer in French."}
    gw.backend.json(chat_completion(content="Hallo."))
    gw.client.responses.create(
        model="m", instructions="Answer in German.", input="Hi again", previous_response_id=first.id
    )
    assert gw.sent()["messages"] == [
        {"role": "system", "content": "Answer in German."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Bonjour."},
        {"role": "user", "content": "Hi again"},
    ]


def test_a_refusal_is_a_refusal_part_and_parse_gives_no_value(gw: Harness) -> None:
    gw.backend.json(chat_completion(refusal="I can't help with that."))
    parsed = gw.client.responses.parse(model="m", input="?", text_format=Person)
    assert parsed.output_parsed is None
    message = parsed.output[0]
    assert message.type == "message"
    assert [part.type for part in message.content] == ["refusal"]

    gw.backend.stream(
        [
            chunk({"role": "assistant", "content": None, "refusal": None}),
            chunk({"refusal": "I can't "}),
            chunk({"refusal": "help."}),
            chunk({}, finish="stop"),
            chunk(usage=chat_usage()),
        ]
    )
    with gw.client.responses.stream(model="m", input="?", text_format=Person) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.refusal.done" in kinds and "response.output_text.delta" not in kinds
    assert final.output_parsed is None


def test_length_makes_the_response_incomplete_streamed_or_not(gw: Harness) -> None:
    gw.backend.json(chat_completion(finish="length", content='{"name":"Ada'))
    response = gw.client.responses.create(model="m", input="x", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert gw.sent()["max_tokens"] == 16

    gw.backend.stream(text_stream('{"name":"Ada', finish="length"))
    events = list(gw.client.responses.create(model="m", input="x", stream=True))
    assert isinstance(events[-1], ResponseIncompleteEvent)
    assert events[-1].response.incomplete_details is not None


def test_reasoning_goes_to_a_reasoning_item_before_the_message(gw: Harness) -> None:
    gw.backend.json(chat_completion(content=ADA, reasoning_content="The user wants JSON."))
    parsed = gw.client.responses.parse(model="m", input="Ada", text_format=Person)
    assert [item.type for item in parsed.output] == ["reasoning", "message"]
    assert parsed.output_parsed == Person(name="Ada Lovelace", age=36)

    gw.backend.stream(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"reasoning_content": "Think"}),
            chunk({"reasoning_content": "ing."}),
            chunk({"content": ADA}),
            chunk({}, finish="stop"),
            chunk(usage=chat_usage()),
        ]
    )
    with gw.client.responses.stream(model="m", input="Ada", text_format=Person) as stream:
        final = stream.get_final_response()
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output_parsed == Person(name="Ada Lovelace", age=36)


def test_retrieve_list_input_items_and_delete(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="Hi."))
    created = gw.client.responses.create(
        model="m",
        input=[
            {"role": "developer", "content": "Be brief."},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        ],
    )
    fetched = gw.client.responses.retrieve(created.id)
    assert fetched.model_dump() == created.model_dump()
    items = gw.client.responses.input_items.list(created.id, order="asc")
    assert [(item.type, getattr(item, "role", None)) for item in items.data] == [
        ("message", "developer"),
        ("message", "user"),
    ]
    first = gw.client.responses.input_items.list(created.id, limit=1)
    assert first.has_more and first.data[0].id == items.data[1].id
    gw.client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        gw.client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        gw.client.responses.delete(created.id)


def test_store_false_keeps_nothing(gw: Harness) -> None:
    gw.backend.json(chat_completion(content="Hi."))
    response = gw.client.responses.create(model="m", input="Hi", store=False)
    assert orjson.loads(gw.recorder.exchanges[-1].body)["store"] is False
    with pytest.raises(openai.NotFoundError):
        gw.client.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError) as missing:
        gw.client.responses.create(model="m", input="Again", previous_response_id=response.id)
    assert missing.value.code == "previous_response_not_found"
    assert len(gw.backend.requests) == 1


def test_the_model_map_renames_the_model_for_the_backend_only(make_gateway: MakeGateway) -> None:
    gw = make_gateway(model_map={"gpt-4o": "Qwen/Qwen2.5-7B-Instruct"})
    gw.backend.json(chat_completion(content="Hi."))
    response = gw.client.responses.create(model="gpt-4o", input="Hi")
    assert gw.sent()["model"] == "Qwen/Qwen2.5-7B-Instruct"
    assert response.model == "gpt-4o"
    gw.backend.json(chat_completion(content="Hi."))
    gw.client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert gw.sent() == {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "messages": [{"role": "user", "content": "x"}],
    }
    gw.backend.json(
        {
            "object": "list",
            "data": [
                {
                    "id": "Qwen/Qwen2.5-7B-Instruct",
                    "object": "model",
                    "created": 0,
                    "owned_by": "vllm",
                }
            ],
        }
    )
    models = [m.id for m in gw.client.models.list()]
    assert models == ["gpt-4o", "Qwen/Qwen2.5-7B-Instruct"]
