"""What a provider's base URL may be, for the library, the CLI and the gateway alike.

outform joins API paths to a base URL (`/chat/completions` after `http://host/v1`) and sends
the key in the header the provider expects. So a base URL is `http` or `https` with a host
and, if any, a valid port; it holds no credentials (`user:password@`: an HTTP client would send
them as Basic authentication instead of the key, the gateway would drop them, and every error
naming the URL would print them), and no query string or fragment (the joined path would
follow the `?`: `/v1?api-version=1/chat/completions`). Anything else is refused before any
call, saying why, rather than failing later like a network fault.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def problem(url: str) -> str | None:
    """Why `url` is no base URL, or None when it is one. Never quotes the URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port out of range raises here)
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        return f"it is not a valid URL ({exc})"
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "it is not an http(s) URL with a host"
    if parts.username is not None or parts.password is not None:
        return (
            "it holds credentials (user:password@), which would be sent instead of the key "
            "and printed wherever the URL is named"
        )
    if parts.query or parts.fragment:
        return "it holds a query string or a fragment, after which the API paths would be joined"
    return None


def shown(url: str) -> str:
    """`url` as a message may name it: without what precedes an `@` of its authority, and
    its query string and fragment (which may hold a key: `?api-key=`) as `?…`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    cut = min((i for i in (path.find("?"), path.find("#")) if i >= 0), default=-1)
    if cut >= 0:
        path = path[:cut] + "?…"
    elif "?" in authority or "#" in authority:
        authority = authority.split("?")[0].split("#")[0] + "?…"
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


FIX = (
    "give the API's URL alone, e.g. http://127.0.0.1:8000/v1 (the key goes in its own "
    "setting, never in the URL)"
)
"""What to do instead, for every refusal."""
