"""Project-wide defaults from `outform.toml` (or `[tool.outform]` in pyproject.toml).

Found by walking up from the working directory, or named by `OUTFORM_CONFIG`. Everything set
here can be overridden per call. Unknown keys and bad values are errors naming the file, the
key and what is allowed: a typo in a config file must not silently fall back to a default.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outform.errors import ConfigError
from outform.parse.context import BOUNDS
from outform.trace.settings import TraceSettings

CONFIG_FILE = "outform.toml"
ENV_VAR = "OUTFORM_CONFIG"


@dataclass(frozen=True)
class Check:
    """How one key is validated: a predicate and the sentence describing what is allowed."""

    accepts: Callable[[Any], bool]
    allowed: str
    secret: bool = False
    """A bad value is not repeated in the error (it may be a key pasted in by mistake)."""


def _choice(*values: str) -> Check:
    return Check(lambda v: v in values, "one of " + ", ".join(repr(v) for v in values))


def _int(low: int, high: int) -> Check:
    return Check(
        lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high,
        f"an integer from {low} to {high}",
    )


def _number(low: float, high: float) -> Check:
    return Check(
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and low <= v <= high,
        f"a number from {low} to {high}",
    )


_BOOL = Check(lambda v: isinstance(v, bool), "true or false")


def _subset(*values: str) -> Check:
    return Check(
        lambda v: isinstance(v, list) and all(item in values for item in v),
        "a list drawn from " + ", ".join(repr(v) for v in values),
    )


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(value: Any) -> bool:
    return isinstance(value, str) and _ENV_NAME.fullmatch(value) is not None


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _backend(value: Any) -> bool:
    """An http(s) URL of a Chat Completions server, or a provider of outform's registry."""
    if not _text(value):
        return False
    if value.startswith(("http://", "https://")):
        return True
    from outform.providers.registry import PROVIDERS

    return value in PROVIDERS


_GATEWAY: dict[str, Check] = {
    "backend": Check(
        _backend,
        "an http:// or https:// URL of a Chat Completions API (e.g. http://localhost:8000/v1), "
        "or a provider name such as 'anthropic' or 'gemini'",
    ),
    "backend_api_key_env": Check(
        _env_name, "the name of an environment variable (not the key itself)", secret=True
    ),
    "model_map": Check(
        lambda v: isinstance(v, dict) and all(_text(k) and _text(t) for k, t in v.items()),
        "a table of model names: client-facing name = backend model",
    ),
    "api_keys": Check(
        lambda v: isinstance(v, list) and all(_env_name(item) for item in v),
        "a list of environment variable names (the keys themselves never go in the file)",
        secret=True,
    ),
    "max_body_bytes": _int(1_024, 1 << 30),
    "max_buffered_bytes": _int(1_024, 1 << 40),
    "backend_timeout": _number(0.01, 86_400),
    "backend_connect_timeout": _number(0.01, 3_600),
    "backend_idle_timeout": _number(0.01, 86_400),
    "max_connections": _int(1, 100_000),
    "store": Check(_text, "'memory', 'sqlite:PATH' or 'postgres:DSN'", secret=True),
    "enforce": _BOOL,
    "enforce_retries": _int(0, 10),
    "enforce_level": _choice("off", "minimal", "full"),
    "enforce_workers": _int(1, 256),
    "enforce_time_limit": _number(0.01, 3_600),
    "host": Check(_text, "a host name or address to listen on"),
    "port": _int(0, 65_535),
    "shutdown_timeout": _number(0, 86_400),
    "access_log": _BOOL,
}


_BATCH: dict[str, Check] = {
    "manifest": Check(_text, "'sqlite:PATH' or a file path", secret=True),
    "rounds": _int(0, 10),
    "concurrency": _int(1, 1_024),
    "poll_interval": _number(0.01, 86_400),
    "max_requests": _int(1, 1_000_000),
    "max_bytes": _int(1_024, 1 << 32),
    "s3_uri": Check(lambda v: _text(v) and v.startswith("s3://"), "an s3://bucket/prefix/ URI"),
    "role_arn": Check(lambda v: _text(v) and v.startswith("arn:"), "an IAM role ARN"),
}


def _label_profiles(value: Any) -> bool:
    return isinstance(value, dict) and all(
        _text(name) and isinstance(entry, dict) and _labels(entry) for name, entry in value.items()
    )


def _labels(entry: dict[str, Any]) -> bool:
    return set(entry) <= {"step", "agent", "tags"} and all(
        _TAGS.accepts(v) if k == "tags" else _text(v) for k, v in entry.items()
    )


_TAGS = Check(
    lambda v: isinstance(v, list) and all(_text(item) for item in v),
    "a list of non-empty strings",
)

_TRACE: dict[str, Check] = {
    "enabled": _BOOL,
    "store": Check(
        _text, "'sqlite', 'sqlite:PATH', 'postgres:DSN' (or postgres:$VAR) or 'off'", secret=True
    ),
    "retention_days": _number(0.001, 36_500),
    "max_size_mb": _int(1, 10_000_000),
    "queue_size": _int(100, 100_000_000),
    "flush_interval": _number(0.01, 60),
    "otel": _BOOL,
    "step": Check(_text, "a non-empty string"),
    "agent": Check(_text, "a non-empty string"),
    "tags": _TAGS,
    "profiles": Check(
        _label_profiles,
        "tables [trace.profiles.NAME] with step, agent (strings) and tags (a list of strings)",
    ),
}


SECTIONS: dict[str, dict[str, Check]] = {
    "parse": {
        "level": _choice("off", "minimal", "full"),
        "tolerance": _int(0, 2),
        "lenient": _BOOL,
        "fill_defaults": _BOOL,
        **{name: Check(bound.accepts, bound.allowed) for name, bound in BOUNDS.items()},
        "stages": _subset("extract", "unescape", "decode", "coerce"),
    },
    "gateway": _GATEWAY,
    "batch": _BATCH,
    "trace": _TRACE,
}


@dataclass(frozen=True)
class ParseSettings:
    level: str = "minimal"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Every other `[parse]` key, passed on as pipeline options."""


@dataclass(frozen=True)
class Settings:
    parse: ParseSettings = field(default_factory=ParseSettings)
    gateway: Mapping[str, Any] = field(default_factory=dict)
    """The `[gateway]` keys as written (validated); `outform.gateway.settings` reads them."""
    batch: Mapping[str, Any] = field(default_factory=dict)
    """The `[batch]` keys as written (validated); `outform.batch` reads them."""
    trace: TraceSettings = field(default_factory=TraceSettings)
    source: Path | None = None
    """The file the settings came from, or None for built-in defaults."""


def find_config(start: Path | None = None) -> tuple[Path, str] | None:
    """The config file and the table it lives in ('' or 'tool.outform'), or None."""
    named = os.environ.get(ENV_VAR)
    if named:
        path = Path(named)
        if not path.is_file():
            raise ConfigError(
                f"{ENV_VAR} names a file that does not exist: {named}",
                where=f"environment variable {ENV_VAR}",
                fix="point it at an existing outform.toml, or unset it",
            )
        return path, "tool.outform" if path.name == "pyproject.toml" else ""
    directory = (start or Path.cwd()).resolve()
    for folder in (directory, *directory.parents):
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate, ""
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject, "tool.outform"
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        return "outform" in _read(path).get("tool", {})
    except ConfigError:
        return False


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"the config file is not valid TOML: {exc}",
            where=str(path),
            fix="correct the TOML syntax at the line named",
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the config file: {exc.strerror}", where=str(path)) from None


def load(path: Path, table: str = "") -> Settings:
    """Read and validate settings from a file."""
    data: Any = _read(path)
    prefix = ""
    for part in filter(None, table.split(".")):
        data = data.get(part, {})
        prefix += part + "."
    if not isinstance(data, dict):
        raise ConfigError(f"[{table}] must be a table", where=str(path))
    parse: dict[str, Any] = {}
    gateway: dict[str, Any] = {}
    batch: dict[str, Any] = {}
    trace: dict[str, Any] = {}
    for section, values in data.items():
        checks = SECTIONS.get(section)
        if checks is None:
            raise ConfigError(
                f"unknown section [{prefix}{section}]",
                where=str(path),
                fix=f"use one of: {', '.join(f'[{prefix}{s}]' for s in SECTIONS)}",
            )
        if not isinstance(values, dict):
            raise ConfigError(f"[{prefix}{section}] must be a table", where=str(path))
        for key, value in values.items():
            check = checks.get(key)
            if check is None:
                raise ConfigError(
                    f"unknown key {key!r} in [{prefix}{section}]",
                    where=str(path),
                    fix=f"use one of: {', '.join(sorted(checks))}",
                )
            if not check.accepts(value):
                shown = "(not shown: it may be a secret)" if check.secret else repr(value)
                raise ConfigError(
                    f"bad value {shown} for {prefix}{section}.{key}",
                    where=str(path),
                    fix=f"allowed: {check.allowed}",
                )
        if section == "parse":
            parse = dict(values)
        elif section == "gateway":
            gateway = dict(values)
        elif section == "batch":
            batch = dict(values)
        elif section == "trace":
            trace = dict(values)
    level = parse.pop("level", "minimal")
    return Settings(
        parse=ParseSettings(level=level, overrides=parse),
        gateway=gateway,
        batch=batch,
        trace=TraceSettings.from_config(trace, source=path),
        source=path,
    )


@functools.lru_cache(maxsize=1)
def _discovered() -> Settings:
    found = find_config()
    return load(*found) if found else Settings()


def settings() -> Settings:
    """The settings in effect: read once from the discovered file, then cached."""
    return _discovered()


def reload() -> Settings:
    """Forget the cached settings (after changing directory or the file) and read them again.
    Compiled pipelines, which carry the old settings, are forgotten too."""
    from outform.parse import clear_cache

    _discovered.cache_clear()
    clear_cache()
    return settings()
