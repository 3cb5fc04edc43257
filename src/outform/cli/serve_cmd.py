"""`outform serve`: the OpenAI Responses API over any backend."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from outform.cli.app import app, stderr
from outform.errors import UsageError


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
        float | None, typer.Option("--backend-timeout", help="Seconds to wait for the backend.")
    ] = None,
    max_body_bytes: Annotated[
        int | None, typer.Option("--max-body-bytes", help="Largest request body accepted.")
    ] = None,
) -> None:
    """Serve the OpenAI Responses API over a Chat Completions backend or a provider.

    Defaults come from the \\[gateway] section of outform.toml.
    """
    from outform.config import settings
    from outform.gateway.server import serve
    from outform.gateway.settings import GatewaySettings, parse_model_map

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
        max_body_bytes=max_body_bytes,
    )
    if chosen.native:
        from outform.providers.registry import PROVIDERS

        if chosen.backend not in PROVIDERS:
            raise UsageError(
                f"--backend must be an http(s) URL or a provider name, got {chosen.backend!r}",
                fix="for example --backend http://localhost:8000/v1 or --backend anthropic; "
                "providers: " + ", ".join(PROVIDERS),
            )
    stderr.print(
        f"outform gateway on http://{chosen.host}:{chosen.port} -> {chosen.backend} "
        f"(store: {chosen.store.partition(':')[0]}, enforce: {'on' if chosen.enforce else 'off'})",
        markup=False,
    )
    serve(chosen)
