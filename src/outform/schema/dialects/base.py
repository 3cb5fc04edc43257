"""The shared transformer: write the original schema in a dialect, keyword by keyword.

It walks the normalised original (`normalize.py`) and, for every node, writes what the
dialect's `DialectRules` accept, moves the rest out (into the description as a hint, and into
the ledger as checked locally), and builds the codecs that map values between the two shapes
(`codec.py`). Each keyword of the original gets one ledger entry at its original JSON pointer.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import jsonschema_rs

from outform.errors import DialectError
from outform.jsontext import dumps_text
from outform.schema import patterns, pointer
from outform.schema.dialects import analysis
from outform.schema.dialects.codec import (
    Array,
    Codec,
    Defined,
    Extras,
    JsonText,
    Narrowed,
    Object,
    Pairs,
    Prop,
    Union,
    Wrap,
    chain,
    same,
)
from outform.schema.dialects.normalize import (
    Alternatives,
    Branch,
    Document,
    Part,
    alternatives,
    conjunction,
    is_pure_ref,
)
from outform.schema.dialects.rules import ANNOTATIONS, STANDARD, DialectRules, Limits
from outform.schema.ledger import Disposition, Kind, Ledger, LedgerEntry

Wire = dict[str, Any]
Emitted = tuple[Wire, Codec | None]

TYPE_ORDER = ("object", "array", "string", "integer", "number", "boolean", "null")
DEFINITIONS = frozenset({"$defs", "definitions"})
"""Keywords that only hold sub-schemas for references: they constrain nothing themselves."""
CONTAINERS = frozenset({"properties"}) | DEFINITIONS
"""Keywords whose sub-schemas get ledger entries of their own when they are translated."""
DRAFT_KEYWORDS = frozenset({"dependencies", "additionalItems", "$recursiveRef", "$dynamicRef"})
LOCAL_ONLY = (
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "$recursiveRef",
    "$dynamicRef",
)
"""Keywords outform never sends: their sub-schemas would need their own translation, and no
provider documents enforcing them. The pipeline checks them against the original."""

_HINTS = {
    "object": (
        "properties",
        "additionalProperties",
        "patternProperties",
        "required",
        "minProperties",
        "maxProperties",
        "propertyNames",
        "dependentRequired",
        "dependencies",
    ),
    "array": ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems"),
    "string": ("minLength", "maxLength", "pattern"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}
_OF_TYPE = {
    "object": _HINTS["object"] + ("unevaluatedProperties",),
    "array": _HINTS["array"] + ("contains", "minContains", "maxContains", "unevaluatedItems"),
    "string": (*_HINTS["string"], "format"),
    "number": _HINTS["number"],
}
_MAP_KEYWORDS = frozenset({"type", "additionalProperties", "patternProperties", "properties"})
"""The keywords a map written as key/value pairs carries (the others are checked locally)."""
MAX_INLINED = 10_000
"""The most wire nodes one translation may produce from inlined references. A dialect without
`$defs` gets every `$ref` inlined, and a definition used at several places under another one
multiplies (16 definitions that each refer twice to the next become 2^16 copies). Nodes are
counted as they are produced and the translation stops as soon as the limit is passed, with a
DialectError naming the `$ref` being inlined. (The 300 real schemas of the benchmark produce
at most 4,325.)"""
EXTRA_KEY = "additional_properties"
"""Declared name under which closed dialects gather the keys an open object may add."""


class _Ledger(Ledger):
    """The translation's ledger; inside `folding(why)`, what would be recorded as enforced is
    recorded as checked locally (a sub-schema written where it holds for less than its place,
    such as a tuple position folded into one item schema)."""

    def __init__(self) -> None:
        super().__init__()
        self._folding: list[str] = []
        self._noting: list[list[LedgerEntry]] = []

    @contextlib.contextmanager
    def folding(self, why: str | None) -> Iterator[None]:
        if why is None:
            yield
            return
        self._folding.append(why)
        try:
            yield
        finally:
            self._folding.pop()

    def add(
        self,
        path: str,
        keyword: str,
        disposition: Disposition,
        reason: str,
        kind: Kind = "constraint",
    ) -> None:
        if self._folding and disposition == "enforced" and kind == "constraint":
            disposition = "checked_locally"
            reason = f"{reason}; but {self._folding[-1]}; outform validates the reply"
        elif self._noting and disposition == "enforced" and kind == "constraint":
            entry = LedgerEntry(path, keyword, disposition, reason, kind)
            for noted in self._noting:
                noted.append(entry)
        super().add(path, keyword, disposition, reason, kind)

    @contextlib.contextmanager
    def noting(self) -> Iterator[list[LedgerEntry]]:
        """The constraints recorded as enforced inside the block (a union's branch), so that
        `unenforce` can take them back if a sibling makes the branch moot."""
        noted: list[LedgerEntry] = []
        self._noting.append(noted)
        try:
            yield noted
        finally:
            self._noting.pop()  # (blocks nest: the last one opened is this one)

    def unenforce(self, entries: list[LedgerEntry], why: str) -> None:
        """Record `entries` again as checked locally, for `why` (as `folding` would have)."""
        with self.folding(why):
            for entry in entries:
                self.add(entry.path, entry.keyword, entry.disposition, entry.reason, entry.kind)


class UnsatisfiableError(Exception):
    """The node accepts no value (for example `allOf` of two different types)."""


@dataclass(frozen=True)
class Options:
    """Choices the caller can make about a translation."""

    open_objects: Literal["close", "keep"] | None = None
    """What to do with an object that declares properties but does not say
    `additionalProperties` (JSON Schema then allows any other key). "close": the provider
    writes only the declared keys (the default of dialects whose objects must be closed,
    and of providers that close them by default). "keep": other keys stay possible
    (a closed dialect gathers them under an `additional_properties` list of pairs)."""
    wrap_root: bool = True
    """Wrap a root the dialect cannot take (not an object) in `{"value": ...}`."""
    describe: bool = True
    """Append the constraints the provider does not enforce to the node's description."""


class Emitter:
    """One translation of one schema into one dialect."""

    def __init__(self, rules: DialectRules, doc: Document, options: Options) -> None:
        self.rules = rules
        self.doc = doc
        self.options = options
        self.ledger = _Ledger()
        self.defs: dict[str, Wire] = {}
        self.codecs: dict[str, Codec | None] = {}
        self._names: dict[str, str] = {}
        self._busy: set[str] = set()
        self._never: set[str] = set()
        self.inlined = 0
        """Wire nodes produced so far from inlined references (see MAX_INLINED)."""
        self._annotated_refs: list[tuple[Wire, str, list[Part]]] = []
        """The one-branch `anyOf`s written to carry annotations beside a `$ref` (see
        `reference`), each with the `$ref` it holds and the parts annotated: unwrapped by
        `preflight` when they put the schema over a limit of union-typed properties."""
        self._ref_origins: list[tuple[Wire, str]] = []
        """Each `$ref` node written on the wire (and the `anyOf` carrying its annotations),
        with the location of the user's `$ref` it stands for: a recursion error names that,
        since the wire path may not exist in the user's schema (a map's required key is
        written as a declared property)."""
        mode = options.open_objects or ("close" if rules.closes_open_objects else "keep")
        self.close = mode == "close"

    # -- entry point ---------------------------------------------------------------------

    def run(self) -> tuple[Wire, Codec | None, bool]:
        root = Part("", self.doc.root, stack=("",))
        try:
            wire, codec = self.emit(alternatives(self.doc, root, self.keep_ref))
        except UnsatisfiableError:
            raise DialectError(
                "no value is valid under this schema (its constraints contradict each other)",
                dialect=self.rules.name,
                where="schema at /",
                options=("correct the schema: for example an allOf of two different types",),
            ) from None
        wrapped = False
        if self.rules.object_root and not _plain_object(wire):
            if not self.options.wrap_root:
                raise DialectError(
                    f"{self.rules.provider} needs an object at the root of the schema",
                    dialect=self.rules.name,
                    where="schema at /",
                    options=(
                        "allow wrap_root (outform then sends {'value': <your schema>} and "
                        "unwraps the reply)",
                        "use json_object mode with the schema in the instructions",
                    ),
                )
            wire = {
                "type": "object",
                "properties": {"value": wire},
                "required": ["value"],
                "additionalProperties": False,
            }
            codec = Wrap(codec)
            wrapped = True
        if self.defs:
            wire["$defs"] = self.defs
        self.preflight(wire)
        return wire, codec, wrapped

    def preflight(self, wire: Wire) -> None:
        """Refuse what the provider would refuse: recursion it cannot take, sizes over limits."""
        if self.rules.recursion != "yes":
            loops = (
                analysis.cyclic_refs(wire)
                if self.rules.recursion == "no"
                else analysis.closed_loops(wire)
            )
            for ref in loops:
                target = self._original(ref.target)
                raise self.recursion_error(target, self._ref_origin(wire, ref.path))
        limits = self.rules.limits
        if limits == Limits():
            return
        size = analysis.measure(wire)
        if (
            limits.union_properties is not None
            and size.union_properties > limits.union_properties
            and self._annotated_refs
        ):
            size = self._unwrap_annotated_refs(wire)
        checks = (
            (limits.properties, size.properties, "object properties"),
            (limits.depth, size.depth, "levels of object nesting"),
            (limits.enum_values, size.enum_values, "enum values"),
            (limits.characters, size.characters, "characters of names and enum values"),
            (limits.optional_properties, size.optional_properties, "optional properties"),
            (limits.union_properties, size.union_properties, "properties with a union type"),
        )
        for limit, found, what in checks:
            if limit is not None and found > limit:
                raise DialectError(
                    f"the translated schema has {found} {what}; {self._who} accepts at most "
                    f"{limit}",
                    dialect=self.rules.name,
                    where="the whole schema",
                    options=(
                        "split the output into smaller requests",
                        "use a dialect without this limit",
                        "use json_object mode (schema in the instructions, checked locally "
                        "by outform)",
                    ),
                )
        if limits.large_enum is not None:
            count, chars = size.largest_enum
            if count > limits.large_enum[0] and chars > limits.large_enum[1]:
                raise DialectError(
                    f"a string enum has {count} values totalling {chars} characters; "
                    f"{self._who} accepts at most {limits.large_enum[1]} characters for an "
                    f"enum of more than {limits.large_enum[0]} values",
                    dialect=self.rules.name,
                    where="the largest enum of the schema",
                    options=("shorten the enum values", "use a plain string checked locally"),
                )

    def size_error(self, branch: Branch) -> DialectError:
        """The inlined references passed MAX_INLINED nodes: name the `$ref` being inlined."""
        via = next((part.via for part in branch.parts if part.via is not None), "")
        return DialectError(
            f"inlining the schema's references produces more than {MAX_INLINED} nodes (the "
            f"limit on the inlined size; the $ref at {pointer.readable(via)} passed it): "
            f"references used at several places are copied at each",
            dialect=self.rules.name,
            where=f"schema at {via or '/'}",
            options=(
                "use a dialect that keeps references as $defs (openai_strict, gemini, "
                "anthropic, xai)",
                "share fewer definitions between nested places, or bound the nesting",
                "use json_object mode or instructions (outform checks the reply against the "
                "full schema)",
            ),
        )

    def recursion_error(self, target: str, where: str) -> DialectError:
        allowed = (
            "recursion only when every loop passes through a place a value may leave empty: "
            "a property that is not required, the items of an array that may be empty (no "
            "minItems), or the values of a map whose object requires no key they govern"
            if self.rules.recursion == "optional_only"
            else "no recursive schema"
        )
        return DialectError(
            f"the schema is recursive: {pointer.readable(where)} leads back to "
            f"{pointer.readable(target)}, and {self._who} accepts {allowed}",
            dialect=self.rules.name,
            where=f"schema at {where or '/'}",
            options=(
                "use a dialect that accepts recursion (openai_strict; gemini when a property "
                "on the loop is optional, an array on it may be empty, or a map on it requires "
                "no key it governs)",
                "use json_object mode or instructions (outform checks the reply against the "
                "full schema)",
                "bound the depth in the schema (a fixed number of nested levels)",
            ),
        )

    def _ref_origin(self, wire: Wire, wire_path: str) -> str:
        """Where the user wrote the `$ref` at a wire path; else its best-effort original."""
        try:
            node = pointer.lookup(wire, wire_path)
        except (KeyError, ValueError):
            return self._original(wire_path)
        return next((loc for w, loc in self._ref_origins if w is node), self._original(wire_path))

    def _original(self, wire_path: str) -> str:
        """The original location behind a wire path inside `$defs` (best effort)."""
        tokens = pointer.parts(wire_path)
        if len(tokens) >= 2 and tokens[0] == "$defs":
            for target, name in self._names.items():
                if name == tokens[1]:
                    return pointer.join(target, *tokens[2:])
        return wire_path

    def keep_ref(self, part: Part, target: str) -> bool:
        """Keep a reference as `$ref` when the dialect has `$defs` and nothing is merged into it."""
        return self.rules.refs and part.loc != "" and is_pure_ref(part, self.doc.draft)

    # -- ledger helpers ------------------------------------------------------------------

    def kept(
        self,
        loc: str,
        keyword: str,
        reason: str = "",
        sent_as: str = "",
        enforced: bool | None = None,
    ) -> None:
        """The keyword is on the wire (as `sent_as`, if rewritten): enforced, unless the
        provider only takes it as guidance (or `enforced` says otherwise)."""
        claimed = self.rules.claims(sent_as or keyword) if enforced is None else enforced
        if claimed:
            self.ledger.add(loc, keyword, "enforced", reason or f"sent; {self._who} enforces it")
        else:
            why = (
                f"{self._who} does not enforce schemas"
                if not self.rules.enforcing
                else f"{self._who} is not documented to enforce {keyword}"
            )
            self.ledger.add(
                loc,
                keyword,
                "checked_locally",
                f"sent as guidance ({why}); outform validates the reply"
                + (f"; {reason}" if reason else ""),
            )

    def dissolved(self, loc: str, keyword: str, how: str) -> None:
        """A combinator written out (`allOf` merged, `$ref` inlined): its members' keywords have
        their own entries, so it is enforced exactly as far as they are."""
        if self.rules.enforcing:
            self.ledger.add(loc, keyword, "enforced", f"{how}; its keywords are listed one by one")
        else:
            self.kept(loc, keyword, how)

    def moved(self, loc: str, keyword: str, why: str) -> None:
        self.ledger.add(loc, keyword, "checked_locally", f"{why}; outform validates the reply")

    @property
    def _who(self) -> str:
        return self.rules.provider

    # -- alternatives and branches -------------------------------------------------------

    def emit(self, alts: Alternatives) -> Emitted:
        for loc, keyword in alts.unions:
            if keyword == "oneOf":
                self.moved(loc, "oneOf", "written as anyOf: that exactly one branch matches")
            elif self.rules.claims("anyOf"):
                self.ledger.add(loc, "anyOf", "enforced", "sent as anyOf")
            else:
                self.kept(loc, "anyOf")
        for loc, keyword in alts.deferred:
            self.moved(loc, keyword, "too many combinations to spell out for the provider")
        results: list[Emitted] = []
        enforced: list[list[LedgerEntry]] = []
        for branch in alts.branches:
            with self.ledger.noting() as noted:
                try:
                    results.append(self.branch(branch))
                except UnsatisfiableError:
                    continue
            enforced.append(noted)
        if not results:
            raise UnsatisfiableError
        if len(results) == 1:
            return results[0]
        for index in _bypassed(results):
            self.ledger.unenforce(enforced[index], _BYPASS)
        wire, codec = _union(results)
        self.annotate(wire, list(alts.notes), [])
        return wire, codec

    def branch(self, branch: Branch) -> Emitted:
        if branch.never:
            raise UnsatisfiableError
        if any(part.via is not None for part in branch.parts):
            self.inlined += 1
            if self.inlined > MAX_INLINED:
                raise self.size_error(branch)
        if branch.refs:
            inlined = self.inline_refs(branch)
            return self.reference(branch) if inlined is None else self.emit(inlined)
        parts = list(branch.parts)
        kinds, inferred = self.types(parts)
        try:
            if kinds is None:
                return self.any_value(parts) if self.rules.typed_nodes else self.typed(None, parts)
            if not kinds:
                raise UnsatisfiableError
            if inferred:
                self.ledger.add(
                    parts[0].loc,
                    "type",
                    "enforced",
                    f"not given; read as {' or '.join(sorted(kinds))} from the node's keywords "
                    f"({self._who} needs a type), so values of other types are not produced",
                )
            ordered = [kind for kind in TYPE_ORDER if kind in kinds]
            if len(ordered) == 1:
                wire, codec = self.typed(ordered[0], parts)
            else:
                wire, codec = self.several(ordered, parts)
            if inferred and wire.get("type") == ordered[0]:
                codec = Narrowed(frozenset(kinds), codec)
            return wire, codec
        finally:
            self.sweep(parts, kinds)

    def several(self, kinds: list[str], parts: list[Part]) -> Emitted:
        """A node allowing several types: one branch per type (a nullable pair stays one node)."""
        pieces: list[Emitted] = []
        enforced: list[list[LedgerEntry]] = []
        for kind in kinds:
            with self.ledger.noting() as noted:
                try:
                    pieces.append(self.typed(kind, parts, annotate=False))
                except UnsatisfiableError:
                    continue
            enforced.append(noted)
        if not pieces:
            raise UnsatisfiableError
        for index in _bypassed(pieces):
            self.ledger.unenforce(enforced[index], _BYPASS)
        if len(pieces) == 1:
            wire, codec = pieces[0]
        elif len(pieces) == 2 and pieces[1][0] == {"type": "null"} and self._listable(pieces[0][0]):
            wire, codec = _with_null(pieces[0][0]), pieces[0][1]
        else:
            wire, codec = _union(pieces)
        self.annotate(wire, parts, [])
        return wire, codec

    def types(self, parts: list[Part]) -> tuple[frozenset[str] | None, bool]:
        """The JSON types the conjunction allows (None: any) and whether they were inferred."""
        kinds: frozenset[str] | None = None
        for part in parts:
            declared = part.get("type")
            if isinstance(declared, str):
                own = frozenset({declared})
            elif isinstance(declared, list):
                own = frozenset(k for k in declared if isinstance(k, str))
            else:
                continue
            if "any" in own:
                continue
            kinds = own if kinds is None else _meet(kinds, own)
        values = _choices(parts)
        if values is not None:
            own = frozenset(_json_type(value) for value in values)
            kinds = own if kinds is None else _meet(kinds, own)
        if kinds is not None:
            return (frozenset(kinds - {"integer"}) if "number" in kinds else kinds), False
        if not self.rules.typed_nodes:
            return None, False
        hinted = {
            kind for kind, keys in _HINTS.items() if any(p.has(k) for p in parts for k in keys)
        }
        if len(hinted) == 1:
            return frozenset(hinted), True
        return None, False

    # -- one type ------------------------------------------------------------------------

    def typed(self, kind: str | None, parts: list[Part], annotate: bool = True) -> Emitted:
        """The node restricted to one type (None: a node of any type, written as it is)."""
        notes: list[tuple[str, Any]] = []
        if kind == "object" and not self.rules.schema_maps:
            as_map = self.map_node(parts, notes)
            if as_map is not None:
                self.annotate(as_map[0], parts if annotate else [], notes)
                return as_map
        wire: Wire = {"type": kind} if kind else {}
        for part in parts:
            if part.has("type"):
                self.kept(part.loc, "type")
        self.choices(kind, parts, wire, notes)
        codecs: list[Codec | None] = []
        if kind in (None, "object"):
            codecs.append(self.object_into(parts, wire, notes))
        if kind in (None, "array"):
            codecs.append(self.array_into(parts, wire, notes))
        if kind in (None, "string"):
            self.string_into(parts, wire, notes)
        if kind in (None, "number", "integer"):
            self.number_into(kind, parts, wire, notes)
        for part in parts:
            for keyword in LOCAL_ONLY:
                if part.has(keyword) and keyword not in _vacuous(kind, keyword):
                    self.moved(part.loc, keyword, f"not sent ({keyword} is not translated)")
                    notes.append((keyword, part.get(keyword)))
        self.annotate(wire, parts if annotate else [], notes)
        return wire, chain(codecs)

    def any_value(self, parts: list[Part], keyword: str = "type") -> Emitted:
        """A node accepting any JSON value, for a dialect that needs types: a JSON string.

        `keyword` names the ledger entry: "type" for a node without one, "items" or
        "additionalProperties" when the free values sit under those keywords."""
        notes: list[tuple[str, Any]] = []
        for part in parts:
            for name, value in part.items():
                if name not in ANNOTATIONS and name not in DEFINITIONS:
                    self.moved(part.loc, name, "the value travels as a JSON-encoded string")
                    notes.append((name, value))
        self.ledger.add(
            parts[0].loc,
            keyword,
            "enforced",
            f"any JSON value: {self._who} needs a type, so the value is written as a "
            "JSON-encoded string and decoded by outform",
        )
        wire: Wire = {"type": "string"}
        self.annotate(wire, parts, notes, suffix="a JSON value, encoded as a JSON string")
        return wire, JsonText()

    def inline_refs(self, branch: Branch) -> Alternatives | None:
        """A kept reference that is one of several constraints (`allOf` of references, say) is
        inlined when it can be: only a reference standing alone can stay a `$ref`."""
        alone = len(branch.refs) == 1 and all(
            keyword in ANNOTATIONS or keyword in DEFINITIONS
            for part in branch.parts
            for keyword, _ in part.items()
        )
        inlinable = [ref for ref in branch.refs if not ref.recursive]
        if alone or not inlinable:
            return None
        kept = tuple(ref for ref in branch.refs if ref.recursive)
        branches: tuple[Branch, ...] = (Branch(branch.parts, kept),)
        unions: list[tuple[str, str]] = []
        deferred: list[tuple[str, str]] = []
        notes: list[Part] = []
        for ref in inlinable:
            inner = ref.inline(self.doc, self.keep_ref)
            branches = tuple(a & b for a in branches for b in inner.branches)
            unions += inner.unions
            deferred += inner.deferred
            notes += inner.notes
        if len(branches) == 1 and notes:
            branches = (branches[0] & Branch(tuple(notes)),)
            notes = []
        return Alternatives(branches, tuple(unions), tuple(deferred), tuple(notes))

    def reference(self, branch: Branch) -> Emitted:
        """A reference kept as `$ref` (recursive, or a plain reference to a definition)."""
        first, *others = branch.refs
        if first.recursive and (not self.rules.refs or self.rules.recursion == "no"):
            raise self.recursion_error(first.target, first.loc)
        name, codec = self.definition(first.target)
        self.kept(first.loc, "$ref", f"kept as $defs/{name}")
        for ref in others:
            self.moved(ref.loc, "$ref", "a second recursive reference on the same node")
        for part in branch.parts:
            for keyword, _ in part.items():
                if keyword not in ANNOTATIONS and keyword not in DEFINITIONS:
                    self.moved(part.loc, keyword, "beside a recursive reference")
        wire: Wire = {"$ref": f"#/$defs/{name}"}
        self._ref_origins.append((wire, first.loc))
        notes_holder: Wire = {}
        self.annotate(notes_holder, list(branch.parts), [])
        if notes_holder:
            if self.rules.ref_siblings == "any":
                wire.update(notes_holder)
            else:
                ref = wire["$ref"]
                wire = {"anyOf": [wire], **notes_holder}
                self._annotated_refs.append((wire, ref, list(branch.parts)))
                self._ref_origins.append((wire, first.loc))
        self.sweep(list(branch.parts), None)
        return wire, codec

    def _unwrap_annotated_refs(self, wire: Wire) -> analysis.Size:
        """Send each `$ref` that carries annotations alone, as the provider's own SDK sends
        every `$ref`: the one-branch `anyOf` that carries them counts as a union-typed
        property, and the schema has more than the provider takes. The annotations are
        recorded as dropped (they guide the model; validation is unchanged). Returns the
        schema's size after."""
        for wrapper, ref, parts in self._annotated_refs:
            wrapper.clear()  # (in place: the wrapper is where `reference` returned it)
            wrapper["$ref"] = ref
            for part in parts:
                for keyword, _ in part.items():
                    if keyword in ANNOTATIONS:
                        self.ledger.add(
                            part.loc,
                            keyword,
                            "dropped",
                            f"an annotation beside a $ref, which {self._who} would count as "
                            "a union-typed property (the schema has more than it takes); it "
                            "does not affect validation",
                            kind="annotation",
                        )
        self._annotated_refs.clear()
        return analysis.measure(wire)

    def definition(self, target: str) -> tuple[str, Codec | None]:
        """The name of the wire definition for an original location, emitting it once."""
        if target in self._never:
            raise UnsatisfiableError
        name = self._names.get(target)
        if name is None:
            name = self._names[target] = self._new_name(target)
            self._busy.add(name)
            self.defs[name] = {}  # reserves the name while the body (maybe recursive) is built
            part = Part(target, self.doc.node(target), stack=(target,))
            try:
                body, codec = self.emit(alternatives(self.doc, part, self.keep_ref))
            except UnsatisfiableError:
                self._never.add(target)
                del self.defs[name], self._names[target]
                raise
            finally:
                self._busy.discard(name)
            self.defs[name] = body
            self.codecs[name] = codec
        if name in self._busy or self.codecs.get(name) is not None:
            return name, Defined(name)
        return name, None

    def _new_name(self, target: str) -> str:
        tokens = pointer.parts(target)
        if len(tokens) == 2 and tokens[0] in ("$defs", "definitions"):
            base = tokens[1]
        else:
            base = "_".join(tokens) or "root"
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", base).strip("_") or "def"
        name, n = base, 2
        while name in self.defs:
            name, n = f"{base}_{n}", n + 1
        return name

    # -- enum / const ---------------------------------------------------------------------

    def choices(self, kind: str | None, parts: list[Part], wire: Wire, notes: list[Any]) -> None:
        values = _choices(parts)
        if values is None:
            return
        fitting = [v for v in values if kind is None or _fits_type(v, kind)]
        if not fitting:
            raise UnsatisfiableError
        holders = [p for p in parts if p.has("enum") or p.has("const")]
        if kind == "null" or (kind == "boolean" and len(fitting) == 2):
            for part in holders:
                self.kept(part.loc, "const" if part.has("const") else "enum", "implied by the type")
            return
        allowed = all(_json_type(v) in self.rules.enum_types for v in fitting)
        if not allowed or "enum" not in self.rules.accepted:
            for part in holders:
                keyword = "const" if part.has("const") else "enum"
                self.moved(part.loc, keyword, f"{self._who} does not accept these enum values")
            notes.append(("enum", fitting))
            return
        used_const = all(p.has("const") for p in holders)
        if len(fitting) == 1 and used_const and "const" in self.rules.accepted:
            wire["const"] = fitting[0]
        else:
            wire["enum"] = fitting
        for part in holders:
            keyword = "const" if part.has("const") else "enum"
            rewritten = "enum" in wire and keyword == "const"
            self.kept(
                part.loc,
                keyword,
                "written as enum" if rewritten else "",
                sent_as="enum" if "enum" in wire else "const",
            )

    # -- objects -------------------------------------------------------------------------

    def object_into(self, parts: list[Part], wire: Wire, notes: list[Any]) -> Codec | None:
        shape = _ObjectShape.of(parts)
        props: dict[str, Wire] = {}
        codecs: dict[str, Prop] = {}
        made_required: list[str] = []
        forbidden: dict[str, list[Part]] = {}
        for name, child_parts in shape.properties(self.doc).items():
            try:
                child, codec = self.emit(conjunction(self.doc, child_parts, self.keep_ref))
            except UnsatisfiableError:
                if name in shape.required:
                    raise
                forbidden[name] = child_parts
                continue
            if name not in shape.required and self.rules.all_required:
                child = self.nullable(child)
                codecs[name] = Prop(codec, null_for_absent=True)
                made_required.append(name)
            else:
                codecs[name] = Prop(codec)
            props[name] = child
        for part in shape.required_holders:
            reason = (
                "every property is required on the wire; optional ones accept null, "
                "which outform maps back to an absent key"
                if self.rules.all_required
                else ""
            )
            self.kept(part.loc, "required", reason)
        if made_required and not shape.required_holders:
            self.ledger.add(
                shape.loc,
                "required",
                "enforced",
                f"not given: {self._who} needs every property required, so "
                f"{', '.join(map(repr, made_required))} are sent as required and nullable; "
                "a null maps back to an absent key",
            )
        extras, open_codec, closed = self.extras_into(shape, props, wire, notes)
        self._record_unscoped(shape)
        shut = closed and extras is None and self.rules.claims("additionalProperties")
        for name, child_parts in forbidden.items():
            self.forbid(name, child_parts, shape, shut)
        if props or self.rules.closed_objects or self.rules.all_required:
            wire["properties"] = props
        required = (
            list(props) if self.rules.all_required else [n for n in shape.required if n in props]
        )
        if required or (self.rules.all_required and "properties" in wire):
            wire["required"] = required
        if closed and "additionalProperties" in self.rules.accepted:
            wire["additionalProperties"] = False
        for keyword in ("minProperties", "maxProperties"):
            self.scalar(parts, keyword, wire, notes, pick=max if keyword[1] == "i" else min)
        reshaped = any(prop != Prop() for prop in codecs.values())
        if reshaped or extras is not None or open_codec is not None or (closed and shape.open):
            return Object(codecs, extras, open_codec, closed)
        return None

    def forbid(self, name: str, parts: list[Part], shape: _ObjectShape, shut: bool) -> None:
        """A key no value may stand under (`"b": false`, or declared by one allOf member and
        closed out by another): it is left out of the wire's properties. Where the wire object
        is closed, that omission is what forbids it; otherwise outform checks it is absent."""
        how = (
            f"the key {name!r} is never valid; it is not declared on the wire and the object is "
            f"closed, so {self._who} never writes it (enforced by omission)"
            if shut
            else f"the key {name!r} is never valid; it is not declared on the wire (where other "
            "keys are allowed), so outform checks that it is absent"
        )
        disposition: Disposition = "enforced" if shut else "checked_locally"
        for part in shape.declared.get(name, parts):
            if part.schema is False:
                self.ledger.add(part.loc, "false", disposition, how)
            elif isinstance(part.schema, Mapping):
                for keyword, _ in part.items():
                    if keyword not in ANNOTATIONS and keyword not in DEFINITIONS:
                        self.ledger.add(part.loc, keyword, disposition, how)

    def extras_into(
        self, shape: _ObjectShape, props: dict[str, Wire], wire: Wire, notes: list[Any]
    ) -> tuple[Extras | None, Codec | None, bool]:
        """Keys beyond the declared ones: closed, native, or gathered as pairs.

        Returns (extras gathered under a declared key, codec of native extra values, closed).
        """
        narrowing = shape.implicit and shape.declared and self.close
        if not shape.open or narrowing:
            for loc, keyword in shape.closing_keywords:
                self.kept(loc, keyword)
            if narrowing:
                self.ledger.add(
                    shape.loc,
                    "additionalProperties",
                    "enforced",
                    "not given (JSON Schema then allows any other key); the object is closed "
                    f"for {self._who}: replies carry only the declared keys "
                    "(translate with open_objects='keep' to allow others)",
                )
            return None, None, True
        if self.rules.schema_maps:
            return None, self.native_extras(shape, wire), False
        value, value_codec = self.extra_values(shape)
        pairs_wire = self._pairs(value, shape)
        key = EXTRA_KEY
        while key in props:
            key += "_"
        props[key] = pairs_wire
        self._record_extras(shape, f"gathered under the declared key {key!r} as key/value pairs")
        self._record_closing(shape)
        return Extras(key, Pairs(value_codec), self.rules.all_required), None, True

    def native_extras(self, shape: _ObjectShape, wire: Wire) -> Codec | None:
        """A dialect that accepts `additionalProperties` schemas (and maybe patternProperties)."""
        pattern_ok = "patternProperties" in self.rules.accepted
        codec: Codec | None = None
        if shape.patterns and pattern_ok:
            wire["patternProperties"] = {}
            for loc, pattern, part in shape.patterns:
                child, child_codec = self.emit(alternatives(self.doc, part, self.keep_ref))
                wire["patternProperties"][pattern] = child
                codec = codec or child_codec
                self.kept(loc, "patternProperties")
        if shape.closed and not (shape.patterns and not pattern_ok):
            wire["additionalProperties"] = False
            for loc, keyword in shape.closing_keywords:
                self.kept(loc, keyword)
            return codec
        for loc, keyword in shape.closing_keywords:
            self.moved(loc, keyword, "keys outside the patterns")
        if (shape.patterns and not pattern_ok) or shape.values:
            value, value_codec = self.extra_values(shape, with_patterns=not pattern_ok)
            wire["additionalProperties"] = value
            codec = codec or value_codec
            self._record_extras(shape, "sent as additionalProperties")
        elif shape.explicit or self.rules.closed_by_default:
            wire["additionalProperties"] = True
            self._record_extras(shape, "sent as additionalProperties: true")
        return codec

    def map_node(self, parts: list[Part], notes: list[Any]) -> Emitted | None:
        """An object with no declared properties, for a dialect whose objects must be closed:
        a list of key/value pairs, or a JSON-encoded string when its values can be anything."""
        shape = _ObjectShape.of(parts)
        if shape.declared or not shape.open or (shape.implicit and self.close and shape.required):
            return None
        if not shape.values and not shape.patterns:
            # The provider enforces only that a string is written: every keyword of the node
            # (its type included) holds only once outform has decoded the string and checked it.
            how = (
                f"an object with free keys: {self._who} needs closed objects, so it is written as "
                "a JSON-encoded string, which is all the provider enforces; outform decodes it "
                "and checks it"
            )
            for part in parts:
                for keyword, value in part.items():
                    if keyword not in ANNOTATIONS and keyword not in DEFINITIONS:
                        self.moved(part.loc, keyword, how)
                        notes.append((keyword, "object" if keyword == "type" else value))
            if not any(part.has("type") for part in parts):
                self.moved(shape.loc, "type", how)
            wire: Wire = {"type": "string"}
            return wire, Narrowed(frozenset({"object"}), JsonText())
        for part in parts:
            if part.has("type"):
                self.kept(part.loc, "type")
        value, value_codec = self.extra_values(shape)
        self._record_extras(shape, "written as a list of key/value pairs, mapped back by outform")
        self._record_closing(shape)
        self._record_unscoped(shape)
        for part in parts:
            for keyword, given in part.items():
                if keyword in ("required", "minProperties", "maxProperties") or (
                    keyword not in _MAP_KEYWORDS
                    and keyword not in ANNOTATIONS
                    and keyword not in DEFINITIONS
                ):
                    self.moved(part.loc, keyword, "the map travels as a list of pairs")
                    notes.append((keyword, given))
        return self._pairs(value, shape), Pairs(value_codec)

    def extra_values(self, shape: _ObjectShape, with_patterns: bool = True) -> Emitted:
        """The schema of the values under undeclared keys (a union when patterns differ)."""
        options: list[Emitted] = []
        if with_patterns:
            for _, _, part in shape.patterns:
                options.append(self.emit(alternatives(self.doc, part, self.keep_ref)))
        if shape.values:
            options.append(self.emit(conjunction(self.doc, shape.values, self.keep_ref)))
        elif not shape.closed:
            any_part = Part(shape.loc, {}, stack=())
            if self.rules.typed_nodes:
                options.append(self.any_value([any_part], "additionalProperties"))
            else:
                options.append(({}, None))
        if not options:
            raise UnsatisfiableError
        if len(options) == 1:
            return options[0]
        return _union(options)

    def _pairs(self, value: Wire, shape: _ObjectShape) -> Wire:
        key: Wire = {"type": "string"}
        patterns = [pattern for _, pattern, _ in shape.patterns]
        if (
            shape.closed
            and len(patterns) == 1
            and "pattern" in self.rules.accepted
            and self._pattern_ok(patterns[0])
        ):
            key["pattern"] = patterns[0]
        pair: Wire = {
            "type": "object",
            "properties": {"key": key, "value": value},
            "required": ["key", "value"],
        }
        if "additionalProperties" in self.rules.accepted:
            pair["additionalProperties"] = False
        return {
            "type": "array",
            "items": pair,
            "description": "the object's entries, as key/value pairs",
        }

    def _record_unscoped(self, shape: _ObjectShape) -> None:
        for loc, keyword in shape.unscoped:
            self.moved(
                loc,
                keyword,
                "merged with another allOf member's patternProperties, which exempt on the "
                "wire keys it applies to",
            )

    def _record_closing(self, shape: _ObjectShape) -> None:
        """`additionalProperties: false` beside patterns: exact if one pattern sits on the key."""
        exact = (
            len(shape.patterns) == 1
            and "pattern" in self.rules.accepted
            and self._pattern_ok(shape.patterns[0][1])
        )
        for loc, keyword in shape.closing_keywords:
            if exact:
                self.kept(loc, keyword, "the pattern is on each pair's key")
            else:
                self.moved(loc, keyword, "which keys are allowed (several patterns)")

    def _record_extras(self, shape: _ObjectShape, how: str) -> None:
        for loc, keyword in shape.extra_keywords:
            if keyword == "patternProperties" and not (
                "patternProperties" in self.rules.accepted and self.rules.schema_maps
            ):
                self.moved(loc, keyword, f"{how}; which key matches which pattern")
            else:
                self.kept(loc, keyword, how)

    # -- arrays --------------------------------------------------------------------------

    def array_into(self, parts: list[Part], wire: Wire, notes: list[Any]) -> Codec | None:
        positions, rest, limit = _array_shape(parts, self.doc.draft)
        fold = bool(positions) and "prefixItems" not in self.rules.accepted
        codecs: list[Codec | None] = []
        emitted: list[Wire] = []
        with self.ledger.folding(
            "the dialect has no prefixItems: the positions are folded into one item schema, "
            "so it holds for some item, not for this position"
            if fold
            else None
        ):
            for index, conj in enumerate(positions):
                try:
                    child, codec = self.emit(conjunction(self.doc, conj, self.keep_ref))
                except UnsatisfiableError:
                    limit = index if limit is None else min(limit, index)
                    break
                emitted.append(child)
                codecs.append(codec)
        rest_wire: Wire | None = None
        rest_codec: Codec | None = None
        if rest and limit is None:
            try:
                rest_wire, rest_codec = self.emit(conjunction(self.doc, rest, self.keep_ref))
            except UnsatisfiableError:
                limit = len(emitted)
        elif limit is None and self.rules.typed_nodes:
            rest_wire, rest_codec = self.any_value([Part(parts[0].loc, {})], "items")
        elif limit is None:
            rest_wire = {}  # the items after the positions may be anything
        self.scalar(parts, "minItems", wire, notes, pick=max)
        self.scalar(parts, "maxItems", wire, notes, pick=min)
        self.scalar(parts, "uniqueItems", wire, notes, pick=max)
        limited = limit is None
        if limit is not None and "maxItems" in self.rules.accepted:
            wire["maxItems"] = min(limit, wire.get("maxItems", limit))
            bound = self.rules.bounds.get("maxItems")
            limited = self.rules.claims("maxItems") and (bound is None or limit <= bound)
        for part in parts:
            for keyword in ("items", "prefixItems", "additionalItems"):
                if not part.has(keyword):
                    continue
                if not limited:
                    self.moved(
                        part.loc,
                        keyword,
                        f"no item may stand past position {limit}, and {self._who} does not "
                        "enforce that limit (maxItems)",
                    )
                    notes.append(("maxItems", limit))
                elif part.get(keyword) is False:
                    self.kept(part.loc, keyword, f"written as maxItems {limit}", enforced=True)
                elif keyword == "items" and isinstance(part.get(keyword), list):
                    self.kept(part.loc, keyword, "written as prefixItems", sent_as="prefixItems")
                elif keyword == "additionalItems":
                    self.kept(part.loc, keyword, "written as items", sent_as="items")
                else:
                    self.kept(part.loc, keyword)
        if emitted and not fold:
            wire["prefixItems"] = emitted
            if rest_wire is not None and not _free(rest_wire):
                wire["items"] = rest_wire
        elif emitted:
            for part in parts:
                for keyword in ("items", "prefixItems"):
                    if part.has(keyword) and (
                        keyword == "prefixItems" or isinstance(part.get(keyword), list)
                    ):
                        self.moved(part.loc, keyword, "positions folded into one item schema")
            if rest_wire is not None and _free(rest_wire):  # any item may follow the positions
                codecs, rest_codec = [], None
            else:
                members = [*emitted, *([rest_wire] if rest_wire is not None else [])]
                wire["items"] = members[0] if len(members) == 1 else {"anyOf": members}
        elif rest_wire is not None and not _free(rest_wire):
            wire["items"] = rest_wire
        if (
            (self.rules.typed_items or self.rules.typed_nodes)
            and "items" not in wire
            and "prefixItems" not in wire
        ):
            # no item is allowed (maxItems says so where the dialect takes it); the dialect
            # still wants an item schema
            wire["items"] = {"type": "string", "description": "no item may stand here"}
        if any(c is not None for c in codecs) or rest_codec is not None:
            return Array(rest_codec, tuple(codecs))
        return None

    # -- strings and numbers -------------------------------------------------------------

    def string_into(self, parts: list[Part], wire: Wire, notes: list[Any]) -> None:
        self.scalar(parts, "minLength", wire, notes, pick=max)
        self.scalar(parts, "maxLength", wire, notes, pick=min)
        self.scalar(parts, "pattern", wire, notes)
        self.scalar(parts, "format", wire, notes)

    def number_into(
        self, kind: str | None, parts: list[Part], wire: Wire, notes: list[Any]
    ) -> None:
        """Bounds, merged to the tightest; exclusive ones written as the dialect can take them."""
        for lower, plain, strict in (
            (True, "minimum", "exclusiveMinimum"),
            (False, "maximum", "exclusiveMaximum"),
        ):
            bounds = _bounds(parts, plain, strict, self.doc.draft)
            if not bounds:
                continue
            value, exclusive, holder = bounds[0]
            written: tuple[str, Any] | None = None
            exact = True
            if exclusive and strict in self.rules.accepted:
                written = (strict, value)
            elif plain in self.rules.accepted:
                if exclusive and kind == "integer" and float(value).is_integer():
                    written = (plain, int(value) + (1 if lower else -1))
                else:
                    written = (plain, value)
                    exact = not exclusive
            if written is not None:
                wire[written[0]] = written[1]
            enforced = kind is None or kind in self.rules.numeric_bounds
            for bound, bound_exclusive, part in bounds:
                keys = [
                    key for key in (plain, strict) if part.has(key) and part.get(key) is not False
                ]
                for key in keys:
                    if written is None:
                        self.moved(part.loc, key, f"{self._who} does not accept {key}")
                    elif part is holder and not exact:
                        self.moved(part.loc, key, f"sent as {plain} {value} (not exclusive)")
                    elif not enforced:
                        self.kept(
                            part.loc,
                            key,
                            f"{self._who} enforces bounds only on integers",
                            enforced=False,
                        )
                    else:
                        how = (
                            f"written as {written[0]} {written[1]}"
                            if written != (key, bound)
                            else ""
                        )
                        self.kept(
                            part.loc,
                            key,
                            how if part is holder else "implied by a tighter bound",
                            sent_as=written[0],
                        )
                if (written is None or not exact) and part is holder:
                    notes.append((strict if bound_exclusive else plain, bound))
        self.scalar(parts, "multipleOf", wire, notes)

    def scalar(
        self,
        parts: list[Part],
        keyword: str,
        wire: Wire,
        notes: list[Any],
        pick: Callable[..., Any] | None = None,
    ) -> None:
        """A keyword with a plain value: the tightest value (or the first) goes on the wire."""
        holders = [p for p in parts if p.has(keyword)]
        if not holders:
            return
        if pick is not None and all(
            _number(p.get(keyword)) or isinstance(p.get(keyword), bool) for p in holders
        ):
            chosen = pick(holders, key=lambda p: p.get(keyword))
        else:
            chosen = holders[0]
        self._put(wire, notes, chosen, keyword, chosen.get(keyword))
        for part in holders:
            if part is chosen:
                continue
            if pick is not None and keyword in wire:
                self.kept(part.loc, keyword, "implied by a tighter bound on the same node")
            else:
                self.moved(part.loc, keyword, "a second value for the same keyword")
                notes.append((keyword, part.get(keyword)))

    def _put(self, wire: Wire, notes: list[Any], part: Part, keyword: str, value: Any) -> None:
        """Send the keyword if the dialect takes this value; else move it out (and say so)."""
        problem = self._value_problem(keyword, value)
        if keyword in self.rules.accepted and problem is None:
            wire[keyword] = value
            bound = self.rules.bounds.get(keyword)
            if bound is not None and _number(value) and value > bound:
                self.moved(part.loc, keyword, f"{self._who} enforces {keyword} only up to {bound}")
            else:
                self.kept(part.loc, keyword)
            return
        if keyword == "minItems" and self.rules.min_items and _number(value):
            weaker = max(v for v in self.rules.min_items if v <= value)
            wire[keyword] = weaker
            self.moved(part.loc, keyword, f"{self._who} enforces minItems {weaker} at most")
            notes.append((keyword, value))
            return
        if keyword == "format" and not self._format_checked(value):
            self.ledger.add(
                part.loc,
                "format",
                "dropped",
                f"{problem or 'not accepted by ' + self._who}; and outform does not check "
                f"format {value!r} for this schema's draft (an annotation there)",
                kind="annotation",
            )
            notes.append((keyword, value))
            return
        self.moved(part.loc, keyword, problem or f"{self._who} does not accept {keyword}")
        notes.append((keyword, value))

    def _value_problem(self, keyword: str, value: Any) -> str | None:
        rules = self.rules
        if keyword == "format" and rules.formats is not None and value not in rules.formats:
            return f"{self._who} does not accept format {value!r}"
        if keyword == "pattern" and not self._pattern_ok(value):
            return f"the pattern is outside {self._who}'s regex subset"
        if keyword == "minItems" and rules.min_items is not None and value not in rules.min_items:
            return f"{self._who} accepts minItems only as {sorted(rules.min_items)}"
        return None

    def _pattern_ok(self, pattern: Any) -> bool:
        return isinstance(pattern, str) and (
            self.rules.pattern_ok is None or self.rules.pattern_ok(pattern)
        )

    def _format_checked(self, value: Any) -> bool:
        return isinstance(value, str) and format_asserted(self.doc.draft, value)

    # -- annotations, nullability, bookkeeping -------------------------------------------

    def annotate(
        self, wire: Wire, parts: list[Part], notes: list[tuple[str, Any]], suffix: str = ""
    ) -> None:
        """Copy the annotations the dialect accepts; append the moved constraints as a hint."""
        descriptions: list[str] = []
        for part in parts:
            for keyword, value in part.items():
                if keyword == "description" and isinstance(value, str):
                    if not descriptions:  # the outermost description describes this node
                        descriptions.append(value)
                elif keyword in ANNOTATIONS and keyword != "description":
                    # `$id` and friends would change how the wire's references resolve.
                    sendable = keyword in self.rules.accepted and not keyword.startswith("$")
                    if sendable and keyword not in wire and _plain(value):
                        wire[keyword] = value
                    else:
                        self.ledger.add(
                            part.loc,
                            keyword,
                            "dropped",
                            f"an annotation {self._who} does not take; it does not affect "
                            "validation",
                            kind="annotation",
                        )
        existing = wire.get("description")
        if isinstance(existing, str) and existing not in descriptions:
            descriptions.append(existing)
        text = " ".join(descriptions)
        hint = _hint(notes) if self.options.describe else ""
        extra = "; ".join(s for s in (suffix, hint) if s)
        if extra:
            text = f"{text} ({extra})" if text else extra
        if text:
            wire["description"] = text

    def nullable(self, wire: Wire) -> Wire:
        """The node, also accepting null (for an optional property the wire must require)."""
        if _accepts_null(wire):
            return wire
        if self._listable(wire):
            return _with_null(wire)
        if "anyOf" in wire and set(wire) <= {"anyOf", "description", "title"}:
            return {**wire, "anyOf": [*wire["anyOf"], {"type": "null"}]}
        return {"anyOf": [wire, {"type": "null"}]}

    def _listable(self, wire: Wire) -> bool:
        """Whether null can join the node's own type list (rather than an anyOf branch)."""
        return (
            self.rules.type_lists != "none"
            and isinstance(wire.get("type"), str)
            and "anyOf" not in wire
            and "$ref" not in wire
            and ("enum" not in wire or "null" in self.rules.enum_types)
        )

    def sweep(self, parts: list[Part], kinds: frozenset[str] | None) -> None:
        """Give every keyword of the parts a ledger entry (those no step has recorded)."""
        for part in parts:
            for keyword in part.schema:
                if self.ledger.get(part.loc, keyword) is not None or keyword in CONTAINERS:
                    continue
                if keyword in part.ignored:
                    self.ledger.add(
                        part.loc,
                        keyword,
                        "dropped",
                        f"ignored: in draft {self.doc.draft} a $ref replaces the keywords "
                        "beside it, so it never constrained values",
                        kind="annotation",
                    )
                elif keyword == "allOf":
                    self.dissolved(part.loc, "allOf", "merged into the node")
                elif keyword == "$ref":
                    self.dissolved(part.loc, "$ref", "inlined")
                elif keyword in ("anyOf", "oneOf"):
                    self.kept(part.loc, keyword)
                elif keyword in ANNOTATIONS:
                    continue
                elif keyword in STANDARD or keyword in DRAFT_KEYWORDS:
                    owner = next((k for k, keys in _OF_TYPE.items() if keyword in keys), None)
                    if (
                        owner is not None
                        and kinds is not None
                        and owner not in kinds
                        and not (owner == "number" and "integer" in kinds)
                    ):
                        self.ledger.add(
                            part.loc,
                            keyword,
                            "enforced",
                            f"applies only to {owner} values, which this node does not accept",
                        )
                    else:
                        self.kept(part.loc, keyword)
                else:
                    self.ledger.add(
                        part.loc,
                        keyword,
                        "dropped",
                        "not a JSON Schema keyword: validators ignore it; not sent",
                        kind="annotation",
                    )


@dataclass(frozen=True)
class _Scope:
    """The object keywords of one part: `additionalProperties` applies only to the keys this
    part neither declares nor matches with one of its own patterns."""

    part: Part
    declared: frozenset[str]
    patterns: tuple[tuple[str, Part], ...]
    more: Part | bool | None
    """`additionalProperties`: a schema, False (closed), or None (true, empty or absent)."""

    def constraint(self, name: str) -> list[Part] | None:
        """What this part asks of the value under a key it does not declare: the schemas of
        its matching patterns, else its `additionalProperties` (None: the key is forbidden)."""
        matched = [sub for pattern, sub in self.patterns if patterns.search(pattern, name)]
        if matched:
            return matched
        if self.more is False:
            return None
        return [self.more] if isinstance(self.more, Part) else []


@dataclass(frozen=True)
class _ObjectShape:
    """The object keywords of a conjunction, merged, with where each came from.

    The merge is exact: `additionalProperties` of one part applies to the keys declared by
    another part (added to their schemas, or forbidding them when false). Only for keys no part
    declares can patterns of one part and `additionalProperties` of another not be written as
    one object: those `additionalProperties` are listed in `unscoped` and checked locally."""

    loc: str
    declared: dict[str, list[Part]]
    required: dict[str, None]
    """The required names, in order (a dict: a set that keeps it, for membership in O(1))."""
    required_holders: list[Part]
    values: list[Part]
    """Schemas of values under undeclared keys (`additionalProperties` schemas)."""
    patterns: list[tuple[str, str, Part]]
    closed: bool
    """Some part says `additionalProperties: false`."""
    explicit: bool
    """Some part says `additionalProperties` (true or a schema)."""
    extra_keywords: list[tuple[str, str]]
    closing_keywords: list[tuple[str, str]]
    scopes: tuple[_Scope, ...] = ()
    unscoped: tuple[tuple[str, str], ...] = ()
    """`additionalProperties` of a part beside another part's `patternProperties`: on the wire
    the merged patterns exempt keys it should apply to (a weaker wire: checked locally)."""

    @staticmethod
    def of(parts: list[Part]) -> _ObjectShape:
        declared: dict[str, list[Part]] = {}
        required: dict[str, None] = {}
        holders: list[Part] = []
        values: list[Part] = []
        patterns: list[tuple[str, str, Part]] = []
        closed = explicit = False
        extra: list[tuple[str, str]] = []
        closing: list[tuple[str, str]] = []
        scopes: list[_Scope] = []
        for part in parts:
            own: list[str] = []
            own_patterns: list[tuple[str, Part]] = []
            scoped_more: Part | bool | None = None
            props = part.get("properties")
            if isinstance(props, Mapping):
                for name, sub in props.items():
                    declared.setdefault(name, []).append(part.sub(sub, "properties", name))
                    own.append(name)
            names = part.get("required")
            if isinstance(names, list):
                holders.append(part)
                required.update((n, None) for n in names if isinstance(n, str))
            more = part.get("additionalProperties")
            if more is False:
                closed = True
                scoped_more = False
                closing.append((part.loc, "additionalProperties"))
            elif more is True or (isinstance(more, Mapping) and not more):
                explicit = True
                extra.append((part.loc, "additionalProperties"))
            elif isinstance(more, Mapping):
                explicit = True
                scoped_more = part.sub(more, "additionalProperties")
                values.append(scoped_more)
                extra.append((part.loc, "additionalProperties"))
            pattern_map = part.get("patternProperties")
            if isinstance(pattern_map, Mapping):
                extra.append((part.loc, "patternProperties"))
                for pattern, sub in pattern_map.items():
                    sub_part = part.sub(sub, "patternProperties", pattern)
                    patterns.append((part.loc, pattern, sub_part))
                    own_patterns.append((pattern, sub_part))
            if own or own_patterns or scoped_more is not None:
                scopes.append(_Scope(part, frozenset(own), tuple(own_patterns), scoped_more))
        unscoped = tuple(
            (scope.part.loc, "additionalProperties")
            for scope in scopes
            if scope.more is not None
            and any(other.patterns for other in scopes if other.part is not scope.part)
        )
        return _ObjectShape(
            loc=parts[0].loc,
            declared=declared,
            required=required,
            required_holders=holders,
            values=values,
            patterns=patterns,
            closed=closed,
            explicit=explicit,
            extra_keywords=extra,
            closing_keywords=closing,
            scopes=tuple(scopes),
            unscoped=unscoped,
        )

    @property
    def open(self) -> bool:
        """Whether the original allows keys beyond the declared ones."""
        return not self.closed or bool(self.patterns)

    @property
    def implicit(self) -> bool:
        """Open only because nothing says otherwise."""
        return not self.explicit and not self.patterns and not self.closed

    def properties(self, doc: Document) -> dict[str, list[Part]]:
        """Declared properties, plus required names that are not declared; each with every
        part's constraint on its value. A part that does not declare the name applies its
        matching patterns or its `additionalProperties` to it (a `false` there forbids the key:
        its conjunction then holds the `false` schema at that `additionalProperties`)."""
        out: dict[str, list[Part]] = {}
        for name in [*self.declared, *(n for n in self.required if n not in self.declared)]:
            conj = list(self.declared.get(name, ()))
            for scope in self.scopes:
                if name in scope.declared:
                    continue
                found = scope.constraint(name)
                if found is None:
                    conj.append(Part(scope.part.child("additionalProperties"), False))
                else:
                    conj.extend(found)
            out[name] = conj or [Part(self.loc, {})]
        return out


def _array_shape(parts: list[Part], draft: int) -> tuple[list[list[Part]], list[Part], int | None]:
    """(conjunction per position, conjunction for the other items, item limit or None)."""
    per_part: list[tuple[list[Part], Part | bool | None]] = []
    for part in parts:
        items = part.get("items")
        prefix: list[Part] = []
        rest: Part | bool | None = None
        if isinstance(items, list) and draft < 2020:
            prefix = [part.sub(sub, "items", i) for i, sub in enumerate(items)]
            more = part.get("additionalItems")
            rest = (
                False
                if more is False
                else (part.sub(more, "additionalItems") if isinstance(more, Mapping) else None)
            )
        else:
            listed = part.get("prefixItems")
            if isinstance(listed, list):
                prefix = [part.sub(sub, "prefixItems", i) for i, sub in enumerate(listed)]
            if items is False:
                rest = False
            elif isinstance(items, Mapping):
                rest = part.sub(items, "items")
        if prefix or rest is not None:
            per_part.append((prefix, rest))
    width = max((len(prefix) for prefix, _ in per_part), default=0)
    positions: list[list[Part]] = []
    limit: int | None = None
    for index in range(width):
        conj: list[Part] = []
        for prefix, rest in per_part:
            own = prefix[index] if index < len(prefix) else rest
            if own is False:
                limit = index
                break
            if isinstance(own, Part):
                conj.append(own)
        if limit is not None:
            break
        positions.append(conj or [Part(parts[0].loc, {})])
    rest_parts: list[Part] = []
    for _, rest in per_part:
        if rest is False and limit is None:
            limit = width
        elif isinstance(rest, Part):
            rest_parts.append(rest)
    return positions, rest_parts, limit


@functools.lru_cache(maxsize=512)
def format_asserted(draft: int, name: str) -> bool:
    """Whether outform's validator (jsonschema-rs) checks this format for this draft."""
    uri = {
        4: "http://json-schema.org/draft-04/schema#",
        6: "http://json-schema.org/draft-06/schema#",
        7: "http://json-schema.org/draft-07/schema#",
        2019: "https://json-schema.org/draft/2019-09/schema",
    }.get(draft, "https://json-schema.org/draft/2020-12/schema")
    validator = jsonschema_rs.validator_for({"$schema": uri, "format": name})
    return not all(validator.is_valid(probe) for probe in ("", "(", "\x00 :: {not valid}"))


def _union(results: list[Emitted]) -> Emitted:
    """anyOf of the results, nested unions flattened, identical plain branches written once."""
    branches: list[tuple[Wire, Codec | None]] = []
    for wire, codec in results:
        if set(wire) == {"anyOf"} and (codec is None or isinstance(codec, Union)):
            inner = (
                codec.branches if isinstance(codec, Union) else [(m, None) for m in wire["anyOf"]]
            )
            members = [(dict(member), member_codec) for member, member_codec in inner]
        else:
            members = [(wire, codec)]
        for member, member_codec in members:
            if member_codec is None and any(m == member and c is None for m, c in branches):
                continue
            branches.append((member, member_codec))
    if len(branches) == 1:
        return branches[0]
    codec = Union(tuple(branches)) if any(c is not None for _, c in branches) else None
    return {"anyOf": [member for member, _ in branches]}, codec


def _with_null(wire: Wire) -> Wire:
    out = dict(wire)
    out["type"] = [wire["type"], "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    if "const" in out:
        out["enum"] = [out.pop("const"), None]
    return out


def _accepts_null(wire: Wire) -> bool:
    kind = wire.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_accepts_null(m) for m in wire.get("anyOf", ()) if isinstance(m, dict))


_BYPASS = (
    "another branch of the union is a value written as a JSON-encoded string, which accepts "
    "every string: a string need not satisfy this branch"
)


def _bypassed(results: list[Emitted]) -> list[int]:
    """The branches of a union that a JSON-string branch (a value of any shape written as a
    string) makes moot for strings: their string constraints are no longer enforced."""
    carriers = [i for i, (wire, codec) in enumerate(results) if _carrier(wire, codec)]
    if not carriers:
        return []
    return [i for i, (wire, _) in enumerate(results) if i not in carriers and _takes_strings(wire)]


def _carrier(wire: Wire, codec: Codec | None) -> bool:
    """A wire node that is a JSON-encoded value: any string."""
    while isinstance(codec, Narrowed):
        codec = codec.inner
    return isinstance(codec, JsonText) and wire.get("type") == "string"


def _takes_strings(wire: Wire) -> bool:
    kind = wire.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    return any(isinstance(m, dict) and _takes_strings(m) for m in wire.get("anyOf", ()))


def _free(wire: Wire) -> bool:
    """A wire schema that accepts every value (annotations at most)."""
    return all(keyword in ANNOTATIONS for keyword in wire)


def _plain_object(wire: Wire) -> bool:
    return wire.get("type") == "object" and "anyOf" not in wire and "$ref" not in wire


def _choices(parts: list[Part]) -> list[Any] | None:
    values: list[Any] | None = None
    for part in parts:
        if part.has("const"):
            own = [part.get("const")]
        elif isinstance(part.get("enum"), list):
            own = list(part.get("enum"))
        else:
            continue
        values = own if values is None else [v for v in values if any(same(v, w) for w in own)]
    return values


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _fits_type(value: Any, kind: str) -> bool:
    own = _json_type(value)
    return own == kind or (kind == "number" and own == "integer")


def _meet(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    out = set(a & b)
    if ("number" in a and "integer" in b) or ("integer" in a and "number" in b):
        out.add("integer")
    return frozenset(out)


def _vacuous(kind: str | None, keyword: str) -> tuple[str, ...]:
    """Keywords of LOCAL_ONLY that constrain only another type than `kind`."""
    if kind is None:
        return ()
    owner = next((k for k, keys in _OF_TYPE.items() if keyword in keys), None)
    if owner is None or owner == kind or (owner == "number" and kind == "integer"):
        return ()
    return (keyword,)


def _bounds(
    parts: list[Part], plain: str, strict: str, draft: int
) -> list[tuple[float, bool, Part]]:
    """Every (bound, exclusive, part) on one side, the tightest first. In draft 4 the exclusive
    keyword is a boolean beside the plain one; later it is a number of its own."""
    found: list[tuple[float, bool, Part]] = []
    for part in parts:
        value, flag = part.get(plain), part.get(strict)
        if _number(value):
            found.append((value, draft <= 4 and flag is True, part))
        if _number(flag):
            found.append((flag, True, part))
    lower = plain == "minimum"
    found.sort(key=lambda b: (-b[0] if lower else b[0], not b[1]))
    return found


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _plain(value: Any) -> bool:
    """An annotation value safe to copy (no sub-schema that would need translating)."""
    return not isinstance(value, dict)


def _hint(notes: list[tuple[str, Any]]) -> str:
    shown: list[str] = []
    for keyword, value in notes:
        if isinstance(value, dict | bool) and keyword != "uniqueItems":
            continue
        text = value if isinstance(value, str) else dumps_text(value)
        if len(text) > 120:
            text = text[:117] + "..."
        entry = f"{keyword}: {text}"
        if entry not in shown:
            shown.append(entry)
    return ", ".join(shown)


__all__ = ["EXTRA_KEY", "Emitter", "Options", "UnsatisfiableError", "format_asserted"]
