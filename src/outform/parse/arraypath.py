"""Where `stream_items` finds its array: a path (`items`, `data.items`, `/data/items`) checked
against the schema before the stream starts.

A path the schema rules out would stream nothing, silently: `path="b"` where the schema
declares `a` only, or a path to a string. Such a path is a UsageError naming it. Where the
schema does not say (no schema, an object with no declared properties, `patternProperties`, a
union), any path is taken, as the reply may hold it.
"""

from __future__ import annotations

from outform.errors import UsageError
from outform.schema import pointer
from outform.schema.compiled import CompiledSchema
from outform.schema.types import accepted_types

_UNIONS = ("anyOf", "oneOf", "allOf", "if", "dependentSchemas")


def check(compiled: CompiledSchema, steps: list[str], path: str) -> None:
    """Raise UsageError when the schema leaves no array at `steps` (from `path`)."""
    location = ""
    for index, step in enumerate(steps):
        location, node = compiled.resolve(location)
        if not isinstance(node, dict) or any(k in node for k in (*_UNIONS, "patternProperties")):
            return  # the schema does not say what is there
        properties = node.get("properties")
        additional = node.get("additionalProperties", True)
        if isinstance(properties, dict) and step in properties:
            location = pointer.join(location, "properties", step)
        elif isinstance(additional, dict):
            location = pointer.join(location, "additionalProperties")
        elif step.isdigit() and isinstance(node.get("items"), dict):
            location = pointer.join(location, "items")
        elif isinstance(properties, dict) or additional is False:
            where = pointer.from_parts(steps[:index]) or "the root"
            declared = ", ".join(map(repr, properties or {})) or "none"
            raise UsageError(
                f"stream_items: the schema has no {step!r} at {where}",
                where=f"path {path!r}",
                fix=f"name the array's path; the schema declares there: {declared}",
            )
        else:
            return  # an object open to any key, or not an object: anything may be there
    if "array" not in accepted_types(compiled, location):
        found = sorted(accepted_types(compiled, location)) or ["nothing"]
        raise UsageError(
            f"stream_items: the schema has {' or '.join(found)} at {path!r}, not an array",
            where=f"path {path!r}",
            fix="name the path of an array of the schema (or none for a top-level array)",
        )
