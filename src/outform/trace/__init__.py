"""Trace events and where they go: observers in line, sinks (the trace store, OpenTelemetry,
logging) through the recorder, and the health report over the store. See
docs/observability.md."""

import logging

from outform.trace.caller import Labels, labels
from outform.trace.events import (
    EVENT_NAMES,
    Change,
    Detail,
    Event,
    EventName,
    EventStage,
    FormatChoice,
    Observer,
    Precheck,
    ProviderCall,
    Reask,
    RunEnd,
    RunInfo,
    StreamAbort,
    Tokens,
    Validation,
    ViolationRecord,
    add_observer,
    remove_observer,
)
from outform.trace.recorder import Batch, Recorder, Sink, TraceLossWarning
from outform.trace.redact import register_secret
from outform.trace.runtime import active, emit, flush, open_store, start, stop

logging.getLogger("outform").addHandler(logging.NullHandler())  # quiet unless configured

__all__ = [
    "EVENT_NAMES",
    "Batch",
    "Change",
    "Detail",
    "Event",
    "EventName",
    "EventStage",
    "FormatChoice",
    "Labels",
    "Observer",
    "Precheck",
    "ProviderCall",
    "Reask",
    "Recorder",
    "RunEnd",
    "RunInfo",
    "Sink",
    "StreamAbort",
    "Tokens",
    "TraceLossWarning",
    "Validation",
    "ViolationRecord",
    "active",
    "add_observer",
    "emit",
    "flush",
    "labels",
    "open_store",
    "register_secret",
    "remove_observer",
    "start",
    "stop",
]
