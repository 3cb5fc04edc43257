"""Where the string values of broken JSON begin and end, decided before json-repair reads it.

json-repair guesses where a malformed string ends; some of its guesses split or trim what the
model wrote. This pass, run before the last decode tier, reads the text once, left to right,
tracking only which container it is in and whether a key or a value comes next, and rewrites
as JSON strings the values whose extent a rule decides:

- **Foreign literals**: Python's `\"\"\"triple quotes\"\"\"`, JavaScript's `` `backticks` `` and a
  Markdown fence used as a value (its info string dropped; the leading line break and the common
  indentation of a multi-line body removed, as a reader of the code expects).
- **Quotes inside a string.** A quote ends a string only where what follows can follow a value
  there: after a value in an object, `}`, or `,` and then a key (quoted or bare, with its `:`);
  after an item of an array, `]`, or `,` and then a value; after a key, `:`. A quote followed by
  anything else (`"it"s"`, `"5" wide"`) is part of the string, which ends at the first quote
  that passes. (When none does, the string is left to the decoder.)
- **Markdown values.** An unquoted value that opens with Markdown (`**bold**`, `*em*`, `_em_`,
  `# heading`, `> quote`, `- item`) is kept whole, markers included: it runs to the `,` that is
  followed by the next key, or to the `}` (in an array: `,` or `]`).
- **The end of a cut reply.** A string still open at the end keeps its text to the very end,
  trailing spaces and line breaks included (json-repair trims them); a key left without a value
  at the end (`"nick":`, `"nick"`) is dropped, so the field is absent rather than `""`; so is
  a number that nothing but the end of the reply follows (`"total": 12`, `[1, 2, 34`: the
  reply may have been writing 1234.56), with its key: the stream parser too shows no number
  before something ends it, and here the reply ends instead. What is dropped is kept in
  `dropped`, for the loss rule (loss.py).

Only where a token starts (after `{`, `[`, `,`, `:` or at the start) is anything rewritten;
everything else is copied as written. The pass is linear: each character is looked at a bounded
number of times (a search for a string's end that fails is not tried again).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import orjson

from outform.parse.hint import clip

if TYPE_CHECKING:
    from outform.parse.context import Deadline

Role = Literal["key", "value", "item", "after"]
"""What the next token is: a key of an object, a value of an object, an item of an array (or
the top-level value), or nothing (a value was just read)."""

_SPACE = frozenset(" \t\r\n")
_JSON_ESCAPES = frozenset('"\\/bfnrtu')
_VALUE_START = frozenset("\"'{[-+.0123456789`")
_WORDS = ("true", "false", "null", "True", "False", "None", "NaN", "Infinity")
_KEY_LOOKAHEAD = 256
"""How far a quoted key after a `,` is looked for (keys are short; this keeps the pass linear)."""
_CUT_NUMBER = re.compile(r"[-+]?(?:\d[\d.]*(?:[eE][-+]?\d*)?|\.\d*|)")
"""A number (or its start: `-`, `1.`, `1e`)."""
_AT_END = re.compile(r"\s*\Z")
"""Nothing but whitespace to the end: what a number there ends with is the reply's end."""
_STRUCTURE = re.compile(r"[,:{}\[\]\n]")
"""What ends a bare word."""
_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


@dataclass(frozen=True, slots=True)
class Delimited:
    """The rewritten text and, in words, what was rewritten (for the change's detail)."""

    text: str
    notes: tuple[str, ...]
    closers: str = ""
    """The brackets still open at the end, closed in order (for a reply cut off)."""
    dropped: tuple[str, ...] = ()
    """What the end of a cut reply lost on purpose: a key left without a value, a number cut
    off (with its key)."""

    @property
    def closed(self) -> str:
        """The text with the brackets left open closed: often plain JSON once its strings are
        delimited, which a strict decoder reads exactly (json-repair trims a string's final
        line breaks)."""
        return self.text + self.closers

    @property
    def detail(self) -> str:
        return "; ".join(self.notes)


def delimit(text: str, deadline: Deadline | None = None) -> Delimited | None:
    """The text with its string values delimited by the rules above, or None when no rule
    changed anything."""
    return _Pass(text, deadline).run()


class _Pass:
    __slots__ = (
        "cut",
        "deadline",
        "dropped",
        "exhausted",
        "n",
        "notes",
        "out",
        "pending_key",
        "role",
        "stack",
        "starts",
        "text",
    )

    def __init__(self, text: str, deadline: Deadline | None) -> None:
        self.text = text
        self.n = len(text)
        self.deadline = deadline
        self.out: list[str] = []
        self.notes: dict[str, int] = {}
        self.stack: list[str] = []
        self.starts: list[int] = []
        """For each open object: where (in `out`) its current member starts."""
        self.role: Role = "item"
        self.pending_key: str | None = None
        """A key read whose value has not started yet (dropped if the text ends there)."""
        self.cut: int | None = None
        """Where (in `out`) a number that runs to the very end of the text is (dropped)."""
        self.dropped: list[str] = []
        self.exhausted: set[tuple[str, Role, bool]] = set()
        """Searches for a string's end that failed: from any later start they fail again (the
        rule looks only at what follows a quote), so they are not tried again."""

    # -- the pass --------------------------------------------------------------------------

    def run(self) -> Delimited | None:
        text, n, out = self.text, self.n, self.out
        i = 0
        steps = 0
        while i < n:
            steps += 1
            if self.deadline is not None and not steps & 4095:
                self.deadline.check()
            c = text[i]
            if c in _SPACE:
                j = i + 1
                while j < n and text[j] in _SPACE:
                    j += 1
                out.append(text[i:j])
                i = j
            elif c in {"{", "["}:
                self.pending_key = None
                self.stack.append(c)
                out.append(c)
                if c == "{":
                    self.starts.append(len(out))
                    self.role = "key"
                else:
                    self.role = "item"
                i += 1
            elif c in {"}", "]"}:
                self._close(c)
                out.append(c)
                i += 1
            elif c == ",":
                if self.stack and self.stack[-1] == "{":
                    self.starts[-1] = len(out)
                    self.role = "key"
                else:
                    self.role = "item"
                self.pending_key = None
                out.append(c)
                i += 1
            elif c == ":":
                if self.role != "after" or self.pending_key is None:
                    self.pending_key = None
                self.role = "value"
                out.append(c)
                i += 1
            elif c == "/" and text.startswith(("//", "/*"), i):
                i = self._comment(i)
            elif (
                self.role in ("value", "item")
                and self.stack
                and (c == "`" or text.startswith('"""', i))
            ):
                i = self._literal(i)
            elif c in {'"', "'"}:
                i = self._quoted(i, c)
            elif self.role in ("value", "item") and self.stack and _opens_markdown(text, i):
                i = self._markdown(i)
            else:
                i = self._bare(i)
        if self.pending_key is not None and self.stack and self.stack[-1] == "{":
            key = clip(self.pending_key, 40)
            self._drop(self.starts[-1], f"dropped the key {key!r} left without a value at the end")
        elif self.cut is not None and self.stack:
            number = clip(out[self.cut].strip(), 40)
            note = f"dropped the number {number} cut off at the end (it may have been longer)"
            if self.stack[-1] == "{":
                self._drop(self.starts[-1], note)
            else:
                self._drop(self.cut, note)
                while out and out[-1].strip() in ("", ","):
                    self.dropped.append(out.pop())  # the comma before the item
        if not self.notes:
            return None
        notes = tuple(
            note if count == 1 else f"{note} (×{count})" for note, count in self.notes.items()
        )
        closers = "".join("}" if opener == "{" else "]" for opener in reversed(self.stack))
        return Delimited("".join(out), notes, closers, tuple(self.dropped))

    def _drop(self, start: int, note: str) -> None:
        """Drop what `out` holds from `start` on (the end of a cut reply), and say so."""
        self.dropped.append("".join(self.out[start:]))
        del self.out[start:]
        self._note(note)

    def _note(self, note: str) -> None:
        self.notes[note] = self.notes.get(note, 0) + 1

    def _after_value(self) -> None:
        self.role = "after"
        self.pending_key = None

    def _close(self, closer: str) -> None:
        opener = "{" if closer == "}" else "["
        if opener in self.stack:
            while self.stack:
                popped = self.stack.pop()
                if popped == "{":
                    self.starts.pop()
                if popped == opener:
                    break
        self._after_value()

    # -- tokens ----------------------------------------------------------------------------

    def _comment(self, i: int) -> int:
        text = self.text
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = self.n if end == -1 else end
        else:
            end = text.find("*/", i + 2)
            end = self.n if end == -1 else end + 2
        self.out.append(text[i:end])
        return end

    def _bare(self, i: int) -> int:
        """A word that is not a string (a number, a literal, an unquoted key or value): copied
        as written, up to the next structure."""
        text, n = self.text, self.n
        found = _STRUCTURE.search(text, i + 1)  # in C: a word may run to the end of the text
        j = n if found is None else found.start()
        word = text[i:j]
        if (
            self.role in ("value", "item")
            and _AT_END.match(text, j)
            and _CUT_NUMBER.fullmatch(word.rstrip())
        ):
            self.cut = len(self.out)
        self.out.append(word)
        if self.role == "key":
            self.pending_key = word.strip()
            self.role = "after"
        else:
            self._after_value()
        return j

    def _literal(self, i: int) -> int:
        """A triple-quoted, backtick or fenced value."""
        text = self.text
        fence = '"""' if text.startswith('"""', i) else "```" if text.startswith("```", i) else "`"
        close = text.find(fence, i + len(fence))
        if close == -1:  # never closed: not a literal, left to the decoder
            self.out.append(text[i:])
            self._after_value()
            return self.n
        body = text[i + len(fence) : close]
        if fence == "```":
            first, newline, rest = body.partition("\n")
            if newline and (not first.strip() or first.strip().isidentifier()):
                body = rest  # drop the info string ("python") of a fenced value
        self.out.append(orjson.dumps(_tidy(body, fence)).decode())
        self._note("rewrote triple-quoted, backtick or fenced strings as JSON strings")
        self._after_value()
        return close + len(fence)

    def _quoted(self, i: int, quote: str) -> int:
        text = self.text
        role = self.role
        first = _string_end(text, i + 1, quote)
        if first == -1:
            return self._unterminated(i)
        end = first
        if role != "after" and _inside_word(text, i, first) and not self._ends_string(first):
            if _string_end(text, first + 1, quote) == -1:
                return self._unterminated(i)  # cut off after a quote inside a word
            end = self._search_end(first, quote)
        if end != first:
            self.out.append(_as_json_string(text[i + 1 : end], self.deadline))
            self._note("kept quotes inside a string that did not end there")
        else:
            self.out.append(text[i : end + 1])
        if role == "key":
            self.pending_key = text[i + 1 : end]
            self.role = "after"
        else:
            self._after_value()
        return end + 1

    def _unterminated(self, i: int) -> int:
        """A string still open at the end of the text."""
        text = self.text
        body = text[i + 1 :]
        if self.role == "after" or any(c in body for c in ":{}[]"):
            self.out.append(text[i:])  # more structure follows: left to the decoder
            self._after_value()
            return self.n
        if self.role == "key":
            self.pending_key = body  # a key cut off: dropped at the end, as a key left alone
            self.out.append(text[i:])
            return self.n
        self.out.append(_as_json_string(body, self.deadline))
        if body != body.rstrip():
            self._note("kept the end of a string cut off at the end of the reply")
        if _string_end(body, 0, text[i]) != -1:
            self._note("kept quotes inside a string that did not end there")
        self._after_value()
        return self.n

    def _search_end(self, first: int, quote: str) -> int:
        """The first quote after `first` that ends the string by the rule, else `first`."""
        search = (quote, self.role, bool(self.stack))
        if search in self.exhausted:
            return first
        text = self.text
        position = first
        while True:
            if self.deadline is not None:
                self.deadline.tick()  # one quote after another: as many as the text holds
            position = _string_end(text, position + 1, quote)
            if position == -1:
                self.exhausted.add(search)
                return first
            if self._ends_string(position):
                return position

    def _ends_string(self, close: int) -> bool:
        """Whether the quote at `close` can end a string in the current role."""
        text, n = self.text, self.n
        k = _skip_space(text, close + 1)
        if k >= n:
            return True
        c = text[k]
        role = self.role
        if role == "key":
            return c == ":"
        if role == "value":
            return c == "}" or (c == "," and _member_follows(text, k + 1))
        if self.stack:
            return c == "]" or (c == "," and _item_follows(text, k + 1))
        return c in ",]}"

    def _markdown(self, i: int) -> int:
        """An unquoted value opening with Markdown: to the next key, or the container's end."""
        text, n = self.text, self.n
        in_object = self.stack[-1] == "{"
        closer = "}" if in_object else "]"
        j = i
        while j < n:
            c = text[j]
            if c == closer:
                break
            if c == "," and (not in_object or _member_follows(text, j + 1)):
                break
            j += 1
        written = text[i:j]
        value = written.rstrip()
        self.out.append(orjson.dumps(value).decode())
        self.out.append(written[len(value) :])
        self._note("kept an unquoted Markdown value whole, as a string")
        self._after_value()
        return j


# -- helpers ----------------------------------------------------------------------------------


def _inside_word(text: str, start: int, quote: int) -> bool:
    """Whether the quote at `quote` stands between two letters or digits (`it"s`, `O'Neil`) in
    the string opened at `start`: inside a word, not at a string's end."""
    return (
        quote - 1 > start
        and quote + 1 < len(text)
        and text[quote - 1].isalnum()
        and text[quote + 1].isalnum()
    )


def _opens_markdown(text: str, i: int) -> bool:
    c = text[i]
    nxt = text[i + 1 : i + 2]
    if c in "*_#>~":
        return True
    return c in "-+" and nxt in (" ", "\t")


def _skip_space(text: str, k: int) -> int:
    n = len(text)
    while k < n and text[k] in _SPACE:
        k += 1
    return k


def _string_end(text: str, start: int, quote: str) -> int:
    """Index of the first unescaped `quote` at or after `start`, or -1."""
    i = start
    while True:
        j = text.find(quote, i)
        if j == -1:
            return -1
        backslashes = 0
        k = j - 1
        while k >= start and text[k] == "\\":
            backslashes += 1
            k -= 1
        if not backslashes & 1:
            return j
        i = j + 1


def _member_follows(text: str, k: int) -> bool:
    """Whether a member of an object (a key and its colon) or the object's end follows `k`."""
    k = _skip_space(text, k)
    if k >= len(text) or text[k] == "}":
        return True
    c = text[k]
    if c in "\"'":
        end = text.find(c, k + 1, k + 1 + _KEY_LOOKAHEAD)
        if end == -1:
            return False
        after = _skip_space(text, end + 1)
        return after >= len(text) or text[after] == ":"
    j = k
    limit = min(len(text), k + _KEY_LOOKAHEAD)
    while j < limit and (text[j].isalnum() or text[j] in "_$-"):
        j += 1
    if j == k:
        return False
    after = _skip_space(text, j)
    return after >= len(text) or text[after] == ":"


def _item_follows(text: str, k: int) -> bool:
    """Whether an item of an array (a value) or the array's end follows `k`."""
    k = _skip_space(text, k)
    if k >= len(text) or text[k] in _VALUE_START or text[k] == "]":
        return True
    return text.startswith(_WORDS, k)


def _as_json_string(body: str, deadline: Deadline | None = None) -> str:
    """`body`, written between quotes of either kind, as a JSON string: its escapes kept (`\\'`
    read as `'`), bare double quotes and control characters escaped. A character at a time,
    so the deadline is read every few thousand (a body may be the whole region)."""
    out: list[str] = ['"']
    i = 0
    n = len(body)
    while i < n:
        if deadline is not None and not i & 4095:
            deadline.check()
        c = body[i]
        if c == "\\" and i + 1 < n:
            nxt = body[i + 1]
            if nxt in _JSON_ESCAPES:
                out.append(body[i : i + 2])
            elif nxt == "'":
                out.append("'")
            else:
                out.append("\\\\" + nxt)
            i += 2
            continue
        if c == "\\":
            out.append("\\\\")
        elif c == '"':
            out.append('\\"')
        elif c < " ":
            out.append(_CONTROL.get(c) or f"\\u{ord(c):04x}")
        else:
            out.append(c)
        i += 1
    out.append('"')
    return "".join(out)


def _tidy(body: str, fence: str) -> str:
    if fence == "`":
        return body
    if body.startswith("\n"):
        body = body[1:]
    return textwrap.dedent(body).rstrip()
