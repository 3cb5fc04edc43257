"""The typer application, the consoles and the exit codes every command shares."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from rich.console import Console

EXIT_OK = 0
"""A valid value (possibly after repair, or after a re-ask)."""
EXIT_INVALID = 1
"""No valid value: the reply does not match (the violations are printed), no valid reply
within the attempts, or the model refused."""
EXIT_USAGE = 2
"""The command was used wrongly: a bad option, file, schema, type or configuration; or its
output could not be written (a full disk, an I/O error: the file and the reason are named), or
trace events its trace store could not keep (said after the output of a command that
succeeded)."""
EXIT_INTERNAL = 3
"""A bug in outform (rerun with OUTFORM_DEBUG=1 for the traceback)."""
EXIT_INPUT = 4
"""The reply cannot be parsed at all: not UTF-8 text, or over a limit (--max-chars,
--max-depth, --time-limit)."""
EXIT_PROVIDER = 5
"""The provider could not be reached or refused the request (no key, bad key, rate limit,
server error, a request it rejects)."""
EXIT_RUNNING = 6
"""`outform batch`: the job is still running (`--no-wait`, or `status` of a running job)."""
EXIT_INTERRUPTED = 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "valid (possibly after repair or a re-ask)"),
    (EXIT_INVALID, "not valid: the reply does not match, no valid reply, or a refusal"),
    (
        EXIT_USAGE,
        "wrong usage: bad option, file, schema, type or config; an unwritable output or trace "
        "store",
    ),
    (EXIT_INTERNAL, "internal error (a bug; OUTFORM_DEBUG=1 shows the traceback)"),
    (EXIT_INPUT, "the reply cannot be parsed at all (not text, over a limit)"),
    (EXIT_PROVIDER, "the provider failed or refused the request"),
    (EXIT_RUNNING, "a batch job is still running"),
    (EXIT_INTERRUPTED, "interrupted"),
)

app = typer.Typer(
    name="outform",
    help="Structured output from any LLM: repair, coerce and validate replies.",
    epilog="Exit codes: "
    + "; ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES)
    + ". The value goes to standard output; changes, hints and errors to standard error.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
"""rich_markup_mode=None: help texts are plain text, so "[trace] store" or "[profiles.NAME]"
show as written instead of being eaten as Rich markup (every sub-app sets it too)."""
stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)
"""Long lines are left to the terminal (or the file) rather than wrapped at 80 columns."""


def package_version() -> str:
    try:
        return version("outform")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        stdout.print(f"outform {package_version()}", markup=False)
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """outform: structured output from any LLM."""
