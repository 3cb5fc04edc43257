"""`outform batch run | status | resume`: bulk extraction through the providers' batch APIs.

Reads the options, draws progress on standard error, prints the summary; the work is
outform.batch's. Exit codes: 0 the job finished and every row is ok or repaired, 1 it finished
with rows failed, provider_error or expired (see OUT.jsonl), 2 wrong usage or bad input (no
batch was submitted; a manifest or input file that does not exist), 6 the job is still
running (--no-wait, `status`, or another process drives it). Lines of a batch's results not
used (an unknown id, a line not a result, a second result for a row) are warnings on standard
error; they leave the exit code alone (a row left without an answer ends provider_error).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from outform.cli import options
from outform.cli.app import EXIT_INVALID, EXIT_RUNNING, app, stderr
from outform.cli.io import (
    argument_text,
    decoded,
    import_type,
    load_schema,
    print_error,
    print_json,
)
from outform.errors import UsageError

batch_app = typer.Typer(
    rich_markup_mode=None,
    help="Bulk extraction through the providers' batch APIs (see docs/batch.md).",
    no_args_is_help=True,
)
app.add_typer(batch_app, name="batch")

Manifest = Annotated[
    str | None,
    typer.Option(
        "--manifest",
        help="The job manifest: a SQLite file (default .outform/batch.sqlite3) or "
        "postgres:DSN (postgres:$VAR reads the DSN from the environment).",
    ),
]
Json = Annotated[
    bool, typer.Option("--json", help="Print the status as JSON, with no progress bars.")
]


class RichProgress:
    """Bars for checking, submitting, waiting and parsing, with counts per status."""

    def __init__(self) -> None:
        self.bars = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[counts]}"),
            console=stderr,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.text = ""

    def __enter__(self) -> RichProgress:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def start(self, phase: str, total: int | None) -> None:
        if phase in self.tasks:
            self.bars.reset(self.tasks[phase], total=total)
        else:
            self.tasks[phase] = self.bars.add_task(phase, total=total, counts="")

    def advance(self, phase: str, n: int = 1) -> None:
        if phase in self.tasks:
            self.bars.advance(self.tasks[phase], n)

    def counts(self, counts: Mapping[str, int]) -> None:
        self.text = "  ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        for task in self.tasks.values():
            self.bars.update(task, counts="")
        if "parsing" in self.tasks:
            self.bars.update(self.tasks["parsing"], counts=self.text)

    def note(self, text: str) -> None:
        self.bars.console.print(text, markup=False, highlight=False)


def _prompt(value: str | None) -> str | None:
    """The --prompt template: as given, or the text of the file after `@`."""
    if value is None:
        return None
    if not value.startswith("@"):
        return argument_text(value, "--prompt")
    path = Path(value[1:])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"cannot read the prompt template: {exc.strerror}", where=str(path)
        ) from None
    return decoded(raw, "prompt template", str(path))


@batch_app.command("run")
def run_command(
    input: Annotated[Path, typer.Argument(help="JSON Lines file: one object per row.")],
    model: Annotated[str, typer.Option("--model", "-m", help="provider:model")],
    output: Annotated[Path, typer.Option("--output", "-o", help="OUT.jsonl: one line per row.")],
    schema: Annotated[
        Path | None, typer.Option("--schema", "-s", help="JSON Schema file of each value.")
    ] = None,
    type_: Annotated[
        str | None, typer.Option("--type", "-t", help="Python type of each value, module:Name.")
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option("--prompt", "-p", help="Template with {field}s of the row, or @FILE."),
    ] = None,
    id_field: Annotated[str, typer.Option("--id-field", help="The row key holding its id.")] = "id",
    rounds: Annotated[
        int | None, typer.Option("--rounds", min=0, max=10, help="Follow-up rounds (default 2).")
    ] = None,
    mode: Annotated[
        str, typer.Option("--mode", help="auto, native, tool, json or prompted.")
    ] = "auto",
    level: Annotated[str | None, typer.Option("--level", help="Repair level.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1)] = None,
    live: Annotated[
        bool, typer.Option("--live", help="Send ordinary calls even where a batch API exists.")
    ] = False,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Live calls at once (default 8).")
    ] = None,
    max_requests: Annotated[
        int | None, typer.Option("--max-requests", min=1, help="Requests per batch, at most.")
    ] = None,
    max_bytes: Annotated[
        int | None, typer.Option("--max-bytes", min=1024, help="Bytes per batch file, at most.")
    ] = None,
    poll_interval: Annotated[
        float | None, typer.Option("--poll-interval", help="Seconds between status checks.")
    ] = None,
    base_url: Annotated[str | None, typer.Option("--base-url")] = None,
    s3_uri: Annotated[
        str | None, typer.Option("--s3-uri", help="Bedrock: s3://bucket/prefix/ for the files.")
    ] = None,
    role_arn: Annotated[
        str | None, typer.Option("--role-arn", help="Bedrock: the job's role.")
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Wait for the end (default), or submit only.")
    ] = True,
    manifest: Manifest = None,
    as_json: Json = False,
    api_key_env: options.ApiKeyEnv = None,
) -> None:
    """Check every row, submit them, wait, parse every reply, re-ask the invalid ones, and
    write OUT.jsonl. Nothing is submitted until the whole input has been checked."""
    from outform import batch

    if (schema is None) == (type_ is None):
        raise UsageError(
            "give exactly one of --schema and --type",
            fix="outform batch run rows.jsonl -m openai:gpt-5-mini -s s.json -o out.jsonl",
        )
    output_format: Any = load_schema(schema) if schema is not None else import_type(type_ or "")
    settings: dict[str, Any] = {
        "api_key": options.key_from(api_key_env),
        "output": output,
        "prompt": _prompt(prompt),
        "id_field": id_field,
        "rounds": rounds,
        "mode": mode,
        "level": level,
        "max_tokens": max_tokens,
        "live": live,
        "concurrency": concurrency,
        "max_requests": max_requests,
        "max_bytes": max_bytes,
        "poll_interval": poll_interval,
        "base_url": base_url,
        "s3_uri": s3_uri,
        "role_arn": role_arn,
    }
    _drive(
        lambda progress: batch.submit(
            input, model, output_format, manifest=manifest, progress=progress, **settings
        ),
        manifest,
        as_json,
        wait,
        settings["api_key"],
    )


@batch_app.command("status")
def status_command(
    job: Annotated[str | None, typer.Argument(help="The job id; none lists the jobs.")] = None,
    manifest: Manifest = None,
    as_json: Json = False,
    refresh: Annotated[
        bool, typer.Option("--refresh/--no-refresh", help="Ask the provider first (default).")
    ] = True,
    api_key_env: options.ApiKeyEnv = None,
) -> None:
    """Where a job stands (asking the provider, and reading batches that ended)."""
    from outform import batch

    if job is None:
        _list(manifest, as_json)
        return
    key = options.key_from(api_key_env)
    status = batch.status(job, manifest=manifest, refresh=refresh, api_key=key)
    _report(status, as_json)


@batch_app.command("resume")
def resume_command(
    job: Annotated[str, typer.Argument(help="The job id.")],
    manifest: Manifest = None,
    as_json: Json = False,
    wait: Annotated[bool, typer.Option("--wait/--no-wait")] = True,
    api_key_env: options.ApiKeyEnv = None,
) -> None:
    """Carry a job on from where it stopped (after a crash, kill -9 or --no-wait): no row is
    submitted twice, none is lost."""
    from outform import batch

    key = options.key_from(api_key_env)
    _drive(
        lambda progress: batch.resume(
            job, manifest=manifest, progress=progress, wait=False, api_key=key
        ),
        manifest,
        as_json,
        wait,
        key,
    )


def _drive(first: Any, manifest: str | None, as_json: bool, wait: bool, key: str | None) -> None:
    from outform.errors import JobBusyError

    try:
        _advance(first, manifest, as_json, wait, key)
    except JobBusyError as error:
        print_error(error)
        raise typer.Exit(EXIT_RUNNING) from None


def _advance(first: Any, manifest: str | None, as_json: bool, wait: bool, key: str | None) -> None:
    from outform import batch
    from outform.batch.progress import Silent

    if as_json:
        status = first(Silent())
        if wait and not status.done:
            status = batch.resume(status.job, manifest=manifest, api_key=key)
    else:
        with RichProgress() as progress:
            status = first(progress)
            progress.note(f"job {status.job}")
            if wait and not status.done:
                status = batch.resume(status.job, manifest=manifest, progress=progress, api_key=key)
    _report(status, as_json)


def _report(status: Any, as_json: bool) -> None:
    if as_json:
        print_json(status.to_dict())
    else:
        _summary(status)
    _warn(status)
    if not status.done:
        raise typer.Exit(EXIT_RUNNING)
    bad = sum(status.counts.get(k, 0) for k in ("failed", "provider_error", "expired"))
    if bad:
        raise typer.Exit(EXIT_INVALID)


def _summary(status: Any) -> None:
    table = Table(title=f"batch job {status.job}: {status.state}", title_justify="left")
    table.add_column("status")
    table.add_column("rows", justify="right")
    for name in ("ok", "repaired", "failed", "provider_error", "expired", "pending", "sent"):
        if status.counts.get(name):
            table.add_row(name, str(status.counts[name]))
    table.add_row("total", str(status.rows), style="bold")
    stderr.print(table)
    if status.rounds:
        rounds = ", ".join(f"round {r['round']}: {r['sent']} sent" for r in status.rounds)
        stderr.print(rounds, markup=False)
    if status.output and status.done:
        stderr.print(f"written: {status.output}", markup=False)
    if status.message:
        stderr.print(status.message, markup=False)


WARNINGS_PRINTED = 20

_KINDS = {
    "unknown_id": "result(s) for no row of the job",
    "unreadable": "line(s) that are not results",
    "duplicate": "second result(s) for a row",
}


def _warn(status: Any) -> None:
    """Lines of the results not used, one warning each (the first WARNINGS_PRINTED), on
    standard error. They leave the exit code alone: a row they cost its answer is sent again
    while rounds remain, and ends provider_error (exit code 1) when none is left."""
    counts: Mapping[str, int] = status.warning_counts
    total = sum(counts.values())
    if not total:
        return
    told = ", ".join(f"{n} {_KINDS.get(kind, kind)}" for kind, n in sorted(counts.items()))
    stderr.print(f"warning: the batches' results held {told}", markup=False, soft_wrap=True)
    for warning in status.warnings[:WARNINGS_PRINTED]:
        stderr.print(f"warning: {warning.message()}", markup=False, soft_wrap=True)
    if total > WARNINGS_PRINTED:
        stderr.print(
            f"warning: {total - WARNINGS_PRINTED} more: `outform batch status {status.job} "
            "--json` lists them (the first 1,000)",
            markup=False,
        )


def _list(manifest: str | None, as_json: bool) -> None:
    from outform import batch

    jobs = batch.jobs(manifest=manifest)
    if as_json:
        print_json(jobs)
        return
    table = Table(title="batch jobs", title_justify="left")
    for column in ("job", "state", "rows", "round"):
        table.add_column(column)
    for job in jobs:
        table.add_row(*(str(job[c]) for c in ("job", "state", "rows", "round")))
    stderr.print(table)
