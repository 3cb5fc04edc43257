"""Where the string values of broken JSON begin and end, decided before json-repair reads it.

json-repair guesses where a malformed string ends; some of its guesses split or trim what the
model wrote. This pass, run before the last decode tier, reads the text once, left to right,
tracking only which container it is in and whether a key or a value comes next, and rewrites
as JSON strings the values whose extent a rule decides:

- **Foreign literals**: Python's `\"\"\"triple quotes\"\"\"` (and `\'\'\'these\'\'\'`), JavaScript's
  `` `backticks` `` and a Markdown fence used as a value (its info string dropped; the leading
  line break and the common indentation of a multi-line body removed, as a reader of the code
  expects).
- **Quotes inside a string.** A quote ends a string only where what follows can follow a value
  there: in an object `}`, or `,` and then a key (quoted or bare, with its `:`); in an array
  `]`, or `,` and then a value; after a key, `:`; a closer, a comment or a fence anywhere; after
  whitespace, the next member or item (a comma missing). A quote after some text that a letter
  or digit follows (`"the "best"`, `"it"s"`), or in an object a space and a word that is no key
  (`"5" screen"`), is part of the string, which ends at the first later quote followed by a
  closer, or by `,` and the next member or item; the search gives up at a quote a `:` follows.
  (See `_inner` for the quotes left to the decoder.)
- **Unquoted values** of an object end at the next key (`_next_key`): a comma is written there.
- **Closers of the wrong kind** (`{"x": "y"]`): see `_close`.
- **A comma written twice** (`12,, "b"`, whitespace between them or not) is one separator: the
  second is dropped (json-repair read `12,,` as the string "12,", a value never written).
- **Markdown values.** An unquoted value that opens with Markdown (`**bold**`, `*em*`, `_em_`,
  `# heading`, `> quote`, `- item`) is kept whole, markers included: it runs to the `,` that is
  followed by the next key, or to the `}` (in an array: `,` or `]`).
- **A key without a value.** A key whose colon the end of its member follows (`"c": ,`,
  `"c": }`) is dropped with its member, so the field is absent rather than `""` (json-repair's
  reading), and said in `dropped`.
- **The end of a cut reply.** A string still open at the end keeps its text to the very end,
  trailing spaces and line breaks included (json-repair trims them), and is written here, its
  escapes read as in any string (json-repair keeps some backslashes there), and an escape the
  end cut short (`\\`, `\\u00`, half of a surrogate pair) dropped, as the character it began is
  not known (`Delimited.escape`, counted as lost); one of which only the opening quote was
  written is no value, and is dropped; a key left without a value
  at the end (`"nick":`, `"nick"`) is dropped, so the field is absent rather than `""`; so is
  a number that nothing but the end of the reply follows (`"total": 12`, `[1, 2, 34`: the
  reply may have been writing 1234.56), with its key: the stream parser too shows no number
  before something ends it, and here the reply ends instead; a container that leaves empty
  goes too. What is dropped is kept in `dropped`, for the loss rule (loss.py).

The pass also collects the keys the text writes (`Delimited.keys`), so that a reading that makes
a key of a value can be refused (keys.py).

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

from outform.parse import escapes
from outform.parse.hint import clip

if TYPE_CHECKING:
    from outform.parse.context import Deadline

Role = Literal["key", "value", "item", "after"]
"""What the next token is: a key of an object, a value of an object, an item of an array (or
the top-level value), or nothing (a value was just read)."""

_SPACE = frozenset(" \t\r\n")
_NO_SPACE = str.maketrans("", "", " \t\r\n")
_JSON_ESCAPES = frozenset('"\\/bfnrtu')
_LINE_ENDS = frozenset(("\n", "\r", "\r\n"))
"""What a backslash ending a line escapes: the lines join (escapes.py keeps the same ones)."""
_VALUE_START = frozenset("\"'{[-+.0123456789`")
_WORDS = ("true", "false", "null", "True", "False", "None", "NaN", "Infinity")
_KEY_LOOKAHEAD = 256
"""How far a quoted key after a `,` is looked for (keys are short; this keeps the pass linear)."""
_MEMBER_INSIDE = re.compile(r"[,\n]\s*(?:[A-Za-z_$][\w$-]*|'[^'\n]*'|`[^`\n]*`?)\s*:(?!//)")
"""In a string open to the end: a member whose key is unquoted (or quoted otherwise than the
string), after a comma or a line break (its closing quote may have been left out before it)."""
_CUT_NUMBER = re.compile(r"[-+]?(?:\d[\d.]*(?:[eE][-+]?\d*)?|\.\d*|)")
"""A number (or its start: `-`, `1.`, `1e`)."""
_CUT_LITERAL = re.compile(
    r"t(?:ru?)?|f(?:a(?:ls?)?)?|n(?:ul?)?|T(?:ru?)?|F(?:a(?:ls?)?)?|N(?:on?)?"
)
"""The start of `true`, `false` or `null` (or Python's spelling), cut off by the reply's end."""
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_AT_END = re.compile(r"\s*\Z")
"""Nothing but whitespace to the end: what a number there ends with is the reply's end."""
_STRUCTURE = re.compile(r"[,:{}\[\]\n]")
"""What ends a bare word."""
_MEMBER_HEAD = re.compile(
    r"\s*,?\s*(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\s\"',:{}\[\]]+)\s*:\s*", re.DOTALL
)
"""A member's text up to its value: a comma, a key (quoted either way, or bare) and a colon."""
_NOT_ALNUM = re.compile(r"[\W_]+")
_IDENTIFIER_HEAD = re.compile(r"[^\W\d]|[_$]")
_AFTER_ANY = ("//", "/*", "```", "~~~")
"""What may follow any value: a comment, or a fence that closes the JSON."""
_FENCES = ('"""', "'''", "```")
"""The foreign literals of more than one character: Python's triple quotes, a Markdown fence."""
_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_TO_ESCAPE = re.compile(r'\\(\r\n|.)|\\\Z|"|[\x00-\x1f]', re.DOTALL)
"""What `_as_json_string` rewrites: an escape, a backslash ending the body, a quote, a control
character."""


@dataclass(frozen=True, slots=True)
class Delimited:
    """The rewritten text and, in words, what was rewritten (for the change's detail)."""

    text: str
    notes: tuple[str, ...]
    closers: str = ""
    """The brackets still open at the end, closed in order (for a reply cut off)."""
    dropped: tuple[str, ...] = ()
    """What the end of a cut reply lost on purpose: a key left without a value, a number cut
    off (with its key), a container that left empty."""
    keys: frozenset[str] = frozenset()
    """The content (letters and digits) of every text the reply writes as a key, or right
    before a colon: a reading whose keys are not among them made a key of a value."""
    cut_string: bool = False
    """The reply ends inside a string, kept: the last string of the value, which may have
    gone on (`"3` of `"36"`)."""
    escape: str = ""
    """The escape that string ended in, begun and cut off (`\\`, `\\u00`, `\\ud83d`):
    dropped, as the character it was writing is not known (the stream parser shows none)."""

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
    delimited = read(text, deadline)
    return delimited if delimited.notes else None


def read(text: str, deadline: Deadline | None = None) -> Delimited:
    """The pass over `text`: what `delimit` gives, and the keys the text writes, even when no
    rule changed anything."""
    return _Pass(text, deadline).run()


def content(key: str) -> str:
    """The letters and digits of a key: what a re-spelling (quotes, spaces, escapes) keeps."""
    return _NOT_ALNUM.sub("", key)


def long_strings(
    text: str, longer_than: int, deadline: Deadline | None = None
) -> list[tuple[int, int, str]]:
    """The double-quoted string values of `text`, in an object or an array, longer than
    `longer_than` characters or holding an escape, whose extent the pass leaves as written:
    closed by a quote the
    quote rule confirms (what follows can follow a value there), or still open at the end with
    nothing of the pass's own to add.
    (start, end) of each in `text`, its quotes included, and its body as a JSON string (see
    `_as_json_string`). For held.py, which reads them without json-repair."""
    found = _Pass(text, deadline, longer_than)
    found.run()
    return found.held


class _Pass:
    __slots__ = (
        "cut",
        "cut_string",
        "deadline",
        "dropped",
        "escape",
        "exhausted",
        "held",
        "hold_over",
        "keys",
        "n",
        "notes",
        "opened",
        "out",
        "pending_key",
        "role",
        "stack",
        "starts",
        "text",
    )

    def __init__(self, text: str, deadline: Deadline | None, hold_over: int | None = None) -> None:
        self.text = text
        self.n = len(text)
        self.deadline = deadline
        self.out: list[str] = []
        self.notes: dict[str, int] = {}
        self.stack: list[str] = []
        self.starts: list[int] = []
        """For each open object: where (in `out`) its current member starts."""
        self.opened: list[int] = []
        """For each open container: where (in `out`) its opener is."""
        self.keys: set[str] = set()
        """The content of every text the reply writes as a key (see `Delimited.keys`)."""
        self.role: Role = "item"
        self.pending_key: str | None = None
        """A key read whose value has not started yet (dropped if the text ends there)."""
        self.cut: int | None = None
        """Where (in `out`) a number that runs to the very end of the text is, or a string of
        which only the opening quote was written (dropped)."""
        self.dropped: list[str] = []
        self.cut_string = False
        self.escape = ""
        self.exhausted: dict[tuple[str, Role, bool], int] = {}
        """Searches for a string's end that failed, and where: a later search that starts
        before that point fails there again (the rule looks only at what follows a quote), so
        it is not tried again."""
        self.hold_over = hold_over
        self.held: list[tuple[int, int, str]] = []
        """The string values longer than `hold_over`, or holding an escape, copied as written
        (see long_strings)."""

    # -- the pass --------------------------------------------------------------------------

    def run(self) -> Delimited:
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
                self.opened.append(len(out))
                out.append(c)
                if c == "{":
                    self.starts.append(len(out))
                    self.role = "key"
                else:
                    self.role = "item"
                i += 1
            elif c in {"}", "]"}:
                self._valueless()
                out.append(self._close(c))
                i += 1
            elif c == ",":
                if self._valueless():
                    i += 1  # the member dropped was the first: no comma before the next
                    self.role = "key"
                    continue
                if self.stack and self._last_token() == ",":
                    # A comma written twice is one separator (json-repair read `12,,` as the
                    # string "12,", a value the reply never wrote).
                    self._note("dropped a ',' written twice")
                    i += 1
                    continue
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
                and (c == "`" or text.startswith(('"""', "'''"), i))
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
            cut = clip(out[self.cut].strip(), 40)
            if cut == '""':
                note = "dropped the string cut off at the end before its first character"
            elif _CUT_LITERAL.fullmatch(cut):
                note = f"dropped the literal {cut} cut off at the end (true, false or null begun)"
            else:
                note = f"dropped the number {cut} cut off at the end (it may have been longer)"
            in_object = self.stack[-1] == "{"
            if in_object and _MEMBER_HEAD.fullmatch("".join(self.out[self.starts[-1] : self.cut])):
                self._drop(self.starts[-1], note)  # the number is the value of its key
            else:
                # An item, or a number after more than a key (`"a": "x, "b": 1`: a string the
                # reply broke): only the number is dropped on purpose; what the decoder makes
                # of the rest is measured by the loss rule like any reading.
                self._drop(self.cut, note)
                if not in_object:
                    self._drop_comma()
        if self.dropped or len(self.stack) > 1:
            self._drop_emptied()
        notes = tuple(
            note if count == 1 else f"{note} (×{count})" for note, count in self.notes.items()
        )
        closers = "".join("}" if opener == "{" else "]" for opener in reversed(self.stack))
        return Delimited(
            "".join(out),
            notes,
            closers,
            tuple(self.dropped),
            frozenset(self.keys),
            self.cut_string,
            self.escape,
        )

    def _last_token(self) -> str:
        """What `out` ends with, less whitespace (whitespace is one token a run)."""
        out = self.out
        last = len(out) - 1
        while last >= 0 and not out[last].strip():
            last -= 1
        return out[last].strip() if last >= 0 else ""

    def _drop_emptied(self) -> None:
        """A container left open at the end that holds nothing, because what was dropped at
        the end leaves it empty (`[1, {"x": 1`) or because the reply was cut right after its
        opener (`{"a": [1], "b": [`), held nothing the reply finished writing: it is dropped
        too, with its key (an empty `{}` or `[]` in its place would be a value the reply never
        wrote). The outermost value stays."""
        out = self.out
        while len(self.stack) > 1 and not "".join(out[self.opened[-1] + 1 :]).strip():
            kind = "object" if self.stack.pop() == "{" else "array"
            if kind == "object":
                self.starts.pop()
            at = self.opened.pop()
            note = f"dropped the {kind} that what was cut off at the end left empty"
            if self.stack[-1] == "{":
                self._drop(self.starts[-1], note)
            else:
                self._drop(at, note)
                self._drop_comma()

    def _drop_comma(self) -> None:
        """The comma (and spaces) before an item dropped from the end of an array."""
        out = self.out
        while out and out[-1].strip() in ("", ","):
            self.dropped.append(out.pop())

    def _valueless(self) -> bool:
        """A key whose colon is followed by the end of its member (`"c": ,`, `"c": }`) has no
        value: the member is dropped (never given `""`), with the comma before it. True when it
        was the object's first member, so that the comma after it goes too."""
        if self.role != "value" or self.pending_key is None or self.stack[-1:] != ["{"]:
            return False
        start = self.starts[-1]
        first = not "".join(self.out[start : start + 1]).startswith(",")
        key = clip(self.pending_key, 40)
        self._drop(start, f"dropped the key {key!r} left without a value")
        self.pending_key = None
        return first

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

    def _close(self, closer: str) -> str:
        """The closer to write: a closer closes the opener of its kind, and the brackets left
        open inside it. One of the wrong kind, with no opener of its kind open: right after a
        value the pass read whole (a quoted string, a number, a literal: `{"x": "y"]`) it is
        the innermost container's closer, misspelled (read as a stray bracket, the members
        after it would move into that container); right after another closer (`{"a": 1}}` in
        an array) it is a closer written twice, and is dropped. Either is said in the notes;
        after anything else (text the pass left to the decoder) it is copied as written."""
        opener = "{" if closer == "}" else "["
        if opener in self.stack:
            while self.stack:
                popped = self._pop()
                if popped == opener:
                    break
        elif self.stack:
            kind = "object" if self.stack[-1] == "{" else "array"
            last = next((token for token in reversed(self.out) if token.strip()), "")
            if last in ("}", "]"):
                self._note(
                    f"dropped a {closer!r} that closes nothing, written after a closer (what "
                    f"follows stays in the {kind})"
                )
                return ""
            if _whole_value(last):
                wrong = closer
                closer = "}" if self._pop() == "{" else "]"
                self._note(
                    f"read a {wrong!r} that closes nothing as the {closer!r} of the {kind} it "
                    "ends (the members after it stay outside)"
                )
        self._after_value()
        return closer

    def _pop(self) -> str:
        popped = self.stack.pop()
        self.opened.pop()
        if popped == "{":
            self.starts.pop()
        return popped

    def _key(self, body: str, quote: str) -> None:
        """A key read (quoted with `quote`, or bare): its value comes next."""
        self.pending_key = body
        self.role = "after"
        self._written(body, quote)

    def _written(self, body: str, quote: str) -> None:
        """Text the reply writes as a key (or before a colon): its content, and that of its
        last word (a bare key after a value whose comma is missing: `1 "b"`)."""
        self.keys.add(content(_as_text(body, quote)))
        words = body.split()
        if len(words) > 1:
            last = words[-1]
            self.keys.add(content(_as_text(last[1:-1], last[0]) if _is_quoted(last) else last))

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
        as written, up to the next structure. An unquoted value of an object ends at the next
        key (see `_next_key`): a comma is written there."""
        text, n = self.text, self.n
        found = _STRUCTURE.search(text, i + 1)  # in C: a word may run to the end of the text
        j = n if found is None else found.start()
        word = text[i:j]
        if self.role == "value" and self.stack and self.stack[-1] == "{":
            split = _next_key(text, i, j)
            if split is not None:
                return self._split(i, split)
        if (
            self.role in ("value", "item")
            and _AT_END.match(text, j)
            and (_CUT_NUMBER.fullmatch(word.rstrip()) or _CUT_LITERAL.fullmatch(word.rstrip()))
        ):
            self.cut = len(self.out)
        self.out.append(word)
        if self.role == "key":
            self._key(word.strip(), "")
        else:
            if j < n and text[j] == ":":
                self._written(word, "")  # a key after a missing comma, or text before a colon
            self._after_value()
        return j

    def _split(self, i: int, key: int) -> int:
        """An unquoted value from `i` that ends where the next key starts, at `key`: the value,
        a comma, then the key, whose role it takes."""
        text = self.text
        value = text[i:key].rstrip()
        self.out.append(value)
        self.out.append(",")
        self.starts[-1] = len(self.out)
        self._note("ended an unquoted value at the next key")
        self.role = "key"
        k = _skip_space(text, i + len(value))
        self.out.append(text[i + len(value) : k])
        if text[k] in "\"'":
            return self._quoted(k, text[k])
        return self._bare(k)

    def _literal(self, i: int) -> int:
        """A triple-quoted, backtick or fenced value."""
        text = self.text
        fence = next((f for f in _FENCES if text.startswith(f, i)), "`")
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
        if role != "after" and self._inner(i, first):
            if _string_end(text, first + 1, quote) == -1:
                return self._unterminated(i)  # cut off after a quote inside the string
            end = self._search_end(first, quote)
        if end != first:
            self.out.append(_as_json_string(text[i + 1 : end], self.deadline))
            self._note("kept quotes inside a string that did not end there")
        else:
            self.out.append(text[i : end + 1])
            if (
                self._holds(i + 1, end, quote)
                and role in ("value", "item")
                and self._ends_string(end)
            ):
                self.held.append((i, end + 1, _as_json_string(text[i + 1 : end], self.deadline)))
        if role == "key":
            self._key(text[i + 1 : end], quote)
        else:
            if _colon_follows(text, end + 1):
                self._written(text[i + 1 : end], quote)  # a key after a missing comma
            self._after_value()
        return end + 1

    def _unterminated(self, i: int) -> int:
        """A string still open at the end of the text (no quote follows its opening one). Its
        text runs to the end, but for two readings of the brackets and colons it holds: closers
        that close what is open, and nothing else, end it (its closing quote was left out:
        `{"a": "hello}`), and a member after a comma or a line break is left to the decoder
        (`{"a": "x, b: 1}`: the quote left out before a member with an unquoted key; a colon
        in prose, `"Note: the`, is text). A key cut off is dropped (one holding
        a bracket is left to the decoder: `{"key:value}`)."""
        text = self.text
        body = text[i + 1 :]
        structure = any(c in body for c in ":{}[]")
        quoted = text[i] in body  # (a quote inside it the rule read as text)
        if self.role == "key":
            if any(c in body for c in "{}[]"):
                self.out.append(text[i:])  # `{"key:value}`: its quote left out, to the decoder
                return self.n
            self._key(body, text[i])  # a key cut off: dropped at the end, as a key left alone
            self.out.append(text[i:])
            return self.n
        if structure and self.role != "after" and not quoted:
            closers = self._closers_at_end(body)
            if closers >= 0:
                self.out.append(_as_json_string(body[:closers].rstrip(), self.deadline))
                self._note("closed a string whose closing quote was left out before a closer")
                self._after_value()
                return i + 1 + closers
        if self.role == "after" or (structure and (quoted or _MEMBER_INSIDE.search(body))):
            self.out.append(text[i:])  # more structure follows: left to the decoder
            self._after_value()
            return self.n
        as_written = True
        cut = _cut_escape(body)
        if cut >= 0:
            # The reply was writing a character it had only begun to escape (`\`, `\u00`,
            # half of a surrogate pair): which one is not known, so it is dropped and said.
            self.escape = body[cut:]
            body = body[:cut]
            self._note(f"dropped the escape {clip(self.escape, 20)} cut off at the end")
            as_written = False
        if not body and self.stack:  # only the opening quote: no value written yet
            self.cut = len(self.out)
            self.out.append('""')
            self._after_value()
            return self.n
        literal = _as_json_string(body, self.deadline)
        self.out.append(literal)
        self.cut_string = True
        if body != body.rstrip():
            self._note("kept the end of a string cut off at the end of the reply")
            as_written = False
        else:
            self._note("closed a string cut off at the end of the reply")
        if _string_end(body, 0, text[i]) != -1:
            self._note("kept quotes inside a string that did not end there")
            as_written = False
        if as_written and self._holds(i + 1, self.n, text[i]):
            self.held.append((i, self.n, literal))
        self._after_value()
        return self.n

    def _closers_at_end(self, body: str) -> int:
        """Where, in the body of a string open to the end, a run of closers begins that closes
        the innermost containers open (nothing but whitespace, or a fence closing the JSON,
        after it; no other bracket or colon before it); -1 if none."""
        stripped = body.rstrip(" \t\r\n")
        if stripped.endswith(("```", "~~~")):
            stripped = stripped[:-3].rstrip(" \t\r\n")
        start = len(stripped)
        while start and stripped[start - 1] in "}] \t\r\n":
            start -= 1
        while start < len(stripped) and stripped[start] not in "}]":
            start += 1  # (the run begins at a closer)
        run = stripped[start:].translate(_NO_SPACE)
        stack = self.stack
        if not run or len(run) > len(stack) or any(c in stripped[:start] for c in ":{}[]"):
            return -1
        for depth, closer in enumerate(run, 1):
            if (closer == "}") != (stack[-depth] == "{"):
                return -1
        return start

    def _holds(self, start: int, end: int, quote: str) -> bool:
        """Whether a string value whose body, copied as written, is `text[start:end]` is noted
        in `held`: longer than `hold_over` characters, or holding an escape (json-repair pairs
        the backslashes of some wrongly: `"a\\\\\\"b"` read as `a"b`, and trims an escaped
        final line break); double-quoted, in an object or an array (json-repair reads what a
        top-level string or a single-quoted one holds as structure too)."""
        if self.hold_over is None or quote != '"' or not self.stack:
            return False
        if end - start > self.hold_over:
            return True
        text = self.text
        if text.find("\\", start, end) < 0:
            return False
        # Held for its escapes only where its end is plain: a closer of the wrong kind after
        # it leaves it to json-repair, which reads quotes in a regex's class (`['"]`) itself.
        k = _skip_space(text, end + 1)
        return k >= self.n or text[k] not in "}]" or (text[k] == "}") == (self.stack[-1] == "{")

    def _search_end(self, first: int, quote: str) -> int:
        """The first quote after `first` that surely ends the string (a closer, or a comma and
        the next member or item, follows: no comma missing once the string holds a quote), else
        `first`. The search gives up at a quote that ends a key (followed by `:`): a string
        never runs past a key, which would merge two members into one value."""
        search = (quote, self.role, bool(self.stack))
        if first < self.exhausted.get(search, -1):
            return first  # an earlier search from before `first` failed past it
        text = self.text
        position = first
        while True:
            if self.deadline is not None:
                self.deadline.tick()  # one quote after another: as many as the text holds
            position = _string_end(text, position + 1, quote)
            if position == -1:
                self.exhausted[search] = self.n
                return first
            verdict = self._ends_string(position, definite=True)
            if verdict is None:
                self.exhausted[search] = position
                return first
            if verdict:
                return position

    def _inner(self, start: int, first: int) -> bool:
        """Whether the first quote after the one at `start` is inside the string rather than its
        end: it follows some text and is followed by what cannot follow a value here: a letter
        or digit (`"the "best"`, `"it"s"`), or, in an object, a word after a space that is no
        key (`"5" screen"`: a comma missing would need a key and its colon). Left to the
        decoder: a quote right after the opening one (`""value"`) or after a backslash (JSON
        escaped in a string), one that follows `:`, `,` or a bracket (it opens a value: the
        string before it lacks its end), and one followed by a quote, a space and a word in an
        array (the next item, missing its opening quote?) or anything else."""
        text, n = self.text, self.n
        if first == start + 1 or text[first - 1] == "\\" or self._ends_string(first) is not False:
            return False
        before = first - 1
        while before > start and text[before] in _SPACE:
            before -= 1
        if text[before] in ",:[{":
            return False
        k = first + 1
        if k < n and text[k].isalnum():
            return True
        spaced = _skip_space(text, k)
        return (
            spaced > k
            and spaced < n
            and text[spaced].isalnum()
            and bool(self.stack)
            and self.stack[-1] == "{"
        )

    def _ends_string(self, close: int, *, definite: bool = False) -> bool | None:
        """Whether the quote at `close` can end a string in the current role: what follows it
        can follow a value there (a closer; a comma and the next member or item; unless
        `definite`, whitespace and the next member or item, a comma missing). None when it
        ends a key instead (a `:` follows) in a value's role. A comment, or a fence closing the
        JSON, may follow any value."""
        text, n = self.text, self.n
        k = _skip_space(text, close + 1)
        if k >= n or text.startswith(_AFTER_ANY, k):
            return True
        c = text[k]
        role = self.role
        if role == "key":
            return c == ":"
        if c == ":":
            return None
        if not self.stack:
            return c in ",]}"
        if c in "}]":
            return True
        spaced = k > close + 1 and not definite
        if role == "value":
            return (c == "," and _member_follows(text, k + 1)) or (
                spaced and _member_follows(text, k)
            )
        return (c == "," and _item_follows(text, k + 1)) or (spaced and _item_follows(text, k))

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


def _next_key(text: str, i: int, j: int) -> int | None:
    """Where the next key starts, when the unquoted value of an object at `text[i:j]` (a word
    up to the next structure) runs into one: a key (an identifier, or a quoted name) after
    whitespace, followed by `:` (`{name: widget price: 1.5}`, or on the next line). A colon
    followed by `//` is a URL's (`see http://x`), not a key's."""
    n = len(text)
    if j < n and text[j] == ":":
        if text.startswith("//", j + 1):
            return None
        head = text[i:j].rstrip()
        start = _key_tail(head)
        if start is None or start == 0 or head[start - 1] not in _SPACE:
            return None
        return i + start
    if j < n and text[j] == "\n":
        k = _skip_space(text, j)
        end = _key_end(text, k)
        if end is not None and _colon_follows(text, end):
            return k
    return None


def _key_tail(head: str) -> int | None:
    """Where a key that ends `head` starts: a quoted name, or an identifier."""
    if head[-1:] in ("'", '"') and len(head) > 1:
        start = head.rfind(head[-1], 0, len(head) - 1)
        return start if start >= 0 and "\n" not in head[start:] else None
    m = len(head)
    while m > 0 and (head[m - 1].isalnum() or head[m - 1] in "_$-"):
        m -= 1
    if m == len(head) or not _IDENTIFIER_HEAD.match(head, m):
        return None
    return m


def _key_end(text: str, k: int) -> int | None:
    """Where a key that starts at `k` ends (a quoted name, or an identifier), or None."""
    n = len(text)
    if k >= n:
        return None
    if text[k] in "\"'":
        end = text.find(text[k], k + 1, k + 1 + _KEY_LOOKAHEAD)
        return None if end == -1 else end + 1
    if not _IDENTIFIER_HEAD.match(text, k):
        return None
    m = k + 1
    limit = min(n, k + _KEY_LOOKAHEAD)
    while m < limit and (text[m].isalnum() or text[m] in "_$-"):
        m += 1
    return m


def _colon_follows(text: str, k: int) -> bool:
    """Whether a `:` (not a URL's `://`) follows `k`, after spaces: what a key is followed by."""
    k = _skip_space(text, k)
    return k < len(text) and text[k] == ":" and not text.startswith("//", k + 1)


def _whole_value(token: str) -> bool:
    """Whether a token written out is a value read whole: a quoted string, a number or a
    literal (not text left to the decoder, such as a word holding a quote)."""
    token = token.strip()
    if _is_quoted(token):
        return _string_end(token, 1, token[0]) == len(token) - 1
    return token in _WORDS or bool(_NUMBER.fullmatch(token))


def _is_quoted(word: str) -> bool:
    return len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'"


def _as_text(body: str, quote: str) -> str:
    """The text a key written between `quote`s stands for (its escapes read), or as written."""
    if not quote:
        return body
    try:
        text: str = orjson.loads(_as_json_string(body))
    except orjson.JSONDecodeError:
        return body
    return text


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


_CUT_ESCAPE = re.compile(
    r"\\(?:u[0-9a-fA-F]{0,3})?\Z"
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}(?:\\(?:u[0-9a-fA-F]{0,3})?)?\Z"
)
"""An escape the end of a reply cut off: a backslash alone, `\\u` and fewer than four digits,
or a high surrogate's `\\ud83d` still waiting for its low half."""


def _cut_escape(body: str) -> int:
    """Where, in the body of a string open to the end of the reply, an escape the end cut off
    begins (its backslash after an even run of them: it begins an escape); -1 if none."""
    position = max(0, len(body) - 16)
    while (found := _CUT_ESCAPE.search(body, position)) is not None:
        at = found.start()
        run = at
        while run and body[run - 1] == "\\":
            run -= 1
        if (at - run) % 2 == 0:
            return at
        position = at + 1  # (an escaped backslash, then text: `\\ud83d\u` cuts `\u`)
    return -1


def _as_json_string(body: str, deadline: Deadline | None = None) -> str:
    """`body`, written between quotes of either kind, as a JSON string: its escapes kept (`\\'`
    read as `'`), bare double quotes and control characters escaped. One substitution per
    `_CHUNK` characters (the text between escapes is copied in C, which the held strings of
    held.py need at length), the deadline read between them: a body may be the whole region,
    and each escape costs a call. A chunk never ends inside an escape."""
    n = len(body)
    if deadline is None or n <= _CHUNK:
        return '"' + _TO_ESCAPE.sub(_escaped, body) + '"'
    parts = ['"']
    start = 0
    while start < n:
        deadline.check()
        end = min(start + _CHUNK, n)
        run = end
        while run > start and body[run - 1] == "\\":
            run -= 1
        if (end - run) % 2 and end < n:
            end += 1  # the backslash before `end` escapes the character at `end`
        parts.append(_TO_ESCAPE.sub(_escaped, body[start:end]))
        start = end
    parts.append('"')
    return "".join(parts)


_CHUNK = 65_536
"""Characters of a string body rewritten between two readings of the clock."""


def _escaped(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape is not None:
        if escape in _JSON_ESCAPES:
            return match.group()
        if escape in _LINE_ENDS:
            return ""  # a line continuation joins the lines (as JSON5 reads it)
        return escape if escape in escapes.QUOTES else "\\\\" + escape
    c = match.group()
    if c == "\\":
        return "\\\\"  # a backslash that ends the body
    if c == '"':
        return '\\"'
    return _CONTROL.get(c) or f"\\u{ord(c):04x}"


def _tidy(body: str, fence: str) -> str:
    if fence == "`":
        return body
    if body.startswith("\n"):
        body = body[1:]
    return textwrap.dedent(body).rstrip()
