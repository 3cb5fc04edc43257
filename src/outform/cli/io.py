"""Reading the command line's inputs (replies, schemas, types) and printing results.

The value goes to standard output, the table of changes to standard error, so a command can
sit in a pipe.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import orjson
from pydantic_core import to_jsonable_python
from rich.table import Table
from rich.text import Text

from outform.cli.app import stderr, stdout
from outform.errors import OutformError, UsageError
from outform.parse import Change, ParseResult


def read_reply(file: str) -> bytes:
    if file == "-":
        return sys.stdin.buffer.read()
    path = Path(file)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read the reply file: {exc.strerror}",
            where=str(path),
            fix="check the path, or pass - to read standard input",
        ) from None


def load_schema(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise UsageError(f"cannot read the schema file: {exc.strerror}", where=str(path)) from None
    except orjson.JSONDecodeError as exc:
        raise UsageError(
            f"the schema file is not valid JSON: {exc.msg}",
            where=f"{path}, line {exc.lineno} column {exc.colno}",
            fix="correct the JSON there",
        ) from None


def import_type(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(
            f"--type must look like module:Name, got {spec!r}",
            fix="for example --type myapp.models:Invoice",
        )
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(
            f"cannot import module {module_name!r}: {exc}",
            fix="run from the directory that contains it, or install it",
        ) from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                f"module {module_name!r} has no attribute {attribute!r}",
                where=getattr(module, "__file__", module_name),
            ) from None
    return target


def show(result: ParseResult[Any], as_json: bool, *, value: bool = True) -> None:
    if as_json:
        print_json(result.to_dict())
        return
    if value:
        # A typed result is shown as its type serialises it (with the defaults it filled in).
        shown = result.data if result.value is result.data else to_jsonable_python(result.value)
        print_json(shown)
    if result.changes:
        title = "What would change (shadow mode)" if result.shadow else "What outform changed"
        table = Table(title=title, title_justify="left")
        for column in ("path", "stage", "transform", "before", "after"):
            table.add_column(column, overflow="fold")
        for change in result.changes:
            table.add_row(
                Text(change.path or "/"),
                Text(change.stage),
                Text(change.transform + (f" ({change.detail})" if change.detail else "")),
                Text(_cell(change, change.before, before=True)),
                Text(_cell(change, change.after, before=False)),
            )
        stderr.print(table)
    elif result.ok:
        stderr.print("[green]valid as sent: nothing changed[/green]")
    if result.hint is not None:
        stderr.print(result.hint.message(), style="red", markup=False)


def print_json(value: Any) -> None:
    stdout.print(
        orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode(),
        markup=False,
        highlight=False,
    )


def _cell(change: Change, value: Any, *, before: bool) -> str:
    """Values of schema-aware stages as JSON ("2" and 2 differ); text stages as text."""
    if before and change.transform.startswith("fill_"):
        return "(absent)"
    if change.stage != "semantic":
        return "–" if value is None else str(value)
    return orjson.dumps(value).decode()


def print_error(error: OutformError) -> None:
    stderr.print(f"error: {error.render()}", style="red", markup=False, highlight=False)
