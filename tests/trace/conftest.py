from tests.trace.sinks import recorded

__all__ = ["recorded"]
