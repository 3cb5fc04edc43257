"""Store specs that name their secret by environment variable: `postgres:$PG_DSN`.

A DSN holds a password, so a config file names the variable that holds it instead; the spec
is expanded when the store is opened. One rule for every store outform opens (the trace store
of `[trace]`, the response store of `[gateway]`).
"""

from __future__ import annotations

from collections.abc import Mapping

from outform.errors import ConfigError


def expand(spec: str, env: Mapping[str, str], *, what: str, where: str) -> str:
    """`spec` with a `KIND:$VAR` target read from `env`; any other spec unchanged. A variable
    that is not set is a ConfigError naming it (`what`: the kind of store, for the message)."""
    kind, sep, target = spec.partition(":")
    if not (sep and target.startswith("$")):
        return spec
    name = target[1:]
    value = env.get(name, "")
    if not value:
        raise ConfigError(
            f"the {what} variable {name} is not set",
            where=where,
            fix=f"export {name}=..., or write the store without $",
        )
    return f"{kind}:{value}"
