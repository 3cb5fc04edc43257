"""Reading the command line's inputs (replies, schemas, types) and printing results.

The value goes to standard output; the changes, hints and errors to standard error, so a
command can sit in a pipe. On a terminal the changes are a table; anywhere else (a file, a
pipe, a CI log) they are plain lines, one per change, that no column width can break.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import errno
import functools
import importlib
import re
import sys
import traceback
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import typer
from pydantic_core import to_jsonable_python
from rich.console import Console
from rich.table import Table
from rich.text import Text

from outform import jsontext
from outform.cli.app import stderr, stdout
from outform.errors import OutformError, OutputError, UsageError
from outform.parse import Change, ParseResult, RetryHint
from outform.schema.check import boolean_root
from outform.schema.derive import is_type


def read_stdin(what: str) -> bytes:
    """The bytes of standard input; a UsageError when there is none to read (started with it
    closed, `<&-`: Python then has no `sys.stdin`)."""
    stream = sys.stdin
    try:
        if stream is None:
            raise OSError("closed")
        return stream.buffer.read()
    except (OSError, ValueError, AttributeError):
        raise UsageError(
            f"cannot read the {what} from standard input: it is closed",
            where="standard input",
            fix=f"pipe the {what} in (… | outform …), or give the path of a file instead of -",
        ) from None


def read_text(file: str, what: str) -> bytes:
    """The bytes of `file`, or of standard input for "-"."""
    if file == "-":
        return read_stdin(what)
    path = Path(file)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read the {what} file: {exc.strerror}",
            where=str(path),
            fix="check the path, or pass - to read standard input",
        ) from None


def read_reply(file: str) -> bytes:
    return read_text(file, "reply")


def read_utf8(file: str, what: str) -> str:
    """The text of `file`, or of standard input for "-", read as UTF-8 (`decoded`)."""
    where = "standard input" if file == "-" else file
    return decoded(read_text(file, what), what, where)


def decoded(raw: bytes, what: str, where: str, fix: str | None = None) -> str:
    """`raw` read as UTF-8 text (a byte order mark dropped): every text the command line reads
    from a file or standard input is read so, and bytes that are not UTF-8 are a UsageError
    naming the first (never a UnicodeDecodeError)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"the {what} is not UTF-8 text (binary data, or another encoding?)",
            where=f"{where}, byte {exc.start}",
            fix=fix
            or f"save the {what} as UTF-8 (iconv -f latin1 -t utf-8 converts a Latin-1 file)",
        ) from None


def argument_text(value: str, what: str) -> str:
    """A text given on the command line (`what`: "the prompt argument", "--system"), which the
    shell may pass as bytes that are not UTF-8 (Python keeps them as lone surrogates, which no
    provider can be sent): a UsageError naming the first, as for a file."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(
            f"{what} is not UTF-8 text (the shell passed bytes of another encoding)",
            where=f"{what}, character {exc.start}",
            fix="pass UTF-8 text (e.g. set a UTF-8 locale), or read it from a UTF-8 file",
        ) from None
    return value


def load_schema(path: Path, *, stdin: bool = False) -> Any:
    """The JSON Schema in `path`: a JSON object, or a boolean (`true`: any JSON value, read
    as {}; `false`: a SchemaError), anything else is named, not taken for a type. With
    `stdin`, the path `-` reads standard input, with the same exact reading of numbers."""
    from_stdin = stdin and str(path) == "-"
    where = "standard input" if from_stdin else str(path)
    try:
        raw = read_stdin("schema") if from_stdin else path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read the schema file: {exc.strerror}",
            where=where,
            fix="give the path of a JSON Schema file (a .json file holding one object)",
        ) from None
    text = decoded(raw, "schema file", where, fix="give a JSON Schema file, saved as UTF-8")
    try:
        # Integers keep every digit (as the library reads a schema given as a dict), also
        # past a float's range, which orjson refuses.
        schema = jsontext.loads(text)
    except orjson.JSONDecodeError as exc:
        try:
            schema = jsontext.loads_exact(text)
        except ValueError:
            raise UsageError(
                f"the schema file is not valid JSON: {exc.msg}",
                where=f"{where}, line {exc.lineno} column {exc.colno}",
                fix="correct the JSON there",
            ) from None
    except ValueError as exc:  # an integer of more digits than Python reads
        raise UsageError(
            f"the schema file holds a number outform cannot read: {exc}",
            where=where,
            fix="write the number with fewer digits",
        ) from None
    if isinstance(schema, bool):
        return boolean_root(schema, where)
    if not isinstance(schema, dict):
        raise UsageError(
            f"the schema file holds {_json_kind(schema)}, not a JSON Schema object",
            where=where,
            fix='write one object, e.g. {"type": "object", "properties": {...}}',
        )
    return schema


def _json_kind(value: Any) -> str:
    kinds = ((list, "an array"), (str, "a string"), (type(None), "null"))
    return next((name for kind, name in kinds if isinstance(value, kind)), "a number")


def output_of(schema: Path | None, type_: str | None) -> tuple[Any, bool]:
    """What the reply must match, from --schema or --type (at most one), and whether it is a
    type. Neither: any JSON value."""
    if schema is not None and type_ is not None:
        raise UsageError(
            "give --schema or --type, not both",
            fix="--schema schema.json   or   --type module:Class   (neither: any JSON value)",
        )
    if type_ is not None:
        return import_type(type_), True
    return (load_schema(schema) if schema is not None else None), False


def import_type(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(
            f"--type must look like module:Name, got {spec!r}",
            fix="for example --type myapp.models:Invoice",
        )
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    module = _import_user_module(module_name)
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise UsageError(
                f"module {module_name!r} has no attribute {attribute!r}",
                where=getattr(module, "__file__", module_name),
            ) from None
    if not is_type(target):
        raise UsageError(
            f"--type {spec} is not a type (it is a {type(target).__name__})",
            where=getattr(module, "__file__", module_name),
            fix="name a class (a Pydantic model, dataclass, TypedDict, ...) or a type alias",
        )
    return target


def _import_user_module(name: str) -> Any:
    """The caller's module `name`. What goes wrong while importing it is the module's fault,
    not outform's: a module that cannot be found, or whose code raises (a syntax error, a
    failed import of its own, even `sys.exit()`), is a UsageError naming the module, the
    line that raised and how to see the whole traceback."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise UsageError(
                f"cannot import module {name!r}: {exc}",
                fix="run from the directory that contains it, or install it",
            ) from None
        failure: BaseException = exc
    except (Exception, SystemExit) as exc:  # the module's own code ran and raised
        failure = exc
    where = name
    if isinstance(failure, SyntaxError) and failure.filename:
        where = f"{failure.filename}, line {failure.lineno}"
    else:
        frames = traceback.extract_tb(failure.__traceback__)
        own = [f for f in frames if "importlib" not in f.filename]
        if own:
            where = f"{own[-1].filename}, line {own[-1].lineno}"
    what = (
        f"called sys.exit({failure.code!r})"
        if isinstance(failure, SystemExit)
        else f"raised {type(failure).__name__}: {failure}"
    )
    raise UsageError(
        f"importing module {name!r} {what}",
        where=where,
        fix=f"fix the module; python -c 'import {name}' shows the whole traceback",
    ) from None


# -- printing -------------------------------------------------------------------------------


def show(result: ParseResult[Any], as_json: bool, *, value: bool = True) -> None:
    """A parse result: the value on stdout, the changes and any violations on stderr (or the
    whole result as JSON on stdout)."""
    if as_json:
        print_json(result.to_dict())
        return
    if result.shadow:
        _show_shadow(result, value=value)
        return
    if value:
        print_json(json_value(result))
    if result.changes:
        print_changes(result.changes, "What outform changed")
    else:
        stderr.print("valid as sent: nothing changed", style="green")


def _show_shadow(result: ParseResult[Any], *, value: bool) -> None:
    """Shadow mode: what outform would return at the chosen level, what it would change there,
    and how the reply as sent fares without any of it. When no value could be read at that
    level, nothing is printed as the value (not a `null` the reply never held)."""
    level = result.level
    would_fail = result.would_be_hint
    if value and (would_fail is None or not would_fail.is_syntax):
        print_json(result.would_be)
    if result.changes:
        print_changes(result.changes, f"What outform would change at level {level!r} (shadow mode)")
    if result.hint is None:
        stderr.print("shadow mode: the reply is valid as sent", style="green")
    else:
        print_violations(result.hint, "shadow mode: as sent, the reply is not valid:")
    if would_fail is not None:
        title = (
            "Even after these changes it would not match:"
            if result.changes
            else f"At level {level!r}, outform would refuse it:"
        )
        print_violations(would_fail, title)


def json_value(result: ParseResult[Any]) -> Any:
    """A typed result is shown as its type serialises it (with the defaults it filled in)."""
    return result.data if result.value is result.data else to_jsonable_python(result.value)


_TABLE_ROWS = 1000
"""Changes beyond which a terminal gets lines too: a table measures every cell to lay out its
columns (80,000 changes took rich minutes)."""


def print_changes(changes: Iterable[Change], title: str) -> None:
    """The changes, as `print_rows` shows rows."""
    columns = ("path", "stage", "transform", "before", "after")
    print_rows(title, columns, [_cells(change) for change in changes])


def print_rows(title: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    """Rows to standard error: a table on a terminal (up to `_TABLE_ROWS`), else one plain
    line each, that no column width can break (a file, a pipe, a CI log). The lines are
    built once and written once (a print per line cost 28 s for 80,000 changes)."""
    if stderr.is_terminal and len(rows) <= _TABLE_ROWS:
        table = Table(title=title, title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell) for cell in row))
        stderr.print(table)
        return
    lines = [f"{title}:"]
    lines.extend(_line(row) for row in rows)
    lines.append("")
    write(stderr, "\n".join(lines))


def _line(row: tuple[str, ...]) -> str:
    """`path  stage  transform: before -> after` for a change; cells joined for other rows."""
    if len(row) == 5:
        path, stage, transform, before, after = row
        return f"  {path}  {stage}  {transform}: {before} -> {after}"
    return "  " + "  ".join(row)


def _cells(change: Change) -> tuple[str, str, str, str, str]:
    return (
        change.path or "/",
        change.stage,
        change.transform + (f" ({_settings_as_flags(change.detail)})" if change.detail else ""),
        _cell(change, change.before, before=True),
        _cell(change, change.after, before=False),
    )


def _cell(change: Change, value: Any, *, before: bool) -> str:
    """Values of schema-aware stages as JSON ("2" and 2 differ); text stages as text, on one
    line (a preview of a reply can span several)."""
    if before and change.transform.startswith("fill_"):
        return "(absent)"
    if change.stage != "semantic":
        return "–" if value is None else " ".join(str(value).split())
    return jsontext.dumps_text(value)


def print_violations(hint: RetryHint, title: str) -> None:
    stderr.print(f"{title}\n{hint.explain(indent='  ')}", style="red", markup=False)


def print_json(value: Any) -> None:
    """`value` as indented JSON on standard output, every integer digit for digit (orjson
    writes 64 bits only: jsontext), in one write (a Rich print of a 40,000-item result took
    most of 44 s, and would read `:smile:` in a string as an emoji)."""
    write(stdout, jsontext.dumps_text(value, indent=True, any_keys=True) + "\n")


def write(console: Console, text: str) -> None:
    """Text as it is, at once, to a console's file: no markup, emoji codes or wrapping."""
    with contextlib.nullcontext() if console.stderr else writing(STDOUT):
        console.file.write(text)
        console.file.flush()


STDOUT = "standard output"
"""How a failed write names standard output (a file is named by its path)."""


@contextlib.contextmanager
def writing(where: str) -> Iterator[None]:
    """Writes to `where` (a path, or `STDOUT`): one the system refuses (a full disk, an I/O
    error) is a `write_failed` error (exit code 2), not an internal error. A closed pipe on
    standard output is left to `main`, which drops what a reader that quit would have read."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and where == STDOUT:
            raise
        raise write_failed(exc, where) from None


def write_failed(exc: OSError, where: str) -> UsageError:
    """A write the system refused, as the command line tells it: the file (or standard
    output), the system's reason and what to do about it. Not outform's fault: exit code 2."""
    return UsageError(
        f"cannot write to {where}: {_reason(exc)}",
        where=where,
        fix=_write_fix(exc, where),
    )


def system_failed(exc: OSError) -> UsageError:
    """An error of the system outform runs on (`ENVIRONMENT_ERRNOS`) met where no helper
    knew the file: the reason and the file when the system names it, not a bug report."""
    where = exc.filename if isinstance(exc.filename, str) else None
    target = f" ({where})" if where else ""
    full = exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", None))
    disk = f"the disk of {where}" if where else "the disk"
    return UsageError(
        f"the system refused a read or write{target}: {_reason(exc)}",
        where=where,
        fix=f"free space on {disk}, then run the command again"
        if full
        else f"check {disk} (or its device), then run the command again",
    )


ENVIRONMENT_ERRNOS = frozenset(
    code
    for code in (
        errno.ENOSPC,
        errno.EIO,
        errno.EROFS,
        errno.EFBIG,
        getattr(errno, "EDQUOT", None),
    )
    if code is not None
)
"""Errors of the disk or device, never of outform: a full disk or quota, an I/O error, a
read-only file system, a file over the system's size limit."""


def _reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc) or type(exc).__name__
    name = errno.errorcode.get(exc.errno) if exc.errno is not None else None
    return f"{reason} ({name})" if name else reason


def _write_fix(exc: OSError, where: str) -> str:
    """What to do: free space for a full disk (or quota), else write somewhere else."""
    to_stdout = where == STDOUT
    elsewhere = "redirect standard output to another file" if to_stdout else "choose another file"
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", None)):
        disk = "the disk standard output goes to" if to_stdout else f"the disk of {where}"
        return f"free space on {disk}, or {elsewhere}"
    return f"{elsewhere}: {'that one' if to_stdout else where} does not take writes"


LIBRARY_FLAGS = {
    "api_key": ("--api-key-env", "--api-key-env NAME (the variable holding the key)"),
    "base_url": ("--base-url", "--base-url URL"),
}
"""Library arguments an error may name, as the command line spells them: (the flag, how to
pass it). Keys never go on the command line: `api_key` is read from a named variable."""


RUNNING: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "outform_command", default=()
)
"""The words naming the command that runs (`("generate",)`, `("batch", "run")`): an error
names its flags (`command_flags`). Set by `outform.cli.main` around each command."""


@functools.cache
def _group() -> Any:
    from outform.cli.app import app

    return typer.main.get_command(app)


def command_path(argv: Sequence[str]) -> tuple[str, ...]:
    """The words of `argv` naming a command (`batch run` of `batch run rows.jsonl ...`)."""
    command, path = _group(), []
    for word in argv:
        commands = getattr(command, "commands", None)
        if not commands or word not in commands:
            break
        command = commands[word]
        path.append(word)
    return tuple(path)


@functools.cache
def command_flags(path: tuple[str, ...] = ()) -> dict[str, str]:
    """The options of the command `path` names, by their library argument names (`max_depth`
    -> `--max-depth`), and its arguments by how its usage line writes them (`model` ->
    `MODEL`): an error of that command names only what it takes. For no command (or a group
    of commands), every option of every command (a name two commands spell differently is
    left out)."""
    command = _group()
    for word in path:
        command = command.commands[word]
    if path and not getattr(command, "commands", None):
        own = {param.name: _spelled(param) for param in command.params if param.name}
        return {name: spelled for name, spelled in own.items() if spelled}
    flags: dict[str, set[str]] = {}
    stack: list[Any] = [command]
    while stack:
        command = stack.pop()
        stack.extend(getattr(command, "commands", {}).values())
        for param in command.params:
            spelled = _spelled(param)
            if param.param_type_name == "option" and param.name and spelled:
                flags.setdefault(param.name, set()).add(spelled)
    return {name: next(iter(spelled)) for name, spelled in flags.items() if len(spelled) == 1}


def _spelled(param: Any) -> str | None:
    """How the command line writes a parameter: an option by its long flag, an argument as
    its usage line shows it (`MODEL`)."""
    if param.param_type_name == "argument":
        return str(param.metavar or param.name.upper())
    long = [o for o in param.opts if o.startswith("--")]
    return max(long, key=len) if long else None


def for_cli(error: OutformError) -> OutformError:
    """`error` as the command line says it: a library argument becomes its flag in `where`
    (`max_depth` -> `--max-depth`), in a `what` that starts with it ("max_depth must be ..."),
    in a limit named in `what` or `fix` ("the 'max_repair_chars' limit" -> "the
    --max-repair-chars limit"), and in `fix` ("raise `retries`" -> "raise --retries",
    "raise the 'max_chars' option" -> "raise --max-chars", "level='full'" -> "--level full";
    "pass api_key=" -> "pass --api-key-env NAME"). The library never knows the command line:
    the mapping is done here, from the names of the commands' own options."""
    flags = {
        **command_flags(RUNNING.get()),
        **{name: flag for name, (flag, _) in LIBRARY_FLAGS.items()},
    }
    what, where, fix = error.what, error.where, error.fix
    if where in flags:
        where = flags[where]
    first = what.split(" ", 1)
    if len(first) == 2 and first[0] in flags and first[1].startswith("must be"):
        what = f"{flags[first[0]]} {first[1]}"
    what = _settings_as_flags(what, flags)
    if fix:
        fix = re.sub(
            r"\b(" + "|".join(LIBRARY_FLAGS) + r")=",
            lambda found: LIBRARY_FLAGS[found.group(1)][1],
            fix,
        )
        fix = _ASSIGNED.sub(lambda m: _flagged(m, flags, f"{{}} {m.group(2)}"), fix)
        fix = _QUOTED.sub(lambda m: _flagged(m, flags, "{}"), fix)
        fix = _ARGUMENT_OF.sub("", fix)  # the library's class means nothing here
        fix = _settings_as_flags(fix, flags)
    if (what, where, fix) == (error.what, error.where, error.fix):
        return error
    shown = copy.copy(error)
    shown.what, shown.where, shown.fix = what, where, fix
    return shown


_ASSIGNED = re.compile(r"\b([a-z_]+)='?([\w.-]+)'?")
"""`level='full'`, `retries=3`: a library argument given a value."""
_ARGUMENT_OF = re.compile(r" \(an argument of [A-Za-z_.]+\)")
"""Where the library names the class an argument belongs to ("raise `timeout` (an argument of
Transport)"): said of the flag, it is dropped."""
_QUOTED = re.compile(r"`([a-z_]+)`")
"""`retries`: a library argument named in backquotes."""
_OPTION = re.compile(r"\bthe '([a-z_]+)' option\b")
""""raise the 'max_chars' option": a setting named as the library's option (-> "raise
--max-chars")."""
_SETTING = re.compile(r"\bthe '([a-z_]+)' (limit)\b")
""""over the 'max_repair_chars' limit": a setting named as a limit (-> "the --max-repair-chars
limit")."""


def _settings_as_flags(text: str, flags: dict[str, str] | None = None) -> str:
    """Settings a text names as the library's ("the 'max_chars' option", "the
    'max_repair_chars' limit") as the command's flags."""
    flags = command_flags(RUNNING.get()) if flags is None else flags
    text = _OPTION.sub(lambda m: _flagged(m, flags, "{}"), text)
    return _SETTING.sub(lambda m: _flagged(m, flags, "the {} " + m.group(2)), text)


def _flagged(match: re.Match[str], flags: dict[str, str], template: str) -> str:
    flag = flags.get(match.group(1))
    return template.format(flag) if flag is not None else match.group(0)


def bad_value(error: typer.BadParameter) -> UsageError:
    """A flag's value click refused (out of range, not a number), as outform says it."""
    param = error.param
    long = [o for o in param.opts if o.startswith("--")] if param is not None else []
    flag = max(long, key=len) if long else (error.param_hint or "an option")
    name = error.ctx.command_path if error.ctx is not None else "outform"
    message = error.message.rstrip(".")
    should = "Input should be "
    said = f"must be {message[len(should) :]}" if message.startswith(should) else f": {message}"
    return UsageError(
        f"{flag} {said}".replace(" :", ":"),
        where=str(flag),
        fix=f"see '{name} --help' for what {flag} takes",
    )


def print_error(error: OutformError) -> None:
    shown = for_cli(error).render()
    stderr.print(f"error: {shown}", style="red", markup=False, highlight=False)


def print_output_error(error: OutputError) -> None:
    """What the pipeline did before it gave up, then the error with its violations."""
    if error.result is not None and error.result.changes:
        print_changes(error.result.changes, "What outform changed")
    print_error(error)
