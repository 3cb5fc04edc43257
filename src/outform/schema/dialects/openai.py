"""OpenAI `json_schema` without `strict` (best effort: the schema is guidance, not a grammar).

Facts (OpenAI's structured outputs): without `strict: true` the model is only asked to follow the
schema; nothing is enforced, so every constraint is checked by outform. The schema is sent
nearly as written (2020-12 form, references as `$defs`); the root is wrapped when it is not an
object, as the strict mode requires and as every OpenAI-compatible server accepts.
"""

from __future__ import annotations

from outform.schema.dialects.rules import STANDARD, DialectRules

RULES = DialectRules(
    name="openai",
    provider="OpenAI (non-strict)",
    wire="response_format.json_schema.schema with strict: false (or omitted)",
    source="platform.openai.com/docs/guides/structured-outputs",
    enforcing=False,
    accepted=STANDARD,
    object_root=True,
    notes=("JSON mode (json_object) needs the word 'json' in the input messages",),
)
