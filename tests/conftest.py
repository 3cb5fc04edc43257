"""Fixtures every test module may use. Every test runs with trace recording off, so that no
test writes to the user's data directory; tests of the trace store start a recorder on a store
of their own."""

import os

from tests.aws import aws  # noqa: F401
from tests.echo import echo  # noqa: F401

os.environ["OUTFORM_TRACE"] = "off"

pytest_plugins = ["tests.postgres", "tests.trace.sinks"]  # the PostgreSQL server; `recorded`
