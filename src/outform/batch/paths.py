"""A job's files kept apart: its input, its output and its manifest are three files.

The output is written whole and moved into place: over the manifest (or its -wal), it would
replace the job's record, and the next command that opened it would find no job; over the
input, it would replace what the job reads. Paths are compared resolved (symbolic links
followed) and, when both files exist, by device and inode (hard links count too).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from outform.errors import UsageError


def same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` name one file: the same path once resolved, or the same inode."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.samefile(b)
    except OSError:  # one of them does not exist (yet): the paths alone decide
        return False


def _manifest_file(path: Path, manifest: Sequence[Path]) -> Path | None:
    """The manifest's file (or companion) that `path` is, if any."""
    return next((f for f in manifest if same_file(path, f)), None)


def _which(found: Path, manifest: Sequence[Path]) -> str:
    """How a message names the manifest's file `found`: the manifest, or a companion of it
    (`manifest` as `sqlite_files` lists them: each base, then its companions)."""
    from outform.batch.manifest_sqlite import COMPANIONS

    place = manifest.index(found) % (len(COMPANIONS) + 1)
    if place == 0:
        return f"the manifest (--manifest {manifest[0]})"
    return f"the manifest's {COMPANIONS[place - 1]} file (--manifest {manifest[0]})"


def check_apart(
    output: Path | None, input: Path, manifest: Sequence[Path], *, stored: bool = False
) -> None:
    """UsageError (before anything is sent or written) unless the output, the input and the
    manifest's files (`manifest`, the manifest file first) are distinct files. `stored`: the
    output and input are the job's, as it was run (resume, status), not options given now."""
    given = "the job's" if stored else "the"
    if output is not None and same_file(output, input):
        raise UsageError(
            f"{given} output (-o {output}) is the input file ({input})",
            where="-o",
            fix="write the output elsewhere: -o out.jsonl",
        )
    if not manifest:
        return
    if output is not None and (found := _manifest_file(output, manifest)) is not None:
        fix = (
            "move the manifest (with its -wal and -shm files, while no process runs the job) "
            "and pass --manifest NEW_PATH: the output is then written where it was"
            if stored
            else "give -o and --manifest different files: -o out.jsonl --manifest job.sqlite3"
        )
        raise UsageError(
            f"{given} output (-o {output}) is {_which(found, manifest)}: writing it would "
            "destroy the job's record",
            where="-o, --manifest",
            fix=fix,
        )
    if (found := _manifest_file(input, manifest)) is not None:
        raise UsageError(
            f"{given} input ({input}) is {_which(found, manifest)}",
            where="INPUT, --manifest",
            fix="give the rows' JSON Lines file as the input, and a manifest of its own: "
            "--manifest job.sqlite3",
        )


__all__ = ["check_apart", "same_file"]
