"""Ollama (`format: <schema>` on /api/chat, `response_format` on /v1): llama.cpp's converter.

Facts (Ollama's docs): Ollama hands the schema to a llama-server subprocess, so the
llama.cpp converter's limits apply unchanged (see `llama_cpp`). `name` and `strict` are
ignored. Ollama Cloud accepts a schema without enforcing it (see the provider profile).
"""

from __future__ import annotations

import dataclasses

from outform.schema.dialects import llama_cpp

RULES = dataclasses.replace(
    llama_cpp.RULES,
    name="ollama",
    provider="Ollama",
    wire="format (native /api/chat) or response_format.json_schema.schema (/v1)",
    source="ollama/ollama docs (structured outputs); llama.cpp grammars/README.md",
    notes=(
        "Ollama Cloud does not enforce schemas",
        "thinking models: the grammar applies after the thinking (two passes)",
    ),
)
