"""Options more than one command takes: what the reply must match, and the parse settings.

Every setting an error message tells a user to change (`raise the 'max_chars' option`) is a
flag here, spelled the same with dashes (`--max-chars`); tests/test_cli.py holds the CLI to it.
A flag left out keeps the value of outform.toml, or the library's default.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from outform.errors import UsageError
from outform.parse import LEVELS

Schema = Annotated[
    Path | None,
    typer.Option("--schema", "-s", help="JSON Schema file the reply must match."),
]
Type = Annotated[
    str | None,
    typer.Option("--type", "-t", help="Python type the reply must match, as module:Name."),
]
Level = Annotated[
    str | None, typer.Option("--level", "-l", help="Repair level: off, minimal or full.")
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print the whole result as one JSON document.")
]
MaxChars = Annotated[
    int | None,
    typer.Option("--max-chars", min=1, help="Longest reply accepted, in characters."),
]
MaxDepth = Annotated[
    int | None,
    typer.Option("--max-depth", min=1, help="Deepest nesting of arrays and objects accepted."),
]
MaxRepairChars = Annotated[
    int | None,
    typer.Option(
        "--max-repair-chars",
        min=0,
        help="Largest region json-repair may read (level full); a larger one skips it.",
    ),
]
MaxRepairString = Annotated[
    int | None,
    typer.Option(
        "--max-repair-string",
        min=0,
        help="Longest string json-repair may read itself (level full); a longer one skips it.",
    ),
]
TimeLimit = Annotated[
    float | None,
    typer.Option(
        "--time-limit", min=0.0, help="Seconds the repair of one reply may take before it fails."
    ),
]

ApiKeyEnv = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="Environment variable holding the key, when not the provider's usual one.",
    ),
]


def positive_seconds(value: float) -> float:
    """A duration flag: a finite number of seconds above zero (NaN passes typer's `min`)."""
    if not math.isfinite(value) or value <= 0:
        raise typer.BadParameter(f"must be a number of seconds above 0, got {value}")
    return value


def key_from(env_var: str | None) -> str | None:
    """The key in the variable --api-key-env names (keys never go on the command line)."""
    if env_var is None:
        return None
    key = os.environ.get(env_var)
    if not key:
        raise UsageError(
            f"the environment variable {env_var} is not set",
            where="--api-key-env",
            fix=f"export {env_var}=<your key>, or leave --api-key-env out to use the "
            "provider's usual variable",
        )
    return key


def parse_settings(
    level: str | None,
    max_chars: int | None,
    max_depth: int | None,
    time_limit: float | None,
    max_repair_chars: int | None = None,
    max_repair_string: int | None = None,
) -> dict[str, Any]:
    """The parse keyword arguments the user set (the rest come from outform.toml)."""
    if level is not None and level not in LEVELS:
        raise UsageError(
            f"unknown level {level!r}", where="--level", fix=f"use one of: {', '.join(LEVELS)}"
        )
    chosen = {
        "level": level,
        "max_chars": max_chars,
        "max_depth": max_depth,
        "time_limit": time_limit,
        "max_repair_chars": max_repair_chars,
        "max_repair_string": max_repair_string,
    }
    return {name: value for name, value in chosen.items() if value is not None}
