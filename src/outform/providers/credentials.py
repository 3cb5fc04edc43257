"""Credentials that must be fetched, not just read: Google's application-default credentials.

An API key is a string the registry reads from the environment; an OAuth access token for
Vertex AI has to be obtained (from a service-account key, `gcloud auth application-default
login`, a workload identity or the metadata server) and renewed before it expires. That is I/O,
so it lives here, below the registry and beside transport, never in an adapter: transport asks
the endpoint's `TokenSource` for the authorisation headers of each request.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Final, Protocol

from outform.errors import AuthenticationError, UsageError

CLOUD_PLATFORM: Final = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth scope Vertex AI's generateContent needs."""
_INSTALL: Final = "pip install 'outform[vertex]'"


class TokenSource(Protocol):
    """Authorisation headers for one provider, renewed when they expire."""

    def headers(self) -> dict[str, str]:
        """Valid headers, fetching or renewing the token first when needed (may block)."""
        ...

    def cached(self) -> dict[str, str] | None:
        """Valid headers without any I/O, or None when `headers()` must fetch."""
        ...


class GoogleCredentials:
    """Google's application-default credentials (ADC) through google-auth.

    ADC looks, in order, at `GOOGLE_APPLICATION_CREDENTIALS`, the file `gcloud auth
    application-default login` writes, and the metadata server of Google Cloud runtimes. The
    credentials are loaded on first use and refreshed by google-auth when they expire; a lock
    keeps two threads from refreshing at once. `credentials` takes a ready
    `google.auth.credentials.Credentials` instead (a service account loaded by the caller, say).
    """

    def __init__(self, credentials: Any = None, *, scopes: tuple[str, ...] = (CLOUD_PLATFORM,)):
        self._credentials = credentials
        self._project: str | None = None
        self._loaded = credentials is not None
        self._scopes = scopes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return "GoogleCredentials(application-default)"

    @property
    def project(self) -> str | None:
        """The project ADC names (a service account's, or gcloud's quota project), if any."""
        with self._lock:
            self._load()
        return self._project

    def headers(self) -> dict[str, str]:
        with self._lock:
            credentials = self._load()
            if not credentials.valid:
                self._refresh(credentials)
            return self._apply(credentials)

    def cached(self) -> dict[str, str] | None:
        with self._lock:
            credentials = self._credentials
            if credentials is None or not credentials.valid:
                return None
            return self._apply(credentials)

    def _load(self) -> Any:
        if self._loaded:
            return self._credentials
        google_auth = _import("google.auth")
        exceptions = _import("google.auth.exceptions")
        try:
            credentials, project = google_auth.default(scopes=list(self._scopes))
        except exceptions.DefaultCredentialsError as exc:
            raise AuthenticationError(
                "no Google application-default credentials found",
                provider="vertex",
                fix="run `gcloud auth application-default login`, or set "
                "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file "
                f"({type(exc).__name__})",
            ) from None
        self._credentials, self._project, self._loaded = credentials, project, True
        return credentials

    @staticmethod
    def _refresh(credentials: Any) -> None:
        requests_transport = _import("google.auth.transport.requests")
        exceptions = _import("google.auth.exceptions")
        try:
            credentials.refresh(requests_transport.Request())
        except exceptions.GoogleAuthError as exc:
            # The message of a refresh error can quote the token endpoint's reply; keep only
            # its kind, so nothing secret reaches logs.
            raise AuthenticationError(
                f"Google credentials could not be refreshed ({type(exc).__name__})",
                provider="vertex",
                fix="check the credentials ADC found (`gcloud auth application-default "
                "print-access-token` shows whether they work)",
            ) from None

    @staticmethod
    def _apply(credentials: Any) -> dict[str, str]:
        headers: dict[str, str] = {}
        credentials.apply(headers)  # authorization, and x-goog-user-project when set
        return headers


@functools.cache
def application_default() -> GoogleCredentials:
    """The process's one application-default credentials: loaded once, their token reused by
    every call until it expires."""
    return GoogleCredentials()


def _import(name: str) -> Any:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        raise UsageError(
            "Vertex AI needs google-auth (with requests) for its credentials",
            where="vertex:",
            fix=_INSTALL,
        ) from None


__all__ = ["CLOUD_PLATFORM", "GoogleCredentials", "TokenSource", "application_default"]
