"""A JSON Schema written the short way, for prompts: a TypeScript-like shape.

Instructions that carry a schema (prompted and JSON-object modes) are paid for in tokens on
every call. Raw JSON Schema spends most of its characters on structure (`"type"`,
`"properties"`, `"required"`, repeated titles); this rendering keeps every keyword that
constrains or explains a value and drops only the structure around it:

    {
      name: string
      age?: integer (minimum: 0) = 0   // in years
      tags: string[] (maxItems: 5)
      kind: "a" | "b"
    }

Rules, so that nothing a model needs is lost: `?` marks a property that is not required; `//`
holds the description (and a title that is not just the property's name); `= x` the
default; `A | B` a union (`anyOf`, `oneOf`, a list of types); `A & B` an `allOf`; `T[]` an
array, `[A, B, ...T[]]` a tuple; `{[key: string]: T}` the values of other keys; definitions
(`$defs`) used more than once, or recursively, are named types written once after the shape.
Every other keyword is written `keyword: value` in parentheses after the type, so a keyword
this renderer has no notation for still reaches the model, verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from outform.schema import pointer

_STRUCTURE = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "prefixItems",
        "additionalProperties",
        "patternProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "$schema",
        "$id",
        "$comment",
        "examples",
    }
)
"""Keywords with a notation of their own (or, for `$schema`, `$id`, `$comment` and
`examples`, no bearing on what the model writes)."""

_DEF_PREFIXES = ("#/$defs/", "#/definitions/")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_INDENT = "  "


def render(schema: Any) -> str:
    """`schema` as a compact shape (see the module docstring); named types follow it."""
    return _Renderer(schema).run()


class _Renderer:
    def __init__(self, schema: Any) -> None:
        self.root = schema
        self.uses = _ref_uses(schema)
        self.recursive = _recursive_refs(schema)
        self.named: dict[str, str] = {}
        """Definition pointer -> the type name it is written under."""
        self.pending: list[str] = []
        self.inlining: set[str] = set()
        self.inlined: set[str] = set()

    def run(self) -> str:
        parts = [self.node(self.root, "") + _comment(_notes(self.root, None))]
        written: set[str] = set()
        while self.pending:
            ref = self.pending.pop(0)
            if ref in written:
                continue
            written.add(ref)
            target = self.resolve(ref)
            text = self.node(target, "") + _comment(_notes(target, self.named[ref]))
            parts.append(f"type {self.named[ref]} = {text}")
        return "\n".join(parts)

    # -- nodes --------------------------------------------------------------------------------

    def node(self, schema: Any, indent: str) -> str:
        """The type expression of `schema` with its constraints (no description: the caller
        places that, where a comment fits)."""
        if schema is True or schema == {}:
            return "any"
        if schema is False:
            return "never"
        if not isinstance(schema, Mapping):
            return orjson.dumps(schema).decode()
        kinds = self.kinds(schema, indent)
        text = " & ".join(_group(k) for k in kinds) if len(kinds) > 1 else kinds[0]
        extra = [f"{key}: {_json(value)}" for key, value in schema.items() if key not in _STRUCTURE]
        if extra:
            text += f" ({', '.join(extra)})"
        return text

    def kinds(self, schema: Mapping[str, Any], indent: str) -> list[str]:
        """The parts of a node that all hold at once (joined with &)."""
        parts: list[str] = []
        ref = schema.get("$ref")
        if isinstance(ref, str):
            parts.append(self.ref(ref, indent))
        if "const" in schema:
            parts.append(_json(schema["const"]))
        elif isinstance(schema.get("enum"), list):
            parts.append(" | ".join(_json(v) for v in schema["enum"]) or "never")
        elif (own := self.own_type(schema, indent)) is not None:
            parts.append(own)
        for keyword in ("anyOf", "oneOf"):
            branches = schema.get(keyword)
            if isinstance(branches, list) and branches:
                union = " | ".join(_group(self.node(b, indent)) for b in branches)
                parts.append(union if keyword == "anyOf" else f"oneOf({union})")
        for branch in schema.get("allOf") or ():
            parts.append(self.node(branch, indent))
        return parts or ["any"]

    def own_type(self, schema: Mapping[str, Any], indent: str) -> str | None:
        declared = schema.get("type")
        types = declared if isinstance(declared, list) else [declared] if declared else []
        shaped = {"properties", "additionalProperties", "patternProperties", "required"}
        if not types:
            if shaped & schema.keys():
                types = ["object"]
            elif {"items", "prefixItems"} & schema.keys():
                types = ["array"]
            else:
                return None
        rendered = []
        for kind in types:
            if kind == "object":
                rendered.append(self.object(schema, indent))
            elif kind == "array":
                rendered.append(self.array(schema, indent))
            else:
                rendered.append(str(kind))
        return " | ".join(rendered)

    def object(self, schema: Mapping[str, Any], indent: str) -> str:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        inner = indent + _INDENT
        lines: list[str] = []
        for name, sub in properties.items():
            mark = "" if name in required else "?"
            lines.append(f"{inner}{_key(name)}{mark}: {self.member(sub, inner, name)}")
        for name in sorted(required - properties.keys()):
            lines.append(f"{inner}{_key(name)}: any")
        patterns = schema.get("patternProperties")
        if isinstance(patterns, Mapping):
            for pattern, sub in patterns.items():
                key = f"[key matching {_json(pattern)}]"
                lines.append(f"{inner}{key}: {self.member(sub, inner, None)}")
        additional = schema.get("additionalProperties")
        if additional is not None and additional is not False and additional != {}:
            lines.append(f"{inner}[key: string]: {self.member(additional, inner, None)}")
        if additional is True and not properties and not patterns:
            return "object"
        if not lines:
            return "object" if additional is not False else "{}"
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"

    def member(self, schema: Any, indent: str, name: str | None) -> str:
        """A property's type, its default, and its description as a trailing comment."""
        text = self.node(schema, indent)
        if not isinstance(schema, Mapping):
            return text
        if "default" in schema:
            text += f" = {_json(schema['default'])}"
        notes = _notes(schema, name)
        ref = schema.get("$ref")
        if not notes and isinstance(ref, str) and ref in self.inlined:
            notes = _notes(self.resolve(ref), name)  # an inlined definition's own description
        return text + _comment(notes)

    def array(self, schema: Mapping[str, Any], indent: str) -> str:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 4-7 tuples
            prefix, items = items, schema.get("additionalItems")
        if isinstance(prefix, list):
            parts = [self.node(p, indent) for p in prefix]
            if items is not False:  # absent: any further items are allowed
                rest = "any" if items is None else _group(self.node(items, indent))
                parts.append(f"...{rest}[]")
            return f"[{', '.join(parts)}]"
        if items is None or items is True:
            return "any[]"
        return f"{_group(self.node(items, indent))}[]"

    # -- references ---------------------------------------------------------------------------

    def ref(self, ref: str, indent: str) -> str:
        if not ref.startswith("#"):
            return f"ref({_json(ref)})"
        inline = self.uses.get(ref, 0) <= 1 and ref not in self.recursive
        if inline and ref not in self.inlining:
            target = self.resolve(ref)
            if target is not None:
                self.inlining.add(ref)
                self.inlined.add(ref)
                try:
                    return self.node(target, indent)
                finally:
                    self.inlining.discard(ref)
        if ref not in self.named:
            self.named[ref] = self.type_name(ref)
            self.pending.append(ref)
        return self.named[ref]

    def type_name(self, ref: str) -> str:
        last = pointer.parts(ref[1:])[-1] if ref != "#" else "Root"
        base = re.sub(r"[^A-Za-z0-9_]", "_", last) or "Type"
        if base[0].isdigit():
            base = f"T{base}"
        name, count = base, 2
        while name in self.named.values():
            name, count = f"{base}{count}", count + 1
        return name

    def resolve(self, ref: str) -> Any:
        try:
            return pointer.lookup(self.root, ref[1:])
        except (KeyError, ValueError):
            return None


def _ref_uses(schema: Any) -> dict[str, int]:
    uses: dict[str, int] = {}
    for node in _walk(schema):
        ref = node.get("$ref")
        if isinstance(ref, str):
            uses[ref] = uses.get(ref, 0) + 1
    return uses


def _recursive_refs(schema: Any) -> set[str]:
    """The local refs from whose target the same ref can be reached again."""
    reaches: dict[str, set[str]] = {}
    for node in _walk(schema):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and ref not in reaches:
            try:
                target = pointer.lookup(schema, ref[1:])
            except (KeyError, ValueError):
                target = None
            reaches[ref] = {
                r for n in _walk(target) if isinstance(r := n.get("$ref"), str) and r != ""
            }
    recursive: set[str] = set()
    for start, direct in reaches.items():
        seen: set[str] = set()
        stack = list(direct)
        while stack:
            current = stack.pop()
            if current == start:
                recursive.add(start)
                break
            if current in seen:
                continue
            seen.add(current)
            stack.extend(reaches.get(current, ()))
    return recursive


def _walk(schema: Any) -> Iterator[Mapping[str, Any]]:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield node
            for key, value in node.items():
                if key in ("enum", "const", "default", "examples"):
                    continue
                if isinstance(value, Mapping):
                    stack.append(value)
                elif isinstance(value, list):
                    stack.extend(value)


def _notes(schema: Any, name: str | None) -> list[str]:
    """A node's description, and its title when that says more than its name."""
    if not isinstance(schema, Mapping):
        return []
    notes = []
    title = schema.get("title")
    if isinstance(title, str) and title.strip() and not _same_name(title, name):
        notes.append(title.strip())
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        notes.append(description.strip())
    return notes


def _comment(notes: list[str]) -> str:
    return "  // " + " - ".join(" ".join(n.split()) for n in notes) if notes else ""


def _same_name(title: str, name: str | None) -> bool:
    """Pydantic titles a field "Reasoning Steps" for reasoning_steps: no news to the model."""
    if name is None:
        return False
    return title.replace(" ", "").replace("_", "").lower() == name.replace("_", "").lower()


def _key(name: str) -> str:
    return name if _NAME.fullmatch(name) else _json(name)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _group(text: str) -> str:
    """Parentheses around a union or intersection used inside another expression."""
    depth = 0
    quoted = escaped = False
    for index, char in enumerate(text):
        if quoted:
            escaped = char == "\\" and not escaped
            quoted = escaped or char != '"'
            continue
        if char == '"':
            quoted = True
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        elif depth == 0 and char in "|&" and text[index - 1 : index] == " ":
            return f"({text})"
    return text


__all__ = ["render"]
