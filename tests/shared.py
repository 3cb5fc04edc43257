"""Access to ../shared/ (reference corpora and specs), skipping cleanly when it is absent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("OUTFORM_SHARED", ROOT.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """The path under ../shared/, or skip the test saying what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(
            f"{path} is absent: these tests read the shared reference material "
            "(set OUTFORM_SHARED to its location)"
        )
    return path


def corpus(name: str) -> list[dict[str, Any]]:
    """Every record of ../shared/corpus/<name> (JSON Lines)."""
    return list(_records(shared_path("corpus", name)))


def corpus_if_present(name: str) -> list[dict[str, Any]]:
    """Records for pytest parametrisation at collection time: [] when the file is absent
    (the test module then skips through `shared_path` in a fixture)."""
    path = SHARED / "corpus" / name
    return list(_records(path)) if path.exists() else []


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                yield orjson.loads(line)
