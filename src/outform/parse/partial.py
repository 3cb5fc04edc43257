"""A push parser for a reply that arrives in chunks: the value so far, in linear total time.

Re-parsing the growing text on every chunk costs the square of the reply's length. This parser
keeps its state between chunks instead, and does the bulk of the work in C:

- **Scanning** uses one compiled regular expression that skips whole runs of the text in one
  call (strings, numbers, whitespace, colons, containers closed within two levels; it notes the
  last comma), stopping only at a bracket still open or closing, and at a string left open by
  the end of the chunk. An open string is resumed where the scan stopped, never from its start.
- **Values** are built by `orjson` from the text of completed members, each byte once: a
  container keeps a checkpoint, and only the members completed since are handed to `orjson`.
  A container still open when a chunk ends becomes *live*: it gets its own append-only list or
  dict, and its members are added as they complete.
- **Snapshots share structure.** Completed values are plain lists and dicts, never copied or
  changed again. An open container is shown as a read-only view (:class:`PartialList`,
  :class:`PartialDict`) of its append-only storage, fixed at the length it had: later chunks
  add to the storage but not to the view. A snapshot makes one view, of the root: the views on
  the path to the innermost open value (and the text of an open string) are made when first
  read, from what the snapshot noted, so a snapshot costs neither the size nor the depth.

What a snapshot shows (the no-flicker rule): a value once shown never changes, it can only
grow. Strings may be partial (:class:`PartialStr`); a chunk boundary that splits an escape
(`\\u00e9`, a surrogate pair) shows the text before it. Numbers, `true`, `false` and `null`
appear only once a delimiter (`,` `]` `}` or whitespace) ends them, or at :meth:`finish`. A key
appears only with its value: when the value starts (a string or a container) or completes.

Like the pipeline's *minimal* level, the parser finds the JSON after a reasoning block
(`<think>…</think>` and the like), inside a Markdown fence, or after prose; once the top-level
value is complete the rest of the reply is ignored. A bracket where the value may begin (the
reply's start, after reasoning, in a fence) begins it only when what follows its run of openers
can begin JSON, as the extraction judges it (`[Draft]` is prose, read past as `outform.parse`
reads past it). A bracket found in prose is tentative: if what follows is not JSON, the parser
goes back to reading prose.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Literal, Protocol, overload

import orjson
from pydantic_core import SchemaSerializer, core_schema

from outform.errors import OutputError
from outform.jsontext import loads_exact, may_be_inexact
from outform.parse.extract import _JSON_LANGS, _REASONING_TAGS, opener_run_end, opens_json
from outform.parse.hint import RetryHint, Violation, clip
from outform.parse.values import ordinary_numbers, out_of_range

Kind = Literal["object", "array", "string"]


class _Missing:
    """Nothing to show yet (distinct from JSON null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


# -- partial values --------------------------------------------------------------------------


class PartialStr(str):
    """A string still being written: later snapshots show it with more text appended."""

    __slots__ = ()


def _written_as(kind: type[list[Any]] | type[dict[str, Any]]) -> SchemaSerializer:
    """How Pydantic writes a view: as the `kind` (list or dict) built from what it shows."""
    return SchemaSerializer(
        core_schema.any_schema(serialization=core_schema.plain_serializer_function_ser_schema(kind))
    )


class PartialList(Sequence[Any]):
    """An array still being written: the first `n` items of an append-only list, then the
    item being written (if any). Read-only; the next snapshot's view may be longer."""

    __slots__ = ("_items", "_n", "_recipe", "_tail")
    _recipe: Later
    """(Set only while `_tail` is `_LATER`.)"""

    def __init__(self, items: list[Any], n: int, tail: Any = MISSING) -> None:
        self._items = items
        self._n = n
        self._tail = tail

    def __len__(self) -> int:
        return self._n + (self._tail is not MISSING)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return list(self)[index]
        size = self._n + (self._tail is not MISSING)  # (len(self), without the call)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("PartialList index out of range")
        if index < self._n:
            return self._items[index]
        tail = self._tail
        if tail is _LATER:
            tail = self._tail = _later(self._recipe)
        return tail

    def __iter__(self) -> Iterator[Any]:
        yield from itertools.islice(self._items, self._n)
        if self._tail is not MISSING:
            yield self._open()

    def _open(self) -> Any:
        tail = self._tail
        if tail is _LATER:
            tail = self._tail = _later(self._recipe)
        return tail

    @property
    def completed(self) -> int:
        """How many items are complete (all but the one being written)."""
        return self._n

    def parts(self) -> tuple[list[Any], int, Any]:
        """The shared storage, how many of its items this view shows, and the open item (or
        MISSING). For layers built on snapshots (typed partial values) that share storage too."""
        return self._items, self._n, self._open()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))

    __pydantic_serializer__ = _written_as(list)
    """Pydantic writes a view as the list it shows (a partial model's `model_dump_json`)."""


class PartialDict(Mapping[str, Any]):
    """An object still being written: the first `n` members of an append-only dict, then the
    member being written (if any). Read-only; the next snapshot's view may hold more."""

    __slots__ = ("_items", "_key", "_keys", "_n", "_recipe", "_value")
    _recipe: Later
    """(Set only while `_value` is `_LATER`.)"""

    def __init__(
        self, items: dict[str, Any], n: int, key: str | None = None, value: Any = MISSING
    ) -> None:
        self._items = items
        self._n = n
        self._key = key if value is not MISSING else None
        self._value = value
        self._keys: frozenset[str] | None = None

    def _has(self, key: str) -> bool:
        if self._n == len(self._items):
            return key in self._items
        if self._keys is None:  # the storage grew since: remember which keys this view holds
            self._keys = frozenset(itertools.islice(self._items, self._n))
        return key in self._keys

    def __getitem__(self, key: str) -> Any:
        value = self._value
        if value is not MISSING and key == self._key:
            if value is _LATER:
                value = self._value = _later(self._recipe)
            return value
        if self._has(key):
            return self._items[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """`Mapping.get` without the KeyError it raises and catches for a missing key."""
        value = self._value
        if value is not MISSING and key == self._key:
            if value is _LATER:
                value = self._value = _later(self._recipe)
            return value
        if self._has(key):
            return self._items[key]
        return default

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        return (self._value is not MISSING and key == self._key) or self._has(key)

    def __iter__(self) -> Iterator[str]:
        yield from itertools.islice(self._items, self._n)
        if self._value is not MISSING and self._key is not None and not self._has(self._key):
            yield self._key

    def __len__(self) -> int:
        extra = self._value is not MISSING and self._key is not None and not self._has(self._key)
        return self._n + extra

    @property
    def open_key(self) -> str | None:
        """The key whose value is still being written, if any."""
        return self._key if self._value is not MISSING else None

    def parts(self) -> tuple[dict[str, Any], int, str | None, Any]:
        """The shared storage, how many of its members this view shows, and the member being
        written (key and value, or None and MISSING)."""
        return self._items, self._n, self._key, self._open()

    def _open(self) -> Any:
        value = self._value
        if value is _LATER:
            value = self._value = _later(self._recipe)
        return value

    def __repr__(self) -> str:
        return repr(dict(self))

    __pydantic_serializer__ = _written_as(dict)
    """Pydantic writes a view as the dict it shows (a partial model's `model_dump_json`)."""


_new = object.__new__

Level = tuple[Any, int, bool, Any]
"""An open container as a snapshot shows it: its storage, how many members it shows, whether
it is an array, and the key (or index) of the member being written in it."""


Later = tuple[tuple[Level, ...], Any, int, bool, Any, "_LiveString | None", int]
"""The open member of a snapshot's root view, as a recipe built when first read (`_later`): a
snapshot then costs one view and this tuple however deep the value is open (most are never
read below the root). It holds the open containers as they were: storage only grows (a
repeated key copies it), and a container's kind and keys never change, so building later
shows what was there then. Its fields: the open containers but the innermost (`outer`, the
root first: the root's view is the snapshot); the innermost's storage, how many members it
shows, whether it is an array, and the key of the open string in it; the open string (or
None) and how many of its characters are shown. A plain tuple, the cheapest object to make
and drop once per chunk (a class of its own costs three times as much)."""

_LATER: Final = object()
"""The open member of a view whose `_recipe` holds what it is (`Later`): a marker no value can
be (typed layers put their own values, tuples included, in views)."""


def _later(recipe: Later) -> Any:
    """The open member a snapshot's root view noted (`Later`), built."""
    outer, backing, n, array, key, string, length = recipe
    inner = MISSING if string is None else string.show(length)
    level = len(outer)  # the innermost container's, then outwards to the root's child
    while True:
        inner = _view(backing, n, array, key, inner)
        level -= 1
        if not level:
            return inner
        backing, n, array, key = outer[level]


def _view(backing: Any, n: int, array: bool, key: Any, inner: Any) -> Any:
    """`PartialList(backing, n, inner)` or `PartialDict(backing, n, key, inner)`, without the
    `__init__` call (a third of the cost: snapshots make one or more per chunk)."""
    view: Any
    if array:
        view = _new(PartialList)
        view._items, view._n, view._tail = backing, n, inner
    else:
        view = _new(PartialDict)
        view._items, view._n, view._value, view._keys = backing, n, inner, None
        view._key = key if inner is not MISSING else None
    return view


def is_complete(value: Any) -> bool:
    """Whether a value from a snapshot is final (not a string, array or object being written)."""
    return type(value) not in (PartialStr, PartialList, PartialDict)


def plain(value: Any) -> Any:
    """A snapshot value as plain JSON (lists, dicts, str): a copy, for serialising."""
    kind = type(value)
    if kind is PartialStr:
        return str(value)
    if kind is PartialList:
        return [plain(item) for item in value]
    if kind is PartialDict:
        return {key: plain(item) for key, item in value.items()}
    return value


def extends(old: Any, new: Any) -> bool:
    """Whether `new` only adds to `old`: the no-flicker rule between two snapshots.

    A complete value must stay equal; a partial string may only gain a suffix; a partial array
    may only gain items (its last item may grow); a partial object may only gain keys (the value
    being written may grow). MISSING (nothing shown) is extended by anything.
    """
    if old is MISSING:
        return True
    kind = type(old)
    if kind is PartialStr:
        return isinstance(new, str) and new.startswith(old)
    if kind is PartialList:
        if not isinstance(new, Sequence) or isinstance(new, str) or len(new) < len(old):
            return False
        return all(extends(a, b) for a, b in zip(old, new, strict=False))
    if kind is PartialDict:
        if not isinstance(new, Mapping):
            return False
        return all(key in new and extends(item, new[key]) for key, item in old.items())
    return is_complete(new) and _same(old, new)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same(value, b[key]) for key, value in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(_same(x, y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


# -- events for incremental checks ----------------------------------------------------------


class Listener(Protocol):
    """Receives the parser's structural events (see `outform.parse.incremental.Checker`).

    A *slot* is the listener's handle for one position of the document. Events arrive in
    document order; a value completed between two chunks arrives whole through `complete`.
    """

    def root(self) -> Any:
        """The slot of the top-level value."""

    def child(self, slot: Any, key: str | int) -> Any:
        """The slot of the member `key` of `slot`, whose value starts but is not complete."""

    def open(self, slot: Any, kind: Kind) -> None:
        """The value at `slot` starts as an object, an array or a string."""

    def key(self, slot: Any, key: str) -> None:
        """A complete key was read in the object at `slot` (its value is not yet shown)."""

    def complete(self, slot: Any, key: str | int, value: Any) -> None:
        """The member `key` of `slot` is complete with `value` (its slot was never opened)."""

    def grow(self, slot: Any, length: int, head: str) -> None:
        """The string at `slot` has `length` characters so far; `head` holds the first ones."""

    def close(self, slot: Any, value: Any) -> None:
        """The value at `slot` is complete (opened before, or a top-level scalar)."""

    def reset(self) -> None:
        """Forget everything: the parser went back to prose (a tentative start was not JSON)."""


# -- the parser ------------------------------------------------------------------------------

_CHARS = r'[^"\\]*+(?:\\.[^"\\]*+)*+'
"""A string's characters up to its closing quote (or the end), escapes taken whole: unrolled,
so that a run of plain characters costs one step of the regex engine, not one per character
(`(?:[^"\\]|\\.)*` tries an alternation at each one)."""
_STRING = '"' + _CHARS + '"'
_FLAT = r'(?:[^"{}\[\]\\]++|' + _STRING + r")*+"
_NEST1 = r"(?:\{" + _FLAT + r"\}|\[" + _FLAT + r"\])"
_NEST2 = r"(?:\{(?:[^\"{}\[\]\\]++|" + _STRING + "|" + _NEST1 + r")*+\}|\[(?:[^\"{}\[\]\\]++|"
_NEST2 += _STRING + "|" + _NEST1 + r")*+\])"
_RUN_BODY = r'(?:[^"{}\[\],\\]++|' + _STRING + "|" + _NEST2 + r"|(,))"
_OPEN_STRING = '(?:(")' + _CHARS + r"\Z)?"
_RUN = re.compile("()" + _RUN_BODY + "*+" + _OPEN_STRING, re.DOTALL)
"""One run of a container's text, in one call: strings, scalars, whitespace, colons, and whole
containers nested up to two levels deep (an item such as `{"tags": ["a"], "id": 1}`), up to
the next bracket that opens a container not closed yet, closes this one, or an unterminated
string. Group 2 ends up at the run's last comma at this level (a repeated group keeps its last
match). Group 3 is the quote of a string still open at the end of the text (one that does not
end in the middle of an escape), which the run takes in too. (Group 1 is `_STRING_RUN`'s.)"""
_STRING_RUN = re.compile(_CHARS + '(")' + _RUN_BODY + "*+" + _OPEN_STRING, re.DOTALL)
"""The end of a string the text starts inside (group 1: its closing quote), then a run as
`_RUN` (the same groups): one call for the commonest chunk, which ends a string and goes on."""
_STR_BODY = re.compile(_CHARS, re.DOTALL)
_RUN_SLOW = re.compile("()" + _RUN_BODY + "*" + _OPEN_STRING, re.DOTALL)
_STRING_RUN_SLOW = re.compile(_CHARS + '(")' + _RUN_BODY + "*" + _OPEN_STRING, re.DOTALL)
"""The same, without the possessive outer repeat: CPython 3.11's `re` can fail on a capturing
group inside a possessive repeat ("The span of capturing group is wrong")."""
_UNITS = re.compile(
    r"(?:[^\\]++|\\[^u]|(\\u[dD][89abAB][0-9a-fA-F]{2})|\\u[0-9a-fA-F]{4})*", re.DOTALL
)
_PENDING_ESCAPE = re.compile(r"(?:\\u[dD][89abAB][0-9a-fA-F]{2})?(?:\\(?:u[0-9a-fA-F]{0,3})?)?")
_CONTROL = re.compile(r"[\x00-\x1f]")
_WS = re.compile(r"[ \t\n\r]*")
_LEAD_COMMA = re.compile(r"[ \t\n\r]*,")
_KEY_PART = re.compile(r"[ \t\n\r]*(" + _STRING + r")[ \t\n\r]*:[ \t\n\r]*", re.DOTALL)
_KEY_PREFIX = re.compile(r"[ \t\n\r]*(" + _STRING + r")[ \t\n\r]*(?::[ \t\n\r]*)?", re.DOTALL)
_SCALAR_PREFIX = (
    r"(?:-?(?:0|[1-9][0-9]*+)?(?:\.[0-9]*+)?(?:[eE][+-]?[0-9]*+)?"
    r"|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?)"
)
_ARRAY_PARTIAL = re.compile(r"[ \t\n\r]*" + _SCALAR_PREFIX)
_OBJECT_PARTIAL = re.compile(
    r"[ \t\n\r]*(" + _STRING + r")[ \t\n\r]*:[ \t\n\r]*" + _SCALAR_PREFIX, re.DOTALL
)
_ROOT_TOKEN = re.compile(r"[-+.0-9A-Za-z]*")
_LITERALS = {"t": "true", "f": "false", "n": "null"}
_SCALAR_STARTS = frozenset("-0123456789tfn")
_OPEN_TAG = re.compile(r"<(" + "|".join(_REASONING_TAGS) + r")\b[^>\n]{0,200}>", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})[ \t]*([A-Za-z][\w+.-]*)?[ \t]*(?:\r?\n|(?=[{\[]))")
_PROSE = re.compile(r"(`{3,}|~{3,})|([{\[])|<")
_CLOSE_TAGS = {tag: re.compile(rf"</{tag}\s*>", re.IGNORECASE) for tag in _REASONING_TAGS}

_TENTATIVE_WINDOW = 4096
"""How far a bracket found in prose may go before it counts as the JSON for good (bounds the
text read twice when it turns out to be prose)."""
_LONG_STRING = 4096
"""Longer partial strings are shown again only after growing by an eighth, so that copying
them for snapshots costs linear time overall."""

# parser phases
(
    _START,
    _PROSE_PHASE,
    _FENCE,
    _SKIP_FENCE,
    _REASON,
    _VALUE,
    _SCALAR,
    _SCALAR_END,
    _DONE,
    _BROKEN,
) = range(10)
# separator state of a container: nothing yet, after a member, after a comma
_OPEN, _ITEM, _COMMA = 0, 1, 2


class _SyntaxError(Exception):
    """Internal: the text is not JSON (message, absolute offset)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class _Frame:
    """An open container. Live frames (open when a chunk ended) own append-only storage."""

    __slots__ = ("array", "backing", "comma", "cp", "key", "live", "sep", "slot", "start")

    def __init__(self, array: bool, start: int) -> None:
        self.array = array
        self.start = start
        self.live = False
        self.backing: Any = None
        self.cp = start + 1
        """Where the text not yet turned into members starts."""
        self.comma = -1
        """The last comma at this level (absolute offset), -1 if none since `cp`."""
        self.sep = _OPEN
        self.key: str | int | None = None
        self.slot: Any = None


_NOTHING_SHOWN: Final = PartialStr("")


class _LiveString:
    """A string value open when a chunk ended: decoded incrementally, shown as it grows."""

    __slots__ = ("head", "key", "length", "parts", "raw", "showing", "shown", "slot", "start")

    def __init__(self, start: int, key: str | int | None, slot: Any) -> None:
        self.start = start
        self.raw = start + 1
        """Where the text not yet decoded starts (always an escape boundary)."""
        self.key = key
        self.slot = slot
        self.parts: list[str] = []
        self.length = 0
        self.head = ""
        """The first characters (up to 256), kept for the listener only."""
        self.showing = 0
        """How many characters a snapshot shows (`due`)."""
        self.shown = _NOTHING_SHOWN
        """The longest text made for a snapshot (`show`)."""

    def text(self) -> str:
        joined = "".join(self.parts)
        self.parts = [joined] if joined else []
        return joined

    def due(self) -> int:
        """How many characters a snapshot taken now shows: all of them, but a long string
        only once it grew by an eighth since it was last shown, so that the copies made for
        snapshots cost linear time overall."""
        showing, length = self.showing, self.length
        if length != showing and (showing < _LONG_STRING or length >= showing + showing // 8):
            showing = self.showing = length
        return showing

    def show(self, length: int) -> PartialStr:
        """The first `length` characters, as shown (made once per length, when first read)."""
        shown = self.shown
        if len(shown) != length:
            text = self.text()
            shown = PartialStr(text if len(text) == length else text[:length])
            if length > len(self.shown):
                self.shown = shown
        return shown


class PartialParser:
    """Feed a reply chunk by chunk; read :attr:`value` (the partial value) at any time.

    `roots` names the top-level containers looked for in prose ("object", "array"); a reply
    that starts with JSON is read whatever its root. `scalars` accepts a string, number or
    literal as the whole reply. `extract=False` requires the reply to be JSON from its first
    character (the pipeline's level *off*). `partial` names the kinds of value shown before
    they are complete ("string", "array", "object"; numbers and literals never are): leave one
    out and such values appear only once complete. `listener` receives structural events
    (incremental schema checks).

    Syntax errors do not raise: :attr:`error` is set and the value stays as it was.
    """

    __slots__ = (
        "__dict__",
        "_base",
        "_buf",
        "_close_tag",
        "_fence",
        "_in_fence",
        "_instr",
        "_keyed",
        "_keys",
        "_live",
        "_outer",
        "_phase",
        "_pos",
        "_quote",
        "_runs",
        "_scalar",
        "_scalar_at",
        "_scalar_end",
        "_show_all",
        "_show_strings",
        "_shown_version",
        "_snapshot",
        "_stack",
        "_tentative",
        "_value",
        "_version",
        "end",
        "error",
        "extract",
        "listener",
        "max_depth",
        "partial",
        "prose",
        "received",
        "roots",
        "scalars",
        "start",
        "too_deep",
        "too_deep_at",
    )
    """Slots: the hot loop reads and writes a few dozen attributes per chunk. Without them,
    more than 30 attributes (CPython's limit for keys shared between instances) move an
    instance's attributes into a dict of its own, where each access costs more (6% of the
    parser's instructions on the stream of issue 9). `__dict__` stays for attributes not
    listed (a method replaced on one instance, as tests do); it costs the listed ones
    nothing."""

    def __init__(
        self,
        *,
        roots: frozenset[str] = frozenset({"object", "array"}),
        scalars: bool = True,
        extract: bool = True,
        partial: frozenset[str] = frozenset({"string", "array", "object"}),
        listener: Listener | None = None,
        max_depth: int = 200,
    ) -> None:
        self.roots = roots
        self.scalars = scalars
        self.extract = extract
        self.partial = partial
        self._show_strings = "string" in partial
        self._show_all = {"array", "object"} <= partial
        self.listener = listener
        self.max_depth = max_depth
        self.error: Violation | None = None
        """The syntax error that stopped the parser, if any."""
        self.too_deep = False
        """The value followed nests deeper than `max_depth`, and the parser stopped there. The
        error is the stream parser's to raise, once it knows the pipeline refuses the reply for
        it: a value that begins with a run of openers (`[[[…`) may turn out to be prose (see
        `streaming.StreamParser._deep_run`). A tentative value (after prose) nested too deep is
        read as prose again at once (see `_rewind`)."""
        self.too_deep_at = -1
        """Where (a character of the reply) the bracket one level too deep was opened."""
        self.received = 0
        """Characters received so far."""
        self.start: int | None = None
        """Where the JSON value starts in the reply (None before it is found)."""
        self.end: int | None = None
        """Where the top-level value ended (the rest of the reply is ignored)."""
        self.prose = False
        """Words came before the value: prose, or a fenced block of code passed over (what
        reasoning written without its opening tag begins with)."""
        self._buf = ""
        self._base = 0
        self._pos = 0
        self._phase = _START
        self._stack: list[_Frame] = []
        self._instr = False
        self._quote = 0
        self._live: _LiveString | None = None
        self._scalar_at = 0
        self._tentative = -1
        self._close_tag: re.Pattern[str] | None = None
        self._fence = ""
        self._in_fence = False
        self._keyed = -1
        self._runs = (-1, -1, 0)
        """The run of openers waited on (see `_opens_json`): where it starts, where its last
        opener met so far ends (absolute offsets), and how many openers it holds."""
        self._scalar: Any = None
        self._scalar_end = 0
        self._value: Any = MISSING
        self._version = 0
        self._shown_version = -1
        self._snapshot: Any = MISSING
        self._keys: dict[str, str] = {}
        """Keys read before, by the text that wrote them (`"name": `)."""
        self._outer: tuple[Level, ...] = ()
        """The live containers but the innermost, as snapshots show them (`Later`): one
        is added when a container inside it goes live, the last dropped when the innermost
        closes (nothing else changes a container that holds an open one)."""

    # -- public -----------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """The top-level value is complete."""
        return self._phase == _DONE

    @property
    def broken(self) -> bool:
        return self._phase == _BROKEN

    @property
    def started(self) -> bool:
        """The JSON value has been found (and is not a tentative start in prose)."""
        return self._phase >= _VALUE and self._tentative < 0 and self._phase != _BROKEN

    @property
    def in_string(self) -> bool:
        """The text read so far ends inside a string (a key or a value) of the JSON value
        followed: a reasoning tag met there is the string's text."""
        return self._phase == _VALUE and self._instr

    @property
    def value(self) -> Any:
        """The value so far (MISSING before anything can be shown). Costs one view: the open
        containers below the root are built when first read."""
        version = self._version
        if self._shown_version == version:
            return self._snapshot
        self._shown_version = version
        outer = self._outer  # (a level per live container but the innermost: two are open)
        if outer and self._phase == _VALUE and self._tentative < 0 and self._show_all:
            top = self._stack[-1]
            if top.live:
                # The common case, once per chunk, written out: one view, of the root, whose
                # open member is a recipe (`Later`) for the views below it and the open string.
                backing = top.backing
                live = self._live
                later: Later
                if live is None or not self._show_strings:
                    later = (outer, backing, len(backing), top.array, None, None, 0)
                else:
                    length = live.length
                    if live.showing < _LONG_STRING:
                        live.showing = length
                    else:
                        length = live.due()
                    later = (outer, backing, len(backing), top.array, live.key, live, length)
                backing, n, array, key = outer[0]
                view: Any
                if array:
                    view = _new(PartialList)
                    view._items = backing
                    view._n = n
                    view._tail = _LATER
                else:
                    view = _new(PartialDict)
                    view._items = backing
                    view._n = n
                    view._value = _LATER
                    view._keys = None
                    view._key = key
                view._recipe = later
                self._snapshot = view
                return view
        snapshot = self._snapshot = self._build()
        return snapshot

    def feed(self, text: str) -> bool:
        """Read the next chunk. Returns whether the value shown changed."""
        if not text:
            return False
        self.received += len(text)
        if self._phase >= _DONE:
            return False
        live = self._live
        if (
            live is not None
            and '"' not in text
            and "\\" not in text
            and self._instr
            and live.raw == self._pos == self._base + len(self._buf)
            and self._tentative < 0
            and (text.isprintable() or _CONTROL.search(text) is None)
        ):
            # The chunk continues an open string with nothing pending: no scanning, no parsing.
            size = len(text)
            live.parts.append(text)
            live.length += size
            self._pos = self._base = live.raw = live.raw + size
            self._buf = ""
            self._version += 1
            if self.listener is not None:
                self._grew(live, text)
            return True
        before = self._version
        self._buf += text
        try:
            if self._phase == _VALUE and self._tentative < 0:
                self._scan()
            else:
                self._run()
        except _SyntaxError as error:
            self._fail(error)
        if len(self._buf) > 1024 or self._phase >= _DONE:
            self._trim()
        return self._version != before

    def skip(self, count: int) -> None:
        """Take the next `count` characters of the reply as read, without reading them (text
        the reply discards: reasoning whose closing tag has arrived). Only before any text was
        fed, so that offsets stay those of the reply."""
        if self.received or self._buf:
            raise ValueError("skip() only before the first feed()")
        self.received = self._base = self._pos = count

    def finish(self) -> Any:
        """The complete value (plain JSON). Raises OutputError when the reply ended before it
        was complete, or is not JSON."""
        if self._phase in (_SCALAR, _SCALAR_END):
            try:
                if self._phase == _SCALAR:
                    self._scalar = self._token(len(self._buf))
                    self._scalar_end = self._base + len(self._buf)
                self._root_done(self._scalar, self._scalar_end - 1, opened=False)
            except _SyntaxError as error:
                self._fail(error)
        if self._phase == _DONE:
            return self._value
        if self.error is not None:
            violation = self.error
        elif self._phase < _VALUE or self._tentative >= 0:
            violation = _syntax("the reply contains no JSON value")
        else:
            violation = _syntax(f"the reply ends inside {self._where()}")
        raise OutputError(
            "the reply is not a complete JSON value", hint=RetryHint((violation,)), where=None
        )

    # -- driver -----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            phase = self._phase
            if phase < _VALUE:
                self._prefix()
                if self._phase < _VALUE:
                    return
                continue
            if phase >= _DONE:
                return
            try:
                if phase >= _SCALAR:
                    self._scan_scalar()
                else:
                    self._scan()
                if self._tentative >= 0 and (
                    self._phase == _DONE
                    or self._shows_something()
                    or self._base + len(self._buf) - self._tentative > _TENTATIVE_WINDOW
                ):
                    self._tentative = -1
                return
            except _SyntaxError:
                if self._tentative < 0 or self._nested_past_run():
                    raise
                self._rewind()

    def _nested_past_run(self) -> bool:
        """Whether the tentative value failed by nesting past `max_depth` beyond its first run
        of openers (`{"a": {"a": …`). It is then read no further, as a value that was not
        tentative would be (the final parse decides): read again from its next bracket, each
        of its brackets would begin a value nested all but one level as deep, `max_depth`
        times the work of reading it once. (A run of openers alone is prose: see
        `_rewind`.)"""
        if not self.too_deep:
            return False
        run_end = opener_run_end(self._buf, self._tentative - self._base)
        return run_end is None or self.too_deep_at >= run_end + self._base

    def _rewind(self) -> None:
        """A tentative start was not JSON: read it as prose again, from the next character.
        One nested too deep is read as prose up to the end of its run of openers (the pipeline
        reads them alike: see `extract.opener_run_end`), so a long run is not read again from
        each of its brackets; its depth is the pipeline's to judge, if it is JSON."""
        self._phase = _PROSE_PHASE
        self._pos = self._tentative + 1
        if self.too_deep:
            self.too_deep = False
            run_end = opener_run_end(self._buf, self._tentative - self._base)
            if run_end is not None:
                self._pos = run_end + self._base
        self._tentative = -1
        self._stack = []
        self._outer = ()
        self._instr = False
        self._live = None
        self._value = MISSING
        self.start = None
        self._version += 1
        if self.listener is not None:
            self.listener.reset()

    def _fail(self, error: _SyntaxError) -> None:
        self._phase = _BROKEN
        near = self._buf[max(0, error.offset - self._base - 20) : error.offset - self._base + 20]
        self.error = _syntax(f"{error.message} at character {error.offset} (near {clip(near)!r})")
        self._version += 1

    def _trim(self) -> None:
        """Drop the text no longer needed: everything before the earliest open position."""
        if self._phase >= _DONE:
            self._buf = ""
            return
        keep = self._pos
        if self._tentative >= 0:
            keep = min(keep, self._tentative)
        elif self._phase == _VALUE:
            if self._stack:
                top = self._stack[-1]
                if top.cp >= 0:
                    keep = min(keep, top.cp)
            if self._live is not None:
                keep = min(keep, self._live.raw)
            elif self._instr:
                keep = min(keep, self._quote)
        elif self._phase == _SCALAR:
            keep = min(keep, self._scalar_at)
        elif self._phase == _SCALAR_END and self._tentative >= 0:
            keep = min(keep, self._tentative)
        drop = keep - self._base
        if drop > 4096 or (drop > 0 and drop * 2 > len(self._buf)):
            self._buf = self._buf[drop:]
            self._base = keep

    # -- before the value: reasoning, prose, fences ------------------------------------------

    def _prefix(self) -> None:
        buf, base = self._buf, self._base
        end = len(buf)
        pos = self._pos - base
        while pos < end:
            phase = self._phase
            if phase in (_PROSE_PHASE, _SKIP_FENCE):
                self.prose = True
            if phase in (_START, _FENCE):
                pos = _skip(_WS, buf, pos)
                if pos >= end:
                    break
                char = buf[pos]
                if char in "{[":
                    if self.extract:
                        opens = self._opens_json(buf, pos)
                        if opens is None and self._runs[2] <= self.max_depth:
                            break  # what follows the run of openers decides it
                        if opens is False:  # prose, as the extraction reads it: `[Draft]`
                            self._phase = _PROSE_PHASE if phase == _START else _SKIP_FENCE
                            pos = self._runs[1] - base
                            self._runs = (-1, -1, 0)
                            continue
                        self._runs = (-1, -1, 0)
                    self._start_container(pos + base, tentative=False)
                    return
                scalar = self.scalars and (char == '"' or char in _SCALAR_STARTS)
                if not self.extract and not scalar:
                    raise _SyntaxError("the reply does not start with JSON", pos + base)
                if char == "<" and phase == _START:
                    match = _OPEN_TAG.match(buf, pos)
                    if match:
                        self._close_tag = _CLOSE_TAGS[match.group(1).lower()]
                        self._phase = _REASON
                        pos = match.end()
                        continue
                    if end - pos < 220 and ">" not in buf[pos:end] and "\n" not in buf[pos:end]:
                        break  # maybe a tag not yet complete
                    self._phase = _PROSE_PHASE
                    continue
                if char in "`~":
                    if phase == _FENCE:  # an empty fence closes
                        self._phase = _PROSE_PHASE
                        pos = _skip(_FENCE_MARK, buf, pos)
                        continue
                    decided = self._fence_at(buf, pos, end)
                    if decided is None:
                        break
                    pos = decided
                    continue
                if scalar:
                    if char in _LITERALS:
                        literal = _LITERALS[char]
                        have = buf[pos : pos + len(literal)]
                        if have != literal:
                            if literal.startswith(have) and pos + len(have) == end:
                                break  # not decided yet
                            self._phase = _PROSE_PHASE if phase == _START else _SKIP_FENCE
                            continue
                    self._start_scalar(pos + base, tentative=phase == _START and self.extract)
                    return
                if phase == _FENCE:
                    self._phase = _SKIP_FENCE
                    continue
                self._phase = _PROSE_PHASE
            elif phase == _PROSE_PHASE:
                match = _PROSE.search(buf, pos)
                if match is None:
                    pos = max(pos, end - 16)
                    break
                at = match.start()
                if match.group(1):
                    decided = self._fence_at(buf, at, end)
                    if decided is None:
                        pos = at
                        break
                    pos = decided
                    if self._phase == _PROSE_PHASE:
                        pos = match.end()
                    continue
                if match.group(2):
                    kind = "object" if match.group(2) == "{" else "array"
                    if kind in self.roots:
                        self._start_container(at + base, tentative=True)
                        return
                    pos = at + 1
                    continue
                tag = _OPEN_TAG.match(buf, at)
                if tag:
                    self._close_tag = _CLOSE_TAGS[tag.group(1).lower()]
                    self._phase = _REASON
                    pos = tag.end()
                    continue
                if end - at < 220 and ">" not in buf[at:end] and "\n" not in buf[at:end]:
                    pos = at
                    break
                pos = at + 1
            elif phase == _REASON:
                assert self._close_tag is not None
                match = self._close_tag.search(buf, pos)
                if match is None:
                    pos = max(pos, end - 24)
                    break
                pos = match.end()
                self._phase = _START
            else:  # _SKIP_FENCE: a fence that does not hold JSON
                found = buf.find("\n" + self._fence, pos)
                if found < 0:
                    pos = max(pos, end - len(self._fence) - 1)
                    break
                pos = found + 1 + len(self._fence)
                self._phase = _PROSE_PHASE
        self._pos = pos + base

    def _opens_json(self, buf: str, pos: int) -> bool | None:
        """Whether the run of openers at `pos`, met where the value may begin (the reply's
        start, after reasoning, in a fence), begins JSON as the extraction judges it
        (`extract.opens_json` of its innermost opener): `[Draft]`, `[ see below ]` or `{`
        then a fence are prose, which `outform.parse` reads past, and so does the parser; a
        backslash (`{\\"a\\": 1}`) begins JSON the pipeline unescapes. None while what
        follows the run does not decide it yet. The run met so far is kept (`_runs`: its
        start, its end, how many openers), so that a long run is not read again with each
        chunk; one of more than `max_depth` openers is not waited on (see `_prefix`)."""
        base = self._base
        start, known, count = self._runs
        at = pos
        if start == pos + base and known > start:
            at = known - 1 - base  # (resumed at its last opener met)
            count -= 1
        else:
            count = 0
        run_end = opener_run_end(buf, at)
        assert run_end is not None  # (it starts with an opener)
        count += buf.count("[", at, run_end) + buf.count("{", at, run_end)
        self._runs = (pos + base, run_end + base, count)
        after = _skip(_WS, buf, run_end)
        if after < len(buf) and buf[after] == "\\":
            return True
        return opens_json(buf, run_end - 1, final=False)

    def _fence_at(self, buf: str, pos: int, end: int) -> int | None:
        """At a fence marker: where reading continues, or None when the chunk ended too soon."""
        match = _FENCE_OPEN.match(buf, pos)
        if match is None:
            marker = _skip(_FENCE_MARK, buf, pos)
            if marker >= end:
                return None  # the marker may go on in the next chunk
            if marker - pos < 3:  # inline code, not a fence
                self._phase = _PROSE_PHASE
                return marker
            rest = buf[marker:end]
            if "\n" not in rest and len(rest) < 40 and not rest.strip(" \t").startswith(("{", "[")):
                return None
            self._phase = _PROSE_PHASE
            return marker
        lang = (match.group(2) or "").lower()
        self._fence = match.group(1)
        self._phase = _FENCE if not lang or lang in _JSON_LANGS else _SKIP_FENCE
        self._in_fence = self._phase == _FENCE
        return match.end()

    def _start_container(self, at: int, *, tentative: bool) -> None:
        self.start = at
        self._phase = _VALUE
        self._tentative = at if tentative else -1
        self._stack = [_Frame(self._buf[at - self._base] == "[", at)]
        self._outer = ()
        self._pos = at + 1

    def _start_scalar(self, at: int, *, tentative: bool) -> None:
        self.start = at
        self._tentative = at if tentative else -1
        if self._buf[at - self._base] == '"':
            self._phase = _VALUE
            self._stack = []
            self._outer = ()
            self._instr = True
            self._quote = at
            self._pos = at + 1
        else:
            self._phase = _SCALAR
            self._scalar_at = at
            self._pos = at

    # -- the value ---------------------------------------------------------------------------

    def _scan(self) -> None:
        """Advance over the new text, then show what it completed (the parser's hot loop).

        Pushes and pops containers and finds where strings end: one regex call per run of text
        between brackets (a chunk that starts inside a string ends it in the same call), C
        calls for whole members; Python only for the brackets that open or close containers
        still open at a chunk's end, and for the strings open there."""
        buf = self._buf
        base = self._base
        end = len(buf)
        pos = self._pos - base
        stack = self._stack
        while pos < end:
            if self._instr:
                match = None
                if stack:
                    try:
                        match = _STRING_RUN.match(buf, pos)
                    except SystemError:  # pragma: no cover - the CPython bug noted at _RUN_SLOW
                        match = _STRING_RUN_SLOW.match(buf, pos)
                if match is None:  # the string goes on past the text, or is a top-level one
                    stop = buf.find('"', pos)
                    if stop < 0:
                        stop = end
                    if "\\" in buf[pos:stop]:
                        found = _STR_BODY.match(buf, pos)
                        assert found is not None
                        stop = found.end()
                    if stop >= end or buf[stop] == "\\":
                        pos = stop
                        break
                    assert not stack
                    self._instr = False
                    pos = stop + 1
                    live = self._live
                    if live is not None and live.start == self._quote:
                        self._root_done(
                            self._close_string(live, stop + base), stop + base, opened=True
                        )
                    else:  # read whole
                        value = self._decode(buf[self._quote - base + 1 : stop], self._quote + 1)
                        self._root_done(value, stop + base, opened=False)
                    self._pos = pos + base
                    return
                self._instr = False
                top = stack[-1]
                live = self._live
                if live is not None and live.start == self._quote:
                    # The string shown as it grew is complete: its value joins its container.
                    close = match.start(1) + base
                    self._attach(top, live.key, self._close_string(live, close), close + 1)
            else:
                top = stack[-1]
                try:
                    match = _RUN.match(buf, pos)
                except SystemError:  # pragma: no cover - the CPython bug noted at _RUN_SLOW
                    match = _RUN_SLOW.match(buf, pos)
                assert match is not None  # the pattern matches the empty string
            stop = match.end()
            comma = match.start(2)
            if comma >= 0:
                top.comma = comma + base
            if stop >= end:
                pos = stop
                if match.lastindex == 3:  # a string open at the end of the text
                    self._instr = True
                    self._quote = match.start(3) + base
                break
            char = buf[stop]
            pos = stop + 1
            if char == '"':
                self._instr = True
                self._quote = stop + base
            elif char in "{[":
                if len(stack) >= self.max_depth:
                    self.too_deep = True
                    self.too_deep_at = stop + base
                    raise _SyntaxError(
                        f"the value nests deeper than {self.max_depth} levels", stop + base
                    )
                stack.append(_Frame(char == "[", stop + base))
            elif char in "}]":
                if top.array != (char == "]"):
                    raise _SyntaxError(
                        f"{char!r} closes {'an array' if top.array else 'an object'}", stop + base
                    )
                if top.live:
                    self._close_live(top, stop + base)  # pops it once its members are read
                else:
                    stack.pop()
                    if not stack:
                        self._close_whole_root(top, stop + base)
                if not stack:
                    self._pos = pos + base
                    return
            else:
                raise _SyntaxError("a backslash outside a string", stop + base)
        self._pos = pos + base
        # The end of the chunk (the value is still open: a close that ends it returned above):
        # make what opened in it live, read the innermost container's new members, and the
        # member being written in it.
        if stack:
            top = stack[-1]
            if not top.live:
                self._go_live()
            cp = top.cp
            if cp >= 0:
                comma = top.comma
                if comma >= cp:
                    if comma == cp and top.sep == _ITEM:  # the comma right after a member
                        top.sep = _COMMA
                        top.cp = cp = comma + 1
                        top.comma = -1
                    else:
                        self._upto_comma(top)
                        cp = top.cp
                if self._instr:
                    if self._live is None and (self._quote != cp or top.sep == _ITEM or top.array):
                        self._open_string(top, cp)  # (else a key being written: shown later)
                elif cp - base < end:
                    self._tail(top, cp)
        else:
            self._go_live()  # (a top-level string)
        live = self._live
        if live is not None and self._instr:
            start = live.raw - base
            if start == pos:
                return  # nothing new
            raw = buf[start:pos]
            if "\\" in raw or (not raw.isprintable() and _CONTROL.search(raw) is not None):
                self._grow(live)
                return
            size = len(raw)
            live.parts.append(raw)
            live.length += size
            live.raw += size
            self._version += 1
            if self.listener is not None:
                self._grew(live, raw)

    def _scan_scalar(self) -> None:
        """A top-level number or literal. It is the value only if nothing but whitespace (or
        the closing fence) follows, so it is shown at the end: "1. First…" is prose."""
        base, buf = self._base, self._buf
        if self._phase == _SCALAR:
            stop = _skip(_ROOT_TOKEN, buf, self._scalar_at - base)
            self._pos = stop + base
            if stop >= len(buf):
                return
            self._scalar = self._token(stop)
            self._scalar_end = stop + base
            self._phase = _SCALAR_END
        stop = _skip(_WS, buf, self._pos - base)
        self._pos = stop + base
        if stop >= len(buf):
            return
        if (self._in_fence and buf[stop] in "`~") or self._tentative < 0:
            self._root_done(self._scalar, self._scalar_end - 1, opened=False)
            return
        raise _SyntaxError("a value followed by prose", self._scalar_at)

    def _token(self, stop: int) -> Any:
        token = self._buf[self._scalar_at - self._base : stop]
        try:
            return _read(token)
        except orjson.JSONDecodeError:
            raise _SyntaxError(
                f"{clip(token, 20)!r} is not a JSON value", self._scalar_at
            ) from None

    def _root_done(self, value: Any, last: int, *, opened: bool) -> None:
        self._phase = _DONE
        self._value = value
        self.end = last + 1
        self._tentative = -1
        self._version += 1
        listener = self.listener
        if listener is not None and not opened:
            listener.close(listener.root(), value)

    def _close_whole_root(self, frame: _Frame, close: int) -> None:
        """The top-level container opened and closed within one chunk: one orjson call."""
        text = self._buf[frame.start - self._base : close - self._base + 1]
        try:
            value = _read(text)
        except orjson.JSONDecodeError as exc:
            raise _SyntaxError(_reason(exc), frame.start + exc.pos) from None
        self._root_done(value, close, opened=False)

    def _close_live(self, frame: _Frame, close: int) -> None:
        """A live container closed: add its last members, hand it to its parent."""
        if frame.cp != close or frame.sep == _COMMA:  # (else its last member was just added)
            self._members(frame, close)
        stack = self._stack
        stack.pop()
        self._outer = self._outer[:-1]
        value = frame.backing
        listener = self.listener
        if listener is not None:
            listener.close(frame.slot, value)
        self._version += 1
        if not stack:
            self._root_done(value, close, opened=True)
            return
        self._attach(stack[-1], frame.key, value, close + 1)

    def _attach(self, parent: _Frame, key: str | int | None, value: Any, after: int) -> None:
        backing = parent.backing
        if parent.array:
            backing.append(value)
        else:  # (the key is a str)
            if key in backing:  # a repeated key: copy, so older snapshots stay as shown
                backing = parent.backing = dict(backing)
            backing[key] = value
        parent.sep = _ITEM
        parent.cp = after
        parent.comma = -1

    def _go_live(self) -> None:
        """At the end of a chunk in which containers opened: make each live (its own storage,
        shown from now on), reading its parent's members up to it; or a top-level string."""
        stack = self._stack
        listener = self.listener
        first = len(stack)
        while first and not stack[first - 1].live:
            first -= 1
        for index in range(first, len(stack)):
            frame = stack[index]
            if index:
                parent = stack[index - 1]
                key = frame.key = self._open_member(parent, frame.start)
                parent.cp = -1
                backing = parent.backing
                self._outer += ((backing, len(backing), parent.array, key),)
                slot = None if listener is None else listener.child(parent.slot, key)
            else:
                frame.key = None
                slot = None if listener is None else listener.root()
            frame.live = True
            frame.backing = [] if frame.array else {}
            frame.slot = slot
            if listener is not None:
                listener.open(slot, "array" if frame.array else "object")
            self._version += 1
        if not stack and self._instr and self._live is None:  # a top-level string
            self._live = _LiveString(self._quote, None, None)
            if listener is not None:
                self._live.slot = listener.root()
                listener.open(self._live.slot, "string")
            self._version += 1

    def _open_member(self, frame: _Frame, child: int) -> str | int:
        """Read `frame`'s members up to a child that starts at `child`; return the child's key."""
        cp = frame.cp
        comma = frame.comma
        if comma >= cp:
            if comma == cp and frame.sep == _ITEM:  # the comma right after a member
                frame.sep = _COMMA
                frame.cp = cp = comma + 1
                frame.comma = -1
            else:
                self._upto_comma(frame)
                cp = frame.cp
        elif frame.sep == _ITEM:
            raise _SyntaxError("a comma is missing", child)
        base = self._base
        if frame.array:
            if child != cp and self._buf[cp - base : child - base].strip(" \t\n\r"):
                raise _SyntaxError("a value is not followed by a comma", cp)
            return len(frame.backing)
        head = self._buf[cp - base : child - base]
        key = self._keys.get(head)
        return key if key is not None else self._member_key(head, cp)

    def _member_key(self, head: str, at: int) -> str:
        """The key of an object member whose value starts after `head` (`"name": `)."""
        key = self._keys.get(head)  # the same few keys come back in every item
        if key is None:
            match = _KEY_PART.fullmatch(head)
            if match is None:
                raise _SyntaxError("an object member needs a key and a colon", at)
            key = self._key(match.group(1), at)
            if len(self._keys) < 256 and len(head) <= 64:
                self._keys[head] = key
        return key

    def _upto_comma(self, frame: _Frame) -> None:
        """Members between the checkpoint and the last comma at this level."""
        comma = frame.comma
        start = frame.cp
        sep = frame.sep
        frame.sep = _COMMA
        frame.cp = comma + 1
        frame.comma = -1
        if sep == _ITEM and comma == start:  # the comma right after a member: the common case
            return
        base = self._base
        text = self._buf[start - base : comma - base]
        if sep == _ITEM:
            if not text.strip(" \t\n\r"):
                return
            lead = _LEAD_COMMA.match(text)
            if lead is None:
                raise _SyntaxError("a comma is missing", start)
            text = text[lead.end() :]
            start += lead.end()
        if not self._add(frame, text, start):
            raise _SyntaxError("a value is missing before a comma", comma)

    def _members(self, frame: _Frame, close: int) -> None:
        """Members between the checkpoint and the closing bracket."""
        start = frame.cp
        sep = frame.sep
        frame.cp = close
        if start == close:  # the bracket right after a member, a comma or the opening one
            if sep == _COMMA:
                raise _SyntaxError("a trailing comma", close)
            return
        base = self._base
        text = self._buf[start - base : close - base]
        if sep == _ITEM:
            lead = _LEAD_COMMA.match(text)
            if lead is None:
                if text.strip(" \t\n\r"):
                    raise _SyntaxError("a comma is missing", start)
                return
            text = text[lead.end() :]
            start += lead.end()
        if self._add(frame, text, start):
            frame.sep = _ITEM
        elif sep != _OPEN:
            raise _SyntaxError("a trailing comma", close)

    def _add(self, frame: _Frame, text: str, start: int) -> bool:
        """Complete members, as written between two separators: one orjson call. False when
        the text holds none (only whitespace)."""
        array = frame.array
        wrapped = "[" + text + "]" if array else "{" + text + "}"
        try:  # `_read`'s common case written out: a call fewer per member
            parsed = _loads(wrapped)
        except orjson.JSONDecodeError:
            parsed = None  # (a container's text never reads as null)
        if parsed is None or not ordinary_numbers(wrapped):
            try:
                parsed = _read(wrapped)
            except orjson.JSONDecodeError as exc:
                raise _SyntaxError(_reason(exc), start + max(0, exc.pos - 1)) from None
        if not parsed:
            return False
        backing = frame.backing
        listener = self.listener
        if array:
            index = len(backing)
            backing.extend(parsed)
            if listener is not None:
                slot = frame.slot
                for offset, item in enumerate(parsed):
                    listener.complete(slot, index + offset, item)
        else:
            for key in parsed:
                if key in backing:  # a repeated key: copy, so older snapshots keep the old values
                    backing = frame.backing = dict(backing)
                    break
            backing.update(parsed)
            if listener is not None:
                slot = frame.slot
                for key, item in parsed.items():
                    listener.complete(slot, key, item)
        self._version += 1
        return True

    def _tail(self, frame: _Frame, cp: int) -> None:
        """The text after the innermost container's last member or comma, at the end of a
        chunk (not a string): a member complete but for its separator, or one being written."""
        text = self._buf[cp - self._base :]
        stripped = text.rstrip(" \t\n\r")
        if not stripped:
            return
        if frame.sep == _ITEM:
            raise _SyntaxError("a comma is missing", cp)
        if stripped[-1] in '"}]' or len(stripped) < len(text):
            # Looks complete: a string, a container, or a scalar followed by whitespace; or
            # a key whose value has not started (checked first: orjson would raise on it).
            named = None if frame.array else _KEY_PREFIX.fullmatch(text)
            if named is not None:
                if self.listener is not None:
                    self._early_key(frame, named.group(1))
                return
            try:
                self._add(frame, stripped, cp)
            except _SyntaxError:
                raise _SyntaxError("not a JSON value", cp) from None
            frame.sep = _ITEM
            frame.cp = self._base + len(self._buf)
            return
        partial = (_ARRAY_PARTIAL if frame.array else _OBJECT_PARTIAL).fullmatch(text)
        if partial is None:
            raise _SyntaxError("not a JSON value", cp)
        if not frame.array and self.listener is not None:
            self._early_key(frame, partial.group(1))

    def _open_string(self, frame: _Frame, cp: int) -> None:
        """A string open at the end of the chunk in the innermost container: a key being
        written (shown later, with its value), or a value shown as it grows."""
        quote = self._quote
        head = "" if quote == cp else self._buf[cp - self._base : quote - self._base]
        blank = not head.strip(" \t\n\r")
        sep = frame.sep
        if blank and sep != _ITEM and not frame.array:
            return  # a key being written
        if sep == _ITEM:
            raise _SyntaxError("a comma is missing", cp)
        key: str | int | None
        if frame.array:
            if not blank:
                raise _SyntaxError("a value is not followed by a comma", cp)
            key = len(frame.backing)
        else:
            key = self._keys.get(head)
            if key is None:
                key = self._member_key(head, cp)
        listener = self.listener
        slot = None
        if listener is not None:
            slot = listener.child(frame.slot, key)
            listener.open(slot, "string")
        self._live = _LiveString(quote, key, slot)
        frame.cp = -1
        self._version += 1

    def _early_key(self, frame: _Frame, quoted: str) -> None:
        """A key whose value has not started: checked now (an unexpected key stops a stream
        before its value is written), shown later."""
        if self.listener is not None and self._keyed != frame.cp:
            self._keyed = frame.cp
            self.listener.key(frame.slot, self._key(quoted, frame.cp))

    def _key(self, quoted: str, at: int) -> str:
        try:
            key = orjson.loads(quoted)
        except orjson.JSONDecodeError:
            raise _SyntaxError("an invalid key", at) from None
        assert isinstance(key, str)
        return key

    # -- strings -----------------------------------------------------------------------------

    def _grow(self, live: _LiveString) -> None:
        """Decode the new text of an open string, up to the last complete escape."""
        base = self._base
        raw = self._buf[live.raw - base : self._pos - base]
        if not raw:
            return
        cut = len(raw)
        if "\\" in raw:
            match = _UNITS.match(raw)
            assert match is not None
            cut = match.end()
            if match.start(1) >= 0 and match.end(1) == cut:
                cut = match.start(1)  # a high surrogate waits for its low half
            if not _PENDING_ESCAPE.fullmatch(raw, cut):
                raise _SyntaxError("an invalid escape", live.raw + cut)
            if not cut:
                return
            raw = raw[:cut]
        text = self._decode(raw, live.raw)
        live.parts.append(text)
        live.length += len(text)
        live.raw += cut
        self._version += 1
        if self.listener is not None:
            self._grew(live, text)

    def _grew(self, live: _LiveString, text: str) -> None:
        """Tell the listener that an open string grew by `text`."""
        assert self.listener is not None
        if len(live.head) < 256:
            live.head += text[: 256 - len(live.head)]
        self.listener.grow(live.slot, live.length, live.head)

    def _close_string(self, live: _LiveString, close: int) -> str:
        """The string shown as it grew ends at `close`: its value."""
        start = live.raw
        if close > start:
            raw = self._buf[start - self._base : close - self._base]
            plain = "\\" not in raw and raw.isprintable()  # (no escape, no control character)
            live.parts.append(raw if plain else self._decode(raw, start))
        value = "".join(live.parts)
        self._live = None
        self._version += 1
        if self.listener is not None:
            self.listener.close(live.slot, value)
        return value

    def _decode(self, raw: str, at: int) -> str:
        if "\\" not in raw:
            bad = _CONTROL.search(raw)
            if bad is not None:
                raise _SyntaxError("a control character in a string", at + bad.start())
            return raw
        try:
            value = orjson.loads('"' + raw + '"')
        except orjson.JSONDecodeError as exc:
            raise _SyntaxError(_reason(exc), at + max(0, exc.pos - 1)) from None
        assert isinstance(value, str)
        return value

    # -- snapshots ---------------------------------------------------------------------------

    def _shows_something(self) -> bool:
        if self._live is not None:
            return True
        return bool(self._stack) and bool(self._stack[0].backing)

    def _build(self) -> Any:
        """The value shown, but in the common case (`value`)."""
        phase = self._phase
        if phase == _DONE:
            return self._value
        if self._tentative >= 0 or phase < _VALUE:
            return MISSING
        inner: Any = MISSING
        key: Any = None  # (the key of the value being written in the next container out)
        live = self._live
        if live is not None and self._show_strings:
            inner = live.show(live.due())
            key = live.key
        arrays, objects = "array" in self.partial, "object" in self.partial
        for frame in reversed(self._stack):
            if not frame.live or not (arrays if frame.array else objects):
                inner, key = MISSING, None
                continue
            backing = frame.backing
            if frame.array:
                inner = PartialList(backing, len(backing), inner)
            else:
                inner = PartialDict(backing, len(backing), key, inner)
            key = frame.key
        return inner

    def _where(self) -> str:
        if self._live is not None or self._instr:
            return "a string"
        if self._stack:
            kind = "an array" if self._stack[-1].array else "an object"
            return f"{kind} ({len(self._stack)} level(s) open)"
        return "a value"


_FENCE_MARK = re.compile(r"`+|~+")
_loads = orjson.loads  # (one global lookup in `_add`, not two)


def _skip(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a pattern that also matches the empty string stops."""
    match = pattern.match(text, pos)
    return match.end() if match else pos


def _read(text: str) -> Any:
    """orjson's reading of JSON text, integers beyond 64 bits kept exact, as the pipeline reads
    them (orjson reads them as floats: the checker judged 12345678901234567890123 not to be
    that enum member). Raises orjson.JSONDecodeError for text that is not JSON."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        out = out_of_range(text)
        if out is not None:  # orjson's own words: "number is infinity when parsed as double"
            raise orjson.JSONDecodeError(out.describe(), text, out.position) from None
        if not may_be_inexact(text):
            raise
        try:  # orjson refuses an integer past a float's range, which is read exactly
            return loads_exact(text)
        except ValueError:
            raise orjson.JSONDecodeError(
                "a number past a float's range, not an integer", text, 0
            ) from None
    if ordinary_numbers(text):  # the common case: one translation and two searches
        return value
    out = out_of_range(text)
    if out is not None:  # orjson reads 1e-400 as 0 (1e400 it refuses itself)
        raise orjson.JSONDecodeError(out.describe(), text, out.position)
    if may_be_inexact(text):
        try:
            return loads_exact(text)
        except ValueError:  # over 4,300 digits: Python does not read it, orjson's float stays
            return value
    return value


def _reason(exc: orjson.JSONDecodeError) -> str:
    return str(exc.msg).split(":")[0]


def _syntax(found: str) -> Violation:
    return Violation("", "syntax", "a single JSON value matching the schema", found, "syntax")


__all__ = [
    "MISSING",
    "Kind",
    "Listener",
    "PartialDict",
    "PartialList",
    "PartialParser",
    "PartialStr",
    "extends",
    "is_complete",
    "plain",
]
