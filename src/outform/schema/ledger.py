"""The constraint ledger: what happens to every keyword of a schema sent to a provider.

Translating a schema into a provider's dialect changes it: some keywords go to the provider,
which enforces them while the model writes; some are removed from the wire schema but still
checked by outform, because the pipeline always validates the reply against the *original*
schema; a few can be checked by nobody. The ledger records one entry per keyword of the
original, so nothing is lost without a line saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

Disposition = Literal["enforced", "checked_locally", "dropped"]
Kind = Literal["constraint", "annotation"]

_RANK: dict[Disposition, int] = {"enforced": 0, "checked_locally": 1, "dropped": 2}
DISPOSITIONS: tuple[Disposition, ...] = ("enforced", "checked_locally", "dropped")


@dataclass(frozen=True)
class LedgerEntry:
    """What happened to one keyword of the original schema.

    `path` is a JSON pointer into the ORIGINAL schema (the node that holds the keyword).
    `kind` says whether the keyword restricts values (a constraint) or only informs
    (an annotation such as `title`, or a keyword JSON Schema does not define).
    """

    path: str
    keyword: str
    disposition: Disposition
    reason: str
    kind: Kind = "constraint"

    def to_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "keyword": self.keyword,
            "disposition": self.disposition,
            "reason": self.reason,
            "kind": self.kind,
        }


@dataclass
class Ledger:
    """Entries keyed by (path, keyword); a keyword seen twice keeps its weakest disposition.

    The same original keyword can reach the wire several times (a definition inlined in two
    places, a keyword distributed into the branches of a union). The ledger reports the worst
    case: if one copy is enforced and another only checked locally, the entry says
    checked locally.
    """

    _entries: dict[tuple[str, str], LedgerEntry] = field(default_factory=dict)

    def add(
        self,
        path: str,
        keyword: str,
        disposition: Disposition,
        reason: str,
        kind: Kind = "constraint",
    ) -> None:
        key = (path, keyword)
        old = self._entries.get(key)
        if old is None or _RANK[disposition] > _RANK[old.disposition]:
            self._entries[key] = LedgerEntry(path, keyword, disposition, reason, kind)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(sorted(self._entries.values(), key=lambda e: (e.path, e.keyword)))

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, path: str, keyword: str) -> LedgerEntry | None:
        return self._entries.get((path, keyword))

    def with_disposition(self, disposition: Disposition) -> list[LedgerEntry]:
        return [entry for entry in self if entry.disposition == disposition]

    def constraints(self) -> list[LedgerEntry]:
        return [entry for entry in self if entry.kind == "constraint"]

    def counts(self) -> dict[Disposition, int]:
        """How many constraints have each disposition (annotations are not counted)."""
        counts: dict[Disposition, int] = dict.fromkeys(DISPOSITIONS, 0)
        for entry in self._entries.values():
            if entry.kind == "constraint":
                counts[entry.disposition] += 1
        return counts

    def to_list(self) -> list[dict[str, str]]:
        return [entry.to_dict() for entry in self]


__all__ = ["DISPOSITIONS", "Disposition", "Kind", "Ledger", "LedgerEntry"]
