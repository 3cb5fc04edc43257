"""A fresh clone is self-contained: nothing refers to files outside the repository, and every
vendored file has its provenance beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.vendored import DATA, ROOT

_OUTSIDE = re.compile(
    r"\.\./shared|OUTFORM_SHARED|/work/|\breference/[a-z-]+\.md"
    r"|\b(?:providers|peers|sdk-wire|responses-gateway)\.md\b"
)
"""A path into the reference material the project was started from, which a clone lacks."""
_TEXT = ("*.py", "*.md", "*.toml", "*.cfg", "*.txt", "Makefile")


def _sources() -> list[Path]:
    roots = [ROOT / name for name in ("src", "tests", "docs", "benchmarks", "examples")]
    found = [ROOT / name for name in ("README.md", "DEVELOPERS.md", "Makefile", "pyproject.toml")]
    for root in roots:
        for pattern in _TEXT:
            found += [p for p in root.rglob(pattern) if DATA not in p.parents]
    return sorted(set(found))


def test_nothing_refers_to_files_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        if path != this
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert hits == []


@pytest.mark.parametrize("directory", sorted(p for p in DATA.iterdir() if p.is_dir()))
def test_every_vendored_file_is_named_in_the_readme_beside_it(directory: Path) -> None:
    readme = (directory / "README.md").read_text(encoding="utf-8")
    assert "licence" in readme.lower() and "commit" in readme.lower()
    for path in directory.iterdir():
        if path.name not in ("README.md", "LICENSES.md") and not path.name.startswith("LICENSE"):
            assert f"`{path.name}`" in readme, (
                f"{path.name} has no row in {directory.name}/README.md"
            )
