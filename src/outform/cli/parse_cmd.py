"""`outform parse`: a model's reply in, the validated value and its changes out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from outform.cli.app import EXIT_INVALID, app, stderr, stdout
from outform.cli.io import import_type, load_schema, read_reply, show
from outform.errors import InputError, OutputError, UsageError
from outform.parse import LEVELS, parse


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
    reply = read_reply(file)
    output = load_schema(schema) if schema is not None else import_type(type_ or "")
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
        show(error.result, as_json=True)  # --json: the hint is part of the printed result
        raise typer.Exit(EXIT_INVALID) from None
    show(result, as_json)
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
            show(snapshot.result, as_json=False)
        elif line is not None:
            stdout.print(line, markup=False, highlight=False)
            shown += 1
    stderr.print(
        f"{shown} snapshot(s) over {len(text)} characters in {chunk_size}-character chunks"
    )
