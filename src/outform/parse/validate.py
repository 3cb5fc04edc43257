"""Stage *validate*: strict JSON Schema validation, and the violations behind a `RetryHint`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema_rs
from pydantic import ValidationError as PydanticValidationError

from outform.parse.context import Deadline
from outform.parse.hint import Violation, describe, preview
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema, missing_names

_TYPE_KEYWORDS = {"type"}
_MISSING = {"required", "dependentRequired", "dependencies"}
_UNEXPECTED = {"additionalProperties", "unevaluatedProperties", "propertyNames"}


def violations(
    compiled: CompiledSchema, value: Any, deadline: Deadline | None = None
) -> tuple[Violation, ...]:
    """Every reason `value` does not validate, in document order (empty when it validates).

    At one place, the violations of a kind keep the validator's order, but for missing fields:
    those are listed by the place of their keyword in the schema (see
    `CompiledSchema.missing_keywords`: a node's own `required` before the subschemas it
    applies there), each keyword's names in its own order. The validator reports a
    `required` once for all the names an object lacks (see `CompiledSchema.errors`), after
    those subschemas."""
    found: list[tuple[Violation, int]] = []
    ranks = compiled.missing_keywords()
    clock = deadline or Deadline.never()
    for error in compiled.errors(value):
        clock.check()  # an error can cost milliseconds (an enum of a million members)
        names = missing_names(error)
        if names is None:
            violation = _violation(compiled, error)
            if violation.kind != "missing":
                found.append((violation, 0))
                continue
            missing = [violation]
        else:
            node = _node(compiled, list(error.schema_path)[:-1])
            path = pointer.from_parts(error.instance_path)
            missing = _missing(compiled, path, node, names, error.kind.name, deadline=clock)
        rank = ranks.get(pointer.from_parts(error.schema_path), len(ranks))
        found += ((violation, rank) for violation in missing)
    orders: dict[str, list[tuple[int, int | str]]] = {}

    def order(item: tuple[Violation, int]) -> tuple[list[tuple[int, int | str]], str, int]:
        clock.tick()
        violation, rank = item
        path = violation.path
        known = orders.get(path)
        if known is None:
            known = orders[path] = _document_order(path)
        return known, violation.kind, rank

    found.sort(key=order)
    return tuple(violation for violation, _ in found)


def _document_order(path: str) -> list[tuple[int, int | str]]:
    """Sort key for JSON pointers: array indices as numbers, so /2 comes before /10."""
    return [(0, int(t)) if t.isdigit() else (1, t) for t in pointer.parts(path)]


def pydantic_violations(
    error: PydanticValidationError, deadline: Deadline | None = None
) -> tuple[Violation, ...]:
    """Violations from a Pydantic error: checks the JSON Schema cannot express (validators).
    One per item Pydantic reports, which grow with the value: the deadline is read as they do."""
    clock = deadline or Deadline.never()
    out = []
    for item in error.errors(include_url=False):
        clock.tick()
        loc = pointer.from_parts(item.get("loc", ()))
        kind: Any = "missing" if item.get("type") == "missing" else "custom"
        missing = kind == "missing"
        found = describe(item.get("input"))
        if missing:
            expected = str(item.get("loc", ("",))[-1])
        elif item.get("type") == "int_parsing_size" and isinstance(item.get("input"), float):
            # Pydantic's words ("unable to parse input string") for a float such as 1e20.
            expected = "an integer"
            found += f" ({_FLOAT_PAST_64_BITS})"
        else:
            expected, why = _phrased(str(item.get("msg", "")))
            found += f" ({why})" if why else ""
        out.append(
            Violation(
                path=loc.rsplit("/", 1)[0] if missing else loc,
                kind=kind,
                expected=expected,
                found=found,
                keyword=str(item.get("type", "")),
                field=expected if missing else "",
            )
        )
    return tuple(out)


def _missing(
    compiled: CompiledSchema,
    path: str,
    node: Any,
    names: list[str],
    keyword: str,
    *,
    deadline: Deadline | None = None,
) -> list[Violation]:
    """One violation per name a keyword of the schema node `node` found missing at `path`
    (one `required` of 200,000 names is 200,000 of them: the deadline is read as they grow)."""
    properties = node.get("properties") if isinstance(node, dict) else None
    if not isinstance(properties, dict):
        properties = {}
    clock = deadline or Deadline.never()
    found = []
    for name in names:
        clock.tick()
        shape = summarize(compiled, properties[name]) if name in properties else ""
        expected = f"{name!r} ({shape})" if shape else repr(name)
        found.append(Violation(path, "missing", expected, "nothing", keyword, field=name))
    return found


_SHOULD_BE = "Input should be "
_FLOAT_PAST_64_BITS = (
    "an integer past 64 bits written with an exponent or a fraction, which the type takes "
    "only written out in digits"
)


def _phrased(message: str) -> tuple[str, str]:
    """A Pydantic message in outform's phrasing: (what was expected, why the value is not
    it). "Input should be a valid date or datetime, input is too short" gives ("a valid date
    or datetime", "input is too short"); a message of another form is the reason, under "a
    value the type accepts"."""
    if message.startswith(_SHOULD_BE):
        expected, _, why = message[len(_SHOULD_BE) :].partition(", ")
        return expected, why
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]  # a reason after a parenthesis
    return "a value the type accepts", message


def _violation(compiled: CompiledSchema, error: jsonschema_rs.ValidationError) -> Violation:
    path = pointer.from_parts(error.instance_path)
    keyword = error.kind.name
    info = error.kind.as_dict()
    node = _node(compiled, list(error.schema_path)[:-1])
    if keyword in _MISSING:
        return _missing(compiled, path, node, [str(info.get("property", ""))], keyword)[0]
    if keyword in _UNEXPECTED:
        unexpected = info.get("unexpected") or []
        allowed = sorted(node.get("properties", {})) if isinstance(node, dict) else []
        return Violation(
            path,
            "unexpected",
            ", ".join(map(repr, allowed)) or "none",
            ", ".join(map(repr, unexpected)) or preview(error.instance),
            keyword,
        )
    if keyword in _TYPE_KEYWORDS:
        types = info.get("types") or [info.get("type")]
        return Violation(
            path, "type", " or ".join(str(t) for t in types), describe(error.instance), keyword
        )
    if keyword in ("anyOf", "oneOf"):
        tagged = _tagged(compiled, node, path, error)
        if tagged is not None:
            return tagged
        expected = summarize(compiled, node) if isinstance(node, dict) else keyword
        if type(error.kind).__name__ == "OneOfMultipleValid":
            # Valid under two branches of a oneOf: saying "expected integer | number" of a
            # number would contradict itself. The branches it matches have no errors.
            matched = [i for i, errors in enumerate(info.get("context") or []) if not errors]
            return Violation(
                path,
                "constraint",
                f"exactly one of {expected} (oneOf)",
                f"{describe(error.instance)}, valid under branches " + ", ".join(map(str, matched)),
                keyword,
            )
        return Violation(path, "type", expected, describe(error.instance), keyword)
    if keyword == "enum":
        options = info.get("options", [])
        return Violation(
            path, "enum", "one of " + preview(options, 200), describe(error.instance), keyword
        )
    if keyword == "const":
        expected = preview(info.get("expected_value"))
        return Violation(path, "enum", expected, describe(error.instance), keyword)
    return Violation(
        path, "constraint", _constraint(keyword, info), describe(error.instance), keyword
    )


def _tagged(
    compiled: CompiledSchema, node: Any, path: str, error: jsonschema_rs.ValidationError
) -> Violation | None:
    """A union of objects told apart by one property (a discriminated union: `discriminator`
    names it, or every branch requires it with its own constant), for an object whose tag is
    missing or takes no branch's value: that is what the violation says, not "object | object".
    The tag is found once per union (`location`), not once per violation."""
    instance, keyword = error.instance, error.kind.name
    if not isinstance(instance, dict) or not isinstance(node, dict):
        return None
    location = pointer.from_parts(list(error.schema_path))
    found = compiled.memo(("union_tag", location), lambda: _tag(compiled, node, keyword))
    if found is None:
        return None
    name = found.name
    if name not in instance:
        return Violation(
            path, "missing", f"{name!r} (one of {found.shown})", "nothing", keyword, name
        )
    if instance[name] not in found.allowed:
        where = pointer.join(path, name)
        return Violation(where, "enum", f"one of {found.shown}", describe(instance[name]), keyword)
    # The tag chose a branch: a field that branch requires and the object lacks is named.
    chosen = next(branch for branch, values in found.branches if instance[name] in values)
    for field in chosen.get("required", []):
        if isinstance(field, str) and field not in instance:
            tag = f"{name} {preview(instance[name])}"
            return Violation(path, "missing", f"{field!r} (for {tag})", "nothing", keyword, field)
    return None  # its other faults are reported as before


@dataclass(frozen=True, slots=True)
class _Tag:
    """The tag property of a union, each branch with the values it takes there."""

    name: str
    branches: list[tuple[dict[str, Any], list[Any]]]
    allowed: list[Any]
    shown: str
    """The allowed values for a message, cut after `_SHOWN` characters."""


_SHOWN = 200


def _tag(compiled: CompiledSchema, node: dict[str, Any], keyword: str) -> _Tag | None:
    """The tag of a union, or None: a name every branch requires, each with its own constant.
    Linear in the union's size (each branch's `required` is a set here: a first branch of
    200,000 required names tried against every branch's list cost their square)."""
    branches = node.get(keyword)
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    resolved = [_resolved(compiled, b) for b in branches]
    if not all(isinstance(b, dict) for b in resolved):
        return None
    required = [_required(b) for b in resolved]
    discriminator = node.get("discriminator")
    named = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
    candidates = [named] if isinstance(named, str) else list(resolved[0].get("required", []))
    for name in candidates:
        if not isinstance(name, str) or not all(name in names for names in required):
            continue
        allowed = [_constant(compiled, b, name) for b in resolved]
        if all(a is not _NONE for a in allowed):
            values = [value for values in allowed for value in values]
            return _Tag(name, list(zip(resolved, allowed, strict=True)), values, _listed(values))
    return None


def _required(branch: dict[str, Any]) -> frozenset[str]:
    names = branch.get("required")
    return (
        frozenset(n for n in names if isinstance(n, str))
        if isinstance(names, list)
        else frozenset()
    )


def _listed(values: list[Any]) -> str:
    """Values for a message, `"a", "b", "c"`, cut (with `…`) once past `_SHOWN` characters."""
    return _joined(map(preview, values), ", ")


_NONE: list[Any] = []


def _resolved(compiled: CompiledSchema, branch: Any) -> Any:
    if isinstance(branch, dict) and isinstance(branch.get("$ref"), str):
        target = compiled.ref_location(branch["$ref"])
        if target is not None:
            try:
                return compiled.resolve(target)[1]
            except KeyError:
                return None
    return branch


def _constant(compiled: CompiledSchema, branch: dict[str, Any], name: str) -> list[Any]:
    """The values a branch's property `name` (which it requires) may take (`const` or `enum`),
    else `_NONE`."""
    properties = branch.get("properties")
    if not isinstance(properties, dict):
        return _NONE
    schema = _resolved(compiled, properties.get(name))
    if isinstance(schema, dict) and "const" in schema:
        return [schema["const"]]
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and schema["enum"]:
        return list(schema["enum"])
    return _NONE


_BOUNDS = {
    "minimum": "a number ≥ {limit}",
    "maximum": "a number ≤ {limit}",
    "exclusiveMinimum": "a number > {limit}",
    "exclusiveMaximum": "a number < {limit}",
    "minLength": "at least {limit} characters",
    "maxLength": "at most {limit} characters",
    "minItems": "at least {limit} items",
    "maxItems": "at most {limit} items",
    "minProperties": "at least {limit} fields",
    "maxProperties": "at most {limit} fields",
    "multipleOf": "a multiple of {multiple_of}",
    "pattern": "a string matching {pattern}",
    "format": "a valid {format}",
    "uniqueItems": "items that are all different",
}


def _constraint(keyword: str, info: dict[str, Any]) -> str:
    template = _BOUNDS.get(keyword)
    if template is None:
        return f"a value satisfying {keyword!r}"
    try:
        return template.format(**info)
    except (KeyError, IndexError):
        return f"a value satisfying {keyword!r}"


def _node(compiled: CompiledSchema, parts: list[str | int]) -> Any:
    try:
        return compiled.node(pointer.from_parts(parts))
    except KeyError:
        return None


def summarize(compiled: CompiledSchema, node: Any, depth: int = 0) -> str:
    """A short human description of what a schema node accepts: 'integer | null', 'object'.
    Short whatever the schema: a union is described up to `_SHOWN` characters (a violation
    of a union of 100,000 branches would cost as much as describing them all)."""
    if not isinstance(node, dict):
        return "any value" if node in (True, None) else "nothing"
    if isinstance(node.get("$ref"), str) and depth < 3:
        target = compiled.ref_location(node["$ref"])
        if target is not None:
            try:
                return summarize(compiled, compiled.node(target), depth + 1)
            except KeyError:
                pass
    if "const" in node:
        return preview(node["const"])
    if "enum" in node:
        return "one of " + preview(node["enum"], 120)
    for keyword in ("anyOf", "oneOf"):
        branches = node.get(keyword)
        if isinstance(branches, list) and depth < 3:
            return _joined(summarize(compiled, b, depth + 1) for b in branches)
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(map(str, kind))
    if kind == "array" and isinstance(node.get("items"), dict) and depth < 3:
        return f"array of {summarize(compiled, node['items'], depth + 1)}"
    if kind == "string" and isinstance(node.get("pattern"), str):
        return f"string matching {node['pattern']}"
    if isinstance(kind, str):
        return kind
    if "properties" in node:
        return "object"
    return "any value"


def _joined(parts: Iterable[str], separator: str = " | ") -> str:
    """`a | b | c`, cut (with `…`) once past `_SHOWN` characters: the parts are made only as
    they are shown."""
    shown: list[str] = []
    size = 0
    for part in parts:
        if size > _SHOWN:
            shown.append("…")
            break
        shown.append(part)
        size += len(part) + len(separator)
    return separator.join(shown)
