"""`outform dashboard`: the dashboard over the trace store, on a local server."""

from __future__ import annotations

import os
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
            "--api-key-env", help="Env var holding a key the page must give (repeatable)."
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
    keys = []
    for name in api_key_env or ():
        value = os.environ.get(name, "")
        if not value:
            raise ConfigError(
                f"the key variable {name} is not set",
                where="--api-key-env",
                fix=f"export {name}=...",
            )
        keys.append(value)
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
