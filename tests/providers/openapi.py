"""Validate wire payloads against OpenAI's own OpenAPI document.

The document is ``tests/data/openai-openapi/openapi.yaml`` (OpenAPI 3.1, ~3 MB). It is parsed
once per process (``load()`` is cached) and each named schema is checked with ``jsonschema``
(Draft 2020-12) through a ``referencing`` registry that resolves ``#/components/schemas/...``.

Two adjustments make the document behave as OpenAI's servers and SDKs read it:

* ``nullable: true`` is an OpenAPI 3.0 keyword that 3.1 (JSON Schema 2020-12) ignores; the
  document still uses it in ~100 places (``finish_reason`` of a stream chunk, ``usage``...).
  It is rewritten to a ``null`` branch so that a real ``"finish_reason": null`` passes.
* ``oneOf`` becomes ``anyOf``. The document's unions overlap by design and rely on
  ``discriminator`` (which JSON Schema does not evaluate) to pick a branch: a Responses input
  message ``{"role": "user", "content": [...]}`` matches both ``EasyInputMessage`` and
  ``InputMessage``, so a literal ``oneOf`` would reject every such message. Valid therefore
  means "matches at least one branch", and error reports use the discriminator to show the
  branch that was meant.

``validate(name, instance)`` returns a list of problems (empty when valid), so tests can
``assert validate("CreateResponse", body) == []`` and read the problems in the failure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from tests.vendored import OPENAPI

_URI = "urn:outform:openai-openapi"


class OpenAPI:
    """One parsed OpenAPI document; validators are built per schema name on first use."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = _normalise(document)
        self.schemas: dict[str, Any] = self.document["components"]["schemas"]
        resource: Resource[Any] = DRAFT202012.create_resource(self.document)
        self._registry: Registry[Any] = Registry().with_resource(_URI, resource)
        self._validators: dict[str, Any] = {}

    def validator(self, name: str) -> Any:
        if name not in self.schemas:
            raise KeyError(f"{name!r} is not a schema of the OpenAPI document")
        if name not in self._validators:
            ref = {"$ref": f"{_URI}#/components/schemas/{name}"}
            self._validators[name] = Draft202012Validator(ref, registry=self._registry)
        return self._validators[name]

    def validate(self, name: str, instance: Any) -> list[str]:
        """Problems of `instance` against `#/components/schemas/<name>` (empty when valid)."""
        errors = self.validator(name).iter_errors(instance)
        return [problem for error in errors for problem in _describe(error)]


@functools.cache
def load() -> OpenAPI:
    """The document, parsed once per process."""
    with OPENAPI.open("rb") as handle:
        document = yaml.load(handle, Loader=yaml.CSafeLoader)
    return OpenAPI(document)


def validate(name: str, instance: Any) -> list[str]:
    return load().validate(name, instance)


# -- normalisation -------------------------------------------------------------------------


def _normalise(node: Any) -> Any:
    if isinstance(node, list):
        return [_normalise(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _normalise(value) for key, value in node.items()}
    if "oneOf" in out:
        out["anyOf"] = out.pop("oneOf") + out.pop("anyOf", [])
    if out.pop("nullable", False) is True:
        out = _nullable(out)
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and not any(k in schema for k in ("anyOf", "allOf", "$ref")):
        schema["type"] = [kind, "null"]
        if "enum" in schema and None not in schema["enum"]:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


# -- error reports -------------------------------------------------------------------------


def _describe(error: ValidationError) -> list[str]:
    """Readable problems; inside a union, only the branches the discriminator points at."""
    if error.validator == "anyOf" and error.context:
        branches = _meant_branches(error)
        if branches:
            return [problem for sub in branches for problem in _describe(sub)]
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return [f"{where}: {error.message}"]


def _meant_branches(error: ValidationError) -> list[ValidationError]:
    """Errors of the union branches whose discriminator value matches the instance."""
    by_branch: dict[Any, list[ValidationError]] = {}
    for sub in error.context or ():
        by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
    keys = _discriminators(error.schema)
    meant = [
        subs
        for subs in by_branch.values()
        if not any(
            len(s.relative_path) == 1
            and s.relative_path[0] in keys
            and s.validator in ("enum", "const", "type")
            for s in subs
        )
        and not any(s.validator == "type" and not s.relative_path for s in subs)
    ]
    if not meant or len(meant) == len(by_branch):
        return []
    return [sub for subs in meant for sub in subs]


def _discriminators(schema: Any) -> Iterable[str]:
    named = (
        schema.get("discriminator", {}).get("propertyName") if isinstance(schema, dict) else None
    )
    return (named,) if named else ("type", "role", "object")
