"""`python -m outform.cli`."""

from outform.cli import run

run()
