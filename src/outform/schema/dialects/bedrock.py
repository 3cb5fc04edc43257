"""Amazon Bedrock Converse structured output (`outputConfig.textFormat`) and strict tools.

Facts (Bedrock's structured-output guide; botocore's service model): a draft 2020-12 subset like
Anthropic's; refused under strict: numeric bounds, `multipleOf`, `maxItems`, `minItems` over 1;
accepted (empirically, despite the documentation) `minLength`/`maxLength`, which outform sends
but does not count as enforced. Every object needs `additionalProperties: false`. The schema
travels as a JSON-encoded STRING in `structure.jsonSchema.schema` (an object in a tool's
`inputSchema.json`).
"""

from __future__ import annotations

import dataclasses

from outform.schema.dialects import anthropic

RULES = dataclasses.replace(
    anthropic.RULES,
    name="bedrock",
    provider="Amazon Bedrock",
    wire="outputConfig.textFormat.structure.jsonSchema.schema (a JSON string); "
    "toolSpec.inputSchema.json with strict: true",
    source="docs.aws.amazon.com/bedrock/latest/userguide/structured-output.html; botocore",
    accepted=anthropic.ACCEPTED | {"minLength", "maxLength"},
    unenforced=frozenset({"minLength", "maxLength"}),
    payload="string",
    notes=(
        "no JSON-object mode",
        "Claude with thinking refuses a forced toolChoice",
        "first use of a schema compiles a grammar (cached 24 h)",
    ),
)
