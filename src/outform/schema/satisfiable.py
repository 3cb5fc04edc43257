"""Schemas that accept no value: found by rules, refused before any reply is read.

Whether a JSON Schema accepts some value is undecidable in general (`pattern` and `not` alone
make it hard), so outform does not guess: it computes, for every schema node, which kinds of
JSON value *might* be valid there (null, boolean, integer, non-integer number, string, array,
object) and removes a kind only when a rule below proves no value of it can be valid. A node
left with no kind accepts no value. The rules (docs/dialects.md lists them for users):

* `false`, `not` of a schema that accepts everything, an empty `enum`;
* `type` against everything else: a `const` or every `enum` member outside the type or the
  node's own bounds, lengths and counts;
* numbers: a lower bound above the upper one (`minimum`/`exclusiveMinimum` against
  `maximum`/`exclusiveMaximum`, drafts 4 to 2020-12), and no multiple of `multipleOf` between
  them; integers: no integer (multiple) between the bounds;
* strings: `minLength` above `maxLength`; arrays: `minItems` above `maxItems`, a required
  position (below `minItems`) whose item schema accepts nothing, a `contains` that accepts
  nothing (or `minContains` above `maxContains` or `maxItems`); objects: `minProperties` above
  `maxProperties`, more `required` names than `maxProperties`, a required property whose schema
  (its `properties` entry, matching `patternProperties`, or `additionalProperties`) accepts
  nothing, or whose schemas (its `properties` entry and every `patternProperties` entry whose
  pattern matches its name, by the validator's engine) allow no kind in common, or one that
  `propertyNames` refuses;
* combinators: `allOf` keeps the kinds every branch allows, `anyOf`/`oneOf` those of some
  branch, `if`/`then`/`else` those of `then` or `else`, a local `$ref` those of its target.

Not decided (assumed satisfiable): `pattern` and `format`, `not` of anything but a type,
`uniqueItems`, `dependentRequired`/`dependentSchemas`, `unevaluated*`, references that leave the
document's JSON pointers and anchors, and recursion (a node is assumed to accept something
while its own evaluation is in progress).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from outform.errors import SchemaError
from outform.schema import pointer
from outform.schema.interval import Interval
from outform.schema.patterns import search

Kinds = frozenset[str]
ALL: Kinds = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
"""`integer`: an integer is possible; `number`: a number that is not an integer is."""
NONE: Kinds = frozenset()
_TYPE_KINDS = {
    "null": {"null"},
    "boolean": {"boolean"},
    "integer": {"integer"},
    "number": {"integer", "number"},
    "string": {"string"},
    "array": {"array"},
    "object": {"object"},
}
_ANNOTATIONS = frozenset(
    {
        "$schema", "$id", "$anchor", "$comment", "$defs", "definitions", "title",
        "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
    }
)  # fmt: skip
_LEGACY_DRAFTS = ("draft4", "draft6", "draft7")


@dataclass(frozen=True)
class Empty:
    """A node that accepts no value: where it is and the rule that proves it."""

    location: str
    reason: str


def find_empty(schema: Mapping[str, Any], draft: str | None = None) -> Empty | None:
    """The proof that `schema` accepts no value, or else that one of its sub-schemas
    contradicts itself (its own keywords exclude every value: always a mistake, since a
    sub-schema meant to forbid something is written `false`). None when neither is found."""
    finder = _Finder(schema, draft)
    if not finder.kinds(schema, ""):
        return finder.proof(schema, "")
    for location, node in _subschemas(schema):
        if isinstance(node, Mapping) and not finder.own(node, location):
            return finder.proof(node, location)
    return None


class _Finder:
    def __init__(self, root: Mapping[str, Any], draft: str | None) -> None:
        self.root = root
        self.legacy = draft in _LEGACY_DRAFTS
        self.memo: dict[int, Kinds] = {}
        self.why: dict[int, Empty] = {}
        self.busy: set[int] = set()

    # -- one node -----------------------------------------------------------------------

    def kinds(self, node: Any, location: str) -> Kinds:
        if node is False:
            return NONE
        if not isinstance(node, Mapping):
            return ALL
        key = id(node)
        if key in self.memo:
            return self.memo[key]
        if key in self.busy:  # recursion: assume the node accepts something
            return ALL
        self.busy.add(key)
        try:
            found = self._kinds(node, location)
        finally:
            self.busy.discard(key)
        self.memo[key] = found
        return found

    def _empty(self, node: Any, location: str, reason: str) -> Kinds:
        self.why.setdefault(id(node), Empty(location, reason))
        return NONE

    def proof(self, node: Any, location: str) -> Empty:
        """Why a node found empty accepts no value."""
        if node is False:
            return Empty(location, "the schema is false")
        return self.why.get(id(node), Empty(location, "it accepts no value"))

    def _kinds(self, node: Mapping[str, Any], location: str) -> Kinds:
        ref = node.get("$ref")
        if isinstance(ref, str) and self.legacy:  # drafts 4-7: keywords beside $ref are ignored
            return self._ref(node, ref, location)
        found = self.own(node, location)
        for step in (self._ref_step, self._combinators, self._structure):
            if not found:
                return NONE
            found = step(node, location, found)
        return found

    # -- the node's own keywords --------------------------------------------------------

    def own(self, node: Mapping[str, Any], location: str) -> Kinds:
        """Kinds left by `type`, bounds, lengths, counts, `enum`/`const` (no sub-schemas)."""
        declared = _declared(node.get("type"))
        if not declared:
            return self._empty(node, location, "'type' lists no type")
        numbers = Interval.of(node)
        ruled_out = _ruled_out(node, numbers)
        found = declared - set(ruled_out)
        if not found:
            if {"integer", "number"} <= declared:  # "no number" says it for integers too
                del ruled_out["integer"]
            reasons = dict.fromkeys(ruled_out[k] for k in sorted(declared) if k in ruled_out)
            return self._empty(node, location, "; ".join(reasons))
        values = _choices(node)
        if values is None:
            return found
        if not values:
            empty = "'const' is not a member of 'enum'" if "const" in node else "'enum' is empty"
            return self._empty(node, location, empty)
        fitting = _fitting_kinds(values, node, found, numbers)
        if not fitting:
            what = "'const' does not fit" if "const" in node else "no member of 'enum' fits"
            return self._empty(node, location, f"{what} the node's type, bounds and sizes")
        return fitting & found

    # -- sub-schemas --------------------------------------------------------------------

    def _ref_step(self, node: Mapping[str, Any], location: str, found: Kinds) -> Kinds:
        ref = node.get("$ref")
        return found & self._ref(node, ref, location) if isinstance(ref, str) else found

    def _ref(self, node: Mapping[str, Any], ref: str, location: str) -> Kinds:
        target = self._resolve(ref)
        if target is None:
            return ALL
        at = ref.removeprefix("#")
        found = self.kinds(target, at)
        if not found:
            why = f"its '$ref' {ref!r} accepts no value"
            return self._because(node, location, why, (target, at))
        return found

    def _combinators(self, node: Mapping[str, Any], location: str, found: Kinds) -> Kinds:
        for index, branch in enumerate(_list(node.get("allOf"))):
            at = pointer.join(location, "allOf", index)
            kinds = self.kinds(branch, at)
            found &= kinds
            if not found:
                why = f"'allOf' branch {index} allows nothing the rest allows"
                return self._because(node, location, why, None if kinds else (branch, at))
        for keyword in ("anyOf", "oneOf"):
            branches = _list(node.get(keyword))
            if branches:
                places = [pointer.join(location, keyword, i) for i in range(len(branches))]
                found &= NONE.union(*map(self.kinds, branches, places))
                if not found:
                    why = f"no branch of '{keyword}' allows what the rest allows"
                    return self._because(node, location, why)
        if "not" in node:
            found -= _refuted(node["not"])
            if not found:
                return self._because(node, location, "'not' refuses every value that is left")
        if "if" in node:
            branches = [(k, node[k]) for k in ("then", "else") if k in node]
            if len(branches) == 2:  # with one branch missing, values can take the other way
                found &= NONE.union(
                    *(self.kinds(b, pointer.join(location, k)) for k, b in branches)
                )
                if not found:
                    return self._because(node, location, "neither 'then' nor 'else' fits")
        return found

    def _structure(self, node: Mapping[str, Any], location: str, found: Kinds) -> Kinds:
        if "array" in found and (reason := self._no_array(node, location)):
            found -= {"array"}
            if not found:
                return self._because(node, location, reason)
        if "object" in found and (reason := self._no_object(node, location)):
            found -= {"object"}
            if not found:
                return self._because(node, location, reason)
        return found

    def _no_array(self, node: Mapping[str, Any], location: str) -> str | None:
        prefix, rest, prefix_key, rest_key = _item_schemas(node)
        needed = int(_number(node, "minItems", 0))
        for index, item in enumerate(prefix[:needed]):
            if not self.kinds(item, pointer.join(location, prefix_key, index)):
                return f"item {index} accepts no value, and 'minItems' is {needed}"
        beyond = needed > len(prefix) and rest is not None
        if beyond and not self.kinds(rest, pointer.join(location, rest_key)):
            return f"'minItems' {needed} needs items that '{rest_key}' does not allow"
        if "contains" in node:
            least = _number(node, "minContains", 1)
            if least >= 1 and not self.kinds(node["contains"], pointer.join(location, "contains")):
                return "'contains' accepts no value"
            if least > _number(node, "maxItems", math.inf):
                return "'minContains' is above 'maxItems'"
        return None

    def _no_object(self, node: Mapping[str, Any], location: str) -> str | None:
        required = [r for r in _list(node.get("required")) if isinstance(r, str)]
        names = node.get("propertyNames", True)
        if required and not self.kinds(names, pointer.join(location, "propertyNames")):
            return "'propertyNames' accepts no name, and some are required"
        properties = node.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        patterns = node.get("patternProperties")
        patterns = patterns if isinstance(patterns, Mapping) else {}
        for name in required:
            schemas = self._schemas_of(name, properties, patterns, node, location)
            common = ALL
            for where, schema in schemas:
                kinds = self.kinds(schema, where)
                if not kinds:
                    inner = self.proof(schema, where)
                    return (
                        f"the required property {name!r} accepts no value "
                        f"(at {inner.location}: {inner.reason})"
                    )
                common &= kinds
            if not common:  # each schema accepts something, but not the same kind of value
                places = ", ".join(where for where, _ in schemas)
                return (
                    f"the required property {name!r} must match every schema that applies to "
                    f"it ({places}), and their types cannot agree"
                )
        return None

    def _schemas_of(
        self,
        name: str,
        properties: Mapping[str, Any],
        patterns: Mapping[str, Any],
        node: Mapping[str, Any],
        location: str,
    ) -> list[tuple[str, Any]]:
        """The sub-schemas a property called `name` must match."""
        found = []
        if name in properties:
            found.append((pointer.join(location, "properties", name), properties[name]))
        matched = [p for p in patterns if _matches(p, name)]
        found += [(pointer.join(location, "patternProperties", p), patterns[p]) for p in matched]
        if not found and "additionalProperties" in node:
            found.append(
                (pointer.join(location, "additionalProperties"), node["additionalProperties"])
            )
        return found

    def _because(
        self,
        node: Mapping[str, Any],
        location: str,
        reason: str,
        cause: tuple[Any, str] | None = None,
    ) -> Kinds:
        """Record why a node accepts nothing, with the proof for the sub-schema that caused it
        (`cause`: the sub-schema and its location)."""
        if cause is not None:
            inner = self.proof(*cause)
            reason = f"{reason} (at {inner.location or '/'}: {inner.reason})"
        return self._empty(node, location, reason)

    def _resolve(self, ref: str) -> Any:
        """The target of a reference inside the document, or None (not followed)."""
        if ref == "#":
            return self.root
        if ref.startswith("#/"):
            try:
                return pointer.lookup(self.root, ref[1:])
            except (KeyError, ValueError):
                return None
        if ref.startswith("#"):
            return _anchor(self.root, ref[1:])
        return None


# -- helpers ------------------------------------------------------------------------------


def _declared(kind: Any) -> Kinds:
    if kind is None:
        return ALL
    names = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return frozenset().union(*(_TYPE_KINDS.get(n, set()) for n in names if isinstance(n, str)))


def _kind_of(value: Any) -> Kinds:
    if value is None:
        return frozenset({"null"})
    if isinstance(value, bool):
        return frozenset({"boolean"})
    if isinstance(value, int):
        return frozenset({"integer"})
    if isinstance(value, float):
        return frozenset({"integer"}) if value.is_integer() else frozenset({"number"})
    if isinstance(value, str):
        return frozenset({"string"})
    if isinstance(value, list):
        return frozenset({"array"})
    if isinstance(value, dict):
        return frozenset({"object"})
    return NONE


def _choices(node: Mapping[str, Any]) -> list[Any] | None:
    enum = node.get("enum")
    if "const" in node:
        const = node["const"]
        if isinstance(enum, list):
            return [v for v in enum if _same(v, const)]
        return [const]
    return list(enum) if isinstance(enum, list) else None


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _ruled_out(node: Mapping[str, Any], numbers: Interval) -> dict[str, str]:
    """Kinds the node's own bounds, lengths and counts leave no value of, with the reason."""
    out: dict[str, str] = {}
    if not numbers.has_integer():
        out["integer"] = f"no integer is {numbers.describe()}"
    if not numbers.has_fraction():
        out["number"] = f"no number is {numbers.describe()}"
    if _above(node, "minLength", "maxLength"):
        out["string"] = _inverted(node, "minLength", "maxLength")
    for low, high in (("minItems", "maxItems"), ("minContains", "maxContains")):
        if _above(node, low, high):
            out["array"] = _inverted(node, low, high)
    names = len({r for r in _list(node.get("required")) if isinstance(r, str)})
    if names > _number(node, "maxProperties", math.inf):
        out["object"] = (
            f"{names} properties are required but 'maxProperties' is {node['maxProperties']}"
        )
    if _above(node, "minProperties", "maxProperties"):
        out["object"] = _inverted(node, "minProperties", "maxProperties")
    return out


def _inverted(node: Mapping[str, Any], low: str, high: str) -> str:
    return f"'{low}' {node[low]} is above '{high}' {node[high]}"


def _fitting_kinds(
    values: list[Any], node: Mapping[str, Any], kinds: Kinds, numbers: Interval
) -> Kinds:
    """The kinds of the enum members that meet the node's type, bounds, lengths and counts.
    Members are grouped by type in one pass in C; strings are then judged by their distinct
    lengths, the other types member by member (an enum of a million strings costs no Python
    per member)."""
    types = set(map(type, values))
    found: set[str] = set()
    for kind in types:
        members = values if len(types) == 1 else [v for v in values if type(v) is kind]
        if kind is str:
            if "string" in kinds:
                low, high = _number(node, "minLength", 0), _number(node, "maxLength", math.inf)
                if any(low <= n <= high for n in set(map(len, members))):
                    found.add("string")
            continue
        for value in members:
            if _fits(value, node, kinds, numbers):
                found |= _kind_of(value)
    return frozenset(found)


def _fits(value: Any, node: Mapping[str, Any], kinds: Kinds, numbers: Interval) -> bool:
    """Whether an enum member meets the node's type, bounds, lengths and counts."""
    if not _kind_of(value) & kinds:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return numbers.holds(value)
    keywords = _SIZES.get(type(value))
    if keywords is None:
        return True
    low, high = keywords
    if not _number(node, low, 0) <= len(value) <= _number(node, high, math.inf):
        return False
    required = [r for r in _list(node.get("required")) if isinstance(r, str)]
    return not isinstance(value, dict) or all(r in value for r in required)


_SIZES: dict[type, tuple[str, str]] = {
    str: ("minLength", "maxLength"),
    list: ("minItems", "maxItems"),
    dict: ("minProperties", "maxProperties"),
}


def _number(node: Mapping[str, Any], key: str, default: float) -> float:
    value = node.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return default


def _above(node: Mapping[str, Any], low: str, high: str) -> bool:
    return _number(node, low, 0) > _number(node, high, math.inf)


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _item_schemas(node: Mapping[str, Any]) -> tuple[Sequence[Any], Any, str, str]:
    """(positional item schemas, the schema of the items after them, their keywords)."""
    items = node.get("items")
    if isinstance(items, list):  # drafts 4 to 2019-09: a tuple
        return items, node.get("additionalItems"), "items", "additionalItems"
    prefix = _list(node.get("prefixItems"))
    return prefix, items, "prefixItems", "items"


def _refuted(schema: Any) -> Kinds:
    """Kinds that a `not` of `schema` certainly refuses: all of them when `schema` accepts
    everything; the listed ones when it asserts only `type`."""
    if schema is True:
        return ALL
    if not isinstance(schema, Mapping):
        return NONE
    assertions = set(schema) - _ANNOTATIONS
    if not assertions:
        return ALL
    return _declared(schema["type"]) if assertions == {"type"} else NONE


_ONE = ("additionalProperties", "items", "additionalItems", "contains", "not", "if", "then",
        "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties")  # fmt: skip
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _subschemas(root: Any) -> Iterator[tuple[str, Any]]:
    """Every schema in the document, in document order, with its JSON pointer."""
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        location, node = stack.pop()
        yield location, node
        if not isinstance(node, Mapping):
            continue
        found: list[tuple[str, Any]] = []
        for key, value in node.items():
            if key in _ONE and not isinstance(value, list):
                found.append((pointer.join(location, key), value))
            elif key in _LIST and isinstance(value, list):
                found += [(pointer.join(location, key, i), v) for i, v in enumerate(value)]
            elif key in _MAP and isinstance(value, Mapping):
                found += [(pointer.join(location, key, k), v) for k, v in value.items()]
        stack.extend(reversed(found))


def _matches(pattern: str, name: str) -> bool:
    """Whether a `patternProperties` pattern matches a property name, as the validator reads
    it (ECMA 262, `\\p{L}` included, in linear time): Python's `re` reads `\\d`, `$` and others
    otherwise, which would prove a valid schema empty."""
    try:
        return search(pattern, name)
    except SchemaError:  # not a pattern the validator compiles: compiling names where it is
        return True


def _anchor(node: Any, name: str) -> Any:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, Mapping):
            if current.get("$anchor") == name:
                return current
            stack.extend(v for k, v in current.items() if k not in ("enum", "const", "default"))
        elif isinstance(current, list):
            stack.extend(current)
    return None
