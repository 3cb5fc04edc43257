"""The ledger keeps one entry per keyword of the original, at its weakest disposition."""

from __future__ import annotations

from outform.schema.ledger import Ledger


def test_a_keyword_seen_twice_keeps_its_weakest_disposition() -> None:
    ledger = Ledger()
    ledger.add("/$defs/A", "maxLength", "enforced", "sent")
    ledger.add("/$defs/A", "maxLength", "checked_locally", "moved out in one copy")
    ledger.add("/$defs/A", "maxLength", "enforced", "sent again")
    entry = ledger.get("/$defs/A", "maxLength")
    assert entry is not None
    assert entry.disposition == "checked_locally"
    assert entry.reason == "moved out in one copy"


def test_counts_are_about_constraints_not_annotations() -> None:
    ledger = Ledger()
    ledger.add("", "type", "enforced", "sent")
    ledger.add("", "pattern", "checked_locally", "moved")
    ledger.add("", "title", "dropped", "not sent", kind="annotation")
    assert ledger.counts() == {"enforced": 1, "checked_locally": 1, "dropped": 0}
    assert len(ledger) == 3
    assert [entry.keyword for entry in ledger.constraints()] == ["pattern", "type"]


def test_entries_are_listed_by_path_then_keyword() -> None:
    ledger = Ledger()
    ledger.add("/properties/b", "type", "enforced", "sent")
    ledger.add("", "type", "enforced", "sent")
    ledger.add("/properties/a", "enum", "enforced", "sent")
    assert [(e.path, e.keyword) for e in ledger] == [
        ("", "type"),
        ("/properties/a", "enum"),
        ("/properties/b", "type"),
    ]
    assert ledger.to_list()[0] == {
        "path": "",
        "keyword": "type",
        "disposition": "enforced",
        "reason": "sent",
        "kind": "constraint",
    }
