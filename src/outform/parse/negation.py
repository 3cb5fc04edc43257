"""Which words of a sentence a negation governs, so that a sentence is never read as the value
it denies.

At level `full` a sentence may give a value ("The answer is: true." -> true, "I'd say MEDIUM"
-> "MEDIUM", "about 42 apples" -> 42). A word a negation governs says what the value is *not*
("not true", "Not HIGH", "HIGH is not right"), so it is never read as the value. The scope is
kept simple, and wide rather than narrow: a clause (the text between two of `, ; : . ! ?`, a
line break, a bracket, or the word "but") that holds a negation word (not, no, never, neither,
nor, none, cannot, or a word ending in n't) negates every word in it, before the
negation or after it. A clause without one is read as before: "I'd say MEDIUM, not high" names
MEDIUM, "It is low, not HIGH" names low.
"""

from __future__ import annotations

import bisect
import itertools
import re

_NEGATION = re.compile(
    r"(?<!\w)(?:not|no|never|neither|nor|none|cannot|\w+n[’']t)(?!\w)",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(
    r"[;:!?\n()\[\]{}]|[,.](?!\d)|(?<![A-Za-z0-9_])but(?![A-Za-z0-9_])", re.IGNORECASE
)
"""A comma or point between digits ("1,234.5") ends no clause."""


class Negations:
    """The negation words of one text, by clause."""

    __slots__ = ("_clauses", "_starts")

    def __init__(self, text: str) -> None:
        words = [(m.start(), m.end()) for m in _NEGATION.finditer(text)]
        self._clauses: list[tuple[int, int, list[tuple[int, int]]]] = []
        self._starts: list[int] = []
        if not words:
            return
        bounds = [0, *(m.end() for m in _CLAUSE_END.finditer(text)), len(text)]
        # One pass over both sorted lists: linear in the text, whatever it holds.
        at = 0
        for start, end in itertools.pairwise(bounds):
            inside: list[tuple[int, int]] = []
            while at < len(words) and words[at][0] < end:
                if words[at][0] >= start:
                    inside.append(words[at])
                at += 1
            if inside:
                self._clauses.append((start, end, inside))
        self._starts = [clause[0] for clause in self._clauses]

    def govern(self, start: int, end: int) -> bool:
        """Whether a negation word other than the words at [start, end) themselves (an enum
        member may be "no" or "not sure") lies in the clause of those words."""
        index = bisect.bisect_right(self._starts, start) - 1
        if index < 0:
            return False
        c_start, c_end, words = self._clauses[index]
        if not (c_start <= start and end <= c_end):
            return False
        return any(w_end <= start or w_start >= end for w_start, w_end in words)
