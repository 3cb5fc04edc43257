"""Chat Completions chunks -> Responses stream events: one stateful translator per response.

The event order is the API's: `response.created`, `response.in_progress`, then per output
item `output_item.added` -> (`content_part.added` -> deltas -> `*.done` -> `content_part.done`)
-> `output_item.done`, then `response.completed` (or `.incomplete`, or `.failed`) carrying the
whole Response. Rules that real clients depend on (the OpenAI SDK's stream accumulator):

* items are created lazily, on the first piece of their content: a role-only first chunk
  creates nothing, so a tool-only turn has no empty message item;
* each item gets the next `output_index` when it is added, and keeps its id to the end;
* `output_text.done` carries the whole text, `function_call_arguments.done` the name and the
  whole arguments; a refusal is a `refusal` part with `response.refusal.*` events;
* the terminal event waits for the end of the backend's stream, so the usage of the trailing
  `choices: []` chunk is in it;
* the final Response equals the one the non-streamed path builds from the same answer
  (`output.response_from_completion`), ids and timestamps aside.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import orjson

from outform.gateway.answers import Malformed, check_chunk
from outform.gateway.chain import new_id
from outform.gateway.events import Sequence
from outform.gateway.output import (
    Shell,
    arguments_text,
    content_text,
    function_call_item,
    message_item,
    output_text_part,
    reasoning_item,
    reasoning_text,
    refusal_part,
    response_usage,
    status_of,
)

logger = logging.getLogger("outform.gateway")


class StreamFailure(Exception):  # noqa: N818 - a condition of the backend's stream, not a bug
    """The backend's stream broke, stalled, reported an error, sent an event that is not
    JSON, or ended before it was whole. `timeout` names the limit that ran out, if one did;
    `code` is the error code a Chat Completions stream's `error` event carries."""

    def __init__(
        self, message: str, timeout: str | None = None, *, code: str = "backend_error"
    ) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.code = f"backend_{timeout}_timeout" if timeout else code


def chat_error(exc: Exception) -> dict[str, Any]:
    """The `error` event that ends a Chat Completions stream broken by `exc`."""
    code = exc.code if isinstance(exc, StreamFailure) else getattr(exc, "code", None)
    return {
        "error": {
            "message": failure_message(exc),
            "type": "server_error",
            "param": None,
            "code": code if isinstance(code, str) else "server_error",
        }
    }


INTERNAL = {
    "code": "server_error",
    "message": "Internal error in the gateway while streaming (see its log).",
}
"""The error of a stream ended by a fault of the gateway's own."""


def failure_message(exc: Exception) -> str:
    """What a `response.failed` says about the exception that ended its stream (the stream
    and the stored row pass the gateway's scrubber: `gateway.scrub`)."""
    if isinstance(exc, StreamFailure):
        return str(exc)
    message = getattr(exc, "message", None)  # a GatewayError raised while streaming
    if isinstance(message, str):
        return message
    logger.error("a stream failed: %s", exc, exc_info=exc)
    return INTERNAL["message"]


class StreamEnd:
    """Reads a Chat Completions stream's events, checks each (`gateway.answers`), and knows
    whether the backend said the answer was whole: a `finish_reason` for every choice it
    streamed (one, `index` 0, unless the request asked for `n` > 1), or `data: [DONE]`.
    `check()` at the end of the bytes raises `StreamFailure` for a stream that was cut off (a
    clean chunked end or a closed connection are not the backend's word that the answer is
    complete); once `finished`, the answer is whole, and a stream that breaks after that (no
    usage chunk, no `[DONE]`) has lost nothing of it."""

    __slots__ = ("_ended", "_open", "done_seen", "failed", "finished", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.finished = False
        """Every choice streamed so far has its finish_reason (index 0 among them)."""
        self.done_seen = False
        self.failed = False
        """An error event came: the stream ended, with the error (passed on as it is)."""
        self._open: set[int] = set()
        """Choices that streamed without their finish_reason yet."""
        self._ended: set[int] = set()
        """Choices whose finish_reason came."""

    @property
    def whole(self) -> bool:
        """The backend said the answer is complete: what follows can only be its usage."""
        return self.finished or self.done_seen

    def see(self, data: bytes) -> dict[str, Any] | None:
        """The event of one `data` field (None for `[DONE]`)."""
        if data.strip() == b"[DONE]":
            self.done_seen = True
            return None
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise StreamFailure(
                f"{self.name.capitalize()} sent a stream event that is not JSON: "
                f"{data[:80].decode('utf-8', 'replace')!r}"
            ) from None
        if not isinstance(event, dict):
            raise StreamFailure(f"{self.name.capitalize()} sent a stream event that is no object")
        if event.get("error") and not event.get("choices"):
            self.failed = True
            return event
        try:
            check_chunk(event)
        except Malformed as exc:
            raise StreamFailure(
                f"{self.name.capitalize()} sent a stream event that is not a valid Chat "
                f"Completions chunk: {exc}"
            ) from None
        for choice in event.get("choices") or ():
            index = choice.get("index") or 0
            if choice.get("finish_reason"):
                self._ended.add(index)
                self._open.discard(index)
            elif index not in self._ended:
                self._open.add(index)
        self.finished = 0 in self._ended and not self._open
        return event

    def check(self) -> None:
        if not (self.finished or self.done_seen or self.failed):
            raise StreamFailure(
                f"{self.name.capitalize()}'s stream ended without a finish_reason or [DONE]: "
                "the answer was cut off",
                code="backend_stream_truncated",
            )


class _Part:
    __slots__ = ("index", "kind", "pieces")

    def __init__(self, kind: str, index: int) -> None:
        self.kind = kind
        self.index = index
        self.pieces: list[str] = []

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def final(self) -> dict[str, Any]:
        if self.kind == "refusal":
            return refusal_part(self.text)
        if self.kind == "reasoning_text":
            return {"type": "reasoning_text", "text": self.text}
        return output_text_part(self.text)


class _Open:
    """An item that was added and is not done yet."""

    __slots__ = ("arguments", "index", "item", "part")

    def __init__(self, item: dict[str, Any], index: int) -> None:
        self.item = item
        self.index = index
        self.part: _Part | None = None
        self.arguments: list[str] = []


class StreamTranslator:
    """Feed it the backend's chunks; it returns the SSE bytes to send for each."""

    def __init__(self, shell: Shell) -> None:
        self.shell = shell
        self.items: list[dict[str, Any]] = []
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.response: dict[str, Any] | None = None
        """The final Response, once `finish()` or `abort()` ran."""
        self._seq = Sequence()
        self._reasoning: _Open | None = None
        self._message: _Open | None = None
        self._calls: dict[int, _Open] = {}

    # -- events --------------------------------------------------------------------------------

    def start(self) -> bytes:
        snapshot = self.shell.build("in_progress", [])
        return self._seq.event("response.created", {"response": snapshot}) + self._seq.event(
            "response.in_progress", {"response": snapshot}
        )

    def feed(self, chunk: Mapping[str, Any]) -> bytes:
        error = chunk.get("error")
        if error and not chunk.get("choices"):
            message = error.get("message") if isinstance(error, Mapping) else error
            raise StreamFailure(f"the backend reported an error mid-stream: {message}")
        out: list[bytes] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            thinking = reasoning_text(delta)
            if thinking:
                self._reasoning_delta(thinking, out)
            text = content_text(delta.get("content"))
            if text:
                self._content_delta("output_text", text, out)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                self._content_delta("refusal", refusal, out)
            for position, call in enumerate(delta.get("tool_calls") or ()):
                self._call_delta(position, call, out)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        usage = chunk.get("usage")
        if usage:
            self.usage = usage
        return b"".join(out)

    def finish(self) -> bytes:
        """Close every open item; `response` is then the final Response, which `terminal()`
        sends (or, should storing it fail, `abort()` replaces)."""
        out: list[bytes] = []
        status, incomplete = status_of(self.finish_reason)
        item_status = "incomplete" if incomplete else "completed"
        if not self.items:  # nothing at all came: one empty message, as the non-streamed path
            self._content_delta("output_text", "", out, empty=True)
        for open_item in sorted(self._open(), key=lambda o: o.index):
            self._close(open_item, item_status, out)
        self.response = self.shell.build(
            status, self.items, response_usage(self.usage), incomplete=incomplete
        )
        return b"".join(out)

    def abort(self, message: str, *, output: bool = True) -> None:
        """The stream broke (or its response could not be stored): `response` becomes a
        failed Response, what had arrived marked incomplete (none of it without `output`);
        `terminal()` sends it. It never raises: the failure path must not depend on the code
        that just failed, so should gathering what had arrived fail too, the Response is the
        failed one with no output (the fault logged)."""
        error = {"code": "server_error", "message": message}
        if not output:
            self.items = []
            self._reasoning = self._message = None
            self._calls = {}
            self.response = self.shell.build("failed", [], error=error)
            return
        try:
            for open_item in self._open():
                if open_item.part is not None:
                    open_item.item["content"].append(open_item.part.final())
                    open_item.part = None
                if open_item.arguments:
                    open_item.item["arguments"] = "".join(open_item.arguments)
                open_item.item["status"] = "incomplete"
            self._reasoning = self._message = None
            self._calls = {}
            self.response = self.shell.build(
                "failed", self.items, response_usage(self.usage), error=error
            )
        except Exception:
            logger.exception("gathering the output of failed stream %s failed", self.shell.id)
            self.response = self.shell.build("failed", [], error=error)

    def terminal(self) -> bytes:
        """The last event: `response.completed`, `.incomplete` or `.failed`, with the whole
        Response (after `finish()` or `abort()`). Should that Response not encode, the event
        is `response.failed` with a Response built from the request alone (never a stream
        without its end)."""
        assert self.response is not None, "finish() or abort() first"
        kind = {"completed": "response.completed", "failed": "response.failed"}.get(
            self.response["status"], "response.incomplete"
        )
        try:
            return self._seq.event(kind, {"response": self.response})
        except Exception:
            logger.exception("encoding the end of stream %s failed", self.shell.id)
            self.response = self.shell.build("failed", [], error=dict(INTERNAL))
            return self._seq.event("response.failed", {"response": self.response})

    # -- items ---------------------------------------------------------------------------------

    def _open(self) -> list[_Open]:
        opened = [o for o in (self._reasoning, self._message) if o is not None]
        return opened + list(self._calls.values())

    def _add(self, item: dict[str, Any], out: list[bytes]) -> _Open:
        opened = _Open(item, len(self.items))
        self.items.append(item)
        out.append(
            self._seq.event(
                "response.output_item.added", {"output_index": opened.index, "item": item}
            )
        )
        return opened

    def _reasoning_delta(self, text: str, out: list[bytes]) -> None:
        opened = self._reasoning
        if opened is None:
            self._close_message(out)
            opened = self._reasoning = self._add(
                reasoning_item(new_id("rs"), "", "in_progress"), out
            )
            self._open_part(opened, "reasoning_text", out)
        assert opened.part is not None
        opened.part.pieces.append(text)
        out.append(
            self._seq.event(
                "response.reasoning_text.delta",
                {
                    "item_id": opened.item["id"],
                    "output_index": opened.index,
                    "content_index": opened.part.index,
                    "delta": text,
                },
            )
        )

    def _content_delta(
        self, kind: str, text: str, out: list[bytes], *, empty: bool = False
    ) -> None:
        opened = self._message
        if opened is None:
            if self._reasoning is not None:
                self._close(self._reasoning, "completed", out)
            opened = self._message = self._add(message_item(new_id("msg"), [], "in_progress"), out)
        if opened.part is None or opened.part.kind != kind:
            if opened.part is not None:
                self._close_part(opened, out)
            self._open_part(opened, kind, out)
        if empty:
            return
        part = opened.part
        assert part is not None
        part.pieces.append(text)
        where = {
            "item_id": opened.item["id"],
            "output_index": opened.index,
            "content_index": part.index,
            "delta": text,
        }
        if kind == "refusal":
            out.append(self._seq.event("response.refusal.delta", where))
        else:
            where["logprobs"] = []
            out.append(self._seq.event("response.output_text.delta", where))

    def _call_delta(self, position: int, call: Any, out: list[bytes]) -> None:
        if not isinstance(call, Mapping):
            return
        index = call.get("index", position)
        function = call.get("function") or {}
        opened = self._calls.get(index)
        if opened is None:
            self._close_message(out)
            if self._reasoning is not None:
                self._close(self._reasoning, "completed", out)
            item = function_call_item(
                new_id("fc"),
                str(call.get("id") or new_id("call")),
                str(function.get("name") or ""),
                "",
                "in_progress",
            )
            opened = self._calls[index] = self._add(item, out)
        elif function.get("name") and not opened.item["name"]:
            opened.item["name"] = function["name"]
        arguments = arguments_text(function.get("arguments"))
        if arguments:
            opened.arguments.append(arguments)
            out.append(
                self._seq.event(
                    "response.function_call_arguments.delta",
                    {
                        "item_id": opened.item["id"],
                        "output_index": opened.index,
                        "delta": arguments,
                    },
                )
            )

    # -- closing -------------------------------------------------------------------------------

    def _open_part(self, opened: _Open, kind: str, out: list[bytes]) -> None:
        part = opened.part = _Part(kind, len(opened.item["content"]))
        empty = {"type": kind, "text": ""} if kind == "reasoning_text" else _Part(kind, 0).final()
        out.append(
            self._seq.event(
                "response.content_part.added",
                {
                    "item_id": opened.item["id"],
                    "output_index": opened.index,
                    "content_index": part.index,
                    "part": empty,
                },
            )
        )

    def _close_part(self, opened: _Open, out: list[bytes]) -> None:
        part = opened.part
        if part is None:
            return
        opened.part = None
        where = {
            "item_id": opened.item["id"],
            "output_index": opened.index,
            "content_index": part.index,
        }
        text = part.text
        if part.kind == "refusal":
            out.append(self._seq.event("response.refusal.done", {**where, "refusal": text}))
        elif part.kind == "reasoning_text":
            out.append(self._seq.event("response.reasoning_text.done", {**where, "text": text}))
        else:
            out.append(
                self._seq.event(
                    "response.output_text.done", {**where, "text": text, "logprobs": []}
                )
            )
        final = part.final()
        opened.item["content"].append(final)
        out.append(self._seq.event("response.content_part.done", {**where, "part": final}))

    def _close_message(self, out: list[bytes]) -> None:
        if self._message is not None:
            self._close(self._message, "completed", out)

    def _close(self, opened: _Open, status: str, out: list[bytes]) -> None:
        item = opened.item
        if item["type"] == "function_call":
            item["arguments"] = "".join(opened.arguments)
            out.append(
                self._seq.event(
                    "response.function_call_arguments.done",
                    {
                        "item_id": item["id"],
                        "output_index": opened.index,
                        "name": item["name"],
                        "arguments": item["arguments"],
                    },
                )
            )
            self._calls = {k: v for k, v in self._calls.items() if v is not opened}
        else:
            self._close_part(opened, out)
            if opened is self._message:
                self._message = None
            elif opened is self._reasoning:
                self._reasoning = None
        item["status"] = status
        out.append(
            self._seq.event(
                "response.output_item.done", {"output_index": opened.index, "item": item}
            )
        )


# -- whole answers as chunks ---------------------------------------------------------------


def completion_chunks(completion: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A `chat.completion` as the `chat.completion.chunk`s a server would have streamed for
    it: one chunk with the whole message, one with the finish reason, one with the usage.
    Used where the gateway has a whole answer and the client asked for a stream (enforcement
    mode, a backend that ignores `stream: true`, native providers in the Chat endpoint)."""
    head = {
        "id": completion.get("id") or new_id("chatcmpl"),
        "object": "chat.completion.chunk",
        "created": completion.get("created") or 0,
        "model": completion.get("model") or "",
    }
    if completion.get("system_fingerprint"):
        head["system_fingerprint"] = completion["system_fingerprint"]
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant"}
    for key in ("reasoning_content", "reasoning"):
        if message.get(key):
            delta[key] = message[key]
    delta["content"] = message.get("content") or ""
    if message.get("refusal"):
        delta["refusal"] = message["refusal"]
    calls = message.get("tool_calls") or []
    if calls:
        delta["tool_calls"] = [
            {
                "index": index,
                "id": call.get("id"),
                "type": "function",
                "function": {
                    "name": (call.get("function") or {}).get("name"),
                    "arguments": arguments_text((call.get("function") or {}).get("arguments")),
                },
            }
            for index, call in enumerate(calls)
        ]
    chunks: list[dict[str, Any]] = [
        {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
        },
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {},
                    "logprobs": None,
                    "finish_reason": choice.get("finish_reason") or "stop",
                }
            ],
        },
    ]
    if completion.get("usage"):
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


__all__ = [
    "StreamEnd",
    "StreamFailure",
    "StreamTranslator",
    "chat_error",
    "completion_chunks",
    "failure_message",
]
