"""Trace events as Python `logging` records under the `outform.trace.events` logger.

Quiet by default: outform adds a `NullHandler` to the `outform` logger and sets no level, so
nothing is printed unless the application configures logging. Levels: a run that ended
invalid, refused or in error, a failed re-ask and dropped events are WARNING; a validation
failure, a re-ask, a stream abort, a native-format skip, a failed precheck and a failed
provider call are INFO; everything else is DEBUG. Each record's message is one line of JSON
(the event's `to_dict()`), and the event itself is in `record.outform_event`.
"""

from __future__ import annotations

import logging

import orjson

from outform.trace.events import Event, RunEnd
from outform.trace.recorder import Batch

logger = logging.getLogger("outform.trace.events")

_INFO = frozenset(
    {
        "output.validation.fail",
        "output.reask.attempt",
        "stream.abort",
        "format.skipped",
        "precheck.fail",
    }
)


def level_of(event: Event) -> int:
    if event.name == "output.reask.fail":
        return logging.WARNING
    if isinstance(event.data, RunEnd) and event.data.outcome in ("invalid", "refused", "error"):
        return logging.WARNING
    if event.name in _INFO:
        return logging.INFO
    if event.name == "provider.call" and getattr(event.data, "error_class", None):
        return logging.INFO
    return logging.DEBUG


class LoggingSink:
    """A recorder sink; costs one level check per batch while the logger is disabled."""

    def open(self) -> None:
        pass

    def write(self, batch: Batch) -> None:
        if batch.dropped:
            logger.warning("outform trace: %d events dropped (the queue was full)", batch.dropped)
        if not logger.isEnabledFor(logging.WARNING):  # the highest level used here
            return
        for event in batch.events:
            level = level_of(event)
            if logger.isEnabledFor(level):
                logger.log(
                    level,
                    "%s",
                    orjson.dumps(event.to_dict()).decode(),
                    extra={"outform_event": event},
                )

    def close(self) -> None:
        pass
