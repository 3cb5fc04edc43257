"""Agents: the envelope (one output type for assistants), the agent loop, the precheck.

See docs/agents.md.
"""

from outform.agent.envelope import RESPONSE_TYPES, Envelope, ErrorInfo, Metadata, ToolRequest
from outform.agent.loop import AgentRun, Step, ToolCallSummary, arun, run
from outform.agent.precheck import Precheck, PrecheckOutcome, Verdict
from outform.agent.tools import FunctionTool, ToolResult
from outform.run import AgentTool, as_tool

__all__ = [
    "RESPONSE_TYPES",
    "AgentRun",
    "AgentTool",
    "Envelope",
    "ErrorInfo",
    "FunctionTool",
    "Metadata",
    "Precheck",
    "PrecheckOutcome",
    "Step",
    "ToolCallSummary",
    "ToolRequest",
    "ToolResult",
    "Verdict",
    "arun",
    "as_tool",
    "run",
]
