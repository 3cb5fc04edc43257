"""`outform config show [--profile NAME]`: the effective settings of a step, and where each
came from (built-in, `[defaults]`, `[profiles.NAME]`)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from outform.cli.app import app, stdout
from outform.cli.io import print_json

config_app = typer.Typer(help="Show outform's settings as a call sees them.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def show_command(
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", help="A [profiles.NAME] of outform.toml.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document.")] = False,
) -> None:
    """Print the effective settings of a call under a profile (or [defaults] alone)."""
    from outform.config import settings
    from outform.profile import step

    found = step(profile)
    source = settings().source
    rows: list[tuple[str, Any, str]] = [
        (key, _shown(key, value), found.sources[key]) for key, value in found.values.items()
    ]
    rows += [
        (f"precheck.{key}", value, found.sources[f"precheck.{key}"])
        for key, value in found.precheck.items()
    ]
    if as_json:
        print_json(
            {
                "file": str(source) if source else None,
                "profile": profile,
                "settings": {key: value for key, value, _ in rows},
                "sources": {key: origin for key, _, origin in rows},
                "profiles": sorted(settings().profiles),
            }
        )
        return
    where = str(source) if source else "no outform.toml found: built-in defaults"
    title = f"profile {profile or '(none: [defaults] alone)'} - {where}"
    table = Table(title=escape(title), title_justify="left")
    for column in ("key", "value", "from"):
        table.add_column(column, overflow="fold")
    for key, value, origin in rows:
        table.add_row(key, escape(orjson.dumps(value).decode()), escape(origin))
    stdout.print(table)
    if not found.enabled:
        stdout.print("enabled = false: mode 'off', level 'off', no re-asks, no precheck")


def _shown(key: str, value: Any) -> Any:
    """Coercion allowlists as the table they were written as."""
    if key == "coercions" and value is not None:
        return {target: list(names) for target, names in value}
    return value
