"""Whose stored responses are whose: one tenant per client key.

With client keys (`api_keys`), every stored response belongs to the key that created it. The
store keeps a *tenant*, `HMAC-SHA256(salt, key)` as hex, never the key: the salt is random,
created with the store and kept in it (`outform_meta`), so the same key gives the same tenant
in every gateway process of that store and a different one in any other store. Every read,
delete, cancellation, `previous_response_id` and `item_reference` is scoped to the caller's
tenant, and another tenant's response answers exactly as an unknown id does (404).

Without client keys the gateway is single-tenant: everyone who can reach it shares one tenant
(`""`), which is why `outform serve` warns when it listens beyond the loopback without keys.
Records written without keys stay invisible to every key once keys are configured.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from collections.abc import Sequence

from outform.gateway.store import NO_TENANT

OPEN_WARNING = (
    "outform gateway: listening on {host} without client keys. Anyone who can reach it can "
    "use the backend and read, continue and delete every stored response (the gateway is "
    "single-tenant without keys). Set --api-key-env (api_keys in [gateway]) or listen on "
    "127.0.0.1."
)


def tenant_of(key: str, salt: bytes) -> str:
    """The tenant a client key stands for in a store with this salt."""
    return hmac.new(salt, key.encode(), hashlib.sha256).hexdigest()


class Tenancy:
    """The configured client keys and their tenants: authentication and ownership at once."""

    def __init__(self, keys: Sequence[str], salt: bytes) -> None:
        self._keys = [(key.encode(), tenant_of(key, salt)) for key in keys]

    @property
    def required(self) -> bool:
        """True when clients must present a key (else everything is tenant `""`)."""
        return bool(self._keys)

    def tenant(self, token: bytes) -> str | None:
        """The tenant of a presented bearer token, or None when it is no configured key.
        Every key is compared, in constant time, so timing tells nothing about which."""
        if not self._keys:
            return NO_TENANT
        found = None
        for key, tenant in self._keys:
            if hmac.compare_digest(token, key):
                found = tenant
        return found


def is_loopback(host: str) -> bool:
    """True when listening on `host` reaches this machine only."""
    if host.lower() in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def open_warning(host: str, keyed: bool) -> str | None:
    """The start-up warning for a gateway without keys that others can reach, or None."""
    if keyed or is_loopback(host):
        return None
    return OPEN_WARNING.format(host=host)


__all__ = ["Tenancy", "is_loopback", "open_warning", "tenant_of"]
