"""Write a benchmark's markdown into its own section of docs/benchmarks.md."""

from __future__ import annotations

import platform
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
_HEADER = """# Benchmarks

Every number here was measured in one run of the command shown with it, on the machine named,
side by side with the peers it is compared to. Speeds are medians of repeated batches; ratios
are what to compare across machines.
"""


def machine() -> str:
    return f"Python {sys.version.split()[0]}, {platform.machine()}, {platform.system()}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def update_section(key: str, markdown: str) -> None:
    """Replace the section between `<!-- key:start -->` and `<!-- key:end -->` (or append it)."""
    start, end = f"<!-- {key}:start -->", f"<!-- {key}:end -->"
    block = f"{start}\n{markdown.strip()}\n{end}\n"
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else _HEADER
    if start in text and end in text:
        before = text[: text.index(start)]
        after = text[text.index(end) + len(end) :].lstrip("\n")
        text = before + block + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
