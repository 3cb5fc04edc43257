"""Project-wide defaults from `outform.toml` (or `[tool.outform]` in pyproject.toml).

Found by walking up from the working directory, or named by `OUTFORM_CONFIG`. Everything set
here can be overridden per call. Unknown keys and bad values are errors naming the file, the
key and what is allowed: a typo in a config file must not silently fall back to a default.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outform import baseurl
from outform.errors import ConfigError
from outform.parse.context import BOUNDS
from outform.trace.settings import TraceSettings

CONFIG_FILE = "outform.toml"
ENV_VAR = "OUTFORM_CONFIG"

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_value(value: Any) -> str:
    """A value written as in outform.toml, for messages about the file: 'full', true, 3,
    0.5, ['a', 'b'], { integer = ['str->int'] }. Strings are literal strings ('...') when
    they can be, else basic strings ("...", escaped). (TOML has no null; `null`, as in JSON,
    stands for a value that is not set.)"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        inner = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    if isinstance(value, list | tuple | frozenset | set):
        items = sorted(value, key=str) if isinstance(value, frozenset | set) else value
        return "[" + ", ".join(toml_value(item) for item in items) + "]"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return _toml_string(str(value))


def toml_key(name: str) -> str:
    """A key as TOML writes it: bare (`level`, `invoice_extract`) or quoted (`"a b"`)."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def _toml_string(text: str) -> str:
    if "'" not in text and not any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in text):
        return f"'{text}'"
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


@dataclass(frozen=True)
class Check:
    """How one key is validated: a predicate and the sentence describing what is allowed."""

    accepts: Callable[[Any], bool]
    allowed: str
    secret: bool = False
    """A bad value is not repeated in the error (it may be a key pasted in by mistake)."""
    shown: Callable[[Any], str] = toml_value
    """How a bad value is repeated in the error, as the file writes it (a URL without its
    credentials)."""


def _choice(*values: str) -> Check:
    return Check(lambda v: v in values, "one of " + ", ".join(toml_value(v) for v in values))


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
        "a list drawn from " + ", ".join(toml_value(v) for v in values),
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
        return baseurl.problem(value) is None
    return _provider(value)


def _provider(value: Any) -> bool:
    """A provider name of outform's registry."""
    if not _text(value):
        return False
    from outform.providers.registry import PROVIDERS

    return value in PROVIDERS


def _model(value: Any) -> bool:
    """A model written provider:name, the provider one of outform's registry."""
    if not _text(value):
        return False
    from outform.providers.registry import PROVIDERS

    provider, sep, name = value.partition(":")
    return bool(sep) and provider in PROVIDERS and bool(name.strip())


_GATEWAY: dict[str, Check] = {
    "backend": Check(
        _backend,
        "an http:// or https:// URL of a Chat Completions API with a host, a valid port if "
        "any, and no credentials, query string or fragment (e.g. http://localhost:8000/v1), "
        "or a provider name such as 'anthropic' or 'gemini'",
        shown=lambda value: toml_value(baseurl.shown(value) if isinstance(value, str) else value),
    ),
    "backend_api_key_env": Check(
        _env_name, "the name of an environment variable (not the key itself)", secret=True
    ),
    "allowed_providers": Check(
        lambda v: isinstance(v, list) and all(_provider(item) for item in v),
        "a list of provider names of outform's registry (e.g. ['openai'])",
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
    "dashboard_api_keys": Check(
        lambda v: isinstance(v, list) and all(_env_name(item) for item in v),
        "a list of environment variable names (the keys themselves never go in the file)",
        secret=True,
    ),
    "max_body_bytes": _int(1_024, 1 << 30),
    "max_request_depth": _int(8, 128),
    "max_input_items": _int(1, 100_000),
    "max_buffered_bytes": _int(1_024, 1 << 40),
    "body_timeout": _number(0.01, 3_600),
    "header_timeout": _number(0.01, 600),
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
    "background_max_running": _int(1, 100_000),
    "background_max_queued": _int(0, 1_000_000),
    "host": Check(_text, "a host name or address to listen on"),
    "port": _int(0, 65_535),
    "shutdown_timeout": _number(0, 86_400),
    "access_log": _BOOL,
}


_BATCH: dict[str, Check] = {
    "manifest": Check(_text, "a file path, 'sqlite:PATH' or 'postgres:DSN'", secret=True),
    "rounds": _int(0, 10),
    "concurrency": _int(1, 1_024),
    "poll_interval": _number(0.01, 86_400),
    "max_requests": _int(1, 1_000_000),
    "max_bytes": _int(1_024, 1 << 32),
    "s3_uri": Check(lambda v: _text(v) and v.startswith("s3://"), "an s3://bucket/prefix/ URI"),
    "role_arn": Check(lambda v: _text(v) and v.startswith("arn:"), "an IAM role ARN"),
}


_TRACE: dict[str, Check] = {
    "enabled": _BOOL,
    "store": Check(
        _text, "'sqlite', 'sqlite:PATH', 'postgres:DSN' (or postgres:$VAR) or 'off'", secret=True
    ),
    "retention_days": _number(0.001, 36_500),
    "max_size_mb": _int(1, 10_000_000),
    "queue_size": _int(100, 100_000_000),
    "max_change_events": _int(0, 100_000_000),
    "flush_interval": _number(0.01, 60),
    "otel": _BOOL,
}
_MOVED = {
    "trace.step": "the default step label is [defaults] step",
    "trace.agent": "the default agent label is [defaults] agent ([profiles.NAME] agent per step)",
    "trace.tags": "the default tags are [defaults] tags ([profiles.NAME] tags per step)",
    "trace.profiles": "a profile is one table, [profiles.NAME]: its name is the step label, "
    "and it takes agent and tags",
}
"""Keys that moved, and where to (the error names the new place)."""

_UNIT = _number(0, 1)
_PRECHECK: dict[str, Check] = {
    "enabled": _BOOL,
    "required_context": Check(
        lambda v: isinstance(v, list) and all(_text(item) for item in v),
        "a list of context key names",
    ),
    "plan": _choice("none", "sample"),
    "validator_model": Check(
        _model,
        "a model written provider:name with a provider of outform's registry, "
        "e.g. 'openai:gpt-5-mini'",
    ),
    "max_tokens": _int(1, 8_192),
    "score_threshold": _UNIT,
    "consensus_samples": Check(
        lambda v: isinstance(v, int) and not isinstance(v, bool) and (v == 0 or 2 <= v <= 10),
        "0 (off) or an integer from 2 to 10",
    ),
    "consensus_threshold": _UNIT,
    "inject_feedback": _choice("prepend", "context_key"),
    "feedback_prefix": Check(_text, "a non-empty text"),
    "feedback_key": Check(_text, "a context key name"),
}
"""`[defaults.precheck]` and `[profiles.NAME.precheck]`: see docs/agents.md."""

STEP: dict[str, Check] = {
    "enabled": _BOOL,
    "mode": _choice("auto", "native", "tool", "json", "prompted", "off"),
    "level": _choice("off", "minimal", "full"),
    "tolerant_level": _int(0, 2),
    "max_unescape_depth": _int(0, 10),
    "anyof_strategy": _choice("first-pass", "best"),
    "retries": _int(0, 10),
    "step": Check(_text, "a non-empty string"),
    "agent": Check(_text, "a non-empty string"),
    "tags": Check(
        lambda v: isinstance(v, list) and all(_text(item) for item in v),
        "a list of non-empty strings",
    ),
}
"""The keys of `[defaults]` and of each `[profiles.NAME]` (besides the `coercions` and
`precheck` tables; `step` only in `[defaults]`: a profile's step label is its name): see
docs/profiles.md."""

_STEP_TABLES = ("coercions", "precheck")
_SAME_OPTION = {
    "level": "level",
    "tolerant_level": "tolerance",
    "max_unescape_depth": "unescape_depth",
}
"""Keys of `[defaults]` and the `[parse]` keys that set the same pipeline option."""

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
    "defaults": STEP,
    "profiles": {},
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
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """`[defaults]` as written (validated; `coercions` frozen); `outform.profile` reads it."""
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """`[profiles.NAME]` tables, as `defaults`."""
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
        tool = _read(path).get("tool")
        # (`tool = "outform"` is no [tool] table: not outform's config)
        return isinstance(tool, dict) and "outform" in tool
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
        data = data.get(part, {}) if isinstance(data, dict) else None
        prefix += part + "."
    if not isinstance(data, dict):
        raise ConfigError(f"[{table}] must be a table", where=str(path))
    parse: dict[str, Any] = {}
    gateway: dict[str, Any] = {}
    batch: dict[str, Any] = {}
    trace: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    profiles: dict[str, dict[str, Any]] = {}
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
        if section == "defaults":
            defaults = _step(values, f"{prefix}defaults", path)
            continue
        if section == "profiles":
            for name, profile in values.items():
                table = f"{prefix}profiles.{toml_key(name)}"
                if not name.strip():
                    raise ConfigError(
                        f"a profile's name is empty: [{table}]",
                        where=str(path),
                        fix="name the profile after the step its calls make, e.g. "
                        f"[{prefix}profiles.invoice_extract] (the name is the step label of "
                        "its calls' trace events); settings for every call go in "
                        f"[{prefix}defaults]",
                    )
                if not isinstance(profile, dict):
                    raise ConfigError(
                        f"[{table}] must be a table",
                        where=str(path),
                        fix=f"write it as [{table}] with its keys below",
                    )
                if "step" in profile:
                    raise ConfigError(
                        f"unknown key 'step' in [{table}]",
                        where=str(path),
                        fix=f"a profile's name is its step label ({toml_value(name)}): drop "
                        "the key, or name the profile after the step",
                    )
                profiles[name] = _step(profile, table, path)
            continue
        _checked(values, checks, f"{prefix}{section}", path)
        if section == "parse":
            parse = dict(values)
        elif section == "gateway":
            gateway = dict(values)
        elif section == "batch":
            batch = dict(values)
        elif section == "trace":
            trace = dict(values)
    for key, option in _SAME_OPTION.items():
        if key in defaults and option in parse:
            raise ConfigError(
                f"{prefix}defaults.{key} and {prefix}parse.{option} set the same option",
                where=str(path),
                fix="set it in one place ([defaults] is the newer name)",
            )
    level = parse.pop("level", "minimal")
    return Settings(
        parse=ParseSettings(level=level, overrides=parse),
        gateway=gateway,
        batch=batch,
        trace=TraceSettings.from_config(trace, source=path),
        defaults=defaults,
        profiles=profiles,
        source=path,
    )


def _step(values: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    """One `[defaults]` or `[profiles.NAME]` table, checked key by key."""
    from outform.parse.allowlist import freeze

    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "coercions":
            if not isinstance(value, dict):
                raise ConfigError(f"[{where}.coercions] must be a table", where=str(path))
            try:
                out[key] = freeze(value, where=f"{where}.coercions")
            except ConfigError as error:
                raise ConfigError(
                    error.what, where=f"{path} ({error.where})", fix=error.fix
                ) from None
        elif key == "precheck":
            if not isinstance(value, dict):
                raise ConfigError(f"[{where}.precheck] must be a table", where=str(path))
            out[key] = _checked(value, _PRECHECK, f"{where}.precheck", path)
        elif key not in STEP and key in SECTIONS["parse"]:
            raise ConfigError(
                f"{toml_value(key)} is a [parse] key, not one of [{where}]",
                where=str(path),
                fix=f"move it under [parse]: the pipeline's limits and options ({key} and the "
                "others) apply to every call from there",
            )
        else:
            out.update(_checked({key: value}, STEP, where, path, tables=_STEP_TABLES))
    return out


def gateway_check(key: str) -> Check:
    """How `[gateway] key` is validated: `outform serve` holds its flags to the same rules."""
    return _GATEWAY[key]


def _checked(
    values: dict[str, Any],
    checks: dict[str, Check],
    where: str,
    path: Path,
    tables: tuple[str, ...] = (),
) -> dict[str, Any]:
    """`values`, each key known to `checks` (or one of `tables`) and its value allowed."""
    for key, value in values.items():
        check = checks.get(key)
        if check is None:
            moved = _MOVED.get(f"{where.removeprefix('tool.outform.')}.{key}")
            raise ConfigError(
                f"unknown key {toml_value(key)} in [{where}]",
                where=str(path),
                fix=moved if moved else f"use one of: {', '.join(sorted([*checks, *tables]))}",
            )
        if not check.accepts(value):
            shown = "(not shown: it may be a secret)" if check.secret else check.shown(value)
            raise ConfigError(
                f"bad value {shown} for {where}.{key}",
                where=str(path),
                fix=f"allowed: {check.allowed}",
            )
    return dict(values)


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
    from outform.profile import step

    _discovered.cache_clear()
    step.cache_clear()
    clear_cache()
    return settings()
