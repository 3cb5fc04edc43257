"""Tools the agent loop can run: plain Python callables and `AgentTool` sub-calls.

A callable's signature is its contract: the arguments a model sends are validated against the
parameters' annotations (by Pydantic) before the function runs, and what is wrong comes back
to the model as the tool's result, not as an exception to the caller. The same annotations
give the parameter schema shown to the model.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_type_hints

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_jsonable_python

from outform.errors import UsageError
from outform.providers.base import ToolCall
from outform.run import AgentTool
from outform.schema.compiled import compile_schema
from outform.schema.pointer import from_parts, readable
from outform.trace.redact import scrub_text


@dataclass(frozen=True)
class ToolResult:
    """What one requested call returned (`output`), or why it did not run (`error`)."""

    function_name: str
    arguments: Mapping[str, Any]
    output: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"function_name": self.function_name, "arguments": self.arguments}
        if self.error is None:
            out["output"] = self.output
        else:
            out["error"] = self.error
        return out


class FunctionTool:
    """A Python function offered to the model; `arguments` are validated against its
    signature before it runs."""

    def __init__(
        self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
    ) -> None:
        self.fn = fn
        self.name: str = name or str(getattr(fn, "__name__", ""))
        if not self.name or self.name == "<lambda>":
            raise UsageError(
                "a tool needs a name",
                where=repr(fn),
                fix="pass a def function, or FunctionTool(fn, name=...)",
            )
        self.description = description or inspect.getdoc(fn) or ""
        self.is_async = inspect.iscoroutinefunction(fn)
        self.arguments = _arguments_model(fn, self.name)
        self.parameters: dict[str, Any] = self.arguments.model_json_schema()

    def check(self, arguments: Mapping[str, Any]) -> dict[str, Any] | str:
        """The validated keyword arguments, or the message saying what is wrong."""
        try:
            model = self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            return "invalid arguments: " + "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(all)'}: {e['msg']}" for e in exc.errors()
            )
        return {field: getattr(model, field) for field in type(model).model_fields}

    def run(self, arguments: Mapping[str, Any]) -> ToolResult:
        checked = self.check(arguments)
        if isinstance(checked, str):
            return ToolResult(self.name, arguments, error=checked)
        try:
            return ToolResult(self.name, arguments, _jsonable(self.fn(**checked)))
        except Exception as exc:  # a tool's failure is the model's to read, not the caller's
            return ToolResult(self.name, arguments, error=_failure(exc))

    async def arun(self, arguments: Mapping[str, Any]) -> ToolResult:
        checked = self.check(arguments)
        if isinstance(checked, str):
            return ToolResult(self.name, arguments, error=checked)
        try:
            if self.is_async:
                output = await self.fn(**checked)
            else:  # a blocking function must not stall the event loop
                output = await asyncio.to_thread(self.fn, **checked)
            return ToolResult(self.name, arguments, _jsonable(output))
        except Exception as exc:
            return ToolResult(self.name, arguments, error=_failure(exc))


class SubCallTool:
    """An `AgentTool` (a generate() call exposed as a tool) in the loop: the arguments are
    checked against its parameter schema, and its validated JSON is the result."""

    is_async = False

    def __init__(self, tool: AgentTool) -> None:
        self.tool = tool
        self.name = tool.tool.name
        self.description = tool.tool.description or ""
        self.parameters: dict[str, Any] = dict(tool.tool.parameters)
        self._compiled = compile_schema(self.parameters)

    def check(self, arguments: Mapping[str, Any]) -> str | None:
        errors = list(self._compiled.validator.iter_errors(dict(arguments)))
        if not errors:
            return None
        return "invalid arguments: " + "; ".join(
            f"{readable(from_parts(e.instance_path))}: {e.message}" for e in errors[:10]
        )

    def _call(self, arguments: Mapping[str, Any]) -> ToolCall:
        return ToolCall(f"call_{self.name}", self.name, orjson.dumps(dict(arguments)).decode())

    def run(self, arguments: Mapping[str, Any]) -> ToolResult:
        problem = self.check(arguments)
        if problem is not None:
            return ToolResult(self.name, arguments, error=problem)
        try:
            return ToolResult(self.name, arguments, _output(self.tool(self._call(arguments)).text))
        except Exception as exc:
            return ToolResult(self.name, arguments, error=_failure(exc))

    async def arun(self, arguments: Mapping[str, Any]) -> ToolResult:
        problem = self.check(arguments)
        if problem is not None:
            return ToolResult(self.name, arguments, error=problem)
        try:
            message = await self.tool.acall(self._call(arguments))
            return ToolResult(self.name, arguments, _output(message.text))
        except Exception as exc:
            return ToolResult(self.name, arguments, error=_failure(exc))


Runnable = FunctionTool | SubCallTool


def toolbox(tools: Sequence[Any]) -> dict[str, Runnable]:
    """The tools by name; UsageError for something that is not a tool, or a name used twice."""
    box: dict[str, Runnable] = {}
    for tool in tools:
        runnable: Runnable
        if isinstance(tool, FunctionTool | SubCallTool):
            runnable = tool
        elif isinstance(tool, AgentTool):
            runnable = SubCallTool(tool)
        elif callable(tool):
            runnable = FunctionTool(tool)
        else:
            raise UsageError(
                f"not a tool: {tool!r}",
                where="tools",
                fix="pass Python functions, FunctionTool or AgentTool (outform.as_tool) objects",
            )
        if runnable.name in box:
            raise UsageError(
                f"two tools are named {runnable.name!r}",
                where="tools",
                fix="give one of them another name: FunctionTool(fn, name=...)",
            )
        box[runnable.name] = runnable
    return box


def _arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    try:
        signature = inspect.signature(fn)
        hints = get_type_hints(fn)
    except (TypeError, ValueError, NameError) as exc:
        raise UsageError(
            f"the signature of tool {name!r} cannot be read: {exc}",
            where=name,
            fix="annotate its parameters with importable types",
        ) from None
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise UsageError(
                f"tool {name!r} takes *{parameter.name}: its arguments cannot be checked",
                where=f"{name}({parameter.name})",
                fix="name every parameter the model may pass",
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise UsageError(
                f"tool {name!r} has a positional-only parameter {parameter.name!r}",
                where=f"{name}({parameter.name})",
                fix="the model passes arguments by name: drop the '/' from the signature",
            )
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    config = ConfigDict(extra="forbid", title=name)
    model: type[BaseModel] = create_model(f"{name}_arguments", __config__=config, **fields)
    return model


def _jsonable(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception:  # an object with no JSON form: its text
        return str(value)


def _output(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _failure(exc: Exception) -> str:
    """A tool's exception as the model reads it, with every secret outform knows (a key the
    exception's message quotes) masked: the model's provider is no place for one either."""
    return scrub_text(f"{type(exc).__name__}: {exc}")


__all__ = ["FunctionTool", "Runnable", "SubCallTool", "ToolResult", "toolbox"]
