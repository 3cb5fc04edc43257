"""Agents: the envelope (one output type for assistants), the agent loop, the precheck."""

from outform.agent.envelope import RESPONSE_TYPES, Envelope, ErrorInfo, Metadata, ToolRequest

__all__ = ["RESPONSE_TYPES", "Envelope", "ErrorInfo", "Metadata", "ToolRequest"]
