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
import orjson

from outform.errors import SchemaError, guarded
from outform.schema import pointer
from outform.schema.canonical import canonical_json, schema_hash
from outform.schema.check import boolean_root, check_schema, too_nested

T = TypeVar("T")

_ROOT_URI = "https://schema.outform.invalid/root.json"
"""Where an anonymous document is registered for sub-schema validators. Hierarchical (unlike a
`urn:`), so that relative `$id`s inside the document resolve; never fetched."""


_ATOMS: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def _copied(value: Any) -> Any:
    """`copy.deepcopy` of a JSON value, faster: dicts and lists are copied, immutable leaves
    shared, and a list of leaves (an enum of a million strings) is copied in one call in C."""
    kind = type(value)
    if kind is dict:
        return {key: _copied(item) for key, item in value.items()}
    if kind is list:
        if set(map(type, value)) <= _ATOMS:
            return list(value)
        return [_copied(item) for item in value]
    return value if kind in _ATOMS else copy.deepcopy(value)


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

    __slots__ = (
        "_memo",
        "_registry",
        "_reporter",
        "_resolved",
        "_sub",
        "hash",
        "root",
        "validator",
    )

    def __init__(self, schema: Mapping[str, Any], *, where: str = "schema") -> None:
        check_schema(schema, where=where)
        # A copy all the way down: compiled schemas are shared by every schema with the same
        # canonical JSON, so one must not change when a caller later changes its own dict.
        self.root: dict[str, Any] = _copied(dict(schema))
        self.hash = schema_hash(self.root)
        try:
            self.validator = jsonschema_rs.validator_for(self.root, retriever=_refuse_remote)
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
            raise _uncompiled(exc, where) from None
        self._registry: jsonschema_rs.Registry | None = None
        self._reporter: jsonschema_rs.Validator | None = None
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
        """Every error of `value`, one per failing keyword and place: a `required` keyword
        fails once for all the names an object lacks (see `MissingNames`), which the caller
        lists one by one (`missing_names`)."""
        reporter = self._reporter
        if reporter is None:
            reporter = self._reporter = self._compile_reporter()
        return iter(reporter.iter_errors(value))

    def missing_keywords(self) -> Mapping[str, int]:
        """The keywords that report missing names (`required`, `dependentRequired`,
        `dependencies`), by location, numbered in the order missing fields at one place of a
        reply are listed: a node's own keywords, as written, before those of its subschemas,
        which are taken depth first, as written."""
        return self.memo("missing_keywords", lambda: _missing_keywords(self.root))

    def _compile_reporter(self) -> jsonschema_rs.Validator:
        """The validator that lists errors. jsonschema-rs copies the object into each error it
        reports, and its `required` reports one per missing name: an object of n keys lacking
        m names cost n × m (the same wide object met at every size of a reply made collecting
        its errors quadratic). This one's `required` accepts and refuses exactly the same
        objects, with one error per object."""
        if not any(location.endswith("/required") for location in self.missing_keywords()):
            return self.validator
        return jsonschema_rs.validator_for(
            self.root, retriever=_refuse_remote, keywords={"required": MissingNames}
        )

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


class MissingNames:
    """The `required` keyword of the validator that lists errors (`CompiledSchema.errors`):
    an object lacking any of the names fails once, its message the missing names in the
    list's order, as a JSON array (see `missing_names`); a value that is not an object passes,
    as the standard says."""

    __slots__ = ("names",)

    def __init__(self, parent_schema: Any, value: Any, schema_path: Any) -> None:
        self.names: list[Any] = value if isinstance(value, list) else []

    def validate(self, instance: Any) -> None:
        if isinstance(instance, dict):
            missing = [name for name in self.names if name not in instance]
            if missing:
                raise ValueError(orjson.dumps(missing).decode())


def missing_names(error: jsonschema_rs.ValidationError) -> list[str] | None:
    """The names an error of `MissingNames` stands for (None for any other error)."""
    if error.kind.name != "required":
        return None
    info = error.kind.as_dict()
    if "property" in info:
        return None  # jsonschema-rs's own keyword: one name
    try:
        names = orjson.loads(str(info.get("message", "")))
    except orjson.JSONDecodeError:
        return None
    return [str(name) for name in names] if isinstance(names, list) else None


_MISSING_KEYWORDS = frozenset({"required", "dependentRequired", "dependencies"})
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: not searched for keywords."""


def _missing_keywords(schema: Any) -> dict[str, int]:
    """See `CompiledSchema.missing_keywords` (a walk without recursion)."""
    found: dict[str, int] = {}
    stack: list[tuple[str, Any]] = [("", schema)]
    while stack:
        location, node = stack.pop()
        if isinstance(node, dict):
            children = []
            for key, value in node.items():
                inner = pointer.join(location, key)
                if key in _MISSING_KEYWORDS and isinstance(value, list | dict):
                    found.setdefault(inner, len(found))
                if key not in _DATA_KEYWORDS and isinstance(value, dict | list):
                    children.append((inner, value))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            stack.extend(
                (pointer.join(location, index), value)
                for index, value in reversed(list(enumerate(node)))
                if isinstance(value, dict | list)
            )
    return found


def _refuse_remote(uri: str) -> Any:
    raise SchemaError(
        f"the schema refers to a remote document ({uri}); outform never fetches schemas",
        fix="copy the referenced schema under '$defs' and point to it with '#/$defs/<name>'",
    )


_cache: OrderedDict[bytes, CompiledSchema] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 256


@guarded("schema")
def compile_schema(schema: Mapping[str, Any] | bool) -> CompiledSchema:
    """Compile a schema, reusing the result for schemas with the same canonical JSON. The
    compiled schema keeps a copy of the caller's dict (and so its key order), not the
    canonical form. A boolean root is read by `boolean_root`: `true` is compiled as `{}`."""
    document: Mapping[str, Any] = boolean_root(schema)
    if not isinstance(document, Mapping):
        check_schema(document)  # raises with a clear message
    try:
        key = canonical_json(document)
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
    compiled = CompiledSchema(document)
    with _cache_lock:
        _cache[key] = compiled
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled
