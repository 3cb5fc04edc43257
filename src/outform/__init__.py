"""outform: structured output from any LLM, guaranteed to match the caller's schema."""

from outform.errors import (
    ConfigError,
    InputError,
    OutformError,
    OutputError,
    SchemaError,
    UsageError,
)
from outform.format import (
    JsonObjectFormat,
    JsonSchemaFormat,
    ResponseFormat,
    TextFormat,
    UnknownFormat,
)
from outform.parse import (
    Change,
    ParseResult,
    Pipeline,
    Processor,
    RetryHint,
    Violation,
    clear_cache,
    parse,
)
from outform.trace import Event, add_observer, remove_observer

__version__ = "0.1.0"

__all__ = [
    "Change",
    "ConfigError",
    "Event",
    "InputError",
    "JsonObjectFormat",
    "JsonSchemaFormat",
    "OutformError",
    "OutputError",
    "ParseResult",
    "Pipeline",
    "Processor",
    "ResponseFormat",
    "RetryHint",
    "SchemaError",
    "TextFormat",
    "UnknownFormat",
    "UsageError",
    "Violation",
    "__version__",
    "add_observer",
    "clear_cache",
    "parse",
    "remove_observer",
]
