"""Items a typed output folds together.

Some Python values hold less than the JSON they are read from: a `set` or `frozenset` keeps one
of the items that are equal (`["a", "b", "a"]` gives `{"a", "b"}`; so do `1` and `1.0`, or two
spellings of one instant), and a `dict` whose keys are not strings keeps one entry of the keys
that read as one (`{"1": "a", "01": "b"}` as `dict[int, str]` gives `{1: "b"}`). outform records
each such container as a change (`fold_equal_items`, stage `semantic`, lossy: `result.value`
lacks what `result.data` keeps), as it does for the keys a type ignores (ignored.py).

The check is a copy of the type's validator in which every set, frozenset and dict is wrapped
by a function that compares what it was given with what it built, and raises where the built
value holds fewer items; the error's location is the container's path in the reply. Types with
no such container get no check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import PydanticCustomError, SchemaValidator, ValidationError

from outform.parse import loss, values
from outform.parse.core_rewrite import wrap_where
from outform.parse.ignored import rewritten_validator, value_path

_FOLDING = {"set", "frozenset", "dict"}
"""Core schemas whose value may hold fewer items than the JSON it was read from."""
_ERROR = "outform_folded"


@dataclass(frozen=True, slots=True)
class Fold:
    """One container whose value holds fewer items than the reply wrote."""

    path: str
    written: int
    kept: int
    dropped: list[Any]
    """The items (for a map: the entries, as one-key objects) the value no longer holds."""

    @property
    def lost(self) -> int:
        """The content of the dropped items (their letters and digits, at least 1 each: see
        loss.py), as for every other dropped value."""
        return sum(loss.size(values.encode(item)) for item in self.dropped)


def folding_validator(adapter: TypeAdapter[Any]) -> SchemaValidator | None:
    """A validator of the adapter's type, as plain data, that raises where a set, frozenset or
    dict holds fewer items than it was given; None when the type has no such container."""
    return rewritten_validator(adapter, _wrap)


def _wrap(node: Any) -> Any:
    return wrap_where(node, _folds, {"type": "no-info", "function": _compare})


def _folds(node: dict[str, Any]) -> bool:
    """A set, frozenset or dict that may hold fewer items than it was given."""
    kind = node.get("type")
    return kind in _FOLDING and not (kind == "dict" and _string_keys(node))


def _string_keys(node: dict[str, Any]) -> bool:
    """A dict whose keys are plain strings: two JSON keys never read as one."""
    keys = node.get("keys_schema")
    return isinstance(keys, dict) and set(keys) <= {"type", "metadata"} and keys["type"] == "str"


def _compare(given: Any, handler: Any) -> Any:
    built = handler(given)
    if isinstance(given, list | dict) and len(built) < len(given):
        dropped = _dropped(given, handler)
        counts = {"written": len(given), "kept": len(built), "dropped": dropped}
        raise PydanticCustomError(_ERROR, "folded", counts)
    return built


def _dropped(given: list[Any] | dict[str, Any], handler: Any) -> list[Any]:
    """Which items the value no longer holds, each read alone: for a set the later of equal
    items (the first is kept), for a map the earlier entries of keys that read as one (the
    last is kept, as Pydantic does)."""
    if isinstance(given, list):
        seen: set[Any] = set()
        dropped = []
        for item in given:
            (built,) = handler([item])
            if built in seen:
                dropped.append(item)
            seen.add(built)
        return dropped
    last: dict[Any, str] = {}
    for key, value in given.items():
        (built,) = handler({key: value})
        last[built] = key
    kept = set(last.values())
    return [{key: value} for key, value in given.items() if key not in kept]


def without_unique_items(schema: Any) -> Any:
    """`schema` without `uniqueItems` (how a type's JSON Schema writes a set)."""
    if isinstance(schema, list):
        return [without_unique_items(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: without_unique_items(v) for k, v in schema.items() if k != "uniqueItems"}


def folds(validator: SchemaValidator, value: Any) -> list[Fold]:
    """The containers of `value` (valid for the type) that the type folds, in path order."""
    try:
        validator.validate_python(value)
    except ValidationError as exc:
        found = [
            Fold(
                value_path(error["loc"], value) or "",
                error["ctx"]["written"],
                error["ctx"]["kept"],
                error["ctx"]["dropped"],
            )
            for error in exc.errors(include_url=False, include_input=False)
            if error["type"] == _ERROR and "ctx" in error
        ]
        return sorted(found, key=lambda fold: fold.path)
    return []
