"""The gateway: the OpenAI Responses API over Chat Completions backends (`outform serve`).

Needs the `gateway` extra (`pip install 'outform[gateway]'`: FastAPI and uvicorn). See
docs/gateway.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from outform.gateway.app import GatewayApp, create_app
    from outform.gateway.settings import GatewaySettings


def __getattr__(name: str) -> Any:
    # Imported on use: `import outform.gateway.store` must not pull in FastAPI.
    if name in ("GatewayApp", "create_app"):
        from outform.gateway import app

        return getattr(app, name)
    if name == "GatewaySettings":
        from outform.gateway.settings import GatewaySettings

        return GatewaySettings
    raise AttributeError(name)


__all__ = ["GatewayApp", "GatewaySettings", "create_app"]
