"""Secrets out of everything the gateway emits: error bodies, streams, log lines, stored rows.

The configured secrets (client keys, the backend's key or a native provider's credentials, the
store's password) are known at start-up; `Scrubber` replaces each one, as written and as it
appears inside a JSON string, with `***`. It is applied at the gateway's boundaries, never in
the middle of the pipeline:

* every reply with an error status, and every stream's bytes, on their way to the client
  (`app.py`); a stream holds back the few bytes that could be the start of a secret split
  across two chunks, until the next chunk says whether it is;
* every stored record (`keeper.py` writes them all);
* every log record of the process, through the logging record factory (`log_scrubbing`), so a
  provider error that echoes a key cannot reach a log line either.

Secrets shorter than `MIN_LENGTH` are not scrubbed (they would garble ordinary text, and
`Tenancy` refuses such client keys); a backend key that short is reported at start-up.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

import orjson

from outform.errors import ConfigError
from outform.gateway.events import SSEDecoder
from outform.gateway.settings import GatewaySettings
from outform.gateway.store import StoredResponse

MASK = "***"
MIN_LENGTH = 8

log = logging.getLogger("outform.gateway")


class Scrubber:
    """Replaces configured secrets with `***` in text, bytes, JSON values and streams."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()
        self._text: list[str] = []
        self._bytes: list[bytes] = []
        for secret in secrets:
            self.learn(secret)

    def __bool__(self) -> bool:
        return bool(self._text)

    def learn(self, secret: str | None) -> None:
        """Scrub `secret` too from now on: a credential the gateway came to hold while it
        serves (a native provider's key as its adapter resolves it, an OAuth token as it is
        fetched). Safe from any thread: the lists are replaced whole."""
        if not secret or len(secret) < MIN_LENGTH or secret in self._secrets:
            return
        with self._lock:
            self._secrets.add(secret)
            forms: set[str] = set()
            for known in self._secrets:
                forms.add(known)
                forms.add(orjson.dumps(known).decode()[1:-1])  # as inside a JSON string
            text = sorted(forms, key=len, reverse=True)  # longest first: no partial masks
            self._bytes = [form.encode() for form in text]
            self._text = text

    def text(self, value: str) -> str:
        for secret in self._text:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def data(self, value: bytes) -> bytes:
        for secret in self._bytes:
            if secret in value:
                value = value.replace(secret, b"***")
        return value

    def body(self, value: bytes) -> bytes:
        """An error body: `data`, and where it is JSON that escapes characters (a secret
        written `\\u0042\\u0065...`, or with `\\/` for `/`, is the secret to any JSON
        reader), its strings scrubbed as they read, the body written out again if one held a
        secret."""
        value = self.data(value)
        if b"\\u" not in value and b"\\/" not in value:
            return value
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
        clean = self.value(decoded)
        return value if clean is decoded else orjson.dumps(clean)

    def events(self, chunk: bytes) -> bytes:
        """Whole SSE events (a relayed stream's), scrubbed as JSON readers see them: an
        event whose data escapes characters (`\\u0073k-...` is `sk-...` to the client's
        JSON reader) is read, its strings scrubbed, and, if one held a secret, written out
        again as one `data:` line. A secret is found whole within one event (as in `body`);
        `data` / `stream` still catch it as written."""
        if not self._text or (b"\\u" not in chunk and b"\\/" not in chunk):
            return chunk
        decoder = SSEDecoder()
        out: list[bytes] = []
        used = 0
        changed = False
        for frame, data in decoder.frames(chunk):
            used += len(frame)
            written = frame
            if data is not None and (b"\\u" in data or b"\\/" in data):
                try:
                    event = orjson.loads(data)
                except orjson.JSONDecodeError:
                    event = None
                clean = self.value(event)
                if clean is not event:
                    written = b"data: " + orjson.dumps(clean) + b"\n\n"
                    changed = True
            out.append(written)
        if not changed:
            return chunk
        return b"".join(out) + chunk[used:]

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string (and key) scrubbed; unchanged parts are the
        same objects, so a clean value costs one walk and no copy."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            changed = False
            for key, item in value.items():
                clean_key = self.text(key) if isinstance(key, str) else key
                clean = self.value(item)
                changed = changed or clean_key is not key or clean is not item
                out[clean_key] = clean
            return out if changed else value
        if isinstance(value, list | tuple):
            items = [self.value(item) for item in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    def record(self, record: StoredResponse) -> StoredResponse:
        """The record as it may be stored: no secret in any of its documents."""
        if not self:
            return record
        response = self.value(record.response)
        input_items = self.value(record.input_items)
        conversation = self.value(record.conversation)
        if (
            response is record.response
            and input_items is record.input_items
            and conversation is record.conversation
        ):
            return record
        return dataclasses.replace(
            record, response=response, input_items=input_items, conversation=conversation
        )

    async def stream(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The chunks, scrubbed; a tail that may begin a secret waits for the next chunk."""
        pending = b""
        try:
            async for chunk in chunks:
                data = self.data(pending + chunk) if pending else self.data(chunk)
                keep = self._partial_tail(data)
                pending = data[len(data) - keep :] if keep else b""
                out = data[: len(data) - keep] if keep else data
                if out:
                    yield out
            if pending:
                yield pending
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

    def _partial_tail(self, data: bytes) -> int:
        """How many bytes at the end of `data` are a proper prefix of some secret."""
        longest = 0
        for secret in self._bytes:
            first = secret[:1]
            start = max(0, len(data) - len(secret) + 1)
            at = data.find(first, start)
            while at != -1:
                tail = len(data) - at
                if tail > longest and secret.startswith(data[at:]):
                    longest = tail
                    break
                at = data.find(first, at + 1)
        return longest


# -- which secrets ---------------------------------------------------------------------------


def configured_secrets(settings: GatewaySettings, env: Mapping[str, str] = os.environ) -> list[str]:
    """Every credential the gateway holds: client keys, the backend's key (or the
    credentials of the native provider and of each provider it may also call,
    `allowed_providers`), and the store's password."""
    found = [*settings.client_keys(env), *settings.dashboard_keys(env)]
    if settings.native:
        for provider in (settings.backend, *settings.allowed_providers):
            found += _provider_secrets(provider, env)
    else:
        key = settings.backend_key(env)
        if key:
            found.append(key)
    found += _store_secrets(settings.store_spec(env), env)
    return [secret for secret in dict.fromkeys(found) if secret]


def _provider_secrets(name: str, env: Mapping[str, str]) -> list[str]:
    from outform.providers.registry import PROVIDERS

    spec = PROVIDERS.get(name)
    names: list[str] = list(spec.key_env) if spec is not None else []
    if spec is not None and spec.auth == "sigv4":
        names += ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
    return [env[n] for n in names if env.get(n)]


def _store_secrets(spec: str, env: Mapping[str, str]) -> list[str]:
    found = [env["PGPASSWORD"]] if env.get("PGPASSWORD") else []
    kind, _, dsn = spec.partition(":")
    if kind.lower() not in ("postgres", "postgresql"):
        return found
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(spec if dsn.startswith("//") else dsn).get("password")
    except Exception:  # not installed, or not a DSN: open_store reports it
        return found
    return [*found, str(password)] if password else found


def check_client_keys(keys: Iterable[str], names: Iterable[str], setting: str = "api_keys") -> None:
    """Client keys must be long enough to be unguessable and to be scrubbed safely."""
    for key, name in zip(keys, names, strict=True):
        if len(key) < MIN_LENGTH:
            raise ConfigError(
                f"the key in {name} has {len(key)} characters; keys shorter than "
                f"{MIN_LENGTH} can be guessed and cannot be kept out of logs",
                where=f"[gateway] {setting}",
                fix="use a random key of 16 characters or more (e.g. `openssl rand -hex 24`)",
            )


# -- log records -----------------------------------------------------------------------------

_ACTIVE: list[Scrubber] = []
_BASE_FACTORY: Callable[..., logging.LogRecord] | None = None


def log_scrubbing(scrubber: Scrubber) -> Callable[[], None]:
    """Scrub every log record created from now on (message, arguments and traceback text);
    returns the function that stops it. Several gateways in one process stack. A scrubber
    with no secret yet is registered too: it may learn some (`Scrubber.learn`)."""
    global _BASE_FACTORY  # noqa: PLW0603 - the process's one record factory
    if _BASE_FACTORY is None:
        _BASE_FACTORY = logging.getLogRecordFactory()
        logging.setLogRecordFactory(_scrubbed_record)
    _ACTIVE.append(scrubber)

    def stop() -> None:
        global _BASE_FACTORY  # noqa: PLW0603
        if scrubber in _ACTIVE:
            _ACTIVE.remove(scrubber)
        if not _ACTIVE and _BASE_FACTORY is not None:
            logging.setLogRecordFactory(_BASE_FACTORY)
            _BASE_FACTORY = None

    return stop


def _scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    assert _BASE_FACTORY is not None
    record = _BASE_FACTORY(*args, **kwargs)
    if not any(_ACTIVE):  # no secret known yet
        return record
    try:
        message = record.getMessage()
    except Exception:  # a broken format string: logging reports it when it emits
        return record
    clean = message
    for scrubber in list(_ACTIVE):
        clean = scrubber.text(clean)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info:
        text = logging.Formatter().formatException(record.exc_info)
        for scrubber in list(_ACTIVE):
            text = scrubber.text(text)
        record.exc_text = text
    if record.stack_info:
        for scrubber in list(_ACTIVE):
            record.stack_info = scrubber.text(record.stack_info)
    return record


__all__ = ["MASK", "Scrubber", "check_client_keys", "configured_secrets", "log_scrubbing"]
