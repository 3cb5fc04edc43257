"""OpenAI-compatible servers whose documented schema rules do not differ from plain JSON Schema.

Mistral, Fireworks, Together and vLLM take OpenAI's `response_format: {type: json_schema}` and
constrain decoding with a grammar engine (Fireworks and Together say so in their docs; vLLM
uses xgrammar or llguidance), but none publishes the keyword subset it enforces
(their structured-output pages say which engine, not which keywords). outform therefore sends the
schema faithfully (2020-12 form, references as `$defs`, the root wrapped when not an object,
which every one of them accepts) and counts as enforced only the structure every constrained
decoder enforces: types, properties, required keys, closed objects, items, enums, unions and
references. Every other keyword is sent as guidance and checked by outform.

vLLM (and SGLang, which uses its rules) is the exception: whether a server honours
`response_format` depends on its version and configuration, which outform cannot see from a
request, so its dialect claims no enforcement at all.

Groq is different and documented: with `strict: true` it applies OpenAI's strict rules (all
properties required, every object closed), so `groq` is the `openai_strict` dialect.
"""

from __future__ import annotations

import dataclasses

from outform.schema.dialects import openai, openai_strict
from outform.schema.dialects.rules import CORE, STANDARD, DialectRules

RULES = dataclasses.replace(
    openai.RULES,
    name="openai_compatible",
    provider="an OpenAI-compatible server",
    wire="response_format.json_schema.schema",
    source="the servers' structured-output docs (no keyword subset published)",
    enforcing=True,
    unenforced=STANDARD - CORE,
    notes=("enforcement beyond the core structure depends on the server's grammar engine",),
)

FAMILY: dict[str, DialectRules] = {
    "mistral": dataclasses.replace(
        RULES, name="mistral", provider="Mistral", source="docs.mistral.ai structured output"
    ),
    "fireworks": dataclasses.replace(
        RULES, name="fireworks", provider="Fireworks", source="docs.fireworks.ai"
    ),
    "together": dataclasses.replace(
        RULES, name="together", provider="Together AI", source="docs.together.ai JSON mode"
    ),
    "vllm": dataclasses.replace(
        RULES,
        name="vllm",
        provider="vLLM",
        wire="response_format.json_schema.schema",
        source="docs.vllm.ai/en/latest/features/structured_outputs",
        enforcing=False,
        notes=(
            "whether the server constrains decoding depends on its version and its "
            "structured-output backend, which a request cannot see: every keyword is checked "
            "by outform (the vllm profile says the same)",
        ),
    ),
    "groq": dataclasses.replace(
        openai_strict.RULES,
        name="groq",
        provider="Groq",
        source="console.groq.com/docs/structured-outputs (strict: true follows OpenAI's rules)",
        notes=(
            "strict mode only on some models (gpt-oss); others are best effort",
            "structured outputs work with neither streaming nor tools",
        ),
    ),
}
