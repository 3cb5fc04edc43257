"""Bulk extraction through the providers' batch APIs: one request per input row, every row
accounted for, resumable after a crash. See docs/batch.md.

    job = outform.batch.submit("rows.jsonl", "openai:gpt-5-mini", Invoice,
                               prompt="Extract the invoice: {text}", output="out.jsonl")
    outform.batch.status(job.job)          # counts per status, batches, rounds
    for row in outform.batch.results(job.job):   # waits for the end; one dict per row
        ...

`asubmit`, `astatus` and `aresults` are the same, awaitable (the work runs in a thread, so an
event loop is never blocked).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from outform import arguments, baseurl
from outform.batch.job import JobSpec
from outform.batch.manifest import Manifest, ResultWarning
from outform.batch.manifest_sqlite import open_sqlite, sqlite_files
from outform.batch.outcome import STATUSES, Status
from outform.batch.paths import check_apart
from outform.batch.progress import Progress, Silent
from outform.batch.rows import Template, open_input
from outform.batch.runner import (
    JobStatus,
    Runner,
    check_output,
    start,
    status_of,
    write_output,
)
from outform.errors import JobBusyError, UsageError
from outform.format import ResponseFormat
from outform.plan import Mode
from outform.trace.caller import Labels
from outform.trace.caller import resolve as resolve_labels
from outform.transport import Transport

DEFAULT_MANIFEST = Path(".outform") / "batch.sqlite3"
ENV_MANIFEST = "OUTFORM_BATCH_MANIFEST"


def manifest_location(manifest: str | Path | None = None) -> str:
    """The manifest named, else $OUTFORM_BATCH_MANIFEST, else `[batch] manifest` in the
    config, else .outform/batch.sqlite3 under the working directory: a SQLite file (a path
    or `sqlite:PATH`) or a PostgreSQL DSN (`postgres:DSN`, a `postgresql://` URL, or
    `postgres:$VARIABLE` to read the DSN, password and all, from the environment)."""
    from outform.config import settings

    chosen = manifest or os.environ.get(ENV_MANIFEST) or settings().batch.get("manifest")
    return str(DEFAULT_MANIFEST if chosen is None else chosen)


def _is_postgres(location: str) -> bool:
    kind, sep, _ = location.partition(":")
    return location.startswith(("postgres://", "postgresql://")) or (
        bool(sep) and kind in ("postgres", "postgresql")
    )


def manifest_files(manifest: str | Path | None = None) -> tuple[Path, ...]:
    """The files of the manifest at `manifest_location(manifest)` (a SQLite file and its
    companions; none for PostgreSQL), before it is opened or made."""
    location = manifest_location(manifest)
    return () if _is_postgres(location) else sqlite_files(location.removeprefix("sqlite:"))


def open_manifest(manifest: str | Path | None = None, *, create: bool = True) -> Manifest:
    """The manifest at `manifest_location(manifest)`; `create=False` for commands that read
    an existing job: a SQLite manifest that does not exist is a StoreError, not a new file."""
    location = manifest_location(manifest)
    if location.startswith(("postgres://", "postgresql://")):
        location = "postgres:" + location
    kind, sep, target = location.partition(":")
    if sep and kind in ("postgres", "postgresql"):
        try:
            from outform.batch.manifest_postgres import open_postgres
        except ImportError:
            raise UsageError(
                "a PostgreSQL batch manifest needs psycopg",
                where="manifest",
                fix="pip install 'outform[postgres]'",
            ) from None
        if target.startswith("$"):
            name = target[1:]
            target = os.environ.get(name, "")
            if not target:
                raise UsageError(
                    f"the manifest variable {name} is not set",
                    where="manifest",
                    fix=f"export {name}=postgresql://USER:PASSWORD@HOST/DATABASE",
                )
        return open_postgres(target)
    return open_sqlite(location.removeprefix("sqlite:"), create=create)


def _format(output: Any) -> ResponseFormat:
    if isinstance(output, ResponseFormat):
        return output
    if isinstance(output, Mapping):
        return ResponseFormat.json_schema(output)
    if output is None:
        raise UsageError(
            "a batch job needs an output schema or type", fix="pass a Pydantic model or a schema"
        )
    return ResponseFormat.of(output)


def _defaults() -> Mapping[str, Any]:
    from outform.config import settings

    return settings().batch


def spec(
    input: str | Path,
    model: str,
    output_format: Any,
    *,
    output: str | Path | None = None,
    prompt: str | None = None,
    id_field: str = "id",
    mode: Mode = "auto",
    rounds: int | None = None,
    level: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    extra: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    live: bool = False,
    concurrency: int | None = None,
    max_requests: int | None = None,
    max_bytes: int | None = None,
    poll_interval: float | None = None,
    s3_uri: str | None = None,
    role_arn: str | None = None,
    labels: Labels | Mapping[str, Any] | None = None,
) -> JobSpec:
    """A job's settings; unset ones come from `[batch]` in the config, then the defaults.
    `labels`: the trace labels of its rows, over the current `labels(...)` block and
    `[defaults]` (resolved now: a resume in another process records under the same)."""
    defaults = _defaults()
    resolved = resolve_labels(labels)
    if base_url is not None and (why := baseurl.problem(base_url)) is not None:
        raise UsageError(  # before the manifest is made; credentials never go in it
            f"base URL {baseurl.shown(base_url)!r} refused: {why}",
            where="--base-url",
            fix=baseurl.FIX,
        )
    if poll_interval is not None and (
        type(poll_interval) not in (int, float) or not 0 < poll_interval <= 86_400
    ):
        raise arguments.refused(
            "--poll-interval", "a number of seconds above 0, at most 86400", poll_interval
        )
    return JobSpec(
        model=model,
        format=_format(output_format).to_dict(),
        input=str(input),
        output=str(Path(output).resolve()) if output is not None else None,
        prompt=prompt,
        id_field=id_field,
        mode=mode,
        rounds=rounds if rounds is not None else int(defaults.get("rounds", 2)),
        level=level,
        temperature=temperature,
        max_tokens=max_tokens,
        extra=dict(extra or {}),
        base_url=base_url,
        live=live,
        concurrency=concurrency or int(defaults.get("concurrency", 8)),
        max_requests=max_requests or defaults.get("max_requests"),
        max_bytes=max_bytes or defaults.get("max_bytes"),
        poll_interval=poll_interval or float(defaults.get("poll_interval", 30.0)),
        s3_uri=s3_uri or defaults.get("s3_uri"),
        role_arn=role_arn or defaults.get("role_arn"),
        labels={"step": resolved.step, "agent": resolved.agent, "tags": list(resolved.tags)},
    )


def submit(
    input: str | Path,
    model: str,
    output_format: Any,
    *,
    manifest: str | Path | None = None,
    api_key: str | None = None,
    transport: Transport | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> JobStatus:
    """Check every row (a bad one raises UsageError naming its line, and nothing is sent),
    record the job, and submit its first round. Returns at once; the job id is `.job`."""
    job_spec = spec(input, model, output_format, **options)
    open_input(Path(job_spec.input)).close()  # a missing input is named before a key is asked
    # What can be judged without the rows is judged before the manifest is made.
    if job_spec.prompt is not None:
        Template(job_spec.prompt)
    output = Path(job_spec.output) if job_spec.output is not None else None
    # the output, the input and the manifest: three files (one over another loses the job)
    check_apart(output, Path(job_spec.input), manifest_files(manifest))
    if output is not None:
        check_output(output, Path(job_spec.input))
    store = open_manifest(manifest)
    try:
        job = start(store, job_spec, progress=progress, api_key=api_key)
        if progress is not None:  # before anything is sent: a run stopped now resumes by it
            progress.note(f"job {job} recorded: `outform batch status {job}` follows it")
        runner = Runner(store, job, transport=transport, progress=progress, api_key=api_key)
        return runner.run(wait=False)
    finally:
        store.close()


def status(
    job: str,
    *,
    manifest: str | Path | None = None,
    api_key: str | None = None,
    transport: Transport | None = None,
    refresh: bool = True,
) -> JobStatus:
    """Where the job stands. With `refresh`, first ask the provider (and read the results of
    batches that have ended, submitting any follow-up round) without waiting; unless another
    process drives the job, then as that process last recorded it."""
    store = open_manifest(manifest, create=False)
    try:
        if refresh:
            try:
                return Runner(store, job, transport=transport, api_key=api_key).run(wait=False)
            except JobBusyError:
                pass  # another process drives the job: what it has recorded so far
        record = store.job(job)
        return status_of(store, job, record.state, JobSpec.from_json(record.spec).output)
    finally:
        store.close()


def jobs(*, manifest: str | Path | None = None) -> list[dict[str, Any]]:
    """The jobs in the manifest, newest first: job id, state, rows, round, created (Unix)."""
    store = open_manifest(manifest, create=False)
    try:
        return [
            {"job": j.id, "state": j.state, "rows": j.rows, "round": j.round, "created": j.created}
            for j in store.jobs()
        ]
    finally:
        store.close()


def resume(
    job: str,
    *,
    manifest: str | Path | None = None,
    api_key: str | None = None,
    transport: Transport | None = None,
    progress: Progress | None = None,
    wait: bool = True,
) -> JobStatus:
    """Carry a job on from wherever it stopped, to its end with `wait`."""
    store = open_manifest(manifest, create=False)
    try:
        runner = Runner(store, job, transport=transport, progress=progress, api_key=api_key)
        return runner.run(wait=wait)
    finally:
        store.close()


def results(
    job: str,
    *,
    manifest: str | Path | None = None,
    api_key: str | None = None,
    transport: Transport | None = None,
    wait: bool = True,
) -> Iterator[dict[str, Any]]:
    """One dict per input row, in input order (id, line, status, value, changes, hint...),
    after driving the job to its end (`wait`); UsageError if it has not ended."""
    if wait:
        resume(job, manifest=manifest, api_key=api_key, transport=transport)
    store = open_manifest(manifest, create=False)
    try:
        if store.job(job).state != "done":
            raise UsageError(
                f"batch job {job} has not finished", fix="wait=True, or `outform batch resume`"
            )
        for _, line in store.results(job):
            yield orjson.loads(line or b"{}")
    finally:
        store.close()


async def asubmit(input: str | Path, model: str, output_format: Any, **kwargs: Any) -> JobStatus:
    """submit(), awaitable."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(lambda: submit(input, model, output_format, **kwargs))


async def astatus(job: str, **kwargs: Any) -> JobStatus:
    """status(), awaitable."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(lambda: status(job, **kwargs))


async def aresume(job: str, **kwargs: Any) -> JobStatus:
    """resume(), awaitable."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(lambda: resume(job, **kwargs))


async def aresults(job: str, *, wait: bool = True, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
    """results(), for `async for`: rows are read from the manifest a page at a time."""
    import anyio.to_thread

    if wait:
        await aresume(job, **kwargs)
    rows = results(job, wait=False, manifest=kwargs.get("manifest"))
    while True:
        page = await anyio.to_thread.run_sync(
            lambda: [r for _, r in zip(range(1000), rows, strict=False)]
        )
        if not page:
            return
        for row in page:
            yield row


__all__ = [
    "DEFAULT_MANIFEST",
    "STATUSES",
    "JobBusyError",
    "JobSpec",
    "JobStatus",
    "Manifest",
    "Progress",
    "ResultWarning",
    "Silent",
    "Status",
    "aresults",
    "aresume",
    "astatus",
    "asubmit",
    "jobs",
    "manifest_files",
    "manifest_location",
    "open_manifest",
    "results",
    "resume",
    "spec",
    "status",
    "submit",
    "write_output",
]
