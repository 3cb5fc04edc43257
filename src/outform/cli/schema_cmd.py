"""`outform schema`: a schema translated into a provider's dialect, with its ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from outform.cli.app import app, stderr
from outform.cli.io import load_schema, print_json, print_rows
from outform.errors import OutformError


@app.command("schema")
def schema_command(
    file: Annotated[
        Path, typer.Argument(help="JSON Schema file to translate (- reads standard input).")
    ],
    dialect: Annotated[
        str,
        typer.Option(
            "--dialect",
            "-d",
            help="A dialect (openai_strict, gemini, ...) or model prefix (llamacpp, sglang, ...).",
        ),
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

    source = "standard input" if str(file) == "-" else str(file)
    try:
        result = translate(load_schema(file, stdin=True), dialect)
    except OutformError as error:
        raise _in_file(error, source) from None
    if as_json:
        print_json(result.to_dict())
        return
    print_json(result.schema)
    if ledger:
        rows = [
            (
                entry.path or "/",
                entry.keyword,
                entry.disposition + ("" if entry.kind == "constraint" else f" ({entry.kind})"),
                entry.reason,
            )
            for entry in result.ledger
        ]
        columns = ("path", "keyword", "disposition", "reason")
        print_rows(f"Constraint ledger ({result.dialect})", columns, rows)
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


def _in_file(error: OutformError, source: str) -> OutformError:
    """An error about the schema, placed in the file it came from: the library names its
    argument (`schema`, `schema at /$ref`), which this command takes as FILE, not as the
    `--schema` flag other commands have."""
    where = error.where
    if where == "schema":
        error.where = source
    elif where is not None and where.startswith("schema at "):
        error.where = f"{source} at {where[len('schema at ') :]}"
    return error
