"""`outform serve`: the OpenAI Responses API over any backend.

Exit 2, with one line saying what to do, for every problem found before serving: the
`gateway` extra not installed, a bad flag or `[gateway]` key, a port that is busy or is no
port. The line announcing the address comes only once the socket listens there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from outform import baseurl
from outform.cli.app import app, stderr
from outform.errors import UsageError

_GATEWAY_MODULES = frozenset({"fastapi", "starlette", "uvicorn", "httptools"})


@app.command("serve")
def serve_command(
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend",
            "-b",
            help="Chat Completions base URL (http://localhost:8000/v1), or a provider name "
            "(anthropic, gemini, ...) served through outform's adapters.",
        ),
    ] = None,
    model_map: Annotated[
        list[str] | None,
        typer.Option("--model-map", "-m", help="client=backend model names (repeatable)."),
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option("--port", "-p", help="Port to listen on.")] = None,
    store: Annotated[
        str | None,
        typer.Option("--store", help="memory, sqlite[:PATH] or postgres:DSN (or :$ENV_VAR)."),
    ] = None,
    enforce: Annotated[
        bool | None,
        typer.Option(
            "--enforce/--no-enforce",
            help="Validate (and re-ask for) structured replies; per request: x-outform-enforce.",
        ),
    ] = None,
    api_key_env: Annotated[
        list[str] | None,
        typer.Option("--api-key-env", help="Env var holding a client key (repeatable)."),
    ] = None,
    backend_key_env: Annotated[
        str | None,
        typer.Option("--backend-key-env", help="Env var holding the backend's bearer key."),
    ] = None,
    backend_timeout: Annotated[
        float | None,
        typer.Option("--backend-timeout", help="Total seconds one backend exchange may take."),
    ] = None,
    backend_connect_timeout: Annotated[
        float | None,
        typer.Option("--backend-connect-timeout", help="Seconds to connect to the backend."),
    ] = None,
    backend_idle_timeout: Annotated[
        float | None,
        typer.Option(
            "--backend-idle-timeout", help="Longest silence of the backend while it answers."
        ),
    ] = None,
    max_body_bytes: Annotated[
        int | None, typer.Option("--max-body-bytes", help="Largest request body accepted.")
    ] = None,
    max_buffered_bytes: Annotated[
        int | None,
        typer.Option("--max-buffered-bytes", help="Request bodies held at once (503 beyond it)."),
    ] = None,
    body_timeout: Annotated[
        float | None,
        typer.Option("--body-timeout", help="Seconds a request's whole body may take (408 after)."),
    ] = None,
    header_timeout: Annotated[
        float | None,
        typer.Option("--header-timeout", help="Seconds a request's headers may take (408 after)."),
    ] = None,
    allow_provider: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-provider",
            help="A provider clients may also reach as provider:model, with its key from the "
            "environment, besides a provider backend (repeatable).",
        ),
    ] = None,
) -> None:
    """Serve the OpenAI Responses API over a Chat Completions backend or a provider.

    Defaults come from the [gateway] section of outform.toml.
    """
    from outform.config import gateway_check, settings
    from outform.gateway.settings import GatewaySettings, parse_model_map

    try:
        from outform.gateway.server import serve
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in _GATEWAY_MODULES:
            raise
        raise UsageError(
            f"outform serve needs the gateway extra ({exc.name} is not installed)",
            fix="pip install 'outform[gateway]'",
        ) from None

    flags = {
        "--backend-timeout": ("backend_timeout", backend_timeout),
        "--backend-connect-timeout": ("backend_connect_timeout", backend_connect_timeout),
        "--backend-idle-timeout": ("backend_idle_timeout", backend_idle_timeout),
        "--max-body-bytes": ("max_body_bytes", max_body_bytes),
        "--max-buffered-bytes": ("max_buffered_bytes", max_buffered_bytes),
        "--body-timeout": ("body_timeout", body_timeout),
        "--header-timeout": ("header_timeout", header_timeout),
        "--allow-provider": ("allowed_providers", allow_provider),
    }
    for flag, (key, value) in flags.items():
        check = gateway_check(key)
        if value is not None and not check.accepts(value):
            raise UsageError(
                f"{flag} must be {check.allowed}, got {value}",
                where=flag,
                fix=f"the same rule as [gateway] {key} in outform.toml",
            )
    why = baseurl.problem(backend) if backend is not None and "://" in backend else None
    if backend is not None and why is not None:
        raise UsageError(
            f"--backend {baseurl.shown(backend)!r} refused: {why}",
            where="--backend",
            fix=baseurl.FIX,
        )
    configured = settings()
    base = GatewaySettings.from_config(configured.gateway, source=configured.source)
    mapping = {**base.model_map, **parse_model_map(model_map)} if model_map else None
    chosen = base.replace(
        backend=backend,
        model_map=mapping,
        host=host,
        port=port,
        store=store,
        store_base_dir=None if store is None else str(Path.cwd()),
        enforce=enforce,
        api_keys=tuple(api_key_env) if api_key_env else None,
        backend_api_key_env=backend_key_env,
        backend_timeout=backend_timeout,
        backend_connect_timeout=backend_connect_timeout,
        backend_idle_timeout=backend_idle_timeout,
        max_body_bytes=max_body_bytes,
        max_buffered_bytes=max_buffered_bytes,
        body_timeout=body_timeout,  # checked by GatewaySettings (ConfigError: exit 2)
        header_timeout=header_timeout,
        allowed_providers=tuple(allow_provider) if allow_provider else None,
    )
    if chosen.native:
        from outform.providers.registry import PROVIDERS

        if chosen.backend not in PROVIDERS:
            raise UsageError(
                f"--backend must be an http(s) URL or a provider name, got {chosen.backend!r}",
                fix="for example --backend http://localhost:8000/v1 or --backend anthropic; "
                "providers: " + ", ".join(PROVIDERS),
            )
    summary = (
        f"-> {chosen.backend} (store: {chosen.store.partition(':')[0]}, "
        f"enforce: {'on' if chosen.enforce else 'off'})"
    )
    serve(
        chosen,
        announce=lambda url: stderr.print(f"outform gateway on {url} {summary}", markup=False),
    )
