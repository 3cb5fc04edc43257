"""`python -m outform`: the command line, as the `outform` script runs it."""

from outform.cli import run

run()
