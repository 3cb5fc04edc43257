"""The `[trace]` section of outform.toml, as one object.

```toml
[trace]
enabled = true                 # record runs and interventions (OUTFORM_TRACE=off turns it off)
store = "sqlite"               # the user's data directory; or "sqlite:PATH", "postgres:$DSN_VAR"
retention_days = 30            # older runs and counts are deleted
max_size_mb = 1024             # past this, the oldest runs are deleted
queue_size = 100000            # events waiting for the writer (beyond: dropped and counted)
max_change_events = 1000       # changes of one reply stored one by one; the rest folded
flush_interval = 0.5           # seconds between two batches: what a crash can lose
otel = false                   # also export spans to OpenTelemetry (the `otel` extra)
```

`OUTFORM_TRACE` overrides `store` (`off` turns recording off, whatever the file says). The
labels of calls are not set here: a profile's name is its step, `[profiles.NAME]` and
`[defaults]` give `agent` and `tags` (see `outform.profile`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outform.storespec import expand

ENV_VAR = "OUTFORM_TRACE"
DEFAULT_FILE = "trace.sqlite"
OFF = ("off", "none", "false", "0")


def default_store_path() -> Path:
    """Where the SQLite trace store lives by default: the user's data directory (for example
    ~/.local/share/outform on Linux, ~/Library/Application Support/outform on macOS)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("outform", appauthor=False)) / DEFAULT_FILE


@dataclass(frozen=True)
class TraceSettings:
    enabled: bool = True
    store: str = field(default="sqlite", repr=False)  # a DSN may hold a password
    store_base_dir: str | None = None
    """Where a relative SQLite path is resolved: the config file's directory."""
    retention_days: float = 30.0
    max_size_mb: int = 1024
    queue_size: int = 100_000
    max_change_events: int = 1000
    """Changes of one reply stored as events one by one; the rest, one event per stage,
    transform and lossiness with their count (`outform.parse.result.fold`)."""
    flush_interval: float = 0.5
    otel: bool = False

    @classmethod
    def from_config(cls, values: Mapping[str, Any], *, source: Path | None = None) -> TraceSettings:
        """Settings from a validated `[trace]` table (see `outform.config`)."""
        simple = ("enabled", "store", "retention_days", "max_size_mb", "queue_size",
                  "max_change_events", "flush_interval", "otel")  # fmt: skip
        chosen: dict[str, Any] = {k: values[k] for k in simple if k in values}
        for key in ("retention_days", "flush_interval"):
            if key in chosen:
                chosen[key] = float(chosen[key])
        base = str(source.parent) if source is not None else None
        return cls(**chosen, store_base_dir=base)

    def store_spec(self, env: Mapping[str, str] = os.environ) -> str | None:
        """The store to record into (None: recording is off). `OUTFORM_TRACE` wins over the
        file; a `$VAR` target is read from the environment."""
        spec = env.get(ENV_VAR, "").strip() or self.store
        if spec.lower() in OFF or (not self.enabled and not env.get(ENV_VAR, "").strip()):
            return None
        return expand(spec, env, what="trace store", where="[trace] store")
