"""The typer application, the consoles and the exit codes every command shares.

Exit codes: 0 the reply is valid (possibly after repair), 1 it is not (the hint is printed),
2 the command was used wrongly (bad option, schema, config or file), 3 an internal error.
"""

from __future__ import annotations

import typer
from rich.console import Console

EXIT_OK, EXIT_INVALID, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

app = typer.Typer(
    name="outform",
    help="Structured output from any LLM: repair, coerce and validate replies.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False)


@app.callback()
def _root() -> None:
    """outform: structured output from any LLM."""
