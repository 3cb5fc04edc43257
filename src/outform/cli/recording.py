"""The trace recording of a command, closed by the command itself before it exits.

A command that records (`parse`, `generate`, `batch`, `serve`: anything that starts the
process's recorder) closes it once its own output is printed, so that what the trace store
could not keep (a store that cannot be created, a full disk) is the command's error, told as
every other one (`error:` / `where:` / `fix:`, exit code 2), not a Python warning printed at
exit with the code still 0. The rule, and which code wins when the command failed too, is in
docs/cli.md ("Exit codes").
"""

from __future__ import annotations

from outform.errors import UsageError
from outform.trace import runtime
from outform.trace.recorder import Loss, Recorder


def running() -> Recorder | None:
    """The process's recorder, if one was started (read, never started: `trace.active()`
    would start one, and a command that records nothing must create no store)."""
    return runtime.current()


def close(before: Recorder | None) -> list[UsageError]:
    """Close the recorder the command started (not `before`, one its caller runs) and stop
    recording; what its sinks could not keep, as errors of the command line."""
    recorder = running()
    if recorder is None or recorder is before:
        return []
    recorder.close(warn=False)
    runtime.stop()  # the recorder is closed already: this only forgets it
    return [lost(loss) for loss in recorder.losses]


def lost(loss: Loss) -> UsageError:
    """A sink's loss as the command line tells it: what was lost and why, the store (where),
    and its fix."""
    warning = loss.warning
    return UsageError(warning.what, where=warning.where, fix=warning.fix)
