"""`outform serve`: the gateway under uvicorn (httptools and uvloop when installed).

Shutdown is graceful: on SIGTERM or Ctrl-C uvicorn stops accepting connections and waits up to
`shutdown_timeout` seconds for in-flight requests, streams included, to finish; only then are
the store and the backend connections closed. The access log is one JSON object per line on
standard error (logger `outform.gateway.access`), without headers, keys, bodies or query
strings.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import Any

from outform.gateway.app import GatewayApp, create_app
from outform.gateway.settings import GatewaySettings
from outform.gateway.stores import check_store


def uvicorn_config(app: GatewayApp, settings: GatewaySettings, **extra: Any) -> Any:
    import uvicorn

    fast = importlib.util.find_spec("httptools") is not None
    loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "http": "httptools" if fast else "h11",
        "loop": loop,
        "lifespan": "on",
        "access_log": False,  # the gateway writes its own, structured and without secrets
        "timeout_graceful_shutdown": settings.shutdown_timeout,
        "server_header": False,
        "log_level": "info",
    }
    options.update(extra)
    return uvicorn.Config(app, **options)


def configure_access_log() -> None:
    """Access lines on standard error, as they are (each line is already JSON)."""
    access = logging.getLogger("outform.gateway.access")
    # This process is the gateway: records need no thread or process names (a few µs each).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False


def serve(settings: GatewaySettings) -> None:
    """Run the gateway until SIGTERM / Ctrl-C."""
    import uvicorn

    app = create_app(settings)
    check_store(settings.store_spec(), base_dir=settings.store_base_dir)  # before listening
    if settings.access_log:
        configure_access_log()
    uvicorn.Server(uvicorn_config(app, settings)).run()


__all__ = ["configure_access_log", "serve", "uvicorn_config"]
