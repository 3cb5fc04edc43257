"""The `outform` command line.

Exit codes: 0 the reply is valid (possibly after repair), 1 it is not (the hint is printed),
2 the command was used wrongly (bad option, schema, config or file), 3 an internal error.
Errors are printed as one readable block, never as a traceback (set OUTFORM_DEBUG=1 for one).
The value goes to standard output, the table of changes to standard error, so the command can
sit in a pipe.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic_core import to_jsonable_python
from rich.console import Console
from rich.table import Table
from rich.text import Text

from outform.errors import InputError, OutformError, OutputError, UsageError
from outform.parse import LEVELS, Change, ParseResult, parse

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

app = typer.Typer(
    name="outform",
    help="Structured output from any LLM: repair, coerce and validate replies.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False)


@app.callback()
def _root() -> None:
    """outform: structured output from any LLM."""


@app.command("parse")
def parse_command(
    file: Annotated[
        str, typer.Argument(help="File holding the model's reply, or - for standard input.")
    ] = "-",
    schema: Annotated[
        Path | None, typer.Option("--schema", "-s", help="JSON Schema file the reply must match.")
    ] = None,
    type_: Annotated[
        str | None,
        typer.Option("--type", "-t", help="Python type the reply must match, as module:Name."),
    ] = None,
    level: Annotated[
        str | None, typer.Option("--level", "-l", help="Repair level: off, minimal or full.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole result (value, changes, hint) as JSON.")
    ] = False,
    shadow: Annotated[
        bool, typer.Option("--shadow", help="Report what would change; return the reply as is.")
    ] = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream", help="Feed the reply in small chunks and print each snapshot (JSON lines)."
        ),
    ] = False,
    chunk_size: Annotated[
        int, typer.Option("--chunk-size", min=1, help="Characters per chunk with --stream.")
    ] = 16,
) -> None:
    """Parse a model's reply against a schema or type; print the value and what was changed."""
    if (schema is None) == (type_ is None):
        raise UsageError(
            "give exactly one of --schema and --type",
            fix="outform parse reply.txt --schema schema.json   or   --type module:Class",
        )
    if level is not None and level not in LEVELS:
        raise UsageError(f"unknown level {level!r}", fix=f"use one of: {', '.join(LEVELS)}")
    reply = _read_reply(file)
    output = _load_schema(schema) if schema is not None else _import_type(type_ or "")
    if stream:
        _stream(reply, output, level, chunk_size)
        return
    options: dict[str, Any] = {"shadow": True} if shadow else {}
    try:
        if schema is not None:
            result = parse(reply, output, level=level, **options)
        else:
            result = parse(reply, type=output, level=level, **options)
    except OutputError as error:
        if not as_json or error.result is None:
            raise
        _show(error.result, as_json=True)  # --json: the hint is part of the printed result
        raise typer.Exit(EXIT_INVALID) from None
    _show(result, as_json)
    if not result.ok:
        raise typer.Exit(EXIT_INVALID)


def _stream(reply: bytes, output: Any, level: str | None, chunk_size: int) -> None:
    """One JSON line per snapshot on standard output; the final, validated value last."""
    from outform.streaming import replay, to_json

    try:
        text = reply.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            "the reply is not UTF-8 text (binary data?)", where=f"byte {exc.start}"
        ) from None
    shown = 0
    for snapshot in replay(text, chunk_size, output, level=level):
        line = to_json(snapshot).decode() if not snapshot.final else None
        if snapshot.final and snapshot.result is not None:
            _show(snapshot.result, as_json=False)
        elif line is not None:
            stdout.print(line, markup=False, highlight=False)
            shown += 1
    stderr.print(
        f"{shown} snapshot(s) over {len(text)} characters in {chunk_size}-character chunks"
    )


def _read_reply(file: str) -> bytes:
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


def _load_schema(path: Path) -> Any:
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


def _import_type(spec: str) -> Any:
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


def _show(result: ParseResult[Any], as_json: bool, *, value: bool = True) -> None:
    if as_json:
        _print_json(result.to_dict())
        return
    if value:
        # A typed result is shown as its type serialises it (with the defaults it filled in).
        shown = result.data if result.value is result.data else to_jsonable_python(result.value)
        _print_json(shown)
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


def _print_json(value: Any) -> None:
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


def _print_error(error: OutformError) -> None:
    stderr.print(f"error: {error.render()}", style="red", markup=False, highlight=False)


@app.command("schema")
def schema_command(
    file: Annotated[Path, typer.Argument(help="JSON Schema file to translate.")],
    dialect: Annotated[
        str, typer.Option("--dialect", "-d", help="Provider dialect, e.g. openai_strict, gemini.")
    ],
    ledger: Annotated[
        bool, typer.Option("--ledger", help="Also print the constraint ledger as a table.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the schema and the ledger as one JSON document.")
    ] = False,
) -> None:
    """Translate a schema into a provider's dialect; say what the provider will enforce."""
    from outform.schema.dialects import translate

    result = translate(_load_schema(file), dialect)
    if as_json:
        _print_json(result.to_dict())
        return
    stdout.print(orjson.dumps(result.schema, option=orjson.OPT_INDENT_2).decode())
    if ledger:
        table = Table(title=f"Constraint ledger ({result.dialect})", title_justify="left")
        for column in ("path", "keyword", "disposition", "reason"):
            table.add_column(column, overflow="fold")
        for entry in result.ledger:
            kind = "" if entry.kind == "constraint" else f" ({entry.kind})"
            table.add_row(entry.path or "/", entry.keyword, entry.disposition + kind, entry.reason)
        stderr.print(table)
    counts = result.ledger.counts()
    wrapped = "; the root is wrapped in {'value': ...}" if result.wrapped_root else ""
    if isinstance(result.payload(), str):
        wrapped += "; the request carries it as a JSON-encoded string"
    stderr.print(
        f"{result.dialect}: {counts['enforced']} constraints enforced by {result.rules.provider}, "
        f"{counts['checked_locally']} checked locally by outform, {counts['dropped']} dropped"
        f"{wrapped}",
        markup=False,
    )


@app.command("serve")
def serve_command(
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            "-b",
            help="Chat Completions base URL (http://localhost:8000/v1), or a provider name "
            "(anthropic, gemini, ...) served through outform's adapters.",
        ),
    ] = None,
    model_map: Annotated[
        list[str] | None,
        typer.Option("--model-map", "-m", help="client=backend model names (repeatable)."),
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option("--port", "-p", help="Port to listen on.")] = None,
    store: Annotated[
        str | None,
        typer.Option("--store", help="memory, sqlite[:PATH] or postgres:DSN (or :$ENV_VAR)."),
    ] = None,
    enforce: Annotated[
        bool | None,
        typer.Option(
            "--enforce/--no-enforce",
            help="Validate (and re-ask for) structured replies; per request: x-outform-enforce.",
        ),
    ] = None,
    api_key_env: Annotated[
        list[str] | None,
        typer.Option("--api-key-env", help="Env var holding a client key (repeatable)."),
    ] = None,
    backend_key_env: Annotated[
        str | None,
        typer.Option("--backend-key-env", help="Env var holding the backend's bearer key."),
    ] = None,
    backend_timeout: Annotated[
        float | None, typer.Option("--backend-timeout", help="Seconds to wait for the backend.")
    ] = None,
    max_body_bytes: Annotated[
        int | None, typer.Option("--max-body-bytes", help="Largest request body accepted.")
    ] = None,
) -> None:
    """Serve the OpenAI Responses API over a Chat Completions backend ([gateway] section)."""
    from outform.config import settings
    from outform.gateway.server import serve
    from outform.gateway.settings import GatewaySettings, parse_model_map

    configured = settings()
    base = GatewaySettings.from_config(configured.gateway, source=configured.source)
    mapping = {**base.model_map, **parse_model_map(model_map)} if model_map else None
    chosen = base.replace(
        backend=backend,
        model_map=mapping,
        host=host,
        port=port,
        store=store,
        store_base_dir=None if store is None else str(Path.cwd()),
        enforce=enforce,
        api_keys=tuple(api_key_env) if api_key_env else None,
        backend_api_key_env=backend_key_env,
        backend_timeout=backend_timeout,
        max_body_bytes=max_body_bytes,
    )
    if chosen.native:
        from outform.providers.registry import PROVIDERS

        if chosen.backend not in PROVIDERS:
            raise UsageError(
                f"--backend must be an http(s) URL or a provider name, got {chosen.backend!r}",
                fix="for example --backend http://localhost:8000/v1 or --backend anthropic; "
                "providers: " + ", ".join(PROVIDERS),
            )
    stderr.print(
        f"outform gateway on http://{chosen.host}:{chosen.port} -> {chosen.backend} "
        f"(store: {chosen.store.partition(':')[0]}, enforce: {'on' if chosen.enforce else 'off'})",
        markup=False,
    )
    serve(chosen)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn errors into messages and exit codes."""
    try:
        app(args=argv, prog_name="outform")
    except SystemExit as done:  # click's own usage errors and --help end here
        code = done.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except OutputError as error:
        if error.result is not None and error.result.changes:
            _show(error.result, as_json=False, value=False)
        _print_error(error)
        return EXIT_INVALID
    except InputError as error:
        _print_error(error)
        return EXIT_INVALID
    except OutformError as error:
        _print_error(error)
        return EXIT_USAGE
    except KeyboardInterrupt:
        stderr.print("aborted", style="red")
        return 130
    except Exception as error:  # the last line of defence: no traceback unless asked
        if os.environ.get("OUTFORM_DEBUG"):
            raise
        stderr.print(
            f"internal error: {type(error).__name__}: {error}\n"
            "  fix: this is a bug in outform; rerun with OUTFORM_DEBUG=1 and report the traceback",
            style="red",
            markup=False,
        )
        return EXIT_INTERNAL
    return EXIT_OK


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
