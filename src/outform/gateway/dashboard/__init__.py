"""The dashboard: a page over the trace store, as an ASGI app to mount at `/dashboard`.

`create_dashboard(store, keys=...)` is what `outform dashboard` serves (`standalone`) and what
`outform serve` mounts at `/dashboard`. The page and its static files (HTML, CSS, the
dashboard's script and the vendored Chart.js) hold no data and are served to anyone; every
`api/` route holds data and, when `keys` are given, answers only a request with
`Authorization: Bearer <key>` (the page asks for the key once and keeps it in the tab's
session storage, never in a cookie). Charts are drawn in the browser by Chart.js, served from
the same origin: viewing needs no network access.

Routes (relative to the mount point):

    /                    the page
    /static/...          its files
    /api/overview        the health report of the window, and the steps and models seen
    /api/failures        the latest failures with their hints
    /api/runs            the latest runs
    /api/runs/{run_id}   one run opened up

Query parameters of the `api/` routes: `since_hours`, `step`, `model`, `buckets`, `limit`.
Their errors have the gateway's (OpenAI's) shape, `{"error": {"message", "type", "param",
"code"}}`: 401 `invalid_api_key`, 400 `invalid_value` naming the query parameter, 404
`not_found`.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from outform.errors import OutformError, UsageError
from outform.trace import views
from outform.trace.health import HealthQuery
from outform.trace.store import TraceStore

STATIC = Path(__file__).parent / "static"
MOUNT = "/dashboard"


def create_dashboard(store: TraceStore, *, keys: Sequence[str] = ()) -> Starlette:
    """The dashboard app over `store` (mount it; it does not close the store)."""
    secrets = tuple(key.encode() for key in keys)

    def authorized(request: Request) -> bool:
        if not secrets:
            return True
        value = request.headers.get("authorization", "")
        if value[:7].lower() != "bearer ":
            return False
        token = value[7:].strip().encode()
        return any(hmac.compare_digest(token, key) for key in secrets)

    def api(view: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if not authorized(request):
                return _error(
                    401, "A valid key is needed: Authorization: Bearer <key>.", "invalid_api_key"
                )
            try:
                body = await run_in_threadpool(view, request)
            except OutformError as error:
                return _error(400, error.render(), "invalid_value", error.where)
            if body is None:
                return _error(404, f"Not found: {request.url.path}.", "not_found")
            return _json(body)

        return endpoint

    def overview(request: Request) -> Any:
        return views.overview(store, _query(request))

    def failures(request: Request) -> Any:
        return views.failures(store, _query(request), limit=_int(request, "limit", 20, 500))

    def runs(request: Request) -> Any:
        return views.runs(store, _query(request), limit=_int(request, "limit", 50, 1000))

    def run(request: Request) -> Any:
        return views.run_detail(store, request.path_params["run_id"])

    async def page(request: Request) -> Response:
        if not request.url.path.endswith("/"):  # relative URLs need the trailing slash
            return RedirectResponse(request.url.path + "/")
        return FileResponse(STATIC / "index.html", headers=_NO_STORE)

    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/overview", api(overview)),
            Route("/api/failures", api(failures)),
            Route("/api/runs", api(runs)),
            Route("/api/runs/{run_id:path}", api(run)),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ]
    )


def mounted(store: TraceStore, *, keys: Sequence[str] = (), root: bool = False) -> Starlette:
    """The dashboard at `/dashboard` (what `outform serve` routes there); `root`: `/` sends
    the browser there too (`outform dashboard`)."""

    async def to_page(request: Request) -> Response:
        return RedirectResponse(MOUNT + "/")

    routes = [Route(MOUNT, to_page), Mount(MOUNT, create_dashboard(store, keys=keys))]
    return Starlette(routes=[Route("/", to_page), *routes] if root else routes)


def standalone(store: TraceStore, *, keys: Sequence[str] = ()) -> Starlette:
    """The dashboard at `/dashboard`, and `/` sending the browser there (`outform
    dashboard`)."""
    return mounted(store, keys=keys, root=True)


_NO_STORE = {"cache-control": "no-store"}


def _json(body: Any, status: int = 200) -> Response:
    return Response(
        orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS),
        status,
        media_type="application/json",
        headers=_NO_STORE,
    )


def _error(status: int, message: str, code: str, param: str | None = None) -> Response:
    """An error in the shape the gateway's other errors have (OpenAI's):
    `{"error": {"message", "type", "param", "code"}}`."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    error = {"message": message, "type": kind, "param": param, "code": code}
    return _json({"error": error}, status)


def _query(request: Request) -> HealthQuery:
    """The report's settings from the query string; a value out of range, or not a number,
    is refused naming the query parameter (never taken for another value)."""
    params = request.query_params
    raw = params.get("since_hours", "24")
    try:
        since = float(raw)
    except ValueError:
        since = math.nan
    if not (0 < since <= _TEN_YEARS):  # (NaN included)
        raise UsageError(
            f"the query parameter since_hours must be a number of hours more than 0 and at most "
            f"{_TEN_YEARS:,} (ten years), not {raw!r}",
            where="since_hours",
            fix="since_hours=24",
        )
    return HealthQuery(
        since_hours=since,
        step=params.get("step") or None,
        model=params.get("model") or None,
        trend_buckets=_int(request, "buckets", 24, 1000),
        top=_int(request, "top", 10, 100),
    )


_TEN_YEARS = 24 * 3650


def _int(request: Request, name: str, default: int, highest: int) -> int:
    """The integer query parameter `name` (`default` when absent), from 1 to `highest`: a
    value out of range or not an integer is refused naming the parameter."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= highest:
        raise UsageError(
            f"the query parameter {name} must be an integer from 1 to {highest}, not {raw!r}",
            where=name,
            fix=f"{name}={default}",
        )
    return value


__all__ = ["MOUNT", "create_dashboard", "mounted", "standalone"]
