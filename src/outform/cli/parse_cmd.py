"""`outform parse`: a model's reply in, the validated value and its changes out."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from outform.cli import options
from outform.cli.app import EXIT_INVALID, app, stderr, stdout
from outform.cli.io import output_of, read_reply, show, write
from outform.errors import InputError, OutputError, UsageError
from outform.parse import parse
from outform.parse.incremental import Degeneration


@app.command("parse")
def parse_command(
    file: Annotated[
        str, typer.Argument(help="File holding the model's reply, or - for standard input.")
    ] = "-",
    schema: options.Schema = None,
    type_: options.Type = None,
    level: options.Level = None,
    as_json: options.AsJson = False,
    shadow: Annotated[
        bool,
        typer.Option(
            "--shadow",
            help="Change nothing: print the value outform would return and what it would "
            "change, and say whether the reply is valid as sent.",
        ),
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
    stop_loops: Annotated[
        bool,
        typer.Option(
            "--stop-loops",
            help="With --stream: also stop a reply that loops inside its value (whitespace or "
            "one fragment over and over), though it might still end valid.",
        ),
    ] = False,
    max_chars: options.MaxChars = None,
    max_depth: options.MaxDepth = None,
    time_limit: options.TimeLimit = None,
    max_repair_chars: options.MaxRepairChars = None,
    max_repair_string: options.MaxRepairString = None,
) -> None:
    """Parse a model's reply against a schema or type (neither: any JSON value).

    The value goes to standard output; the changes and violations to standard error.
    """
    settings = options.parse_settings(
        level, max_chars, max_depth, time_limit, max_repair_chars, max_repair_string
    )
    output, typed = output_of(schema, type_)
    reply = read_reply(file)
    if stop_loops and not stream:
        raise UsageError("--stop-loops applies to --stream only", fix="add --stream")
    if stream:
        if shadow:
            raise UsageError(
                "--shadow and --stream cannot be combined",
                fix="use --shadow to see what parsing would change, --stream to see the snapshots",
            )
        if stop_loops:
            settings["degeneration"] = Degeneration(inside=True)
        _stream(reply, output, settings, chunk_size)
        return
    if shadow:
        settings["shadow"] = True
    try:
        if typed:
            result = parse(reply, type=output, **settings)
        else:
            result = parse(reply, output, **settings)
    except OutputError as error:
        if not as_json or error.result is None:
            raise
        show(error.result, as_json=True)  # --json: the hint is part of the printed result
        raise typer.Exit(EXIT_INVALID) from None
    show(result, as_json)
    valid = result.would_be_hint is None if result.shadow else result.ok
    if not valid:
        raise typer.Exit(EXIT_INVALID)


def _stream(reply: bytes, output: Any, settings: dict[str, Any], chunk_size: int) -> None:
    """One JSON line per snapshot on standard output; the final, validated value last."""
    from outform.streaming import replay, to_json

    try:
        text = reply.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            "the reply is not UTF-8 text (binary data?)", where=f"byte {exc.start}"
        ) from None
    shown = 0
    for snapshot in replay(text, chunk_size, output, **settings):
        if snapshot.final and snapshot.result is not None:
            show(snapshot.result, as_json=False)
        elif not snapshot.final:
            write(stdout, to_json(snapshot).decode() + "\n")
            shown += 1
    stderr.print(
        f"{shown} snapshot(s) over {len(text)} characters in {chunk_size}-character chunks"
    )
