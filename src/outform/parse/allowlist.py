"""Coercion allowlists: which type conversions a step allows, per target type.

A conversion is named by the types it goes between, `source->target`, in short names: `str`,
`int`, `float`, `bool`, `null`, `list`, `dict` (`"str->int"` reads "a string turned into an
integer"). An allowlist maps a target JSON Schema type (`integer`, `number`, `string`,
`boolean`, `null`, `array`, `object`) to the conversions into it that may be made. It is
complete: a conversion into a type it does not list, or not listed under its type, is not
made, and the hint says so. No allowlist at all (None) allows every conversion the pipeline
knows (see docs/pipeline.md).

Only type conversions are governed here; repairs of structure and spelling (renamed keys,
enum spelling, dropped unexpected keys, filled defaults) follow the parse level.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from outform.errors import ConfigError
from outform.parse.hint import Violation
from outform.schema.types import json_type

SHORT = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "null",
    "array": "list",
    "object": "dict",
}
TARGETS: tuple[str, ...] = tuple(SHORT)

Allowlist = tuple[tuple[str, tuple[str, ...]], ...]
"""The frozen form: (target type, conversions) pairs, hashable so pipelines can be cached."""


def allowed_for(target: str) -> tuple[str, ...]:
    """Every conversion name that can appear under `target`."""
    into = SHORT[target]
    return tuple(f"{source}->{into}" for kind, source in SHORT.items() if kind != target)


def freeze(
    value: Mapping[str, Sequence[str]] | Allowlist | None, where: str = "coercions"
) -> Allowlist | None:
    """A checked, hashable allowlist; ConfigError naming the key and the allowed values."""
    if value is None:
        return None
    items: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise ConfigError(
            f"{where} must map target types to lists of conversion names, got {value!r}",
            where=where,
            fix='for example {"integer": ["str->int"]}, or None to allow every conversion',
        )
    frozen: list[tuple[str, tuple[str, ...]]] = []
    for item in items:
        if not isinstance(item, tuple | list) or len(item) != 2:
            raise ConfigError(
                f"{where} must map target types to lists of conversion names, got {item!r}",
                where=where,
                fix='for example {"integer": ["str->int"]}',
            )
        target, names = item
        if not isinstance(target, str) or target not in SHORT:
            raise ConfigError(
                f"unknown target type {target!r} in the coercion allowlist",
                where=where,
                fix=f"use one of: {', '.join(TARGETS)}",
            )
        if (
            isinstance(names, str)
            or not isinstance(names, Iterable)
            or not all(isinstance(n, str) for n in names)
        ):
            raise ConfigError(
                f"{where}.{target} must be a list of conversion names",
                where=where,
                fix=f"for example {target} = [{allowed_for(target)[0]!r}]",
            )
        known = allowed_for(target)
        for name in names:
            if name not in known:
                raise ConfigError(
                    f"unknown conversion {name!r} for {target}",
                    where=f"{where}.{target}",
                    fix=f"allowed: {', '.join(known)}",
                )
        frozen.append((target, tuple(dict.fromkeys(names))))
    return tuple(sorted(frozen))


def conversion(before: Any, after: Any, allowed_types: frozenset[str]) -> tuple[str, str]:
    """(target type, name) of turning `before` into `after` where `allowed_types` are wanted;
    an integer produced where only `number` is wanted counts as a conversion into number."""
    target = json_type(after)
    if target == "integer" and "integer" not in allowed_types:
        target = "number"
    return target, f"{SHORT[json_type(before)]}->{SHORT[target]}"


def permits(allowlist: Allowlist | None, target: str, name: str) -> bool:
    if allowlist is None:
        return True
    return any(kind == target and name in names for kind, names in allowlist)


def explain(
    found: Sequence[Violation], blocked: Sequence[tuple[str, str]]
) -> tuple[Violation, ...]:
    """The violations, each at a path where a conversion was refused saying why (`blocked`:
    (path, reason)), so
    that the caller (and a model asked again) knows the value must be written as expected."""
    if not blocked:
        return tuple(found)
    refused = dict(blocked)
    return tuple(
        replace(v, found=f"{v.found} (not converted: {refused[v.path]})")
        if v.path in refused
        else v
        for v in found
    )


__all__ = ["TARGETS", "Allowlist", "allowed_for", "conversion", "explain", "freeze", "permits"]
