"""Trace events and where they go."""

from outform.trace.events import (
    Event,
    EventName,
    EventStage,
    Observer,
    add_observer,
    remove_observer,
)

__all__ = ["Event", "EventName", "EventStage", "Observer", "add_observer", "remove_observer"]
