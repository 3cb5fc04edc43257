"""The `outform` command line: one module per command, `main` turns errors into exit codes.

Exit codes: 0 the reply is valid (possibly after repair), 1 it is not (the hint is printed),
2 the command was used wrongly (bad option, schema, config or file), 3 an internal error.
Errors are printed as one readable block, never as a traceback (set OUTFORM_DEBUG=1 for one).
"""

from __future__ import annotations

import os
import sys

from outform.cli import batch_cmd, config_cmd, parse_cmd, schema_cmd, serve_cmd
from outform.cli.app import EXIT_INTERNAL, EXIT_INVALID, EXIT_OK, EXIT_USAGE, app, stderr
from outform.cli.io import print_error, show
from outform.errors import InputError, OutformError, OutputError

__all__ = ["EXIT_INTERNAL", "EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "main", "run"]

_COMMANDS = (
    batch_cmd,
    config_cmd,
    parse_cmd,
    schema_cmd,
    serve_cmd,
)  # imported for their @app.command registration


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn errors into messages and exit codes."""
    try:
        app(args=argv, prog_name="outform")
    except SystemExit as done:  # click's own usage errors and --help end here
        code = done.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except OutputError as error:
        if error.result is not None and error.result.changes:
            show(error.result, as_json=False, value=False)
        print_error(error)
        return EXIT_INVALID
    except InputError as error:
        print_error(error)
        return EXIT_INVALID
    except OutformError as error:
        print_error(error)
        return EXIT_USAGE
    except KeyboardInterrupt:
        stderr.print("aborted", style="red")
        return 130
    except Exception as error:  # the last line of defence: no traceback unless asked
        if os.environ.get("OUTFORM_DEBUG"):
            raise
        stderr.print(
            f"internal error: {type(error).__name__}: {error}\n"
            "  fix: this is a bug in outform; rerun with OUTFORM_DEBUG=1 and report the traceback",
            style="red",
            markup=False,
        )
        return EXIT_INTERNAL
    return EXIT_OK


def run() -> None:
    sys.exit(main())
