"""Stage *extract*: find the JSON in a reply that also contains prose, fences or reasoning.

Everything here is a single left-to-right pass (or a few), so the cost stays linear on
adversarial input such as thousands of unbalanced braces. The stage proposes *candidates* in
order of preference; later stages decode them and the first that validates wins.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

CandidateKind = Literal["whole", "fence", "span", "unclosed", "collected", "text"]
RootKind = Literal["object", "array", "other"]

# Reasoning blocks some models write before (or instead of) their answer.
_REASONING_TAGS = ("think", "thinking", "reasoning", "reflection", "thought", "scratchpad")
_OPEN_TAG = re.compile(r"<(" + "|".join(_REASONING_TAGS) + r")\b[^>]*>", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)(?:[ \t][^\n`]*)?$")
_INLINE_LANG = re.compile(r"([A-Za-z][A-Za-z0-9_+-]*)(?=[\s{\[])")
_JSON_LANGS = frozenset({"json", "jsonc", "json5", "javascript", "js", "ndjson", "jsonl"})

_SPECIAL = re.compile(r'[{}\[\]"\\]')
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

    @property
    def size(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int  # exclusive
    root: RootKind
    depth: int
    closed: bool


def strip_reasoning(text: str) -> tuple[str, list[str]]:
    """Remove `<think>…</think>` style blocks; a dangling close tag drops everything before it
    (some models omit the opening tag), a dangling open tag drops everything after it."""
    removed: list[str] = []
    out: list[str] = []
    pos = 0
    lowered = text.lower()
    # A close tag with no open tag before it: the reasoning started at the very beginning.
    first_open = _OPEN_TAG.search(text)
    for tag in _REASONING_TAGS:
        close = lowered.find(f"</{tag}>")
        if close != -1 and (first_open is None or close < first_open.start()):
            removed.append(tag)
            pos = close + len(tag) + 3
            break
    while True:
        match = _OPEN_TAG.search(text, pos)
        if match is None:
            out.append(text[pos:])
            break
        tag = match.group(1).lower()
        out.append(text[pos : match.start()])
        close = lowered.find(f"</{tag}>", match.end())
        removed.append(tag)
        if close == -1:
            break  # an unclosed reasoning block runs to the end of the reply
        pos = close + len(tag) + 3
    return ("".join(out) if removed else text), removed


@dataclass(frozen=True, slots=True)
class Fence:
    lang: str
    content: str
    start: int
    closed: bool


def find_fences(text: str) -> list[Fence]:
    """Markdown code fences, in order. An unclosed fence runs to the end (a truncated reply)."""
    fences: list[Fence] = []
    if "```" not in text and "~~~" not in text:
        return fences
    lines = text.splitlines(keepends=True)
    offset = 0
    opened: tuple[str, str, int, list[str]] | None = None  # marker, lang, start, body lines
    for line in lines:
        stripped = line.rstrip("\r\n")
        match = _FENCE_LINE.match(stripped)
        if opened is None:
            if match:
                opened = (match.group(1), match.group(2).lower(), offset + len(line), [])
            elif "```" in stripped:
                fences.extend(_inline_fences(stripped, offset))
        else:
            marker, lang, start, body = opened
            if (
                match
                and not match.group(2)
                and match.group(1)[0] == marker[0]
                and len(match.group(1)) >= len(marker)
            ):
                fences.append(Fence(lang, "".join(body), start, True))
                opened = None
            else:
                body.append(line)
        offset += len(line)
    if opened is not None:
        marker, lang, start, body = opened
        fences.append(Fence(lang, "".join(body), start, False))
    return fences


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


def scan_spans(text: str) -> tuple[list[Span], int]:
    """Top-level bracketed regions of `text` in one pass, and the deepest nesting seen."""
    found = scan(text)
    return found.spans, found.deepest


def scan(text: str) -> Scan:
    """Top-level bracketed regions of `text` in one pass, with nesting and breakage measures.

    Quotes are only tracked inside brackets, so an apostrophe or a lone quote in prose cannot
    swallow the rest of the reply. A closer that does not match the innermost opener closes the
    opener it does match (the brackets in between were left open by the model); a closer with no
    opener at all is prose and ignored. The region still open at the end is reported unclosed.
    """
    spans: list[Span] = []
    stack: list[str] = []
    start = 0
    deepest = 0
    span_depth = 0
    in_string = False
    unmatched = 0
    open_counts = {"{": 0, "[": 0}
    pos = 0
    length = len(text)
    while pos < length:
        match = _SPECIAL.search(text, pos)
        if match is None:
            break
        ch = match.group()
        index = match.start()
        pos = index + 1
        if ch == "\\":
            if stack:
                pos = index + 2  # the escaped character is never structure
        elif in_string:
            if ch == '"':
                in_string = False
        elif ch == '"':
            in_string = bool(stack)
        elif ch in _OPENERS:
            if not stack:
                start = index
                span_depth = 0
            stack.append(ch)
            open_counts[ch] += 1
            span_depth = max(span_depth, len(stack))
        elif stack:
            opener = _CLOSERS[ch]
            if not open_counts[opener]:
                unmatched += 1
                continue  # a closer with no opener: prose, ignored
            # Close the matching opener; brackets left open inside it close with it. Each
            # opener is popped once, so this stays linear overall.
            unmatched += stack[-1] != opener
            while stack[-1] != opener:
                open_counts[stack.pop()] -= 1
            open_counts[stack.pop()] -= 1
            if not stack:
                spans.append(Span(start, index + 1, _root(text[start]), span_depth, True))
                deepest = max(deepest, span_depth)
    if stack:
        spans.append(Span(start, length, _root(text[start]), span_depth, False))
        deepest = max(deepest, span_depth)
    return Scan(spans, deepest, unmatched)


def _inside_span(position: int, spans: list[Span]) -> bool:
    """Whether `position` lies strictly inside a closed top-level span (spans are sorted)."""
    index = bisect.bisect_right([s.start for s in spans], position) - 1
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


_CONTINUATION = frozenset(',:{}[]"')


def candidates(text: str, wanted: frozenset[RootKind], *, collect: bool) -> Extraction:
    """Candidates in order of preference.

    Order: the whole reply; fenced blocks, JSON-tagged first; bracketed regions of the prose,
    those whose root matches the schema's first, in order of appearance; the region left open at
    the end (a truncated reply); with `collect`, every top-level value of the reply gathered
    into one array (when there are several).

    "Largest" in the sense of outermost: only top-level regions are candidates, never the
    brackets nested inside them; among several, the earliest comes first.
    """
    body, removed = strip_reasoning(text)
    base: tuple[str, ...] = ("strip_reasoning",) if removed else ()
    whole = body.strip()
    found: list[Candidate] = [Candidate(whole, "whole", root_of(whole), base)]
    seen = {whole}
    scanned = scan(body)
    spans, deepest = scanned.spans, scanned.deepest
    lead = len(body) - len(body.lstrip())
    document = False
    if spans and spans[0].start == lead:
        rest = body[spans[0].end :].strip()
        document = not spans[0].closed or not rest or rest[0] in _CONTINUATION

    closed = [s for s in spans if s.closed]
    # A "fence" that starts inside a bracketed region is text inside a JSON string.
    fences = [f for f in find_fences(body) if not _inside_span(f.start, spans)]
    fences.sort(key=lambda f: (f.lang not in _JSON_LANGS and f.lang != "", not f.closed))
    for fence in fences:
        content = fence.content.strip()
        if content and content not in seen:
            seen.add(content)
            transform = "strip_fence" if fence.closed else "strip_unclosed_fence"
            found.append(
                Candidate(content, "fence", root_of(content), (*base, transform), 0, fence.start)
            )

    closed.sort(key=lambda s: (s.root not in wanted, s.start))
    for span in closed:
        piece = body[span.start : span.end]
        if piece not in seen:
            seen.add(piece)
            found.append(
                Candidate(
                    piece, "span", span.root, (*base, "extract_from_prose"), span.depth, span.start
                )
            )
    for span in spans:
        if not span.closed:
            piece = body[span.start : span.end].rstrip()
            if piece not in seen:
                seen.add(piece)
                found.append(
                    Candidate(
                        piece,
                        "unclosed",
                        span.root,
                        (*base, "extract_truncated"),
                        span.depth,
                        span.start,
                    )
                )
    if collect:
        # The model's own markers first: several fenced blocks are gathered; without fences,
        # several bracketed regions of the reply are.
        pieces = [f.content.strip() for f in fences if f.content.strip()]
        transform = "collect_fences"
        if not fences:
            pieces = [body[s.start : s.end] for s in closed]
            transform = "collect_values"
        if len(pieces) > 1:
            joined = "[" + ",".join(pieces) + "]"
            found.append(Candidate(joined, "collected", "array", (*base, transform), deepest + 1))
    return Extraction(found, body, removed, deepest, document, scanned.unmatched)
