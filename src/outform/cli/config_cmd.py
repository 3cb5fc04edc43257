"""`outform config show [--profile NAME]`: the effective settings of a call under a step, and
where each came from (built-in, `[parse]`, `[defaults]`, `[profiles.NAME]`)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
import typer
from rich.markup import escape
from rich.table import Table

from outform.cli.app import app, stdout
from outform.cli.io import print_json

config_app = typer.Typer(
    help="Show outform's settings as a call sees them.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
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
    rows = _with_parse(rows, found)
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


_FROM_PARSE = {
    "level": "level",
    "tolerant_level": "tolerance",
    "max_unescape_depth": "unescape_depth",
}
"""Step keys left to `[parse]` when no profile or `[defaults]` sets them, and its key."""


def _with_parse(rows: list[tuple[str, Any, str]], found: Any) -> list[tuple[str, Any, str]]:
    """The step's rows with what `[parse]` decides filled in (a step key neither [defaults] nor
    the profile sets), then every other pipeline option as `parse.KEY`: the values a call
    gets, from the same `Options.for_level` the pipeline builds them with."""
    from outform.config import settings
    from outform.parse.context import Options

    configured = settings().parse
    written = {"level", *configured.overrides}
    if found.sources["level"] != "built-in" and found.level is not None:
        level = found.level
    else:
        level = configured.level
    effective = Options.for_level(level, **configured.overrides)
    out: list[tuple[str, Any, str]] = []
    for key, value, origin in rows:
        option = _FROM_PARSE.get(key)
        if option is not None and origin == "built-in":
            source = "[parse]" if option in written else f"built-in (level {level})"
            out.append((key, getattr(effective, option), source))
        else:
            out.append((key, value, origin))
    shown = {"level", "tolerance", "unescape_depth", "coercions", "anyof_strategy", "shadow"}
    for option in Options.__dataclass_fields__:
        if option in shown:
            continue
        found_value = getattr(effective, option)
        if isinstance(found_value, frozenset):
            found_value = sorted(found_value)
        source = "[parse]" if option in configured.overrides else f"built-in (level {level})"
        out.append((f"parse.{option}", found_value, source))
    return out


def _shown(key: str, value: Any) -> Any:
    """Coercion allowlists as the table they were written as."""
    if key == "coercions" and value is not None:
        return {target: list(names) for target, names in value}
    return value
