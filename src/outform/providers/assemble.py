"""Put a streamed reply back together: neutral deltas in, one neutral `Response` out."""

from __future__ import annotations

from dataclasses import dataclass, field

from outform.providers.base import Delta, FinishReason, Response, ToolCall, Usage


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class Assembler:
    """Collects every delta of one streamed reply (text may instead go to a stream parser)."""

    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish: FinishReason | None = None
    _calls: dict[int, _Call] = field(default_factory=dict)

    def add(self, delta: Delta) -> None:
        if delta.kind == "text":
            self.text.append(delta.text)
        elif delta.kind == "thinking":
            self.thinking.append(delta.text)
        elif delta.kind == "refusal":
            self.refusal.append(delta.text)
        elif delta.kind == "tool_call":
            call = self._calls.setdefault(delta.index, _Call())
            call.id = delta.tool_call_id or call.id
            call.name = delta.tool_name or call.name
            call.arguments.append(delta.text)
        elif delta.kind == "usage" and delta.usage is not None:
            self.usage = self.usage + delta.usage
        elif delta.kind == "finish" and delta.finish_reason is not None:
            self.finish = delta.finish_reason

    def response(self, text: str | None = None, *, model: str | None = None) -> Response:
        """The reply so far; `text` replaces the collected text (when a parser kept it)."""
        calls = tuple(
            ToolCall(call.id or f"call_{index}", call.name, "".join(call.arguments))
            for index, call in sorted(self._calls.items())
        )
        return Response(
            text="".join(self.text) if text is None else text,
            finish_reason=self.finish or "other",
            usage=self.usage,
            tool_calls=calls,
            refusal="".join(self.refusal) or None,
            thinking="".join(self.thinking) or None,
            model=model,
            end_stated=self.finish is not None,
        )
