"""Fixtures every test module may use."""

from tests.echo import echo  # noqa: F401
