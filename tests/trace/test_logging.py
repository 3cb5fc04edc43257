"""Python logging: quiet by default, one JSON line per event once the app turns it on."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import orjson
import pytest

from outform.trace import Batch
from outform.trace.logging_sink import LoggingSink
from tests.trace.runs import RunSpec, run_events


def test_nothing_is_printed_unless_the_application_configures_logging() -> None:
    code = (
        "from outform.trace import Batch; from outform.trace.logging_sink import LoggingSink\n"
        "from tests.trace.runs import RunSpec, run_events\n"
        "import time\n"
        "LoggingSink().write(Batch(run_events(RunSpec(outcome='invalid', reasked=('/a',)),"
        " time.time()), dropped=3))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "" and done.stderr == ""


def test_events_are_logged_at_their_level_under_the_outform_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = run_events(RunSpec(outcome="invalid", reasked=("/a",)), time.time())
    with caplog.at_level(logging.INFO, logger="outform"):
        LoggingSink().write(Batch(events))
    logged = {(r.levelname, orjson.loads(r.getMessage())["name"]) for r in caplog.records}
    assert ("WARNING", "run.end") in logged and ("WARNING", "output.reask.fail") in logged
    assert ("INFO", "output.validation.fail") in logged
    assert all(r.name == "outform.trace.events" for r in caplog.records)
    assert not any(name == "provider.call" for _, name in logged)  # DEBUG: below INFO
    record = next(r for r in caplog.records if "run.end" in r.getMessage())
    assert getattr(record, "outform_event", None) == events[-1]
