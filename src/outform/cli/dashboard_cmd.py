"""`outform dashboard`: the dashboard over the trace store, on a local server."""

from __future__ import annotations

from typing import Annotated

import typer

from outform.cli.app import app, stderr
from outform.cli.health_cmd import open_trace_store
from outform.errors import ConfigError


@app.command("dashboard")
def dashboard_command(
    store: Annotated[
        str | None,
        typer.Option("--store", help="The trace store (default: [trace] store, OUTFORM_TRACE)."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", help="Port to listen on.")] = 8765,
    api_key_env: Annotated[
        list[str] | None,
        typer.Option(
            "--api-key-env",
            help="Env var holding a key the page must give (repeatable; default: the keys "
            "of [gateway] api_keys).",
        ),
    ] = None,
) -> None:
    """Serve the dashboard over the trace store (the `gateway` extra: FastAPI and uvicorn)."""
    try:
        import uvicorn

        from outform.gateway.dashboard import MOUNT, standalone
    except ImportError:
        raise ConfigError(
            "the dashboard needs the gateway extra", fix="pip install 'outform[gateway]'"
        ) from None
    from outform.config import settings
    from outform.gateway.settings import GatewaySettings

    configured = settings()
    gateway = GatewaySettings.from_config(configured.gateway, source=configured.source)
    chosen = gateway.replace(api_keys=tuple(api_key_env) if api_key_env else None)
    keys = chosen.client_keys()
    trace_store = open_trace_store(store)
    stderr.print(
        f"outform dashboard on http://{host}:{port}{MOUNT}/ ({trace_store.describe()}"
        f"{', keys required' if keys else ''})",
        markup=False,
    )
    try:
        uvicorn.run(standalone(trace_store, keys=keys), host=host, port=port, log_level="warning")
    finally:
        trace_store.close()
