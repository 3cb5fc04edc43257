"""`outform health`: where repairs, re-asks and failures happen, read from the trace store."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from outform.cli.app import app, stdout
from outform.cli.io import STDOUT, writing
from outform.errors import UsageError


@app.command("health")
def health_command(
    since_hours: Annotated[
        float, typer.Option("--since-hours", help="The window: the last N hours.")
    ] = 24.0,
    step: Annotated[str | None, typer.Option("--step", help="Only this step.")] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Only this model (name or provider:name).")
    ] = None,
    trend_buckets: Annotated[
        int, typer.Option("--trend-buckets", help="Buckets of the trend over the window.")
    ] = 12,
    top: Annotated[int, typer.Option("--top", help="Rows of each ranked table.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="The report as JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="The report's tables as CSV.")] = False,
    output: Annotated[
        str, typer.Option("--output", "-o", help="Write to FILE instead of standard output (-).")
    ] = "-",
    store: Annotated[
        str | None,
        typer.Option("--store", help="The trace store (default: [trace] store, OUTFORM_TRACE)."),
    ] = None,
) -> None:
    """Report where repairs, coercions, re-asks and aborts happen ([trace] store)."""
    from outform.trace.health import HealthQuery, report

    if as_json and as_csv:
        raise UsageError("--json and --csv exclude each other", fix="choose one")
    query = HealthQuery(since_hours, step, model, trend_buckets, top)
    trace_store = open_trace_store(store)
    try:
        refuse_overwriting_store(output, trace_store)
        result = report(trace_store, query)
    finally:
        trace_store.close()
    if as_json:
        text = orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"
    elif as_csv:
        text = to_csv(result.tables())
    else:
        text = ""
    if text:
        write_text(text, output)
        return
    if output == "-":
        render(result, stdout)
        return
    with writing(output), _open(output) as handle:  # closing flushes: a full disk shows there
        render(result, Console(file=handle, width=160, highlight=False, no_color=True))


def open_trace_store(spec: str | None) -> Any:
    """The store to read: `spec`, else what the settings name (even with recording off). A
    store that does not exist is an error (exit code 2): reading never creates one."""
    from outform.config import settings
    from outform.trace.runtime import open_store

    configured = settings().trace
    chosen = spec or configured.store_spec() or configured.store
    opened = open_store(
        chosen,
        base_dir=None if spec else configured.store_base_dir,
        retention_days=configured.retention_days,
        max_size_mb=configured.max_size_mb,
        create=False,
        where="--store" if spec else "[trace] store (or OUTFORM_TRACE)",
    )
    if opened is None:
        raise UsageError(
            "there is no trace store to read: [trace] store (or OUTFORM_TRACE) is off",
            fix="pass --store sqlite:PATH or --store postgres:DSN",
        )
    return opened


def refuse_overwriting_store(output: str, trace_store: Any) -> None:
    """A usage error (exit code 2, before anything is written) when `output` is a file of the
    store being read: the database or a companion SQLite keeps beside it, by resolved path
    or, when both exist, by inode (a hard link). Writing there would replace the runs."""
    if output == "-":
        return
    target = Path(output).expanduser()
    files = trace_store.files()
    for kept in files:
        if _same_file(target, kept):
            what = "the trace store" if kept == files[0] else "a file of the trace store"
            raise UsageError(
                f"--output {output} is {what} this command reads ({_shown(kept)}): writing "
                "the report there would destroy the recorded runs",
                where="--output",
                fix="write the report to another file (e.g. --output health.json), or leave "
                "--output out to print it",
            )


def _shown(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)


def _same_file(one: Path, other: Path) -> bool:
    try:
        if one.resolve() == other.resolve():
            return True
        return one.exists() and other.exists() and one.samefile(other)
    except OSError:
        return False


def to_csv(tables: list[Any]) -> str:
    """Every table as a block of CSV rows, each row led by its table's name (a header row
    first), blocks separated by an empty line."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for number, table in enumerate(tables):
        if number:
            buffer.write("\n")
        writer.writerow(["table", *table.columns])
        for row in table.rows:
            writer.writerow([table.name, *("" if v is None else v for v in row)])
    return buffer.getvalue()


def write_text(text: str, output: str) -> None:
    """`text` to `output` (- for standard output); a write the system refuses is an error
    naming the file (`writing`)."""
    with writing(STDOUT if output == "-" else output):
        if output == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        with _open(output) as handle:
            handle.write(text)


def _open(output: str) -> Any:
    try:
        return Path(output).open("w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot write the report: {exc.strerror}", where=output, fix="check the path"
        ) from None


def render(result: Any, console: Console) -> None:
    data = result.to_dict()
    window = data["window"]
    labels = ", ".join(f"{k} {window[k]}" for k in ("step", "model") if window[k])
    console.print(
        f"outform health: {window['since']} to {window['until']}"
        + (f" ({labels})" if labels else ""),
        markup=False,
    )
    if not data["totals"]["runs"] and not data["totals"]["provider_calls"]:
        console.print("no runs recorded in this window", style="yellow")
    for table in result.tables():
        if not table.rows or table.name == "recommendations":
            continue
        shown = RichTable(title=table.title, title_justify="left")
        for column in table.columns:
            shown.add_column(column, overflow="fold")
        for row in table.rows:
            shown.add_row(*(Text("" if v is None else _cell(v)) for v in row))
        console.print(shown)
    recommendations = data["recommendations"]
    if recommendations:
        console.print("Recommendations", style="bold")
        for item in recommendations:
            console.print(f"- {item['message']}", markup=False)
    else:
        console.print("Recommendations: none (nothing crosses the thresholds)", markup=False)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
