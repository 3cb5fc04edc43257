"""The `[gateway]` section of outform.toml, and the flags of `outform serve`, as one object.

Secrets never appear here: client API keys and the backend's key are named by environment
variable (`api_keys = ["GATEWAY_KEY"]`, `backend_api_key_env = "VLLM_KEY"`) and read once at
start-up, so a config file, a log line or a repr can show the names and never the values.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from outform.errors import ConfigError
from outform.storespec import expand

DEFAULT_BACKEND = "http://127.0.0.1:8000/v1"
ENFORCE_HEADER = "x-outform-enforce"
ENFORCE_VALUES = {"1": True, "true": True, "0": False, "false": False}
"""What the `x-outform-enforce` header takes (in any case): on, or off. Any other value is a
400 naming them, never read as one or the other."""
MiB = 1024 * 1024
CONNECT_TIMEOUT, IDLE_TIMEOUT, TOTAL_TIMEOUT = 10.0, 120.0, 600.0
BODY_TIMEOUT = 30.0
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT_RANGE = (0.01, 3_600.0)
HEADER_TIMEOUT_RANGE = (0.01, 600.0)
"""`header_timeout` in seconds: headers are a few kilobytes; a client that needs minutes for
them is holding the connection, not sending a request."""
"""`body_timeout` in seconds: a body that may take an hour holds its share of the budget
that long, which is what the deadline is there to prevent."""
DEFAULT_REQUEST_DEPTH = 64
REQUEST_DEPTH_RANGE = (8, 128)
"""`max_request_depth` from 8 (an input item's content parts are at level 4) to 128: the
gateway writes a request's values again a few levels deeper (the backend's tools, the stored
rows), orjson writes 254 levels at most, and the pipeline and the schema dialects recurse
over schemas."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    """The three limits on waiting for a backend (docs/gateway.md, "Timeouts")."""

    connect: float = CONNECT_TIMEOUT
    """Opening the connection (TCP and TLS)."""
    idle: float = IDLE_TIMEOUT
    """The longest silence once the backend started answering (for a stream, also before its
    first byte): a stalled stream frees its client after this long."""
    total: float = TOTAL_TIMEOUT
    """The whole exchange, queueing for a connection included; the first byte of a whole
    answer (which comes when the model is done) is bounded by this one only."""


DEFAULT_TIMEOUTS = Timeouts()

PROFILE_HEADER = "x-outform-profile"
"""Names the `[profiles.NAME]` of outform.toml whose parse settings enforcement uses."""


@dataclass(frozen=True)
class GatewaySettings:
    backend: str = DEFAULT_BACKEND
    """A Chat Completions base URL (vLLM, Ollama, LiteLLM, llama.cpp...), or a provider name
    of outform's registry (`anthropic`, `gemini`, `bedrock`...) served through its adapter."""
    backend_api_key_env: str | None = None
    """Environment variable holding the key sent to a URL backend as `Authorization: Bearer`."""
    allowed_providers: tuple[str, ...] = ()
    """Providers of outform's registry, besides a native backend itself, that a client may
    reach by naming `provider:model` (the gateway calls them with the operator's keys, from
    their environment variables). None by default: a native backend serves its own models
    only, and another provider's is a 403 (`gateway.routing`)."""
    model_map: Mapping[str, str] = field(default_factory=dict)
    """Client-facing model name -> backend model name; names not listed pass unchanged."""
    api_keys: tuple[str, ...] = ()
    """Environment variables holding the keys clients must present (none: no auth)."""
    dashboard_api_keys: tuple[str, ...] = ()
    """Environment variables holding the keys that may read `/dashboard`'s data (the runs of
    every client key). Unset: the one client key, when there is one; with several client keys
    (tenants), the dashboard is off, since any of them would see the others' runs."""
    max_body_bytes: int = 16 * MiB
    max_input_items: int = 2_048
    """Items a request's `input` (a Chat request's `messages`) may hold; more get 400 before
    anything is done for them: each item costs work on the event loop and memory many times
    its bytes, so `max_body_bytes` alone does not bound a body of many small items."""
    max_request_depth: int = DEFAULT_REQUEST_DEPTH
    """Levels of JSON nesting a request body may have (the body itself is level 1); a deeper
    one gets 400 before anything is done for it: the gateway refuses any request it could not
    write again (orjson writes at most 254 levels; the backend's body and the stored rows nest
    a request's values a few levels deeper)."""
    max_buffered_bytes: int = 64 * MiB
    """Request bodies held in memory at once, all requests together; a request that would go
    past it gets 503 with `Retry-After` (docs/gateway.md, "Bounded memory")."""
    header_timeout: float = HEADER_TIMEOUT
    """Seconds a request's headers may take to arrive, from the connection's opening (or,
    on a kept-alive connection, from the next request's first byte); a slower client, one
    that trickles a header line now and then, gets 408 and its connection is closed."""
    body_timeout: float = BODY_TIMEOUT
    """Seconds a request's whole body may take to arrive, counted from its headers; a slower
    one gets 408 and its connection is closed, so a client that declares a body and stalls
    holds neither its share of `max_buffered_bytes` nor the connection for longer."""
    backend_timeout: float = TOTAL_TIMEOUT
    """Total seconds one backend exchange may take (a whole answer, or a whole stream)."""
    backend_connect_timeout: float = CONNECT_TIMEOUT
    backend_idle_timeout: float = IDLE_TIMEOUT
    """Longest silence of the backend while it answers (and before a stream's first byte)."""
    max_connections: int = 512
    """Connections kept to a URL backend at most (requests beyond wait for one)."""
    store: str = field(default="sqlite", repr=False)  # a DSN may hold a password
    """'memory', 'sqlite' / 'sqlite:PATH' (the default: ./outform-responses.sqlite) or
    'postgres:DSN'. A DSN may be written as $VAR to read it from the environment."""
    store_base_dir: str | None = None
    """Where a relative SQLite path is resolved: the config file's directory."""
    enforce: bool = False
    """Run outform's pipeline and re-ask loop on every structured reply (a request can turn it
    on or off with the `x-outform-enforce` header)."""
    enforce_retries: int = 2
    enforce_level: str = "full"
    """Repair level of the pipeline in enforcement mode: the client asked for valid output,
    so JSON5 and json-repair are tried before a re-ask costs another call."""
    enforce_workers: int | None = None
    """Worker processes that run the pipeline in enforcement mode (None: one per CPU)."""
    enforce_time_limit: float = 5.0
    """Seconds the pipeline may spend on one reply (its `time_limit`); a worker still busy
    at twice this is stopped and replaced."""
    background_max_running: int = 64
    """`background: true` responses run at once per process; more wait (`queued`)."""
    background_max_queued: int = 1024
    """Background responses waiting per process, at most; beyond, a 429."""
    host: str = "127.0.0.1"
    port: int = 8080
    shutdown_timeout: float = 30.0
    """Seconds in-flight requests (streams included) get to finish on SIGTERM / Ctrl-C."""
    access_log: bool = True

    def __post_init__(self) -> None:
        if self.max_buffered_bytes < self.max_body_bytes:
            raise ConfigError(
                f"max_buffered_bytes ({self.max_buffered_bytes}) is smaller than max_body_bytes "
                f"({self.max_body_bytes}): a body of the largest accepted size could never be read",
                where="[gateway] max_buffered_bytes",
                fix="raise max_buffered_bytes, or lower max_body_bytes",
            )
        items = self.max_input_items
        if isinstance(items, bool) or not isinstance(items, int) or not 1 <= items <= 100_000:
            raise ConfigError(
                f"max_input_items {items!r} is not a number of items the gateway can serve",
                where="[gateway] max_input_items",
                fix="use an integer from 1 to 100000 (the default is 2048)",
            )
        low, high = REQUEST_DEPTH_RANGE
        depth = self.max_request_depth
        if isinstance(depth, bool) or not isinstance(depth, int) or not low <= depth <= high:
            raise ConfigError(
                f"max_request_depth {depth!r} is not a depth the gateway can serve",
                where="[gateway] max_request_depth",
                fix=f"use an integer from {low} to {high} (the default is {DEFAULT_REQUEST_DEPTH})",
            )
        _check_seconds("body_timeout", self.body_timeout, BODY_TIMEOUT_RANGE, BODY_TIMEOUT)
        _check_seconds("header_timeout", self.header_timeout, HEADER_TIMEOUT_RANGE, HEADER_TIMEOUT)
        self._check_providers()
        if not 0 <= self.port <= 65_535:
            raise ConfigError(
                f"port {self.port} is not a TCP port",
                where="[gateway] port / --port",
                fix="use a port from 1 to 65535 (0: any free port, announced at start-up)",
            )

    def _check_providers(self) -> None:
        """`allowed_providers` names providers of the registry, for a native backend; a
        model map may not send a model to a provider that is not allowed."""
        if not self.allowed_providers and not self.native:
            return
        from outform.gateway.routing import disallowed_provider
        from outform.providers.registry import PROVIDERS

        for name in self.allowed_providers:
            if name not in PROVIDERS:
                raise ConfigError(
                    f"allowed_providers names {name!r}, which is not a provider of outform's "
                    "registry",
                    where="[gateway] allowed_providers / --allow-provider",
                    fix="use provider names: " + ", ".join(PROVIDERS),
                )
        if not self.native:
            raise ConfigError(
                "allowed_providers is set, but the backend is a URL: every model goes to that "
                "URL, and no provider is called",
                where="[gateway] allowed_providers / --allow-provider",
                fix="remove allowed_providers, or make the backend a provider name "
                '(backend = "anthropic")',
            )
        for name, target in self.model_map.items():
            provider = disallowed_provider(target, self.backend, self.allowed_providers)
            if provider is not None:
                raise ConfigError(
                    f"model_map sends {name!r} to {target!r}, but the provider {provider} is "
                    f"not allowed: this gateway serves {self.backend}",
                    where="[gateway] model_map",
                    fix=f"add {provider!r} to allowed_providers (or --allow-provider "
                    f"{provider}), or map {name!r} to a model of {self.backend}",
                )

    @property
    def timeouts(self) -> Timeouts:
        return Timeouts(
            connect=self.backend_connect_timeout,
            idle=self.backend_idle_timeout,
            total=self.backend_timeout,
        )

    @classmethod
    def from_config(
        cls, values: Mapping[str, Any], *, source: Path | None = None
    ) -> GatewaySettings:
        """Settings from a validated `[gateway]` table (see `outform.config`)."""
        known = {f.name for f in dataclasses.fields(cls)}
        fields: dict[str, Any] = {k: v for k, v in values.items() if k in known}
        for name in ("api_keys", "dashboard_api_keys", "allowed_providers"):
            if name in fields:
                fields[name] = tuple(fields[name])
        if "model_map" in fields:
            fields["model_map"] = dict(fields["model_map"])
        for name in (
            "backend_timeout",
            "backend_connect_timeout",
            "backend_idle_timeout",
            "enforce_time_limit",
            "body_timeout",
            "header_timeout",
        ):
            if name in fields:
                fields[name] = float(fields[name])
        if source is not None:
            fields["store_base_dir"] = str(source.parent)
        return cls(**fields)

    def replace(self, **changes: Any) -> GatewaySettings:
        """A copy with the given fields changed; None values are ignored (unset flags)."""
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def native(self) -> bool:
        """True when the backend is a provider served through outform's adapters."""
        return not self.backend.startswith(("http://", "https://"))

    def client_keys(self, env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
        """The keys clients must present, read from the environment variables named."""
        return _keys_from(self.api_keys, "api_keys", "client API key", env)

    def dashboard_keys(self, env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
        """The keys that may read the dashboard's data, read from the variables named."""
        return _keys_from(self.dashboard_api_keys, "dashboard_api_keys", "dashboard key", env)

    def backend_key(self, env: Mapping[str, str] = os.environ) -> str | None:
        if self.backend_api_key_env is None:
            return None
        value = env.get(self.backend_api_key_env, "")
        if not value:
            raise ConfigError(
                f"the backend key variable {self.backend_api_key_env} is not set",
                where="[gateway] backend_api_key_env",
                fix=f"export {self.backend_api_key_env}=..., or remove backend_api_key_env",
            )
        return value

    def store_spec(self, env: Mapping[str, str] = os.environ) -> str:
        """`store` with a `$VAR` target read from the environment (a DSN with a password)."""
        return expand(self.store, env, what="store", where="[gateway] store")


def parse_model_map(pairs: list[str]) -> dict[str, str]:
    """`--model-map client=backend` (repeatable, or comma-separated) as a dict."""
    mapping: dict[str, str] = {}
    for pair in (p.strip() for chunk in pairs for p in chunk.split(",")):
        if not pair:
            continue
        name, sep, target = pair.partition("=")
        if not sep or not name.strip() or not target.strip():
            raise ConfigError(
                f"--model-map needs client=backend pairs, got {pair!r}",
                fix="for example --model-map gpt-4o=Qwen/Qwen2.5-7B-Instruct",
            )
        mapping[name.strip()] = target.strip()
    return mapping


__all__ = [
    "BODY_TIMEOUT",
    "DEFAULT_BACKEND",
    "DEFAULT_REQUEST_DEPTH",
    "DEFAULT_TIMEOUTS",
    "ENFORCE_HEADER",
    "ENFORCE_VALUES",
    "HEADER_TIMEOUT",
    "REQUEST_DEPTH_RANGE",
    "GatewaySettings",
    "Timeouts",
    "parse_model_map",
]


def _check_seconds(name: str, wait: object, bounds: tuple[float, float], default: float) -> None:
    """A timeout setting `name` is a finite number of seconds in `bounds`: `inf` or `nan`
    would be no deadline at all."""
    low, high = bounds
    if (
        isinstance(wait, bool)
        or not isinstance(wait, int | float)
        or not math.isfinite(wait)
        or not low <= wait <= high
    ):
        flag = "--" + name.replace("_", "-")
        raise ConfigError(
            f"{name} {wait!r} is not a number of seconds the gateway can wait for",
            where=f"[gateway] {name} / {flag}",
            fix=f"use a number from {low:g} to {high:g} (the default is {default:g})",
        )


def _keys_from(
    names: tuple[str, ...], setting: str, what: str, env: Mapping[str, str]
) -> tuple[str, ...]:
    keys = []
    for name in names:
        value = env.get(name, "")
        if not value:
            raise ConfigError(
                f"the {what} variable {name} is not set",
                where=f"[gateway] {setting}",
                fix=f"export {name}=..., or remove it from {setting}",
            )
        keys.append(value)
    return tuple(keys)
