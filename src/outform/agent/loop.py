"""The agent loop: ask for an envelope, run the tools it asks for, feed the results back, and
ask again, until an envelope asks for no tool (or the step limit).

Tool calls travel inside the envelope (`tool_calls`), not through a provider's own tool API,
so the loop works the same with every provider and every output mode, and each step's reply
is a validated envelope. Results go back as one user turn holding JSON: the tool's output, or
the error that stopped it (bad arguments, an unknown name, an exception), for the model to
act on. Every step is kept in the result.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from outform import jsontext
from outform.agent.envelope import Envelope, Metadata
from outform.agent.tools import Reader, Runnable, ToolResult, toolbox
from outform.errors import UsageError
from outform.parse import values
from outform.parse.hint import clip
from outform.providers.base import Message, Usage, as_message
from outform.reask import with_instructions
from outform.run import Generation, agenerate, generate
from outform.schema import compact


@dataclass(frozen=True)
class Step:
    """One round: the envelope the model sent, and what its tool calls returned."""

    number: int
    envelope: Envelope[Any]
    generation: Generation[Any]
    results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class ToolCallSummary:
    """The tool calls of one step, as a dashboard or a log line wants them."""

    step: int
    count: int
    names: tuple[str, ...]
    arguments: tuple[Mapping[str, Any], ...]
    reasoning: tuple[str | None, ...]
    errors: tuple[str | None, ...]
    metadata: Metadata


@dataclass(frozen=True)
class AgentRun:
    """Every step of a run. `complete` is False when the step limit came first: the last
    envelope then still asks for tools, which were not run."""

    steps: tuple[Step, ...]
    complete: bool
    usage: Usage
    messages: tuple[Message, ...]
    """The conversation as it stands after the last step (tool results included)."""

    @property
    def final(self) -> Envelope[Any]:
        return self.steps[-1].envelope

    @property
    def content(self) -> Any:
        return self.final.content

    def last_tool_calls(self) -> ToolCallSummary | None:
        """The most recent step that called tools, summarised; None when no step did."""
        for step in reversed(self.steps):
            calls = step.envelope.tool_calls
            if calls:
                return ToolCallSummary(
                    step=step.number,
                    count=len(calls),
                    names=tuple(c.function_name for c in calls),
                    arguments=tuple(c.arguments for c in calls),
                    reasoning=tuple(c.reasoning for c in calls),
                    errors=tuple(r.error for r in step.results),
                    metadata=step.envelope.metadata,
                )
        return None


class _Run:
    """The loop's state, shared by the sync and async drivers."""

    def __init__(
        self,
        messages: Sequence[Message | Mapping[str, Any]] | str,
        tools: Sequence[Any],
        output: Any,
        max_steps: int,
        max_result_chars: int,
        *,
        options: Mapping[str, Any],
    ) -> None:
        if not (isinstance(output, type) and issubclass(output, Envelope)):
            raise UsageError(
                f"the agent loop's output must be an Envelope type, got {output!r}",
                where="output",
                fix="pass Envelope, Envelope[YourContent], or a subclass of Envelope",
            )
        for name, value, least, default in (
            ("max_steps", max_steps, 1, 10),
            ("max_result_chars", max_result_chars, 0, 20_000),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise UsageError(
                    f"{name} must be a whole number of {least} or more, got {value!r}",
                    where=name,
                    fix=f"pass a whole number of {least} or more (the default is {default:,})",
                )
        self.output = output
        self.max_steps = max_steps
        self.max_result_chars = max_result_chars
        self.tools = toolbox(tools)
        self.reader = reader_for(options)
        for tool in self.tools.values():  # a tool whose arguments cannot be read: now
            self.reader.pipeline(tool)
        given = (
            [Message.user(messages)]
            if isinstance(messages, str)
            else [as_message(m) for m in messages]
        )
        self.conversation = with_instructions(given, describe(self.tools))
        self.steps: list[Step] = []
        self.usage = Usage()

    def record(self, generation: Generation[Any]) -> Envelope[Any] | None:
        """Keep the step's reply; the envelope when it asks for tools, else None (done)."""
        self.usage = self.usage + generation.usage
        envelope = generation.value
        if not isinstance(envelope, Envelope):
            raise UsageError("the reply is not an envelope", where="output")
        self.steps.append(Step(len(self.steps) + 1, envelope, generation))
        return envelope if envelope.tool_calls else None

    def resolve(self, envelope: Envelope[Any]) -> list[tuple[Runnable | None, Any]]:
        return [(self.tools.get(call.function_name), call) for call in envelope.tool_calls]

    def unknown(self, call: Any) -> ToolResult:
        names = ", ".join(self.tools) or "(none)"
        return ToolResult(
            call.function_name,
            call.arguments,
            error=f"there is no tool named {call.function_name!r}; the tools are: {names}",
        )

    def call(self, tool: Runnable | None, call: Any) -> ToolResult:
        """Run one requested call, its arguments read as the run reads values."""
        return tool.run(call.arguments, self.reader) if tool else self.unknown(call)

    async def acall(self, tool: Runnable | None, call: Any) -> ToolResult:
        if tool is None:
            return self.unknown(call)
        return await tool.arun(call.arguments, self.reader)

    def answer(self, results: list[ToolResult]) -> None:
        step = self.steps[-1]
        self.steps[-1] = Step(step.number, step.envelope, step.generation, tuple(results))
        said = jsontext.dumps_text(step.generation.data)  # integers of any size included
        shown = [self._clipped(r.to_dict()) for r in results]
        self.conversation += [
            Message.assistant(said),
            Message.user(
                "Tool results (JSON):\n"
                + _written(shown)
                + "\nContinue: call more tools, or answer with no tool_calls."
            ),
        ]

    def _clipped(self, result: dict[str, Any]) -> Any:
        """The result with its output (the output's JSON text) or its error (the error's
        text) clipped to `max_result_chars`, and a note saying so: the tool's name and
        arguments are always shown. One limit for both: a tool that fails with a long message
        costs the model's context what a long output would."""
        key = "output" if "output" in result else "error" if "error" in result else None
        if key is None:
            return result
        text = _written(result[key]) if key == "output" else str(result[key])
        if len(text) <= self.max_result_chars:
            return result
        return {
            **{k: v for k, v in result.items() if k != key},
            f"{key}_clipped": clip(text, self.max_result_chars) if self.max_result_chars else "",
            "note": f"the {key} had {len(text)} characters; only the start is shown",
        }

    def done(self, complete: bool) -> AgentRun:
        return AgentRun(tuple(self.steps), complete, self.usage, tuple(self.conversation))


def _written(value: Any) -> str:
    """A tool result as the model reads it: JSON, but a number JSON has none for (a tool's
    NaN or infinity) spelled as JSON5 spells it, never `null` (orjson's writing: a value
    changed without a word)."""
    try:
        text = orjson.dumps(value, default=str).decode()
    except TypeError:  # an integer beyond 64 bits: every digit, as the standard library writes
        return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    if "null" in text and values.nonfinite_in(value):
        return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    return text


_CALL_KEYWORDS = frozenset(
    name
    for name, parameter in inspect.signature(generate).parameters.items()
    if parameter.kind is parameter.KEYWORD_ONLY
)
"""generate()'s own keywords: the run's other options are parse options."""


def reader_for(options: Mapping[str, Any]) -> Reader:
    """How the run reads tools' arguments: as its generate() calls read replies (the same
    level, parse options and profile), told to the same observers, under the same labels."""
    return Reader(
        level=options.get("level"),
        options={k: v for k, v in options.items() if k not in _CALL_KEYWORDS},
        profile=options.get("profile"),
        observers=options.get("observers") or (),
        labels=options.get("labels"),
    )


def describe(tools: Mapping[str, Runnable]) -> str | None:
    """The system text that offers the tools: name, parameters (compact), description."""
    if not tools:
        return None
    lines = [
        "You can call tools. To call them, list them in `tool_calls` (function_name and "
        'arguments) and set metadata.response_type to "tool_call"; their results come back '
        "in the next message. When you can answer, reply with an empty `tool_calls`. Tools:"
    ]
    for tool in tools.values():
        bare = {k: v for k, v in tool.parameters.items() if k not in ("title", "description")}
        shape = compact.render(bare).replace("\n", "\n  ")
        about = f"  // {' '.join(tool.description.split())}" if tool.description else ""
        lines.append(f"- {tool.name}: {shape}{about}")
    return "\n".join(lines)


def run(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    *,
    tools: Sequence[Any] = (),
    output: Any = Envelope,
    max_steps: int = 10,
    max_result_chars: int = 20_000,
    **options: Any,
) -> AgentRun:
    """Run the agent loop (see the module docstring); `options` go to every generate() call
    (mode, retries, profile, transport, base_url, ...). See docs/agents.md."""
    state = _Run(messages, tools, output, max_steps, max_result_chars, options=options)
    asynchronous = [name for name, tool in state.tools.items() if tool.is_async]
    if asynchronous:
        raise UsageError(
            f"tool(s) {', '.join(asynchronous)} are async functions",
            where="tools",
            fix="use outform.agent.arun() for async tools",
        )
    for _ in range(max_steps):
        envelope = state.record(generate(model, state.conversation, output, **options))
        if envelope is None:
            return state.done(True)
        if len(state.steps) == max_steps:
            break  # the limit: the tools asked for last are not run, the caller sees them
        state.answer([state.call(tool, call) for tool, call in state.resolve(envelope)])
    return state.done(False)


async def arun(
    model: str,
    messages: Sequence[Message | Mapping[str, Any]] | str,
    *,
    tools: Sequence[Any] = (),
    output: Any = Envelope,
    max_steps: int = 10,
    max_result_chars: int = 20_000,
    **options: Any,
) -> AgentRun:
    """run(), on asyncio: async tools are awaited, blocking ones run in a worker thread."""
    state = _Run(messages, tools, output, max_steps, max_result_chars, options=options)
    for _ in range(max_steps):
        envelope = state.record(await agenerate(model, state.conversation, output, **options))
        if envelope is None:
            return state.done(True)
        if len(state.steps) == max_steps:
            break  # the limit: the tools asked for last are not run, the caller sees them
        state.answer([await state.acall(tool, call) for tool, call in state.resolve(envelope)])
    return state.done(False)


__all__ = ["AgentRun", "Step", "ToolCallSummary", "arun", "describe", "run"]
