"""The process's recorder: started from `[trace]` on first use, or explicitly.

    outform.trace.start()                      # from outform.toml / OUTFORM_TRACE
    outform.trace.start(store="sqlite:t.db", otel=True)
    outform.trace.emit(event)                  # what outform's own code calls
    outform.trace.flush(); outform.trace.stop()

`active()` is what the hot path asks: the recorder, or None when recording is off. The first
call reads the settings and starts the recorder (a thread and the sinks) when they say so;
later calls cost one global read. The pipeline's fast path reads `tally` instead: the running
recorder's `tally`, or None when recording is off (one module attribute read and a test of
None, when off).

Store specs (`[trace] store`, `OUTFORM_TRACE`, `--store`):

    sqlite                      the user's data directory (see `default_store_path`)
    sqlite:PATH, PATH.sqlite    a file; relative to the config file that names it
    postgres:DSN, postgresql://...   PostgreSQL (the `postgres` extra)
    off                         no store (other sinks may still run)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from outform.errors import ConfigError
from outform.trace.events import Event
from outform.trace.recorder import Recorder, Sink
from outform.trace.settings import OFF, TraceSettings, default_store_path
from outform.trace.store import TraceStore

_SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
FORMS = "'sqlite', 'sqlite:PATH', 'postgres:DSN', a postgresql:// URL, or 'off'"

_lock = threading.Lock()
_recorder: Recorder | None = None
_decided = False


def _decide_then_tally() -> None:
    """The first tally of the process: decide whether recording is on (`active()` sets
    `tally` for the next ones), then count this one."""
    recorder = active()
    if recorder is not None:
        recorder.tally()


tally: Callable[[], None] | None = _decide_then_tally
"""What the pipeline's fast path calls for a reply valid as sent: the recorder's `tally`,
None when recording is off."""


def open_store(
    spec: str, *, base_dir: str | Path | None = None, **options: Any
) -> TraceStore | None:
    """The trace store `spec` names (None for `off`). `options`: retention_days, max_size_mb."""
    text = spec.strip()
    lowered = text.lower()
    if lowered in OFF:
        return None
    if lowered == "sqlite" or lowered.startswith("sqlite:"):
        rest = text[len("sqlite:") :]
        rest = rest[3:] if rest.startswith("///") else rest  # sqlite:///rel, sqlite:////abs
        return _sqlite(Path(rest) if rest else default_store_path(), base_dir, options)
    if lowered.startswith(("postgres://", "postgresql://")):
        return _postgres(text, options)
    for scheme in ("postgresql:", "postgres:"):
        if lowered.startswith(scheme):
            return _postgres(text[len(scheme) :].strip(), options)
    if lowered.endswith(_SQLITE_SUFFIXES) and "://" not in text:
        return _sqlite(Path(text), base_dir, options)
    from outform.gateway.stores import redact_dsn

    raise ConfigError(
        f"unknown trace store {redact_dsn(text)!r}",
        where="[trace] store",
        fix=f"use one of {FORMS}",
    )


def _sqlite(path: Path, base_dir: str | Path | None, options: dict[str, Any]) -> TraceStore:
    from outform.trace.sqlite_store import SqliteTraceStore

    path = path.expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return SqliteTraceStore(path, **options)


def _postgres(dsn: str, options: dict[str, Any]) -> TraceStore:
    try:
        from outform.trace.postgres_store import PostgresTraceStore
    except ImportError:
        raise ConfigError(
            "a PostgreSQL trace store needs psycopg",
            where="[trace] store",
            fix="pip install 'outform[postgres]'",
        ) from None
    return PostgresTraceStore(dsn, **options)


def sinks_for(settings: TraceSettings, *, store: str | None = None) -> list[Sink]:
    """The sinks `settings` ask for: the store, OpenTelemetry, and logging (always: it costs
    nothing until the `outform` logger is enabled)."""
    from outform.trace.logging_sink import LoggingSink

    spec = store if store is not None else settings.store_spec()
    sinks: list[Sink] = []
    if spec is not None:
        opened = open_store(
            spec,
            base_dir=settings.store_base_dir,
            retention_days=settings.retention_days,
            max_size_mb=settings.max_size_mb,
        )
        if opened is not None:
            sinks.append(opened)
    if settings.otel:
        from outform.trace.otel import OtelSink

        sinks.append(OtelSink())
    sinks.append(LoggingSink())
    return sinks


def start(
    *,
    store: str | None = None,
    otel: bool | None = None,
    sinks: list[Sink] | None = None,
    settings: TraceSettings | None = None,
) -> Recorder:
    """Start recording (replacing a recorder already running). Without arguments, as
    `[trace]` says; `store` / `otel` override it; `sinks` replaces the sinks altogether."""
    global _recorder, _decided  # the one recorder of the process
    if settings is None:
        from outform.config import settings as configured

        settings = configured().trace
    if otel is not None:
        from dataclasses import replace

        settings = replace(settings, otel=otel)
    chosen = sinks if sinks is not None else sinks_for(settings, store=store)
    recorder = Recorder(
        chosen,
        queue_size=settings.queue_size,
        flush_interval=settings.flush_interval,
        max_change_events=settings.max_change_events,
    )
    with _lock:
        previous, _recorder, _decided = _recorder, recorder, True
        _set_tally(recorder)
    if previous is not None:
        previous.close()
    return recorder


def stop() -> None:
    """Flush and stop recording; nothing is recorded until `start()` is called again."""
    global _recorder, _decided
    with _lock:
        previous, _recorder, _decided = _recorder, None, True
        _set_tally(None)
    if previous is not None:
        previous.close()


def current() -> Recorder | None:
    """The recorder if one was started; never starts one (`active` does)."""
    return _recorder


def active() -> Recorder | None:
    """The recorder, started from the settings on the first call; None when off."""
    if _decided:
        return _recorder
    with _lock:
        if _decided:
            return _recorder
    from outform.config import settings

    configured = settings().trace
    if configured.store_spec() is None and not configured.otel:
        _set_off()
        return None
    start(settings=configured)
    return _recorder


def _set_off() -> None:
    global _decided  # noqa: PLW0603 - the one recorder of the process
    with _lock:
        _decided = True
        _set_tally(None)


def _set_tally(recorder: Recorder | None) -> None:
    global tally  # noqa: PLW0603 - read by the fast path without a call
    tally = recorder.tally if recorder is not None else None


def emit(event: Event) -> None:
    """Record one event (a no-op when recording is off)."""
    recorder = _recorder if _decided else active()
    if recorder is not None:
        recorder.record(event)


def flush(timeout: float | None = 30.0) -> bool:
    """Wait until everything recorded so far reached the sinks (True when there is no
    recorder)."""
    recorder = _recorder
    return True if recorder is None else recorder.flush(timeout)
