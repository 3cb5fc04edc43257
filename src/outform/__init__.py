"""outform: structured output from any LLM, guaranteed to match the caller's schema."""

import importlib
from typing import TYPE_CHECKING, Any

from outform.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConnectionFailedError,
    DialectError,
    GenerationError,
    InputError,
    OutformError,
    OutputError,
    ProviderError,
    RateLimitError,
    RefusalError,
    SchemaError,
    ServerError,
    StreamInterruptedError,
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

if TYPE_CHECKING:
    from outform.parse.incremental import Degeneration
    from outform.providers.base import Message, Thinking, Tool, ToolCall, Usage
    from outform.run import (
        AgentTool,
        Generation,
        Stream,
        agenerate,
        as_tool,
        astream,
        generate,
        stream,
    )

# Calling providers pulls in httpx and the dialect translators: loaded on first use, so that
# `import outform` stays light for code that only parses.
_LAZY = {
    "Degeneration": "outform.parse.incremental",
    "Message": "outform.providers.base",
    "Thinking": "outform.providers.base",
    "Tool": "outform.providers.base",
    "ToolCall": "outform.providers.base",
    "Usage": "outform.providers.base",
    "AgentTool": "outform.run",
    "Generation": "outform.run",
    "agenerate": "outform.run",
    "as_tool": "outform.run",
    "generate": "outform.run",
    "Stream": "outform.run",
    "stream": "outform.run",
    "astream": "outform.run",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'outform' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "AgentTool",
    "AuthenticationError",
    "BadRequestError",
    "Change",
    "ConfigError",
    "ConnectionFailedError",
    "Degeneration",
    "DialectError",
    "Event",
    "Generation",
    "GenerationError",
    "InputError",
    "JsonObjectFormat",
    "JsonSchemaFormat",
    "Message",
    "OutformError",
    "OutputError",
    "ParseResult",
    "Pipeline",
    "Processor",
    "ProviderError",
    "RateLimitError",
    "RefusalError",
    "ResponseFormat",
    "RetryHint",
    "SchemaError",
    "ServerError",
    "Stream",
    "StreamInterruptedError",
    "TextFormat",
    "Thinking",
    "Tool",
    "ToolCall",
    "UnknownFormat",
    "Usage",
    "UsageError",
    "Violation",
    "__version__",
    "add_observer",
    "agenerate",
    "as_tool",
    "astream",
    "clear_cache",
    "generate",
    "parse",
    "remove_observer",
    "stream",
]
