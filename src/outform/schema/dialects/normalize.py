"""Read an original schema as alternatives of conjunctions, keeping where every keyword came from.

Provider dialects differ most in how they combine schemas: some refuse `allOf`, some refuse a
`$ref` with keywords beside it, some refuse `properties` next to `anyOf`. Reading every node as
"any of these branches, each the conjunction of these parts" removes those differences once:
`allOf` becomes more parts, `anyOf`/`oneOf` become branches (keywords beside a union are
distributed into each branch, which is exact), and `$ref` is either inlined as more parts or
kept as a reference (recursion, or a dialect that keeps `$defs`). Each part is a node of the
ORIGINAL schema with its JSON pointer, so the ledger can name the original location of every
keyword however it was rearranged.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from outform.errors import SchemaError
from outform.schema import pointer
from outform.schema.dialects.rules import ANNOTATIONS

COMBINATORS = frozenset({"allOf", "anyOf", "oneOf", "$ref"})
MAX_BRANCHES = 64
"""Distributing keywords over nested unions multiplies branches; past this many, a union is
left to local validation instead of being spelled out."""

_DRAFTS = {
    "draft-03": 3,
    "draft-04": 4,
    "draft-06": 6,
    "draft-07": 7,
    "draft/2019-09": 2019,
    "draft/2020-12": 2020,
}


def draft_of(schema: Mapping[str, Any]) -> int:
    """The draft a schema declares (4, 6, 7, 2019, 2020); 2020 when it declares none."""
    declared = schema.get("$schema")
    if isinstance(declared, str):
        for marker, draft in _DRAFTS.items():
            if marker in declared:
                return draft
    return 2020


@dataclass(frozen=True)
class Part:
    """One node of the original schema, minus the keywords normalisation already used.

    `stack` lists the reference targets inlined on the way to this node: a reference to one of
    them is recursion and must stay a reference. `ignored` holds keywords the original's own
    draft ignores (drafts 4 to 7 ignore everything beside `$ref`).
    """

    loc: str
    schema: Any
    """A schema object, or `true` / `false`."""
    skip: frozenset[str] = frozenset()
    stack: tuple[str, ...] = ()
    ignored: frozenset[str] = frozenset()
    via: str | None = None
    """Where the innermost `$ref` inlined on the way to this node is (None: none was)."""

    def get(self, keyword: str) -> Any:
        return None if keyword in self.skip else self.schema.get(keyword)

    def has(self, keyword: str) -> bool:
        return keyword not in self.skip and keyword in self.schema

    def items(self) -> Iterator[tuple[str, Any]]:
        for keyword, value in self.schema.items():
            if keyword not in self.skip:
                yield keyword, value

    def child(self, *tokens: str | int) -> str:
        return pointer.join(self.loc, *tokens)

    def sub(self, schema: Any, *tokens: str | int) -> Part:
        """The part for a sub-schema of this one (same inlining stack)."""
        return Part(self.child(*tokens), schema, stack=self.stack, via=self.via)


@dataclass(frozen=True)
class Ref:
    """A reference left as a reference: recursive, or kept because the dialect has `$defs`."""

    target: str
    loc: str
    stack: tuple[str, ...] = ()
    """The inlining stack of the part holding the reference."""
    via: str | None = None
    """Where the innermost `$ref` inlined on the way to the reference is."""

    @property
    def recursive(self) -> bool:
        """The target is being inlined around this reference: inlining it again would never end."""
        return self.target in self.stack

    def inline(self, doc: Document, keep_ref: KeepRef) -> Alternatives:
        return alternatives(
            doc,
            Part(
                self.target, doc.node(self.target), stack=(*self.stack, self.target), via=self.loc
            ),
            keep_ref,
        )


@dataclass(frozen=True)
class Branch:
    """A conjunction: a value must satisfy every part and every kept reference."""

    parts: tuple[Part, ...] = ()
    refs: tuple[Ref, ...] = ()
    never: bool = False

    def __and__(self, other: Branch) -> Branch:
        return Branch(self.parts + other.parts, self.refs + other.refs, self.never or other.never)


@dataclass(frozen=True)
class Alternatives:
    """A disjunction of branches, with the unions that were spelled out and those that were not."""

    branches: tuple[Branch, ...]
    unions: tuple[tuple[str, str], ...] = ()
    deferred: tuple[tuple[str, str], ...] = ()
    notes: tuple[Part, ...] = ()
    """Annotations of a node whose union was spelled out: they describe the whole union."""


@dataclass
class Document:
    """The original schema: its draft, and local references resolved to JSON pointers."""

    root: Mapping[str, Any]
    draft: int = field(init=False)
    _anchors: dict[str, str] = field(init=False, default_factory=dict)
    _loops: dict[str, bool] = field(init=False, default_factory=dict)
    _left: dict[str, bool] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.draft = draft_of(self.root)
        self._collect_anchors()

    def node(self, loc: str) -> Any:
        return pointer.lookup(self.root, loc)

    def loops(self, target: str) -> bool:
        """Whether the reference to `target` is a cycle of references alone (`{"$ref": "#"}`,
        `a -> b -> a`): it never reaches a keyword, so it constrains nothing, as validators
        read it (any value is valid), and is translated as the empty schema. Following it as a
        reference would never end. (Every location on the chain shares the answer: each chain
        is walked once.)"""
        known = self._loops.get(target)
        if known is not None:
            return known
        seen = [target]
        node = self.node(target)
        loops = False
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            if not is_pure_ref(Part(seen[-1], node), self.draft):
                break
            following = self.target(node["$ref"], seen[-1])
            if following in self._loops:
                loops = self._loops[following]
                break
            if following in seen:
                loops = True
                break
            seen.append(following)
            node = self.node(following)
        for location in seen:
            self._loops[location] = loops
        return loops

    def left_recursive(self, target: str) -> bool:
        """Whether `target` leads back to itself through `$ref`s and `allOf` / `anyOf` /
        `oneOf` members alone, without descending into a property or an item
        (`a = anyOf[a, ...]`): a value would be checked against the very schema checking it.
        Validators disagree on what that means, and mapping values through it never ends."""
        if target not in self._left:
            self._find_cycles(target)
        return self._left[target]

    def _find_cycles(self, start: str) -> None:
        """Tarjan's strongly connected components of the locations that check the same value,
        from `start`: a location is left-recursive when its component holds a cycle. Every
        location met is answered, so the whole document costs one pass."""
        index: dict[str, int] = {start: 0}
        low: dict[str, int] = {start: 0}
        stack, on_stack = [start], {start}
        work = [(start, iter(self._same_value(start)))]
        while work:
            location, following = work[-1]
            for nxt in following:
                if nxt in self._left:
                    continue  # its component is done
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(self._same_value(nxt))))
                    break
                if nxt in on_stack:
                    low[location] = min(low[location], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[location])
                if low[location] == index[location]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == location:
                            break
                    cyclic = len(component) > 1 or location in set(self._same_value(location))
                    for member in component:
                        self._left[member] = cyclic

    def _same_value(self, loc: str) -> Iterator[str]:
        """The locations a value at `loc` is also checked against, as it is."""
        node = self.node(loc)
        if not isinstance(node, Mapping):
            return
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield self.target(ref, loc)
            if self.draft <= 7:
                return  # keywords beside `$ref` are ignored
        for keyword in ("allOf", "anyOf", "oneOf"):
            members = node.get(keyword)
            if isinstance(members, list):
                for index in range(len(members)):
                    yield pointer.join(loc, keyword, index)

    def target(self, ref: str, at: str) -> str:
        """The JSON pointer a local `$ref` points at; SchemaError when outform cannot follow it."""
        base, _, fragment = ref.partition("#")
        own = self.root.get("$id", self.root.get("id"))
        if base and not (isinstance(own, str) and own.split("#", 1)[0].endswith(base)):
            raise _unfollowable(ref, at)
        fragment = urllib.parse.unquote(fragment)
        if fragment and not fragment.startswith("/"):
            loc = self._anchors.get(fragment)
            if loc is None:
                raise _unfollowable(ref, at)
            return loc
        try:
            self.node(fragment)
        except (KeyError, ValueError):
            raise SchemaError(
                f"'$ref' points at {ref!r}, which does not exist in the schema",
                where=f"schema at {at or '/'}",
                fix="point the reference at an existing location, e.g. '#/$defs/<name>'",
            ) from None
        return fragment

    def _collect_anchors(self) -> None:
        stack: list[tuple[str, Any]] = [("", self.root)]
        while stack:
            loc, node = stack.pop()
            if not isinstance(node, Mapping):
                continue
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self._anchors.setdefault(anchor, loc)
            old_id = node.get("id" if self.draft <= 4 else "$id")
            if isinstance(old_id, str) and old_id.startswith("#"):
                self._anchors.setdefault(old_id[1:], loc)
            for key, child in node.items():
                if key in ("enum", "const", "default", "examples"):
                    continue
                if isinstance(child, Mapping):
                    stack.append((pointer.join(loc, key), child))
                elif isinstance(child, list):
                    stack.extend(
                        (pointer.join(loc, key, i), item)
                        for i, item in enumerate(child)
                        if isinstance(item, Mapping)
                    )


def _unfollowable(ref: str, at: str) -> SchemaError:
    return SchemaError(
        f"outform cannot follow the reference {ref!r} to translate the schema",
        where=f"schema at {at or '/'}",
        fix="write local references as JSON pointers such as '#/$defs/<name>'",
    )


KeepRef = Callable[[Part, str], bool]
"""Whether the dialect keeps a (non-recursive) reference from this part to that target."""


def is_pure_ref(part: Part, draft: int) -> bool:
    """A `$ref` with nothing beside it but annotations (in drafts 4 to 7, siblings are ignored)."""
    if draft <= 7:
        return True
    return all(
        key in ANNOTATIONS or key in ("$ref", "$defs", "definitions") for key, _ in part.items()
    )


def alternatives(doc: Document, part: Part, keep_ref: KeepRef) -> Alternatives:
    """The node at `part` as a disjunction of conjunctions (see the module docstring)."""
    schema = part.schema
    if schema is True or (isinstance(schema, Mapping) and not schema):
        return Alternatives((Branch((Part(part.loc, {}, stack=part.stack, via=part.via),)),))
    if not isinstance(schema, Mapping):
        return Alternatives((Branch(never=True),))
    ignored: frozenset[str] = frozenset()
    ref = schema.get("$ref")
    if isinstance(ref, str) and doc.draft <= 7:
        # Drafts 4 to 7: every keyword beside `$ref` is ignored by validators.
        ignored = frozenset(key for key in schema if key not in ANNOTATIONS and key != "$ref")
    unions = [k for k in ("anyOf", "oneOf") if k not in ignored and isinstance(schema.get(k), list)]
    skip = (COMBINATORS & schema.keys()) | ignored
    notes: list[Part] = []
    if unions and ANNOTATIONS & schema.keys():
        skip |= ANNOTATIONS & schema.keys()
        notes.append(Part(part.loc, {k: schema[k] for k in ANNOTATIONS & schema.keys()}))
    rest = Part(part.loc, schema, part.skip | skip, part.stack, ignored, part.via)
    branches: tuple[Branch, ...] = (Branch((rest,)),)
    spelled: list[tuple[str, str]] = []
    deferred: list[tuple[str, str]] = []

    def add(inner: Alternatives, where: str, keyword: str) -> None:
        nonlocal branches
        if len(branches) * len(inner.branches) > MAX_BRANCHES:
            deferred.append((where, keyword))
            return
        branches = _product(branches, inner.branches)
        spelled.extend(inner.unions)
        deferred.extend(inner.deferred)
        notes.extend(inner.notes)

    if isinstance(ref, str) and not doc.loops(target := doc.target(ref, part.loc)):
        if doc.left_recursive(target):
            raise SchemaError(
                f"the schema refers back to {pointer.readable(target)} without descending into "
                "the value (a value would be checked against the schema checking it): it has "
                "no agreed meaning",
                where=f"schema at {part.loc or '/'}",
                fix="let the recursion go through a property or an item, or remove the reference",
            )
        if target in part.stack or keep_ref(part, target):
            kept = Ref(target, part.loc, part.stack, part.via)
            branches = _product(branches, (Branch(refs=(kept,)),))
        else:
            inlined = Part(target, doc.node(target), stack=(*part.stack, target), via=part.loc)
            add(alternatives(doc, inlined, keep_ref), part.loc, "$ref")
    members = schema.get("allOf")
    if isinstance(members, list) and "allOf" not in ignored:
        for index, member in enumerate(members):
            add(alternatives(doc, part.sub(member, "allOf", index), keep_ref), part.loc, "allOf")
    for keyword in unions:
        options: list[Branch] = []
        nested: list[tuple[str, str]] = []
        for index, member in enumerate(schema[keyword]):
            inner = alternatives(doc, part.sub(member, keyword, index), keep_ref)
            options.extend(branch & Branch(inner.notes) for branch in inner.branches)
            nested += inner.unions + inner.deferred
        if len(branches) * len(options) > MAX_BRANCHES:
            deferred.append((part.loc, keyword))
            continue
        branches = _product(branches, tuple(options))
        spelled.append((part.loc, keyword))
        spelled += nested
    if len(branches) > 1 and not unions and ANNOTATIONS & schema.keys():
        # Annotations beside a `$ref` or an `allOf` that turned into a union describe the
        # union, not each branch.
        bare = Part(part.loc, schema, rest.skip | ANNOTATIONS, part.stack, ignored, part.via)
        branches = tuple(
            Branch(tuple(bare if p is rest else p for p in b.parts), b.refs, b.never)
            for b in branches
        )
        notes.insert(0, Part(part.loc, {k: schema[k] for k in ANNOTATIONS & schema.keys()}))
    return _finish(branches, spelled, deferred, notes)


def conjunction(doc: Document, parts: list[Part], keep_ref: KeepRef) -> Alternatives:
    """The alternatives of several parts that must all hold (a property declared twice)."""
    if len(parts) == 1:
        return alternatives(doc, parts[0], keep_ref)
    branches: tuple[Branch, ...] = (Branch(),)
    spelled: list[tuple[str, str]] = []
    deferred: list[tuple[str, str]] = []
    notes: list[Part] = []
    for part in parts:
        inner = alternatives(doc, part, keep_ref)
        if len(branches) * len(inner.branches) > MAX_BRANCHES:
            deferred.append((part.loc, "allOf"))
            continue
        branches = _product(branches, inner.branches)
        spelled += inner.unions
        deferred += inner.deferred
        notes += inner.notes
    return _finish(branches, spelled, deferred, notes)


def _finish(
    branches: tuple[Branch, ...],
    spelled: list[tuple[str, str]],
    deferred: list[tuple[str, str]],
    notes: list[Part],
) -> Alternatives:
    live = tuple(branch for branch in branches if not branch.never) or (Branch(never=True),)
    if len(live) == 1 and notes:
        return Alternatives((live[0] & Branch(tuple(notes)),), tuple(spelled), tuple(deferred))
    return Alternatives(live, tuple(spelled), tuple(deferred), tuple(notes))


def _product(left: tuple[Branch, ...], right: tuple[Branch, ...]) -> tuple[Branch, ...]:
    return tuple(a & b for a in left for b in right)


__all__ = [
    "MAX_BRANCHES",
    "Alternatives",
    "Branch",
    "Document",
    "Part",
    "Ref",
    "alternatives",
    "conjunction",
    "draft_of",
    "is_pure_ref",
]
