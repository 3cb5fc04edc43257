"""Data from other projects, vendored under tests/data/ so that a fresh clone tests everything.

Each directory there has a README naming the upstream, the commit and the licence of what it
holds (tests/data/README.md lists them). Nothing here skips: a missing file is a broken clone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "corpus"
"""Other projects' test cases, one JSON record a line (tests/data/corpus/README.md)."""
OPENAPI = DATA / "openai-openapi" / "openapi.yaml"
"""OpenAI's OpenAPI document, the wire shapes the OpenAI fakes are checked against."""


def corpus(name: str) -> list[dict[str, Any]]:
    """Every record of tests/data/corpus/<name> (JSON Lines)."""
    with (CORPUS / name).open("rb") as handle:
        return [orjson.loads(line) for line in handle if line.strip()]
