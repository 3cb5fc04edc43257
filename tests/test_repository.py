"""A fresh clone is self-contained: nothing refers to files outside the repository, and every
vendored file has its provenance beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.vendored import DATA, ROOT

_OUTSIDE = re.compile(
    r"\.\./shared|OUTFORM_(?:SHARED)|/work/|\breference/[a-z-]+\.md"
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


@pytest.mark.parametrize("imported", ["benchmarks", None])
def test_benchmarks_never_record_into_the_users_trace_store(
    tmp_path: Path, imported: str | None
) -> None:
    """A benchmark module parses with the environment a user has (no OUTFORM_TRACE): the
    benchmarks package turns recording off. Without it the same parse creates the default
    store, which shows the check can fail."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OUTFORM_TRACE", "OUTFORM_CONFIG")}
    env |= {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    code = f"import {imported}\n" if imported else ""
    code += "import outform\nfor n in range(3): outform.parse('{\"a\": %d}' % n)\n"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, check=True, timeout=120)
    created = (tmp_path / "data" / "outform" / "trace.sqlite").exists()
    assert created == (imported is None)
