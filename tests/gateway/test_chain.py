"""previous_response_id chaining and input_items pages: the helpers of gateway/chain.py, on
every store (tests/gateway/postgres.py), with payloads checked against OpenAI's OpenAPI spec."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from outform.gateway.chain import (
    ChainError,
    conversation_for,
    input_items,
    load_previous,
    page,
    record_for,
)
from outform.gateway.store import StoredResponse
from tests.providers.openapi import validate

if TYPE_CHECKING:
    from tests.gateway.postgres import Backend

pytest_plugins = ["tests.gateway.postgres"]

ID = re.compile(r"^(msg|fc|fco|rs)_[0-9a-f]{50}$")
PIRATE = "Answer like a pirate, every time."


def response(
    response_id: str,
    output: list[dict[str, Any]],
    *,
    instructions: str | None = None,
    previous: str | None = None,
    created_at: int = 1_750_000_000,
) -> dict[str, Any]:
    """A final Response object as the gateway serves it (valid against the spec)."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "completed",
        "completed_at": created_at + 1,
        "error": None,
        "incomplete_details": None,
        "instructions": instructions,
        "model": "test-model",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": previous,
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "metadata": {},
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }


def message(item_id: str, text: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def function_call(item_id: str, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def streamed(final: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of a streamed text reply, in the spec's order, ending with the final
    Response in `response.completed` (what the gateway stores for a stream)."""
    item = final["output"][0]
    text = item["content"][0]["text"]
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    started = {**final, "status": "in_progress", "output": []}
    del started["completed_at"], started["usage"]
    empty = {**item, "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    ids = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        {"type": "response.output_item.added", "output_index": 0, "item": empty},
        {"type": "response.content_part.added", **ids, "part": part},
        *(
            {"type": "response.output_text.delta", **ids, "delta": p, "logprobs": []}
            for p in pieces
        ),
        {"type": "response.output_text.done", **ids, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **ids, "part": item["content"][0]},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": final},
    ]
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def final_response(events: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """What a client (and the gateway's store) takes from a stream: the last event's Response,
    whose output must hold the text the deltas spelled."""
    last = events[-1]
    assert last["type"] == "response.completed"
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    final: Mapping[str, Any] = last["response"]
    assert final["output"][0]["content"][0]["text"] == deltas
    return final


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


# -- input items ---------------------------------------------------------------------------


def test_a_string_input_is_one_user_message() -> None:
    [item] = input_items("Tell me a story.")
    assert ID.match(item.pop("id"))
    assert item == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Tell me a story."}],
    }


def test_input_items_get_ids_and_the_shapes_the_api_lists() -> None:
    given: list[dict[str, Any]] = [
        {"role": "developer", "content": "Use metric units."},
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]},
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"c": 4}'},
        {"type": "message", "role": "user", "content": "Thanks", "id": "msg_client_chosen"},
    ]
    before = dumps(given)
    items = input_items(given)
    assert dumps(given) == before  # the request is not modified
    prefixes = [item["id"].split("_")[0] for item in items]
    assert prefixes == ["msg", "msg", "msg", "fc", "fco", "msg"]
    assert all(ID.match(item["id"]) for item in items[:5])
    assert items[5]["id"] == "msg_client_chosen"
    assert len({item["id"] for item in items}) == 6
    assert items[0]["content"] == [{"type": "input_text", "text": "Use metric units."}]
    assert items[2] == {
        "id": items[2]["id"],
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Let me look.", "annotations": [], "logprobs": []}
        ],
    }
    assert items[3]["status"] == items[4]["status"] == "completed"
    listed = page(items, order="asc")
    assert validate("ResponseItemList", listed) == []
    assert [item["id"] for item in listed["data"]] == [item["id"] for item in items]


def test_the_spec_check_catches_an_item_without_id() -> None:
    """The validator this file relies on does reject a malformed list."""
    listed = page(input_items("hi"))
    assert validate("ResponseItemList", listed) == []
    del listed["data"][0]["id"]
    assert validate("ResponseItemList", listed) != []


# -- the conversation ----------------------------------------------------------------------


def test_conversation_for_a_first_turn_is_its_input() -> None:
    items = input_items("Hello")
    assert conversation_for(None, items) == items


def test_instructions_are_not_carried_over() -> None:
    items = input_items("Hello")
    first = record_for(
        response("resp_1", [message("msg_1", "Ahoy!")], instructions=PIRATE), items, None
    )
    assert first.response["instructions"] == PIRATE
    assert PIRATE not in dumps(first.conversation)
    follow_up = input_items("And again?")
    context = conversation_for(first, follow_up)
    assert PIRATE not in dumps(context)
    assert context == [*items, message("msg_1", "Ahoy!"), *follow_up]


def test_record_for_links_to_the_previous_response() -> None:
    first = record_for(response("resp_1", [message("msg_1", "One.")]), input_items("1?"), None)
    items = input_items("2?")
    second = record_for(response("resp_2", [message("msg_2", "Two.")]), items, first)
    assert second.previous_response_id == "resp_1"
    assert second.input_items == items
    assert second.conversation == [*first.conversation, *items, message("msg_2", "Two.")]
    assert first.previous_response_id is None


def test_chain_over_several_turns_on_every_store(backend: Backend) -> None:
    """Four turns: plain with instructions, streamed, a function call, then its output sent
    (on stores that persist) to a freshly opened store, as after a restart."""
    text2 = "Stockholm, which sits on fourteen islands."
    call = function_call("fc_1", "call_1", "weather", '{"city":"Stockholm"}')

    async def main() -> None:
        store = backend.open()
        # Turn 1: plain, with instructions.
        items1 = input_items("What is the capital of Norway?")
        assert conversation_for(await load_previous(store, None), items1) == items1
        r1 = response("resp_1", [message("msg_a1", "Oslo, matey.")], instructions=PIRATE)
        assert validate("Response", r1) == []
        await store.save(record_for(r1, items1, None))

        # Turn 2: streamed; what is stored is the final Response of the stream.
        prev = await load_previous(store, "resp_1")
        items2 = input_items([{"role": "user", "content": "And of Sweden?"}])
        context2 = conversation_for(prev, items2)
        assert context2 == [*items1, message("msg_a1", "Oslo, matey."), *items2]
        events = streamed(response("resp_2", [message("msg_a2", text2)], previous="resp_1"))
        assert [validate("ResponseStreamEvent", e) for e in events] == [[]] * len(events)
        await store.save(record_for(final_response(events), items2, prev))

        # Turn 3: the model calls a tool.
        prev = await load_previous(store, "resp_2")
        items3 = input_items("How cold is it there now?")
        r3 = response("resp_3", [call], previous="resp_2", instructions="Use tools.")
        await store.save(record_for(r3, items3, prev))

        if backend.persistent:  # a MemoryStore forgets everything on close
            await store.close()
            store = backend.open()
        try:
            # Turn 4: the tool's output.
            prev = await load_previous(store, "resp_3")
            items4 = input_items(
                [{"type": "function_call_output", "call_id": "call_1", "output": '{"c":-3}'}]
            )
            context4 = conversation_for(prev, items4)
            r4 = response("resp_4", [message("msg_a4", "-3 °C.")], previous="resp_3")
            await store.save(record_for(r4, items4, prev))
            stored4 = await store.load("resp_4")
        finally:
            await store.close()

        assert context4 == [
            *items1,
            message("msg_a1", "Oslo, matey."),
            *items2,
            message("msg_a2", text2),
            *items3,
            call,
            *items4,
        ]
        assert PIRATE not in dumps(context4)
        assert "Use tools." not in dumps(context4)
        assert stored4 is not None
        assert stored4.previous_response_id == "resp_3"
        assert stored4.response["instructions"] is None  # turn 4 sent none; none carried over
        assert stored4.conversation == [*context4, message("msg_a4", "-3 °C.")]
        assert validate("ResponseItemList", page(stored4.input_items)) == []

    asyncio.run(main())


def test_deleting_a_response_mid_chain(backend: Backend) -> None:
    async def main() -> None:
        store = backend.open()
        try:
            previous = None
            for n in (1, 2, 3):
                items = input_items(f"Turn {n}")
                r = response(f"resp_{n}", [message(f"msg_a{n}", f"Answer {n}")])
                saved = record_for(r, items, previous)
                await store.save(saved)
                previous = saved
            assert await store.delete("resp_2") is True

            with pytest.raises(ChainError) as caught:
                await load_previous(store, "resp_2")
            error = caught.value
            assert (error.status, error.param, error.code) == (
                404,
                "previous_response_id",
                "previous_response_not_found",
            )
            assert error.body() == {
                "error": {
                    "message": "Previous response with id 'resp_2' not found.",
                    "type": "invalid_request_error",
                    "param": "previous_response_id",
                    "code": "previous_response_not_found",
                }
            }
            # The others are intact; the third still holds the whole conversation.
            first = await load_previous(store, "resp_1")
            third = await load_previous(store, "resp_3")
            assert first is not None
            assert third is not None
            assert third.previous_response_id == "resp_2"
            assert [m.get("id") for m in third.conversation if m.get("role") == "assistant"] == [
                "msg_a1",
                "msg_a2",
                "msg_a3",
            ]
            items = input_items("Turn 4")
            assert conversation_for(third, items)[-1] == items[0]
        finally:
            await store.close()

    asyncio.run(main())


def test_a_response_ended_outside_its_request_is_continued_with_its_history(
    backend: Backend,
) -> None:
    """A response cancelled, or failed when the process running it died, ends without its
    conversation written (it is stored unfinished, then its status changes). Continuing from
    it rebuilds the conversation from the chain before it, its input and its output; if the
    response before it is gone, the request is refused rather than sent without history."""

    async def main() -> None:
        store = backend.open()
        try:
            first = record_for(
                response("resp_1", [message("msg_a1", "Noted.")]),
                input_items("The code word is PINEAPPLE."),
                None,
            )
            await store.save(first)
            running = {**response("resp_2", []), "status": "in_progress"}
            unfinished = record_for(running, input_items("Remember it."), first)
            for status in ("cancelled", "failed"):
                # What a cancel, or the store settling a dead process's record, writes: the
                # status changed, the conversation never written.
                await store.save(unfinished)
                ended = {**running, "status": status}
                await store.update(dataclasses.replace(unfinished, response=ended))
                stored = await store.load("resp_2")
                assert stored is not None and stored.status == status
                assert not stored.conversation
                previous = await load_previous(store, "resp_2")
                assert previous is not None
                said = [m["content"][0]["text"] for m in previous.conversation]
                assert said == ["The code word is PINEAPPLE.", "Noted.", "Remember it."]
            await store.delete("resp_1")
            with pytest.raises(ChainError, match="'resp_1', is gone") as caught:
                await load_previous(store, "resp_2")
            assert caught.value.code == "previous_response_not_found"
        finally:
            await store.close()

    asyncio.run(main())


# -- input_items pages ---------------------------------------------------------------------


ITEMS = input_items([{"role": "user", "content": f"message {n}"} for n in range(7)])
IDS = [item["id"] for item in ITEMS]


def ids(listed: Mapping[str, Any]) -> list[str]:
    return [item["id"] for item in listed["data"]]


def test_page_defaults_newest_first_and_matches_the_spec() -> None:
    listed = page(ITEMS)
    assert validate("ResponseItemList", listed) == []
    assert listed["object"] == "list"
    assert ids(listed) == IDS[::-1]
    assert (listed["first_id"], listed["last_id"], listed["has_more"]) == (IDS[-1], IDS[0], False)


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("limit", [1, 2, 3, 7, 20])
def test_paging_with_after_visits_every_item_once(order: str, limit: int) -> None:
    expected = IDS if order == "asc" else IDS[::-1]
    seen: list[str] = []
    after = None
    while True:
        listed = page(ITEMS, limit=limit, order=order, after=after)
        assert validate("ResponseItemList", listed) == []
        assert len(listed["data"]) <= limit
        seen += ids(listed)
        if not listed["has_more"]:
            break
        after = listed["last_id"]
    assert seen == expected


def test_before_keeps_the_items_nearest_the_cursor() -> None:
    listed = page(ITEMS, order="asc", before=IDS[5], limit=2)
    assert ids(listed) == IDS[3:5]
    assert listed["has_more"] is True
    listed = page(ITEMS, order="asc", before=IDS[2], limit=5)
    assert ids(listed) == IDS[:2]
    assert listed["has_more"] is False
    listed = page(ITEMS, order="desc", before=IDS[2], limit=2)  # desc: newer ones come before
    assert ids(listed) == [IDS[4], IDS[3]]
    listed = page(ITEMS, order="asc", after=IDS[1], before=IDS[5], limit=2)
    assert ids(listed) == IDS[2:4]
    assert listed["has_more"] is True


def test_an_empty_page_still_matches_the_spec() -> None:
    listed = page(ITEMS, order="asc", after=IDS[-1])
    assert listed == {
        "object": "list",
        "data": [],
        "first_id": "",
        "last_id": "",
        "has_more": False,
    }
    assert validate("ResponseItemList", listed) == []


@pytest.mark.parametrize(
    ("arguments", "param"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"limit": True}, "limit"),
        ({"order": "newest"}, "order"),
        ({"after": "msg_unknown"}, "after"),
        ({"before": "msg_unknown"}, "before"),
    ],
)
def test_bad_page_arguments_are_400s_naming_the_parameter(
    arguments: dict[str, Any], param: str
) -> None:
    with pytest.raises(ChainError) as caught:
        page(ITEMS, **arguments)
    assert (caught.value.status, caught.value.param) == (400, param)
    assert caught.value.body()["error"]["param"] == param


def test_input_items_of_a_stored_response_page_the_same(backend: Backend) -> None:
    async def main() -> StoredResponse | None:
        store = backend.open()
        try:
            await store.save(record_for(response("resp_p", [message("m", "ok")]), ITEMS, None))
            return await store.load("resp_p")
        finally:
            await store.close()

    loaded = asyncio.run(main())
    assert loaded is not None
    assert page(loaded.input_items, limit=3, after=IDS[4]) == page(ITEMS, limit=3, after=IDS[4])
