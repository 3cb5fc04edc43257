"""A schema checked and compiled once, then reused for every reply.

Holds the jsonschema-rs validator for the whole schema and, on demand, validators for any
sub-schema (the coercion stage asks "does this value fit *this part* of the schema?"). Sub-schema
validators resolve `$ref`s against the whole document through a registry, never the network.
"""

from __future__ import annotations

import copy
import threading
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, cast

import jsonschema_rs

from outform.errors import SchemaError, guarded
from outform.schema import pointer
from outform.schema.canonical import canonical_json, schema_hash
from outform.schema.check import check_schema, too_nested

T = TypeVar("T")

_ROOT_URI = "https://schema.outform.invalid/root.json"
"""Where an anonymous document is registered for sub-schema validators. Hierarchical (unlike a
`urn:`), so that relative `$id`s inside the document resolve; never fetched."""


def _uncompiled(exc: Exception, where: str) -> SchemaError:
    """Why jsonschema-rs cannot compile a schema that passed the meta-schema: a regular
    expression its engine cannot compile (named with its location), else a `$ref` that
    points nowhere."""
    if (
        isinstance(exc, jsonschema_rs.ValidationError)
        and isinstance(exc.kind, jsonschema_rs.ValidationErrorKind.Format)
        and exc.kind.format == "regex"
    ):
        return SchemaError(
            f"the schema's regular expression {exc.instance!r} cannot be compiled",
            where=f"{where} at {pointer.from_parts(exc.instance_path) or '/'}",
            fix="write the regular expression there in the ECMA 262 syntax JSON Schema uses "
            "(every group closed, every escape known), or remove it",
        )
    return SchemaError(
        f"the schema cannot be compiled: {str(exc).splitlines()[0]}",
        where=where,
        fix="check every '$ref' points at an existing location of the document",
    )


class CompiledSchema:
    """A validated, compiled JSON Schema with helpers to navigate it."""

    __slots__ = ("_memo", "_registry", "_resolved", "_sub", "hash", "root", "validator")

    def __init__(self, schema: Mapping[str, Any], *, where: str = "schema") -> None:
        check_schema(schema, where=where)
        # A copy all the way down: compiled schemas are shared by every schema with the same
        # canonical JSON, so one must not change when a caller later changes its own dict.
        self.root: dict[str, Any] = copy.deepcopy(dict(schema))
        self.hash = schema_hash(self.root)
        try:
            self.validator = jsonschema_rs.validator_for(self.root, retriever=_refuse_remote)
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
            raise _uncompiled(exc, where) from None
        self._registry: jsonschema_rs.Registry | None = None
        self._sub: dict[str, jsonschema_rs.Validator] = {}
        self._resolved: dict[str, tuple[str, Any]] = {}
        self._memo: dict[Any, Any] = {}

    def memo(self, key: Any, build: Callable[[], T]) -> T:
        """A value derived from this schema (an index, a plan), built once on first use and
        kept as long as the compiled schema is."""
        try:
            return cast(T, self._memo[key])
        except KeyError:
            value = self._memo[key] = build()
            return value

    def is_valid(self, value: Any) -> bool:
        return bool(self.validator.is_valid(value))

    def errors(self, value: Any) -> Iterator[jsonschema_rs.ValidationError]:
        return iter(self.validator.iter_errors(value))

    def is_valid_at(self, location: str, value: Any) -> bool:
        """Whether `value` fits the sub-schema at JSON pointer `location` of the document."""
        if not location:
            return self.is_valid(value)
        validator = self._sub.get(location)
        if validator is None:
            try:
                validator = self._compile_sub(location)
            except (ValueError, jsonschema_rs.ReferencingError):
                # A part of the document jsonschema-rs cannot address on its own (unusual
                # `$id` layouts): treat it as valid, so nothing is coerced there; the whole
                # value is still validated against the whole schema.
                validator = _ANYTHING
            self._sub[location] = validator
        return bool(validator.is_valid(value))

    def node(self, location: str) -> Any:
        """The sub-schema at a JSON pointer."""
        return pointer.lookup(self.root, location)

    def resolve(self, location: str) -> tuple[str, Any]:
        """Follow local `$ref`s from `location`; returns the final location and schema node.

        A `$ref` with sibling keywords is returned as-is (the caller sees both); a chain that
        loops or leaves the document stops at the last resolvable node.
        """
        known = self._resolved.get(location)
        if known is not None:
            return known
        resolved = self._resolved[location] = self._resolve(location)
        return resolved

    def _resolve(self, location: str) -> tuple[str, Any]:
        node = self.node(location)
        seen = {location}
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and len(node) == 1:
            target = self.ref_location(node["$ref"])
            if target is None or target in seen:
                break
            seen.add(target)
            try:
                node = self.node(target)
            except KeyError:
                break
            location = target
        return location, node

    def ref_location(self, ref: str) -> str | None:
        """The JSON pointer a local `$ref` points at, or None for refs outform cannot follow
        itself (anchors, `$id`-relative refs); those are still honoured by the validator."""
        base, _, fragment = ref.partition("#")
        if base and base != self.root.get("$id", self.root.get("id")):
            return None
        fragment = urllib.parse.unquote(fragment)
        if fragment and not fragment.startswith("/"):
            return None
        return fragment

    def _compile_sub(self, location: str) -> jsonschema_rs.Validator:
        # The document is registered under its own `$id` when it has one, so that its
        # relative refs resolve exactly as they do for the whole-schema validator.
        own_id = self.root.get("$id", self.root.get("id"))
        base = own_id.split("#", 1)[0] if isinstance(own_id, str) and own_id else _ROOT_URI
        if self._registry is None:
            self._registry = jsonschema_rs.Registry([(base, self.root)])
        fragment = urllib.parse.quote(location, safe="/~!$&'()*+,;=:@")
        wrapper: dict[str, Any] = {"$ref": f"{base}#{fragment}"}
        draft = self.root.get("$schema")
        if isinstance(draft, str):
            wrapper["$schema"] = draft
        return jsonschema_rs.validator_for(wrapper, registry=self._registry)


_ANYTHING = jsonschema_rs.validator_for({})


def _refuse_remote(uri: str) -> Any:
    raise SchemaError(
        f"the schema refers to a remote document ({uri}); outform never fetches schemas",
        fix="copy the referenced schema under '$defs' and point to it with '#/$defs/<name>'",
    )


_cache: OrderedDict[bytes, CompiledSchema] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 256


@guarded("schema")
def compile_schema(schema: Mapping[str, Any]) -> CompiledSchema:
    """Compile a schema, reusing the result for schemas with the same canonical JSON. The
    compiled schema keeps a copy of the caller's dict (and so its key order), not the
    canonical form."""
    if not isinstance(schema, Mapping):
        check_schema(schema)  # raises with a clear message
    try:
        key = canonical_json(schema)
    except TypeError as exc:
        if "Recursion limit" in str(exc):
            raise too_nested() from None
        raise SchemaError(
            f"the schema is not JSON-serialisable: {exc}",
            fix="use only dicts, lists, strings, numbers, booleans and None in a schema",
        ) from None
    with _cache_lock:
        compiled = _cache.get(key)
        if compiled is not None:
            _cache.move_to_end(key)
            return compiled
    compiled = CompiledSchema(schema)
    with _cache_lock:
        _cache[key] = compiled
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled
