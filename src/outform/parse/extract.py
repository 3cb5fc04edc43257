"""Stage *extract*: find the JSON in a reply that also contains prose, fences or reasoning.

Everything here is a single left-to-right pass (or a few), so the cost stays linear on
adversarial input such as thousands of unbalanced braces. The stage proposes *candidates* in
order of preference; later stages decode them and the first that validates wins.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import orjson

from outform.parse import loss

if TYPE_CHECKING:
    from outform.parse.context import Deadline

BOM = "\ufeff"
"""The byte order mark: a reply that opens with it (text decoded from bytes that carry one)
is read without it, and the removal recorded (`strip_bom`)."""

CandidateKind = Literal[
    "whole", "fence", "span", "unclosed", "inside", "collected", "written", "text"
]
RootKind = Literal["object", "array", "other"]

# Reasoning blocks some models write before (or instead of) their answer.
_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection", "thought", "scratchpad")
_MARKED_LINE = re.compile(
    r"^(?:[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)(?:[ \t][^\n`]*)?\r?$"  # a fence line
    r"|[^\n]*?(?:```|~~~)[^\n]*)",  # a line with a marker inside
    re.MULTILINE,
)
_INLINE_LANG = re.compile(r"([A-Za-z][A-Za-z0-9_+-]*)(?=[\s{\[])")
_JSON_LANGS = frozenset({"json", "jsonc", "json5", "javascript", "js", "ndjson", "jsonl"})

_IN_JSON = re.compile(r'(?:[^{}\[\]"\\]++|"(?:[^"\\]++|\\.)*+"|\\.)*+([{}\[\]"\\])?', re.DOTALL)
_IN_PROSE = re.compile(r"[{}\[\]]")
_OPENERS_AND_SPACE = re.compile(r"[{\[][{\[\s]*+")


def opener_run_end(text: str, index: int) -> int | None:
    """Where the run of openers at `index` ends (openers one after another, whitespace
    between them), None if no opener is there. The innermost decides whether they begin JSON
    (`[[ here` is prose; `[[1]` is not). One possessive repeat of a class, a character a step
    in C, then back over the whitespace after the last opener (a pattern repeating
    whitespace-then-opener took 0.57 s for five million openers; this, 0.015 s)."""
    run = _OPENERS_AND_SPACE.match(text, index)
    if run is None:
        return None
    end = run.end()
    return max(text.rfind("[", index, end), text.rfind("{", index, end)) + 1


_FLAT_BODY = r'(?:[^{}\[\]"\\]++|"(?:[^"\\]++|\\.)*+"|\\.)*+'
_FLAT = {
    "{": re.compile(r"\{" + _FLAT_BODY + r"\}", re.DOTALL),
    "[": re.compile(r"\[" + _FLAT_BODY + r"\]", re.DOTALL),
}
_OPENERS = {"{": "}", "[": "]"}
_CLOSERS = {"}": "{", "]": "["}


@dataclass(frozen=True, slots=True)
class Candidate:
    """A piece of the reply that may hold the value."""

    text: str
    kind: CandidateKind
    root: RootKind
    transforms: tuple[str, ...] = ()
    depth: int = 0
    start: int = 0
    detail: str = ""
    """Said with the extraction's change (which of several values this is)."""
    lost: int = 0
    """Letters and digits of the reply's values this candidate leaves out, as extraction
    knows them: a gathered list leaves out the value left open at the end (a line cut off),
    one of several values the others."""
    partial: bool = False
    """A gathering of the regions closed inside the value left open at the end, without the
    rest of that value (which stops reading as JSON before its end: a value written broken,
    not one cut off). It covers only part of the reply's JSON: tried after every reading
    that holds the whole value (see `_gatherings`)."""

    part: bool = False
    """A region closed inside a value written broken (see `Span.part`): tried after that
    value's repair, which must keep it whole, never before."""

    repair: str | None = None
    """What a tolerant reading is handed, when it is not `text`: `text` with the prose labels
    closed inside it cut out (`{"name": "F"g"} {braces}`). Read as written (and unescaped),
    the candidate is `text` itself: a bracket inside a string is the string's (`"{\\"[\\":
    1}"`, an object written as a JSON string)."""

    @property
    def size(self) -> int:
        return len(self.text)

    @property
    def tolerant_text(self) -> str:
        """The text a tolerant reading is handed (`repair`, else `text`)."""
        return self.text if self.repair is None else self.repair


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int  # exclusive
    root: RootKind
    depth: int
    closed: bool
    inside: bool = False
    """Closed inside the region left open at the end, after the point where that region stops
    reading as JSON (`[0, 1) then {"a": 1}`): a region of its own, not a part of it."""
    part: bool = False
    """Inside, and that region stops reading as JSON at a quote left out or one too many
    (`[{"name": "F"g"}, {"name": "Bob"}]`): a value written broken, of which this is a part."""


_ANY_TAG = re.compile(
    r"</(" + "|".join(_REASONING_TAGS) + r")>|<(" + "|".join(_REASONING_TAGS) + r")\b[^>]{0,200}>",
    re.IGNORECASE,
)
"""A reasoning tag: group 1 names a closing one, group 2 an opening one."""
TAG_SPAN = 256
"""More than the longest reasoning tag `reasoning_tag` finds: a text that may end inside one
keeps this much of its end to look at again with what follows."""


def reasoning_tag(text: str) -> tuple[bool, int, int] | None:
    """The first reasoning tag in `text`, opening or closing, as `strip_reasoning` reads them:
    (whether it closes, where it starts, where it ends). A closing tag met first has no
    opening tag before it: the reply began inside reasoning (its opening tag was in the
    prompt), which ends there."""
    found = _ANY_TAG.search(text)
    if found is None:
        return None
    return found.group(1) is not None, found.start(), found.end()


def strip_reasoning(text: str) -> tuple[str, list[str]]:
    """Remove `<think>…</think>` style blocks; a dangling close tag drops everything before it
    (some models omit the opening tag), a dangling open tag drops everything after it.

    A closing tag is dangling when it is the first reasoning tag of the reply: the reply began
    inside reasoning (as `reasoning_tag` reads it for the stream). A tag written inside a string
    of a JSON value is text, not a tag (`{"note": "close with </think>"}`): see `_tags`."""
    tags = _tags(text)
    if not tags:
        return text, []
    removed: list[str] = []
    out: list[str] = []
    pos = 0
    index = 0
    if tags[0].group(1):  # a closing tag first: the reasoning began at the very start
        removed.append(tags[0].group(1).lower())
        pos = tags[0].end()
        index = 1
    count = len(tags)
    while index < count:
        tag = tags[index]
        name = tag.group(2)
        index += 1
        if not name:
            continue  # a closing tag outside any block: prose, left as written
        name = name.lower()
        out.append(text[pos : tag.start()])
        removed.append(name)
        while index < count and (tags[index].group(1) or "").lower() != name:
            index += 1  # (the tags inside the block are its text)
        if index == count:
            pos = len(text)  # an unclosed reasoning block runs to the end of the reply
            break
        pos = tags[index].end()
        index += 1
    out.append(text[pos:])
    return ("".join(out) if removed else text), removed


_STRING_OR_ESCAPE = re.compile(r'"(?:[^"\\]++|\\.)*+(?:"|\Z)|\\.', re.DOTALL)
"""A string of a JSON region, or one it ends inside (a reply cut off), or an escape outside a
string (which `_IN_JSON` reads as a unit)."""


def _tags(text: str) -> list[re.Match[str]]:
    """The reasoning tags of `text`, in order, less those written inside a string of a JSON
    value: a string of a region closed as `scan` reads it (a tag in a field's text,
    `{"note": "use </think> to close"}`, is content), or of the region left open at the end
    when that reads as JSON to its end (a reply cut off inside such a string). Reasoning
    written before the answer is prose, whatever quotes it holds: a region that stops reading
    as JSON before its end (`She said "hi {" and left</think>{...}`) protects nothing. One scan
    of the text, and one pass over the strings of each region that holds a tag."""
    tags = list(_ANY_TAG.finditer(text))
    if not tags or '"' not in text:
        return tags
    regions = [
        span
        for span in scan(text, breaks=False).spans
        if span.closed or _reads_to_end(text[span.start :])
    ]
    regions.sort(key=lambda span: span.start)
    starts = [span.start for span in regions]
    inside: dict[int, list[int]] = {}  # a region's index: the starts of the tags inside it
    for tag in tags:
        at = bisect.bisect_right(starts, tag.start()) - 1
        if at >= 0 and tag.start() < regions[at].end:
            inside.setdefault(at, []).append(tag.start())
    texts: set[int] = set()
    for at, positions in inside.items():
        region = regions[at]
        waiting = iter(positions)
        position = next(waiting, None)
        for string in _STRING_OR_ESCAPE.finditer(text, region.start, region.end):
            while position is not None and position < string.start():
                position = next(waiting, None)  # (between strings: structure, a tag)
            while position is not None and position < string.end():
                if text[string.start()] == '"':
                    texts.add(position)
                position = next(waiting, None)
            if position is None:
                break
    return [tag for tag in tags if tag.start() not in texts] if texts else tags


def _reads_to_end(region: str) -> bool:
    """Whether a region left open at the end reads as JSON to its end (a reply cut off)."""
    region = region.rstrip()
    try:
        orjson.loads(region)
    except orjson.JSONDecodeError as error:
        return error.pos >= len(region)
    return True


@dataclass(frozen=True, slots=True)
class Fence:
    lang: str
    content: str
    start: int
    closed: bool


def find_fences(text: str, deadline: Deadline | None = None) -> list[Fence]:
    """Markdown code fences, in order. An unclosed fence runs to the end (a truncated reply).

    Only the lines that hold a marker (found by one regex pass, in C) are looked at; a
    fence's body is sliced out of the text, so the cost is linear in the reply.
    """
    fences: list[Fence] = []
    if "```" not in text and "~~~" not in text:
        return fences
    opened: tuple[str, str, int] | None = None  # marker, lang, where the body starts
    for number, found in enumerate(_MARKED_LINE.finditer(text)):
        if deadline is not None and not number & 1023:
            deadline.check()
        offset = found.start()
        mark = found.group(1)  # None: a marker inside a line that is no fence line
        if opened is None:
            if mark:
                opened = (mark, found.group(2).lower(), _next_line(text, found.end()))
            else:
                line = found.group().rstrip("\r")
                if "```" in line:
                    fences.extend(_inline_fences(line, offset))
        else:
            marker, lang, start = opened
            if mark and not found.group(2) and mark[0] == marker[0] and len(mark) >= len(marker):
                fences.append(Fence(lang, text[start:offset], start, True))
                opened = None
    if opened is not None:
        marker, lang, start = opened
        fences.append(Fence(lang, text[start:], start, False))
    return fences


def _next_line(text: str, end: int) -> int:
    """Where the line after the one ending at `end` starts."""
    return end + 1 if end < len(text) else end


def _inline_fences(line: str, offset: int) -> Iterable[Fence]:
    """Fences opened and closed on one line: text between the 1st and 2nd ```, 3rd and 4th…"""
    parts = line.split("```")
    position = offset + len(parts[0]) + 3
    for index in range(1, len(parts) - 1):
        part = parts[index]
        if index % 2 == 1:
            lang = _INLINE_LANG.match(part)
            content = part[lang.end() :] if lang else part
            start = position + (lang.end() if lang else 0)
            yield Fence(lang.group(1).lower() if lang else "", content, start, True)
        position += len(part) + 3


@dataclass(frozen=True, slots=True)
class Scan:
    spans: list[Span]
    deepest: int
    unmatched: int
    """Closers that matched no opener, or closed an outer one: a measure of how broken the
    bracket structure is (a tolerant decoder's cost can grow with it)."""
    open_string: bool = False
    """The text ends inside a string of the region left open (a reply cut mid-string)."""


def scan_spans(text: str) -> tuple[list[Span], int]:
    """Top-level bracketed regions of `text` in one pass, and the deepest nesting seen."""
    found = scan(text)
    return found.spans, found.deepest


def scan(text: str, deadline: Deadline | None = None, *, breaks: bool = True) -> Scan:
    """Top-level bracketed regions of `text` in one pass, with nesting and breakage measures.

    Quotes are only tracked inside brackets that open JSON, so an apostrophe or a lone quote in
    prose cannot swallow the rest of the reply. A closer that does not match the innermost
    opener closes the opener it does match (the brackets in between were left open by the
    model); a closer with no opener at all is prose and ignored. The region still open at the
    end is reported unclosed.

    An opener still open at the end that cannot start JSON ("use { or [ here") is prose: the
    regions closed inside it are top-level regions, and the unclosed region, if any, starts at
    the first opener that can (see `_opens_json`). With `breaks`, the regions closed in that
    unclosed region after it stops reading as JSON are reported too (see `_after_break`).
    """
    spans: list[Span] = []
    stack: list[str] = []
    opened: list[int] = []  # where each opener on the stack is
    peaks: list[int] = []  # the deepest stack length reached inside each opener
    prose = 0  # how many openers at the bottom of the stack are prose
    inner: list[list[Span]] = [[]]  # inner[k]: regions closed inside stack[k - 1], k <= prose
    deepest = 0
    unmatched = 0
    open_counts = {"{": 0, "[": 0}
    pos = 0
    length = len(text)
    steps = 0
    open_string = False
    run_end = 0  # where the run of openers last judged in prose ends, and its verdict
    run_is_json = False
    while pos < length:
        # Inside JSON, strings and escapes are skipped in the same match that finds the next
        # bracket; in prose, only brackets are structure.
        if len(stack) > prose:
            match = _IN_JSON.match(text, pos)
            assert match is not None  # the pattern matches the empty string
            ch = match.group(1)
            if ch is None or ch in '"\\':
                open_string = ch is not None
                break  # the end, or a string (or escape) left open that runs to the end
            index = match.start(1)
        else:
            found = _IN_PROSE.search(text, pos)
            if found is None:
                break
            ch, index = found.group(), found.start()
        pos = index + 1
        steps += 1
        if deadline is not None and not steps & 1023:
            deadline.check()
        if ch in _OPENERS:
            level = len(stack)
            if level > prose:
                is_json = True
            elif index < run_end:
                is_json = run_is_json  # a later opener of the same run: the same verdict
            else:
                ends = opener_run_end(text, index)
                assert ends is not None  # it starts with this opener
                run_end = ends
                is_json = run_is_json = _opens_json(text, run_end - 1)
            flat = _FLAT[ch].match(text, index) if is_json else None
            if flat is not None:
                # A region with no brackets inside: opened and closed in one match.
                pos = flat.end()
                if peaks and level + 1 > peaks[-1]:
                    peaks[-1] = level + 1
                if level == 0 or level <= prose:
                    span = Span(index, pos, _root(ch), 1, True)
                    (spans if level == 0 else inner[level]).append(span)
                    deepest = max(deepest, 1)
                continue
            if not is_json:
                prose += 1
                if len(inner) <= prose:
                    inner.append([])
                else:
                    inner[prose] = []
            stack.append(ch)
            opened.append(index)
            peaks.append(len(stack))
            open_counts[ch] += 1
        else:
            opener = _CLOSERS[ch]
            if not open_counts[opener]:
                unmatched += 1
                continue  # a closer with no opener: prose, ignored
            # Close the matching opener; brackets left open inside it close with it. Each
            # opener is popped once, so this stays linear overall.
            unmatched += stack[-1] != opener
            while True:
                popped = stack.pop()
                open_counts[popped] -= 1
                start = opened.pop()
                peak = peaks.pop()
                if peaks and peak > peaks[-1]:
                    peaks[-1] = peak
                if popped == opener:
                    break
            level = len(stack)
            prose = min(prose, level)
            if level == 0 or level <= prose:
                span = Span(start, index + 1, _root(text[start]), peak - level, True)
                (spans if level == 0 else inner[level]).append(span)
                if level == 0:
                    deepest = max(deepest, span.depth)
    if stack:
        # Openers left open that are prose: what closed inside them was found in prose. Only
        # the regions read as JSON count toward the nesting, not the prose brackets around.
        for level in range(1, prose + 1):
            spans += inner[level]
            deepest = max(deepest, 0, *(span.depth for span in inner[level]))
        if prose < len(opened):
            start = opened[prose]
            depth = max(peaks[prose:]) - prose
            spans.append(Span(start, length, _root(text[start]), depth, False))
            deepest = max(deepest, depth)
            if breaks:
                inside = _after_break(text, start, deadline)
                spans += inside
                deepest = max(deepest, 0, *(span.depth for span in inside))
    return Scan(spans, deepest, unmatched, open_string)


def _after_break(text: str, start: int, deadline: Deadline | None) -> list[Span]:
    """The regions closed inside the region left open at `start`, after the point where it
    stops reading as JSON as written: a region that does not read as JSON may not swallow one
    that does. A region that reads as JSON to its end (a reply cut off) holds its parts."""
    region = text[start:].rstrip()
    try:
        orjson.loads(region)
    except orjson.JSONDecodeError as error:
        at = error.pos
    else:
        return []
    if at >= len(region):
        return []  # JSON to the end, cut off there
    offset = start + at
    rest = scan(text[offset:], deadline, breaks=False)
    part = _at_a_quote(region, at)
    return [
        Span(s.start + offset, s.end + offset, s.root, s.depth, True, inside=True, part=part)
        for s in rest.spans
        if s.closed
    ]


_WORD_THEN_QUOTE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*[\"']")


def _at_a_quote(region: str, at: int) -> bool:
    """Whether `region` stops reading as JSON at `at` for a quote left out or one too many: a
    string ends right before it (`"F"g"`), or a word ends in a quote there (`x": 3`)."""
    before = region[:at].rstrip()
    return before.endswith('"') or _WORD_THEN_QUOTE.match(region, at) is not None


_VALUE_START = frozenset("{[\"'-+.0123456789/]")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_LITERALS = frozenset({"true", "false", "null", "True", "False", "None", "NaN", "Infinity"})


def _opens_json(text: str, start: int) -> bool:
    """Whether the bracket at `start`, left open at the end, can begin JSON (possibly
    truncated, or in a tolerant syntax) rather than being a bracket in prose.

    After `{` JSON has a key (quoted, or a bare word followed by `:`), `}` or a comment; after
    `[` a value, `]` or a comment; a bare word is only a value when it is a literal (`true`,
    `None`, ...). Another bracket is structure, if broken. Text that ends right after the
    bracket may still be JSON.
    """
    verdict = opens_json(text, start, final=True)
    assert verdict is not None  # the whole text: always decided
    return verdict


_KEY_QUOTE_LEFT_OUT = re.compile(r"\{\s*[A-Za-z_$][A-Za-z0-9_$]*[\"']\s*:")
"""`{name": …`: an object's first key written with its opening quote left out."""


def _is_label(text: str, start: int) -> bool:
    """Whether the closed region at `start` is a bracket of the prose (`[Answer]`,
    `{braces}`): its opener cannot begin JSON, and it is no object whose first key lost its
    opening quote (`{name": "X"}` is a value written broken, to be repaired or counted)."""
    innermost = _innermost(text, start)
    if _opens_json(text, innermost):
        return False
    return _KEY_QUOTE_LEFT_OUT.match(text, innermost) is None


def _innermost(text: str, start: int) -> int:
    """The innermost opener of the run of openers at `start` (which judges the run)."""
    end = opener_run_end(text, start)
    return start if end is None else end - 1


def opens_json(text: str, start: int, *, final: bool) -> bool | None:
    """`_opens_json` on a text that may go on (`final` false, a stream): None while what
    follows the bracket does not decide it yet (nothing but spaces after it, a word that may
    still grow, a key word not yet followed by anything). A verdict given on a text that goes
    on is the one `_opens_json` gives on the whole text."""
    pos = start + 1
    length = len(text)
    while pos < length and text[pos] in " \t\r\n":
        pos += 1
    if pos >= length:
        return True if final else None
    head = text[pos]
    if text[start] == "[":
        if head in _VALUE_START:
            return True
        word = _WORD.match(text, pos)
        if word is None:
            return False
        if word.end() >= length and not final:
            return None
        return word.group() in _LITERALS
    if head in "\"'{[}/":
        return True  # a key, the end, a comment (or brackets: broken, but structure)
    word = _WORD.match(text, pos)
    if word is None:
        return False
    after = word.end()
    while after < length and text[after] in " \t":
        after += 1
    if after >= length:
        return True if final else None
    return text[after] == ":"


def _inside_span(position: int, spans: list[Span], starts: list[int]) -> bool:
    """Whether `position` lies strictly inside a closed top-level span (spans are sorted,
    `starts` are their starts)."""
    index = bisect.bisect_right(starts, position) - 1
    if index < 0:
        return False
    span = spans[index]
    return span.closed and span.start < position < span.end


def _root(opener: str) -> RootKind:
    return "object" if opener == "{" else "array"


def root_of(text: str) -> RootKind:
    head = text[:1]
    return "object" if head == "{" else "array" if head == "[" else "other"


@dataclass(frozen=True, slots=True)
class Extraction:
    candidates: list[Candidate]
    body: str
    """The reply with reasoning blocks removed, otherwise as written."""
    reasoning: list[str]
    deepest: int
    document: bool
    """The whole reply is one JSON document (possibly broken): it starts with a bracket and
    whatever follows its first top-level value is more JSON, not prose. Its tolerant reading
    then outranks any piece of it."""
    unmatched: int = 0
    cut: bool = False
    """The document is left open at the end (a reply cut off): a region inside it is a piece
    of it, whose reading alone leaves the rest out."""
    continued: bool = False
    """The document's first value is closed and what follows it continues it (see
    `loss.continues`): likewise, a piece of it leaves the rest out."""
    bom: bool = False
    """The reply opened with a byte order mark, removed from `body` (`strip_bom`)."""


_CONTINUATION = frozenset(',:{}[]"')


def _keep(text: str) -> str:
    return text


def _outside_fences(body: str, closed: list[Span], fences: list[Fence]) -> list[Span]:
    """The closed regions that lie in no fenced block and read as JSON as written (a bracket
    in prose that does not, `{name}`, is no value of the reply)."""
    bounds = sorted((f.start, f.start + len(f.content)) for f in fences)
    starts = [start for start, _ in bounds]
    found: list[Span] = []
    for span in closed:
        index = bisect.bisect_right(starts, span.start) - 1
        if index >= 0 and span.start < bounds[index][1]:
            continue
        try:
            orjson.loads(body[span.start : span.end])
        except orjson.JSONDecodeError:
            continue
        found.append(span)
    return found


def _left_by_each(
    pieces: Iterable[tuple[int, str]], deadline: Deadline | None, elsewhere: int = 0
) -> dict[int, int]:
    """For each of several values or blocks (its start, its text), the letters and digits of
    the others, and `elsewhere` more (of values elsewhere in the reply)."""
    sizes = {start: loss.measure(text, deadline=deadline).size for start, text in pieces}
    total = sum(sizes.values()) + elsewhere
    return {start: total - size for start, size in sizes.items()}


def _numbering(starts: list[int], noun: str) -> dict[int, str]:
    """`value 2 of 3 in the reply` for each start, when there are several."""
    if len(starts) < 2:
        return {}
    return {start: f"{noun} {k} of {len(starts)} in the reply" for k, start in enumerate(starts, 1)}


def candidates(
    text: str,
    wanted: frozenset[RootKind],
    *,
    collect: bool,
    beside: bool = True,
    deadline: Deadline | None = None,
) -> Extraction:
    """Candidates in order of preference.

    Order: the whole reply; fenced blocks, JSON-tagged first; bracketed regions of the prose,
    those whose root matches the schema's first, in order of appearance; the region left open at
    the end (a truncated reply); with `collect`, every top-level value of the reply gathered
    into one array (when there are several); with `beside` too, the values of the prose
    beside fenced blocks are gathered with them (for a root that wants an array: one that says
    nothing takes the model's blocks, and the prose around them is context).

    "Largest" in the sense of outermost: only top-level regions are candidates, never the
    brackets nested inside them; among several, the earliest comes first.
    """
    # A byte order mark opening the reply (text decoded from bytes that carry one) is no
    # content and no prose: removed, and recorded as what it is.
    bom = text.startswith(BOM)
    body, removed = strip_reasoning(text[1:] if bom else text)
    base = (*(("strip_bom",) if bom else ()), *(("strip_reasoning",) if removed else ()))
    scanned = scan(body, deadline)
    spans, deepest = scanned.spans, scanned.deepest
    # A reply cut inside a string keeps what ends it: the spaces and line breaks are the
    # string's own.
    ending = _keep if scanned.open_string else str.rstrip
    whole = ending(body.lstrip())
    lead = len(body) - len(body.lstrip())
    found: list[Candidate] = [Candidate(whole, "whole", root_of(whole), base, 0, lead)]
    seen = {whole}
    document = cut = continued = False
    # A reply that starts with a bracket that cannot begin JSON (`[Answer]: {...}`, `{name}`)
    # starts with prose: it is no JSON document, whatever follows the bracket, and its JSON is
    # found in its regions, each tried as written before the reply is read by a tolerant
    # decoder (which would make the label a value).
    if spans and spans[0].start == lead and _opens_json(body, _innermost(body, lead)):
        # The document is left open at the end by its first value, or by a later one written
        # broken (`{"id": 1}⏎{"id": 2, x": 3}`: it stops reading as JSON before its end). A
        # later one cut off is a value cut off, left out of a gathering (see `_gatherings`).
        cut = not spans[0].closed or any(
            not span.closed and not _cut_off(body[span.start :].rstrip()) for span in spans
        )
        rest = body[spans[0].end :].strip()
        continued = spans[0].closed and loss.continues(rest)
        document = not spans[0].closed or not rest or rest[0] in _CONTINUATION or continued
        if document and not collect and spans[0].closed and rest[:1] in ("{", "["):
            # Several values, one after another (`{...}\n{...}`), for a root that takes one:
            # each is a candidate of its own, in order, never read together by a tolerant
            # decoder (which would keep the last, or merge them).
            document = False

    # A "fence" that starts inside a bracketed region is text inside a JSON string.
    starts = [s.start for s in spans]
    fences = [f for f in find_fences(body, deadline) if not _inside_span(f.start, spans, starts)]
    # A block of code (tagged with another language than JSON's, or whose body begins with a
    # word that begins no JSON: `cfg = {...}`) is no answer while the reply holds a value
    # outside code: neither it nor the regions inside it are candidates. (The stream parser
    # skips such a block whole.) Otherwise its regions are candidates, said to be in code.
    code = [f for f in fences if _is_code(f)]
    in_code: dict[int, str] = {}  # where a region inside a block of code starts: its language
    note = ""
    if code:
        blocks = sorted(code, key=lambda f: f.start)
        bounds = [(f.start, f.start + len(f.content)) for f in blocks]
        for span in spans:
            index = _within(span.start, bounds)
            if index is not None:
                in_code[span.start] = blocks[index].lang or "untagged"
        if _value_outside_code(body, spans, in_code, [f for f in fences if f not in code]):
            fences = [f for f in fences if f not in code]
            spans = [s for s in spans if s.start not in in_code]
            starts = [s.start for s in spans]
            langs = ", ".join(dict.fromkeys(f.lang or "untagged" for f in code))
            note = f"{len(code)} code block(s) in the reply ({langs}) not read as the answer"
            in_code = {}
    closed = [s for s in spans if s.closed]
    # Values written in the prose outside the blocks (`{"a": 0}` then a fence): gathered with
    # them, in order of appearance, when they read as JSON as written.
    outside = _outside_fences(body, closed, fences) if fences else []
    # Of several blocks or values, the first that validates is the reply's: each change says
    # which one it took, and how many values the prose around the blocks holds.
    fenced = _numbering([f.start for f in fences], "block")
    if outside:
        more = f"{len(outside)} more value(s) in the reply outside its fenced blocks"
        fenced = {f.start: "; ".join(filter(None, (fenced.get(f.start), more))) for f in fences}
    fences.sort(key=lambda f: (f.lang not in _JSON_LANGS and f.lang != "", not f.closed))
    # Of several blocks (and values outside them), the one taken leaves the others out.
    left_by_block: dict[int, int] = {}
    if len(fences) + len(outside) > 1:
        prose = sum(loss.measure(body[s.start : s.end], deadline=deadline).size for s in outside)
        left_by_block = _left_by_each(((f.start, f.content) for f in fences), deadline, prose)
    for fence in fences:
        content = fence.content.strip()
        if content and content not in seen:
            seen.add(content)
            transform = "strip_fence" if fence.closed else "strip_unclosed_fence"
            found.append(
                Candidate(
                    content,
                    "fence",
                    root_of(content),
                    (*base, transform),
                    0,
                    fence.start,
                    fenced.get(fence.start, ""),
                    left_by_block.get(fence.start, 0),
                )
            )

    # A closed region whose opener cannot begin JSON (`[Answer]`, `{braces}`: after `[` no value,
    # after `{` no key) is a bracket of the prose, never one of the reply's values: not
    # numbered among them, nor gathered (it is still a candidate: the whole of `[a, b]`).
    worded = {s.start for s in closed if _is_label(body, s.start)}
    # A label closed inside a value written broken (`{"name": "F"g"} {braces}`) is prose all
    # the same: a tolerant reading of that value is handed it cut out, never made an item.
    # One where a value goes (after `:`, `,` or an opener: `tags: [x]`) is that value's text.
    labels = sorted(
        (s for s in closed if s.inside and s.start in worded and not _in_value(body, s.start)),
        key=lambda s: s.start,
    )
    if labels:
        found[0] = replace(found[0], repair=ending(_cut(body, lead, len(body), labels)))
    # A region closed inside a value written broken is a part of that value, not one of the
    # reply's values: read alone, it leaves out the rest of that value (and the others).
    parts = [s for s in spans if s.part]
    apart = worded | {s.start for s in parts}
    numbered = _numbering([start for start in starts if start not in apart], "value")
    # Of several values, the one taken leaves the others out: their content is its loss
    # (recorded, never refused: a template before the answer makes a lossy answer). (Values
    # outside fenced blocks are numbered with them: there, the blocks count too.)
    numbered_spans = ((s.start, body[s.start : s.end]) for s in spans if s.start in numbered)
    others = _left_by_each(numbered_spans, deadline) if numbered else {}
    opened = [s for s in spans if not s.closed]
    if parts and opened:
        around = opened[-1]
        total = _size(body[around.start : around.end], deadline) + others.get(around.start, 0)
        for part in parts:
            others[part.start] = max(0, total - _size(body[part.start : part.end], deadline))
    # Regions found inside a region that stops reading as JSON come after it: its tolerant
    # reading is tried before theirs (each is tried as written before any is repaired).
    inside = [s for s in closed if s.inside]
    closed = [s for s in closed if not s.inside]
    closed.sort(key=lambda s: (s.root not in wanted, s.start))
    inside.sort(key=lambda s: (s.root not in wanted, s.start))
    for span in [*closed, *(s for s in spans if not s.closed), *inside]:
        piece = body[span.start : span.end]
        kind: CandidateKind = "inside" if span.inside else "span"
        transform = "extract_from_prose"
        detail = numbered.get(span.start, "")
        if span.part:
            detail = "a part of the value that stops reading as JSON before its end"
        if span.start in in_code:
            transform = "extract_from_code"
            where = f"inside a code block ({in_code[span.start]})"
            detail = "; ".join(filter(None, (detail, where)))
        repair = None
        if not span.closed:
            piece, kind, transform = ending(piece), "unclosed", "extract_truncated"
            trimmed = ending(_cut(body, span.start, span.end, labels))
            repair = trimmed if trimmed != piece else None
        if piece not in seen:
            seen.add(piece)
            found.append(
                Candidate(
                    piece,
                    kind,
                    span.root,
                    (*base, transform),
                    span.depth,
                    span.start,
                    detail,
                    others.get(span.start, 0),
                    part=span.part,
                    repair=repair,
                )
            )
    if note:
        found[1:] = [
            replace(c, detail="; ".join(filter(None, (c.detail, note)))) for c in found[1:]
        ]
    if collect:
        found += _gatherings(
            body,
            spans,
            fences,
            outside=outside,
            regions=[s for s in (*closed, *inside) if s.start not in worded],
            prose=len(worded),
            base=base,
            deadline=deadline,
            beside=beside,
            depth=deepest + 1,
            labels=labels,
        )
    return Extraction(
        found,
        body,
        removed,
        deepest,
        document,
        scanned.unmatched,
        document and cut,
        continued,
        bom,
    )


def _gatherings(
    body: str,
    spans: list[Span],
    fences: list[Fence],
    *,
    outside: list[Span],
    regions: list[Span],
    base: tuple[str, ...],
    deadline: Deadline | None,
    beside: bool,
    depth: int,
    prose: int = 0,
    labels: list[Span] | None = None,
) -> list[Candidate]:
    """The reply's values gathered into one array (for a root that wants a list).

    The model's own markers first: several fenced blocks are gathered; without fences, the
    bracketed regions of the reply are (`regions`), and with `beside` the values of the prose
    beside fenced blocks (`outside`) are gathered with the blocks. A block of JSON lines gives
    each of its values, as the same lines unfenced do.

    A value left open at the end of the reply (or of a block) is either cut off (it reads as
    JSON as written to its end): it is left out, its letters and digits the gathering's
    `lost`; or written broken (it stops reading as JSON before its end: `{"id": 2, x": 3}`),
    and a value of the reply all the same, whatever regions close inside it after its break.
    Then the first gathering holds it whole, to be repaired; a second gathers the regions
    closed inside it instead (which read as written), leaving the rest of it out: its letters
    and digits are that gathering's `lost`, and it is `partial`, tried only after every
    reading that holds the value (see the pipeline).

    `regions` holds no bracket of the prose whose opener cannot begin JSON; `prose` says how
    many were left out (said in the detail: prose is no content)."""
    lines = [_lines_of(f.content.strip(), deadline) for f in fences]
    placed = [(f.start, v) for f, held in zip(fences, lines, strict=True) for v in held.values]
    every = [
        (f.start, v)
        for f, held in zip(fences, lines, strict=True)
        for v in held.every or held.values
    ]
    tail = sum(held.tail for held in lines)
    broken = sum(held.broken for held in lines)
    inner = sum(held.inner for held in lines)
    partial = any(held.every for held in lines)
    # A gathering of the broken value alone is one too when regions closed inside it are the
    # reply's other values (JSON lines whose first line is broken); an array broken alone is
    # the list itself, read whole as the reply or the block.
    alone = partial
    if fences and not (outside and beside):
        regions = []
    elif fences:
        regions, prose = outside, 0
    transform = "collect_values" if regions or not fences else "collect_fences"
    written: list[str] = []
    unread = 0  # letters and digits of the values that gathering leaves out
    in_lines = False  # the reply is JSON lines: the regions it leaves out are values
    if regions:
        pieces = [(span.start, body[span.start : span.end]) for span in regions]
        placed += pieces
        opened = _open_value(body, spans, fences, deadline)
        if opened is not None and opened[1]:
            tail += opened[2]
            every += pieces
        elif opened is not None:
            span, _, size = opened
            held = [s for s in regions if s.inside]
            inner += len(held)
            broken += max(0, size - sum(_size(body[s.start : s.end], deadline) for s in held))
            partial = True
            alone = alone or (span.root == "object" and bool(held))
            every += [piece for piece in pieces if not span.start <= piece[0] < span.end]
            region = _cut(body, span.start, len(body), labels or [])
            every.append((span.start, loss.region(region.rstrip())))
            if any(f.start > span.start for f in fences):
                every = []  # (it runs over a fenced block: no value of its own to repair)
        else:
            every += pieces
        if beside and not fences:
            # The regions that read as JSON as written, gathered without those that do not
            # (`Use {braces} like this:` is prose): tried only when the gathering of every
            # region can be read at no tier (see the pipeline).
            written = [piece for _, piece in sorted(pieces) if _reads_as_written(piece)]
            in_lines = _json_lines(body, spans)
            if in_lines:
                # Among JSON lines a region left out is a value written broken, never prose:
                # its letters and digits are what that gathering loses.
                dropped = (piece for _, piece in pieces if not _reads_as_written(piece))
                unread = sum(_size(piece, deadline) for piece in dropped)
    values = [piece for _, piece in sorted(placed, key=lambda item: item[0])]
    found: list[Candidate] = []
    steps = (*base, transform)
    if partial and (len(every) > 1 or (alone and every)):
        whole = [piece for _, piece in sorted(every, key=lambda item: item[0])]
        found.append(Candidate("[" + ",".join(whole) + "]", "collected", "array", steps, depth))
    if not (len(values) > 1 or (len(values) == 1 and tail > 0 and beside)):
        return found
    said = []
    if tail:
        said.append("the value left open at the end (cut off) is left out")
    if partial:
        but = f" but for the {inner} region(s) closed inside it" if inner else ""
        said.append(f"the value that stops reading as JSON before its end is left out{but}")

    def told(left: int) -> str:
        """The detail of a gathering that leaves out `left` regions of the prose."""
        note = f"{left} region(s) of the prose that do not read as JSON left out"
        return "; ".join([note, *said] if left else said)

    lost = tail + broken
    joined = "[" + ",".join(values) + "]"
    found.append(
        Candidate(joined, "collected", "array", steps, depth, 0, told(prose), lost, partial=partial)
    )
    if 1 < len(written) < len(values):
        detail = told(len(values) - len(written) + prose)
        if in_lines:
            note = f"{len(values) - len(written)} value(s) that read as JSON at no tier left out"
            detail = "; ".join([note, told(prose)] if told(prose) else [note])
        text = "[" + ",".join(written) + "]"
        found.append(
            Candidate(
                text, "written", "array", steps, depth, 0, detail, lost + unread, partial=partial
            )
        )
    return found


def _in_value(body: str, start: int) -> bool:
    """Whether the bracket at `start` stands where a value of the JSON around it goes: after
    a colon, a comma or an opener (spaces between)."""
    at = start - 1
    while at >= 0 and body[at] in " \t\r\n":
        at -= 1
    return at >= 0 and body[at] in ":,[{"


def _cut(body: str, start: int, end: int, labels: list[Span]) -> str:
    """`body[start:end]` with the prose labels inside it (sorted) cut out, a space for each."""
    parts: list[str] = []
    position = start
    for label in labels:
        if start <= label.start and label.end <= end:
            parts += [body[position : label.start], " "]
            position = label.end
    return "".join([*parts, body[position:end]])


def _json_lines(body: str, spans: list[Span]) -> bool:
    """Whether the reply is values one after another (JSON lines): nothing but whitespace and
    commas outside its top-level regions (prose labels, `[Answer]`, count as regions)."""
    tops = sorted((s for s in spans if not s.inside), key=lambda s: s.start)
    position = 0
    for span in tops:
        if body[position : span.start].strip(" \t\r\n,"):
            return False
        position = max(position, span.end)
    return not body[position:].strip(" \t\r\n,")


_CODE_HEAD = re.compile(r"\s*[A-Za-z_$]")
_JSON_WORD = re.compile(r"\s*(?:true|false|null|Infinity|NaN)\b")


def _is_code(fence: Fence) -> bool:
    """Whether a fenced block holds code, not JSON: tagged with another language than JSON's,
    or its body begins with a word that begins no JSON value (`cfg = {...}`, `import json`)."""
    if fence.lang and fence.lang not in _JSON_LANGS:
        return True
    return bool(_CODE_HEAD.match(fence.content)) and not _JSON_WORD.match(fence.content)


def _within(position: int, bounds: list[tuple[int, int]]) -> int | None:
    """Which of `bounds` (disjoint, sorted [start, end) pairs) holds `position`, if any."""
    index = bisect.bisect_right(bounds, position, key=lambda bound: bound[0]) - 1
    return index if index >= 0 and position < bounds[index][1] else None


def _value_outside_code(
    body: str, spans: list[Span], in_code: dict[int, str], blocks: list[Fence]
) -> bool:
    """Whether the reply holds a value outside its blocks of code: another block, a region of
    the prose that reads as JSON as written, or one left open at the end that reads as JSON to
    its end (a value cut off)."""
    if any(f.content.strip() for f in blocks):
        return True
    for span in spans:
        if span.start in in_code:
            continue
        if span.closed and _reads_as_written(body[span.start : span.end]):
            return True
        if not span.closed and _cut_off(body[span.start :].rstrip()):
            return True
    return False


def _cut_off(region: str) -> bool:
    """Whether a region left open at the end reads as JSON as written to its end."""
    try:
        orjson.loads(region)
    except orjson.JSONDecodeError as error:
        return error.pos >= len(region)
    return True


def _reads_as_written(piece: str) -> bool:
    try:
        orjson.loads(piece)
    except orjson.JSONDecodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class _Lines:
    """The values of a fenced block for a gathering (see `_lines_of`)."""

    values: list[str]
    every: list[str] = field(default_factory=list)
    """With a value written broken: the values, that one whole in place of the regions
    closed inside it (empty otherwise)."""
    tail: int = 0
    """Letters and digits of a value cut off at the end, left out of `values`."""
    broken: int = 0
    """Letters and digits of a value written broken that `values` leaves out."""
    inner: int = 0
    """How many regions closed inside that value `values` holds."""


def _lines_of(content: str, deadline: Deadline | None = None) -> _Lines:
    """The values of a fenced block's `content` for a gathering: each of its values when it
    is JSON lines (several values one after another, nothing but whitespace or commas around
    them, each closed but the last), else the content as one piece (none when empty). A last
    value left open is cut off (left out) or written broken (see `_gatherings`): an object
    written broken holds the lines that close after its break, even when it is the first."""
    if not content:
        return _Lines([])
    if content[0] not in "{[":
        return _Lines([content])
    spans = scan(content, deadline).spans
    tops = [s for s in spans if not s.inside]
    if not tops or not all(s.closed for s in tops[:-1]):
        return _Lines([content])
    bounds = [0, *(i for s in tops for i in (s.start, s.end)), len(content)]
    between = (content[a:b] for a, b in zip(bounds[::2], bounds[1::2], strict=True))
    if any(gap.strip(" \t\r\n,") for gap in between):
        return _Lines([content])  # prose between them: the block is one piece, read as a whole
    closed = [content[s.start : s.end] for s in tops if s.closed]
    last = tops[-1]
    held = [content[s.start : s.end] for s in spans if s.inside]
    if len(tops) == 1 and (last.closed or last.root != "object" or not held):
        return _Lines([content])  # one value (or an array broken alone): read as a whole
    if last.closed:
        return _Lines(closed)
    region = content[last.start :].rstrip()
    if _cut_off(region):
        return _Lines(closed, tail=_size(region, deadline))
    whole = loss.region(region)
    broken = max(0, _size(whole, deadline) - sum(_size(piece, deadline) for piece in held))
    return _Lines([*closed, *held], [*closed, whole], 0, broken, len(held))


def _open_value(
    body: str, spans: list[Span], fences: list[Fence], deadline: Deadline | None = None
) -> tuple[Span, bool, int] | None:
    """The region left open at the end of the reply, outside any fenced block (a block holds
    what is left open inside it), None when there is none: the span, whether it is a value
    cut off (it reads as JSON as written to its end) rather than one that stops reading as
    JSON before its end (written broken), and its letters and digits (of its JSON region, as
    the loss rule counts them: prose after its last closer is none)."""
    opened = [s for s in spans if not s.closed]
    if not opened:
        return None
    span = opened[-1]
    if any(f.start <= span.start < f.start + len(f.content) for f in fences):
        return None
    # (A block after it is no part of it: its marker line ends the region.)
    after = [f.start for f in fences if f.start > span.start]
    stop = max(body.rfind("```", 0, min(after)), body.rfind("~~~", 0, min(after))) if after else -1
    region = body[span.start : stop if stop > span.start else len(body)].rstrip()
    if _cut_off(region):
        return span, True, _size(region, deadline)
    return span, False, _size(loss.region(region), deadline)


def _size(text: str, deadline: Deadline | None) -> int:
    return loss.measure(text, deadline=deadline).size
