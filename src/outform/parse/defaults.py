"""Fill in the `default` a schema declares for a property the reply left out.

JSON Schema treats `default` as an annotation; outform applies it, as Pydantic does for typed
output, so that a dict result and a typed result agree. Only properties that are absent get a
default; a value present in the reply is never replaced. Where the schema branches (`anyOf`,
`oneOf`), the walk follows the first branch the value validates against.

The walk runs on every reply (valid ones included), so it is planned once per schema: only
the parts of the schema that can lead to a default are visited, and a value is copied only
when something is added to it.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonschema_rs

from outform.parse.context import Deadline
from outform.parse.result import Change
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema
from outform.schema.types import json_type

_CHILD_KEYWORDS = ("items", "additionalProperties")
_CONTAINERS = (dict, list)
_BRANCH_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")


class Defaults:
    """The default-filling plan of one schema."""

    def __init__(self, compiled: CompiledSchema, max_depth: int) -> None:
        self.compiled = compiled
        self.max_depth = max_depth
        self._needs: dict[str, bool] = {}
        self._plans: dict[str, _Plan | None] = {}
        self._complete: Any = None
        """The presence validator, False when the plan has none, None until first needed."""

    @property
    def any(self) -> bool:
        """Whether the schema declares a default anywhere a value can reach."""
        return self.needs("")

    def needs(self, loc: str) -> bool:
        """Whether the part of the schema at `loc` leads to a property with a default."""
        known = self._needs.get(loc)
        if known is not None:
            return known
        self._needs[loc] = False  # a cycle through $ref adds nothing new
        answer = any(self.needs(child) for child in self._children(loc)) or self._declares(loc)
        self._needs[loc] = answer
        return answer

    def _declares(self, loc: str) -> bool:
        loc, schema = self.compiled.resolve(loc)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            return False
        for name, declared in properties.items():
            _, resolved = self.compiled.resolve(pointer.join(loc, "properties", name))
            if any(isinstance(n, dict) and "default" in n for n in (declared, resolved)):
                return True
        return False

    def _children(self, loc: str) -> list[str]:
        loc, schema = self.compiled.resolve(loc)
        if not isinstance(schema, dict):
            return []
        out: list[str] = []
        ref = schema.get("$ref")
        if isinstance(ref, str) and (target := self.compiled.ref_location(ref)) is not None:
            out.append(target)
        properties = schema.get("properties")
        if isinstance(properties, dict):
            out += [pointer.join(loc, "properties", name) for name in properties]
        out += [pointer.join(loc, k) for k in _CHILD_KEYWORDS if isinstance(schema.get(k), dict)]
        for keyword in _BRANCH_KEYWORDS:
            branches = schema.get(keyword)
            if isinstance(branches, list):
                out += [pointer.join(loc, keyword, i) for i in range(len(branches))]
        return out

    def fill(self, value: Any, changes: list[Change], deadline: Deadline | None = None) -> Any:
        """`value` with declared defaults added where properties are absent (a copy only of
        the containers that changed). Only an absent property gets one: a value the reply
        holds is never replaced."""
        if self._complete is None:
            self._complete = self._presence_validator()
        if self._complete is not False and self._complete.is_valid(value):
            return value  # every property with a default is there: nothing to walk
        return self._walk(value, "", (), changes, 0, deadline=deadline or Deadline.never())

    def _presence_validator(self) -> Any:
        """A validator (jsonschema-rs) that accepts exactly the values in which no property
        with a default is missing, so the common case costs one call in Rust instead of a walk
        in Python; False when the plan cannot be written that way (unions, recursion)."""
        schema = self.presence()
        return jsonschema_rs.validator_for(schema) if schema is not None else False

    def presence(self) -> dict[str, Any] | None:
        """The schema of the values in which no property with a default is missing (None
        when the plan cannot be written as a schema). The pipeline's fast path folds it into
        its validator: a valid, complete reply then costs one call."""
        return self._presence("", frozenset())

    def _presence(self, loc: str, seen: frozenset[str]) -> dict[str, Any] | None:
        plan = self._plan(loc)
        if plan is None:
            return {}
        if plan.branches or loc in seen:
            return None
        seen = seen | {loc}
        parts = [self._presence(target, seen) for target in plan.chained]
        properties = {name: self._presence(child, seen) for name, child in plan.properties.items()}
        nested = {
            keyword: self._presence(child, seen)
            for keyword, child in (("items", plan.items), ("additionalProperties", plan.additional))
            if child is not None
        }
        if None in parts or None in properties.values() or None in nested.values():
            return None
        node: dict[str, Any] = dict(nested)
        if plan.defaults:
            node["required"] = [name for name, _ in plan.defaults]
        if properties:
            node["properties"] = properties
        if parts:
            node["allOf"] = parts
        return node

    def _plan(self, loc: str) -> _Plan | None:
        """What to do at a location, worked out once: None when nothing below needs a walk."""
        if loc in self._plans:
            return self._plans[loc]
        plan = None
        if self.needs(loc):
            resolved, schema = self.compiled.resolve(loc)
            plan = _Plan(self, resolved, schema if isinstance(schema, dict) else {})
        self._plans[loc] = plan
        return plan

    def _walk(
        self,
        value: Any,
        loc: str,
        path: tuple[str | int, ...],
        changes: list[Change],
        depth: int,
        *,
        deadline: Deadline,
    ) -> Any:
        if depth > self.max_depth or not isinstance(value, _CONTAINERS):
            return value
        deadline.tick()
        plan = self._plans[loc] if loc in self._plans else self._plan(loc)
        if plan is None:
            return value
        for target in plan.chained:
            value = self._walk(value, target, path, changes, depth + 1, deadline=deadline)
        for branch in plan.branches:
            if self.compiled.is_valid_at(branch, value):
                value = self._walk(value, branch, path, changes, depth + 1, deadline=deadline)
                break
        if isinstance(value, dict):
            return self._object(value, plan, path, changes, depth, deadline=deadline)
        if plan.items is not None:
            filled = [
                self._walk(item, plan.items, (*path, i), changes, depth + 1, deadline=deadline)
                for i, item in enumerate(value)
            ]
            if any(new is not old for new, old in zip(filled, value, strict=True)):
                return filled
        return value

    def _object(
        self,
        value: dict[str, Any],
        plan: _Plan,
        path: tuple[str | int, ...],
        changes: list[Change],
        depth: int,
        *,
        deadline: Deadline,
    ) -> dict[str, Any]:
        result: dict[str, Any] | None = None
        for key, child_loc in plan.properties.items():
            if key in value:
                child = value[key]
                new = self._walk(
                    child, child_loc, (*path, key), changes, depth + 1, deadline=deadline
                )
                if new is not child:
                    result = result if result is not None else dict(value)
                    result[key] = new
        if plan.additional is not None:
            for key, child in value.items():
                if key not in plan.declared:
                    new = self._walk(
                        child, plan.additional, (*path, key), changes, depth + 1, deadline=deadline
                    )
                    if new is not child:
                        result = result if result is not None else dict(value)
                        result[key] = new
        for name, default in plan.defaults:
            if name not in value:
                result = result if result is not None else dict(value)
                result[name] = copy.deepcopy(default)
                where = pointer.from_parts((*path, name))
                kind = json_type(default)
                changes.append(
                    Change(where, "semantic", "fill_default", None, default, "", 0, kind, "absent")
                )
        return result if result is not None else value


class _Plan:
    """For one schema location: the parts worth visiting and the defaults to add."""

    __slots__ = ("additional", "branches", "chained", "declared", "defaults", "items", "properties")

    def __init__(self, owner: Defaults, loc: str, schema: dict[str, Any]) -> None:
        compiled = owner.compiled
        self.chained: list[str] = []
        ref = schema.get("$ref")
        if isinstance(ref, str) and (target := compiled.ref_location(ref)) is not None:
            self.chained.append(target)
        self.chained += [f"{loc}/allOf/{i}" for i in range(len(_list(schema.get("allOf"))))]
        self.chained = [c for c in self.chained if owner.needs(c)]
        self.branches = [
            f"{loc}/{keyword}/{i}"
            for keyword in ("anyOf", "oneOf")
            for i in range(len(_list(schema.get(keyword))))
            if owner.needs(f"{loc}/{keyword}/{i}")
        ]
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        self.declared = frozenset(properties)
        self.properties = {
            name: child
            for name in properties
            if owner.needs(child := pointer.join(loc, "properties", name))
        }
        self.defaults: list[tuple[str, Any]] = []
        for name, declared in properties.items():
            _, resolved = compiled.resolve(pointer.join(loc, "properties", name))
            source = declared if isinstance(declared, dict) and "default" in declared else resolved
            if isinstance(source, dict) and "default" in source:
                self.defaults.append((name, source["default"]))
        additional = pointer.join(loc, "additionalProperties")
        self.additional = (
            additional
            if isinstance(schema.get("additionalProperties"), dict) and owner.needs(additional)
            else None
        )
        items = pointer.join(loc, "items")
        self.items = items if isinstance(schema.get("items"), dict) and owner.needs(items) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
