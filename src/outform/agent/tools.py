"""Tools the agent loop can run: plain Python callables and `AgentTool` sub-calls.

A callable's signature is its contract: its annotations give the parameter schema shown to
the model, and the arguments a model sends are read as outform reads any typed value, through
the pipeline (`Reader`): the conversions the parse level allows are made and recorded on the
result, and what it refuses comes back to the model as the tool's result, not as an exception
to the caller. A signature no JSON can fill is refused (UsageError) when the tool is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_type_hints

import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_core import to_json, to_jsonable_python

from outform import jsontext
from outform.errors import InputError, OutformError, OutputError, UsageError
from outform.parse import Change, ParseResult, Pipeline, RetryHint, Violation, pipeline_for
from outform.profile import active
from outform.providers.base import ToolCall
from outform.run import AgentTool
from outform.schema import pointer
from outform.schema.pointer import parts, readable
from outform.trace import Labels, labels, runtime
from outform.trace.events import Event, Observer, dispatch
from outform.trace.redact import scrub_text
from outform.trace.tracer import record_parse


@dataclass(frozen=True)
class ToolResult:
    """What one requested call returned (`output`), or why it did not run (`error`).

    `arguments` are the model's, as it sent them; `received` the arguments the tool was called
    with (None when it was not called: bad arguments, an unknown name), and `changes` what
    outform changed to get them from `arguments` (paths under the arguments, as in
    `ParseResult.changes`)."""

    function_name: str
    arguments: Mapping[str, Any]
    output: Any = None
    error: str | None = None
    received: Mapping[str, Any] | None = None
    changes: tuple[Change, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """The result as the model reads it: its arguments as it sent them, then the output
        or the error."""
        out: dict[str, Any] = {"function_name": self.function_name, "arguments": self.arguments}
        if self.error is None:
            out["output"] = self.output
        else:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Reading:
    """A tool's arguments as read: what the tool gets (`received`) and the `changes` made to
    get it, or the `error` that keeps it from running (for the model to fix)."""

    received: dict[str, Any] | None
    changes: tuple[Change, ...] = ()
    error: str | None = None


class Reader:
    """How a run reads tools' arguments: outform's pipeline, with the run's parse settings
    (`level`, parse options, `profile`), observers and labels, so an argument is converted and
    recorded (events, the trace store) exactly as a reply's value of the same type would be.
    One pipeline per tool, compiled on first use."""

    def __init__(
        self,
        *,
        level: str | None = None,
        options: Mapping[str, Any] | None = None,
        profile: str | None = None,
        observers: Iterable[Observer] = (),
        labels: Labels | Mapping[str, Any] | None = None,
    ) -> None:
        self.level = level
        self.options = dict(options or {})
        self.profile = profile
        self.observers = tuple(observers)
        self.labels = Labels.of(labels)
        self._pipelines: dict[int, tuple[Runnable, Pipeline[Any]]] = {}

    def pipeline(self, tool: Runnable) -> Pipeline[Any]:
        """The tool's pipeline (compiled now, and kept, the first time)."""
        kept = self._pipelines.get(id(tool))
        if kept is not None:
            return kept[1]
        built = pipeline_for(
            tool.reads_as,
            level=self.level,
            observers=self.observers,
            profile=self.profile,
            **self.options,
        )
        self._pipelines[id(tool)] = (tool, built)
        return built

    def read(self, tool: Runnable, arguments: Mapping[str, Any]) -> Reading:
        """The arguments through the tool's pipeline. A key the pipeline would drop is
        refused instead: the model meant something by it, and the tool never hears of it."""
        pipeline = self.pipeline(tool)
        try:
            text = _json_text(arguments)
        except (TypeError, ValueError) as exc:  # a caller's own arguments, not a model's JSON
            return Reading(None, error=_invalid([f"not JSON: {exc}"]))
        label = self.labels
        try:
            with labels(step=label.step, agent=label.agent, tags=label.tags), active(self.profile):
                result = _parse(pipeline, tool, text)
        except _RefusedError as error:
            return Reading(None, error=_invalid(error.told))
        except OutputError as error:
            told = error.hint.violations[:_MAX_TOLD]
            return Reading(None, error=_invalid(v.line() for v in told))
        except InputError as error:
            return Reading(None, error=_invalid([error.what]))
        value = result.value
        if isinstance(value, BaseModel):  # a function's parameters, each under its alias
            value = {
                info.alias or field: getattr(value, field)
                for field, info in type(value).model_fields.items()
            }
        return Reading(dict(value), result.changes)


_MAX_TOLD = 10
"""Violations told to the model per call, at most."""


class _RefusedError(OutputError):
    """Arguments the pipeline made valid only by dropping keys that name no parameter (or no
    field): refused, as a reply the pipeline could not make valid is. `told`: what the model
    reads."""

    def __init__(self, told: list[str], hint: RetryHint, result: ParseResult[Any]) -> None:
        self.told = told
        super().__init__("the arguments name no such parameter", hint=hint, result=result)


def _parse(pipeline: Pipeline[Any], tool: Runnable, text: str) -> ParseResult[Any]:
    """The arguments read by `pipeline`, observed and recorded as a reply parsed on its own
    is (`Pipeline.run`), with one more rule: a key the pipeline dropped is refused
    (`_RefusedError`), and observed and recorded so: the observers' events end with
    `output.coercion.fail`, and the run ends `invalid` with an `unexpected` violation per
    object, not `valid` with a change, since the tool never ran. One outcome for the trace
    and the ToolResult."""
    try:
        result = pipeline.run(text, record=False)  # observed and recorded below
    except OutformError as error:
        failed = getattr(error, "result", None)
        if failed is not None:
            dispatch(failed.events, pipeline.observers)
        _record(pipeline, error)
        raise
    dropped = [c for c in result.changes if c.transform == "drop_unexpected_key"]
    if not dropped:
        dispatch(result.events, pipeline.observers)
        _record(pipeline, result)
        return result
    violations = _unexpected_violations(dropped, tool)
    said = "; ".join(v.line() for v in violations)
    refusal = Event("output.coercion.fail", "validate", pipeline.schema_hash, detail=said)
    dispatch((*result.events, refusal), pipeline.observers)
    refused = _RefusedError([_unexpected(c, tool) for c in dropped], RetryHint(violations), result)
    _record(pipeline, refused)
    raise refused


def _record(pipeline: Pipeline[Any], outcome: ParseResult[Any] | OutformError) -> None:
    """Record a reading as `Pipeline.run` records a parse: a value read without a change is
    only counted (the fast path's tally), any other is a run of its own (its changes and
    `valid`, or its violations and `invalid`); a shadow-mode reading is not recorded."""
    if pipeline.options.shadow:
        return
    if isinstance(outcome, ParseResult) and not outcome.changes:
        tally = runtime.tally
        if tally is not None:
            tally()
        return
    recorder = runtime.active()
    if recorder is None:
        return

    def replay() -> ParseResult[Any]:
        if isinstance(outcome, ParseResult):
            return outcome
        raise outcome

    with contextlib.suppress(OutformError):  # raised again by the caller, as it was
        record_parse(replay, recorder, schema_hash=pipeline.schema_hash)


class FunctionTool:
    """A Python function offered to the model; its `arguments` are read into its
    parameters' types (see `Reader`) before it runs."""

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
        self.arguments, self.parameters = _arguments_model(fn, self.name)

    @property
    def reads_as(self) -> type[BaseModel]:
        """The type the arguments are read as: a model of the function's parameters."""
        return self.arguments

    def check(self, arguments: Mapping[str, Any], reader: Reader | None = None) -> Reading:
        """The keyword arguments the function gets and the changes made, or the message
        saying what is wrong (`reader`: the loop's; by default the configured level)."""
        return (reader or Reader()).read(self, arguments)

    def run(self, arguments: Mapping[str, Any], reader: Reader | None = None) -> ToolResult:
        reading = self.check(arguments, reader)
        if reading.received is None:
            return _refused(self.name, arguments, reading)
        try:
            output = _jsonable(self.fn(**reading.received))
        except Exception as exc:  # a tool's failure is the model's to read, not the caller's
            return _ran(self.name, arguments, reading, error=_failure(exc))
        return _ran(self.name, arguments, reading, output)

    async def arun(self, arguments: Mapping[str, Any], reader: Reader | None = None) -> ToolResult:
        reading = self.check(arguments, reader)
        if reading.received is None:
            return _refused(self.name, arguments, reading)
        try:
            if self.is_async:
                output = await self.fn(**reading.received)
            else:  # a blocking function must not stall the event loop
                output = await asyncio.to_thread(self.fn, **reading.received)
        except Exception as exc:
            return _ran(self.name, arguments, reading, error=_failure(exc))
        return _ran(self.name, arguments, reading, _jsonable(output))


class SubCallTool:
    """An `AgentTool` (a generate() call exposed as a tool) in the loop: the arguments are
    read against its parameter schema (see `Reader`), and its validated JSON is the result."""

    is_async = False

    def __init__(self, tool: AgentTool) -> None:
        self.tool = tool
        self.name = tool.tool.name
        self.description = tool.tool.description or ""
        self.parameters: dict[str, Any] = dict(tool.tool.parameters)

    @property
    def reads_as(self) -> dict[str, Any]:
        """The schema the arguments are read against."""
        return self.parameters

    def check(self, arguments: Mapping[str, Any], reader: Reader | None = None) -> Reading:
        """The arguments the sub-call gets and the changes made, or what is wrong."""
        return (reader or Reader()).read(self, arguments)

    def _call(self, arguments: Mapping[str, Any]) -> ToolCall:
        return ToolCall(f"call_{self.name}", self.name, jsontext.dumps_text(dict(arguments)))

    def run(self, arguments: Mapping[str, Any], reader: Reader | None = None) -> ToolResult:
        reading = self.check(arguments, reader)
        if reading.received is None:
            return _refused(self.name, arguments, reading)
        try:
            message = self.tool(self._call(reading.received))
        except Exception as exc:
            return _ran(self.name, arguments, reading, error=_failure(exc))
        return _ran(self.name, arguments, reading, _output(message.text))

    async def arun(self, arguments: Mapping[str, Any], reader: Reader | None = None) -> ToolResult:
        reading = self.check(arguments, reader)
        if reading.received is None:
            return _refused(self.name, arguments, reading)
        try:
            message = await self.tool.acall(self._call(reading.received))
        except Exception as exc:
            return _ran(self.name, arguments, reading, error=_failure(exc))
        return _ran(self.name, arguments, reading, _output(message.text))


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


def _arguments_model(fn: Callable[..., Any], name: str) -> tuple[type[BaseModel], dict[str, Any]]:
    """The model of `fn`'s parameters and its JSON Schema; UsageError, naming the parameter,
    for a signature the model could not fill with JSON."""
    signature, hints = _signature(fn, name)
    fields: dict[str, Any] = {}
    parameters = list(signature.parameters.values())
    names = _field_names([parameter.name for parameter in parameters])
    for field, parameter in zip(names, parameters, strict=True):
        _check_kind(parameter, name)
        annotation = hints.get(parameter.name, Any)
        _check_type(name, parameter.name, annotation)
        default: Any = ...
        if parameter.default is not parameter.empty:
            _check_default(name, parameter.name, annotation, parameter.default)
            default = parameter.default
        fields[field] = (annotation, Field(default, alias=parameter.name))
    # Closed in its schema, as `extra="forbid"` would say, but without the config: a forbid
    # there would pass for the config of every model under it when the pipeline looks for
    # keys those models ignore (and record none of them).
    config = ConfigDict(title=name, json_schema_extra={"additionalProperties": False})
    try:
        model: type[BaseModel] = create_model(f"{name}_arguments", __config__=config, **fields)
        return model, model.model_json_schema()
    except Exception as exc:  # each parameter passed alone: what Pydantic finds in them together
        raise UsageError(
            f"the arguments of tool {name!r} have no JSON Schema: {_first_line(exc)}",
            where=name,
            fix="annotate its parameters with types Pydantic can describe as JSON",
        ) from None


def _field_names(names: Sequence[str]) -> list[str]:
    """The Python name of each parameter's field: its own where Pydantic takes it as a field
    as it is, another one where it does not (`_id` would be a private attribute, gone from the
    schema; `model_config` the config; `json` would shadow a method). Every field has the
    parameter's name as its alias, so that is what the model writes and the tool is called
    with, whatever the field is named."""
    fields: list[str] = []
    for index, name in enumerate(names):
        field = name
        if not _takes_as_field(name):
            field = f"p{index}"
            while field in names or field in fields:
                field += "_"
        fields.append(field)
    return fields


def _takes_as_field(name: str) -> bool:
    """Whether Pydantic makes a field of `name` without a word: no leading underscore, no
    `model_` (its namespace), no attribute of BaseModel."""
    return not name.startswith(("_", "model_")) and not hasattr(BaseModel, name)


def _signature(fn: Callable[..., Any], name: str) -> tuple[inspect.Signature, dict[str, Any]]:
    try:
        return inspect.signature(fn), get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a name that does not resolve, an annotation that is no type
        raise UsageError(
            f"the signature of tool {name!r} cannot be read: {exc}",
            where=name,
            fix="annotate its parameters with importable types",
        ) from None


def _check_kind(parameter: inspect.Parameter, name: str) -> None:
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


def _check_type(name: str, parameter: str, annotation: Any) -> None:
    """A parameter's type must have a JSON Schema: the model writes its value as JSON."""
    try:
        TypeAdapter(annotation).json_schema()
    except Exception as exc:  # Pydantic's schema errors, and whatever a strange type raises
        # Pydantic's own advice for a class it does not know (arbitrary_types_allowed) would
        # give a tool whose argument no JSON can hold: not repeated.
        why = "" if isinstance(exc, PydanticSchemaGenerationError) else f" ({_first_line(exc)})"
        raise UsageError(
            f"parameter {parameter!r} of tool {name!r} has type {_type_name(annotation)}, "
            f"which has no JSON Schema{why}",
            where=f"{name}({parameter})",
            fix="annotate it with a type Pydantic can describe as JSON (str, int, float, "
            "bool, list, dict, a BaseModel, a dataclass, an Enum...): arbitrary_types_allowed "
            "is not enough, the model must write the value as JSON",
        ) from None


def _check_default(name: str, parameter: str, annotation: Any, default: Any) -> None:
    """A default must be a value of its parameter's type (as Python holds it, or as JSON
    writes it: `Path = "."` is one): the schema shows it to the model as the value taken."""
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    try:
        adapter.validate_python(default, strict=True)
        return
    except ValidationError:
        pass
    try:
        adapter.validate_json(to_json(default), strict=True)
        return
    except Exception:  # not valid as JSON either, or no JSON form at all
        pass
    kind = _type_name(annotation)
    raise UsageError(
        f"the default of parameter {parameter!r} of tool {name!r}, {default!r}, is not "
        f"a value of its type {kind}",
        where=f"{name}({parameter})",
        fix=f"give it a default of type {kind}, or widen the type (`{kind} | None = None` "
        "for a None default)",
    )


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return re.sub(r"\b(?:typing|collections\.abc|builtins)\.", "", repr(annotation))


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _invalid(problems: Iterable[str]) -> str:
    """The error the model reads for arguments that cannot be read."""
    return "invalid arguments: " + "; ".join(problems)


def _unexpected(change: Change, tool: Runnable) -> str:
    """A key that names no parameter (or no field of an object argument)."""
    if len(parts(change.path)) > 1:
        return f"at {readable(change.path)}: no such field"
    names = ", ".join(tool.parameters.get("properties", {})) or "none"
    return f"at {readable(change.path)}: no such parameter (the parameters: {names})"


def _unexpected_violations(dropped: Sequence[Change], tool: Runnable) -> tuple[Violation, ...]:
    """The dropped keys as violations, one per object (as validation names keys an object
    does not allow): the path of the object, the keys found, the names allowed."""
    by_object: dict[str, list[str]] = {}
    for change in dropped:
        *parent, key = parts(change.path)
        by_object.setdefault(pointer.join("", *parent) if parent else "", []).append(key)
    names = ", ".join(repr(n) for n in tool.parameters.get("properties", {})) or "none"
    return tuple(
        Violation(
            path,
            "unexpected",
            names if path == "" else "the fields declared there",
            ", ".join(repr(k) for k in keys),
            "additionalProperties",
        )
        for path, keys in by_object.items()
    )


def _refused(name: str, arguments: Mapping[str, Any], reading: Reading) -> ToolResult:
    return ToolResult(name, arguments, error=reading.error)


def _ran(
    name: str,
    arguments: Mapping[str, Any],
    reading: Reading,
    output: Any = None,
    *,
    error: str | None = None,
) -> ToolResult:
    return ToolResult(name, arguments, output, error, reading.received, reading.changes)


def _json_text(arguments: Mapping[str, Any]) -> str:
    """The arguments as JSON text for the pipeline, every value as it is: integers of any
    size with every digit, NaN and Infinity spelled out (the pipeline tells the model JSON
    has none), never null in their place."""
    return json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))


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


__all__ = ["FunctionTool", "Reader", "Reading", "Runnable", "SubCallTool", "ToolResult", "toolbox"]
