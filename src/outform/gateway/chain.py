"""`previous_response_id` chaining and the input-items list, as pure functions.

The app calls them in this order for `POST /v1/responses`:

    items = input_items(request["input"])              # ids assigned, shapes normalised
    previous = await load_previous(store, request.get("previous_response_id"), tenant)
    context = conversation_for(previous, items)        # what the model sees, + instructions
    ... run the model, stream or not, until the final Response object ...
    if request.get("store", True):
        await store.save(record_for(response, items, previous, tenant=tenant))

(`gateway.keeper` does the saving, with the in-progress states of streams and background
responses.)

and `page(record.input_items, ...)` for `GET /v1/responses/{id}/input_items`.

`instructions` are never part of a conversation: the spec says that with
`previous_response_id` "the instructions from a previous response will not be carried over";
the current request's own `instructions` are added by the app, outside these items.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from outform.errors import UsageError
from outform.gateway.store import NO_TENANT, ResponseStore, StoredResponse

Item = dict[str, Any]

ID_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
}
"""The id prefix of each item type, as the API spells them (`msg_...`, `fc_...`)."""

MAX_LIMIT = 100


class ChainError(UsageError):
    """A request that does not fit the stored state: an unknown previous response, a cursor
    that is not in the list. `status`, `param` and `code` give the OpenAI error body."""

    def __init__(
        self, what: str, *, status: int, param: str, code: str, fix: str | None = None
    ) -> None:
        self.status = status
        self.param = param
        self.code = code
        super().__init__(what, where=param, fix=fix)

    def body(self) -> dict[str, Any]:
        """The error as the API returns it: `{"error": {message, type, param, code}}`."""
        return {
            "error": {
                "message": self.what,
                "type": "invalid_request_error",
                "param": self.param,
                "code": self.code,
            }
        }


def new_id(prefix: str) -> str:
    """`prefix_` and 50 hex digits, the length of the API's own ids."""
    return f"{prefix}_{secrets.token_hex(25)}"


# -- input items ---------------------------------------------------------------------------


def input_items(value: str | Sequence[Mapping[str, Any]]) -> list[Item]:
    """A request's `input` as the items `GET .../input_items` lists, each with an `id`.

    A string is one user message; an `EasyInputMessage` gets `type: "message"` and content
    parts (`input_text`, or `output_text` for the assistant, which the spec lists as an
    `OutputMessage`); function calls and their outputs get the `status` the API reports.
    Ids a client sent are kept. The caller's objects are not modified.
    """
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    return [_input_item(item) for item in value]


def _input_item(item: Mapping[str, Any]) -> Item:
    out = dict(item)
    kind = out.get("type")
    if kind is None and "role" in out:
        kind = out["type"] = "message"
    if kind == "message":
        _message(out)
    elif kind in ("function_call", "function_call_output"):
        out.setdefault("status", "completed")
    if not out.get("id") and kind != "item_reference":
        out["id"] = new_id(ID_PREFIXES.get(str(kind), "item"))
    return out


def _message(out: Item) -> None:
    assistant = out.get("role") == "assistant"
    content = out.get("content")
    if isinstance(content, str):
        content = [{"type": "output_text" if assistant else "input_text", "text": content}]
    elif isinstance(content, Sequence):
        content = [dict(part) if isinstance(part, Mapping) else part for part in content]
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "output_text":
                part.setdefault("annotations", [])
                part.setdefault("logprobs", [])
        out["content"] = content
    if assistant:
        out.setdefault("status", "completed")


# -- the chain -----------------------------------------------------------------------------


async def load_previous(
    store: ResponseStore, previous_response_id: str | None, tenant: str = NO_TENANT
) -> StoredResponse | None:
    """The caller's stored response a request continues from (None without
    `previous_response_id`), or a ChainError: 404 `previous_response_not_found` (the API's
    own error) for an unknown id or another tenant's, 400 for one still running."""
    if not previous_response_id:
        return None
    previous = await store.load(previous_response_id, tenant)
    if previous is None:
        raise ChainError(
            f"Previous response with id '{previous_response_id}' not found.",
            status=404,
            param="previous_response_id",
            code="previous_response_not_found",
            fix="it was created with store: false, deleted, or never existed; send the "
            "whole conversation as input instead",
        )
    if not previous.finished:
        raise ChainError(
            f"Previous response with id '{previous_response_id}' is still {previous.status}.",
            status=400,
            param="previous_response_id",
            code="previous_response_in_progress",
            fix="wait until it has finished (poll GET /v1/responses/{id}), or cancel it",
        )
    if not previous.conversation:
        previous = await _rebuilt(store, previous, tenant)
    return previous


async def _rebuilt(store: ResponseStore, record: StoredResponse, tenant: str) -> StoredResponse:
    """`record` with its conversation, which was never written because it ended outside its
    own request: cancelled, or failed when the process running it died. Rebuilt from what was
    stored: the chain before it (itself rebuilt where it ended so too), its input, its output.
    A chain whose earlier response is gone cannot be rebuilt: a ChainError, never a turn sent
    without its history."""
    unwritten = [record]  # the records without a conversation, newest first
    earlier: StoredResponse | None = None
    seen = {record.id}
    while (link := unwritten[-1].previous_response_id) is not None and link not in seen:
        seen.add(link)
        found = await store.load(link, tenant)
        if found is None:
            raise ChainError(
                f"Previous response with id '{record.id}' cannot be continued: the response "
                f"it continued from, '{link}', is gone, and with it the start of the "
                "conversation.",
                status=404,
                param="previous_response_id",
                code="previous_response_not_found",
                fix="send the whole conversation as input instead",
            )
        if found.conversation:
            earlier = found
            break
        unwritten.append(found)
    for one in reversed(unwritten):
        output = one.response.get("output")
        written = (
            [dict(i) for i in output if isinstance(i, Mapping)] if isinstance(output, list) else []
        )
        earlier = dataclasses.replace(
            one, conversation=[*conversation_for(earlier, one.input_items), *written]
        )
    assert earlier is not None
    return earlier


def conversation_for(
    previous: StoredResponse | None, items: Sequence[Mapping[str, Any]]
) -> list[Item]:
    """The items the next turn sends to the model: the previous response's conversation
    (its inputs and outputs, back to the start of the chain), then this request's input.
    Never any earlier `instructions`: they are not items, and are not carried over."""
    earlier = previous.conversation if previous is not None else ()
    return [dict(item) for item in (*earlier, *items)]


def record_for(
    response: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    previous: StoredResponse | None,
    *,
    tenant: str = NO_TENANT,
    worker: str | None = None,
) -> StoredResponse:
    """What to store for a response (for a stream: the Response object of the final
    `response.completed` / `.incomplete` / `.failed` event). Its conversation is the
    previous one, this input and this output, so the next turn needs one read. An unfinished
    response (`in_progress`, `queued`) has no conversation yet: nothing may continue from it.
    `worker` names the gateway process running an unfinished one."""
    output = response.get("output") or ()
    linked = previous.id if previous is not None else response.get("previous_response_id")
    record = StoredResponse(
        id=str(response["id"]),
        created_at=int(response["created_at"]),
        response=response,
        input_items=[dict(item) for item in items],
        previous_response_id=linked,
        tenant=tenant,
        worker=worker,
    )
    if not record.finished:
        return record
    conversation = [*conversation_for(previous, items), *(dict(item) for item in output)]
    return dataclasses.replace(record, conversation=conversation, worker=None)


# -- GET /v1/responses/{id}/input_items ----------------------------------------------------


def page(
    items: Sequence[Mapping[str, Any]],
    *,
    limit: int = 20,
    order: Literal["asc", "desc"] | str = "desc",
    after: str | None = None,
    before: str | None = None,
) -> dict[str, Any]:
    """One page of a response's input items: the `ResponseItemList` object.

    `order` is `desc` (newest first, the API's default) or `asc`. `after` starts the page
    just after that item id in this order; `before` ends it just before that id, keeping
    the `limit` items nearest to it. `has_more` says whether the range these bounds select
    holds more items than the page (so: is there a next page with `after=last_id`, or with
    `before` alone, a page before `before=first_id`).
    `first_id` / `last_id` are the page's first and last ids; the spec makes them strings,
    so an empty page has `""` for both.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ChainError(
            f"Invalid 'limit': expected an integer from 1 to {MAX_LIMIT}, got {limit!r}.",
            status=400,
            param="limit",
            code="invalid_value",
        )
    if order not in ("asc", "desc"):
        raise ChainError(
            f"Invalid 'order': expected 'asc' or 'desc', got {order!r}.",
            status=400,
            param="order",
            code="invalid_value",
        )
    ordered = list(items) if order == "asc" else list(reversed(items))
    ids = [str(item.get("id")) for item in ordered]
    start, end = 0, len(ordered)
    if after is not None:
        start = _position(ids, after, "after") + 1
    if before is not None:
        end = _position(ids, before, "before")
    window = ordered[start:end] if start <= end else []
    data = window[-limit:] if before is not None and after is None else window[:limit]
    return {
        "object": "list",
        "data": [dict(item) for item in data],
        "first_id": str(data[0]["id"]) if data else "",
        "last_id": str(data[-1]["id"]) if data else "",
        "has_more": len(window) > len(data),
    }


def _position(ids: list[str], item_id: str, param: str) -> int:
    try:
        return ids.index(item_id)
    except ValueError:
        raise ChainError(
            f"Invalid '{param}': no input item with id '{item_id}' in this response.",
            status=400,
            param=param,
            code="invalid_value",
            fix="pass an id from a previous page (its last_id)",
        ) from None
