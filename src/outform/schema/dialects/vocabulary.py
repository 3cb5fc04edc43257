"""One vocabulary for dialect names and model prefixes.

A user who writes `llamacpp:qwen3` or `sglang:llama-4` as a model can write `llamacpp` or
`sglang` wherever a dialect is asked for (`outform schema S.json --dialect sglang`,
`translate(schema, "sglang")`) and gets the dialect outform sends that provider's current
models. `PROVIDERS` is that table: every model prefix of `outform.providers.registry`, and the
dialect of its native schema mode (None: the provider takes no schema on the wire).

A name is read as a dialect first: `openai` is the dialect of OpenAI's rules without
`strict: true`, while `openai:` models get `openai_strict` by default; `gemini:` models older
than 2.5 get `gemini_openapi` (the profiles say which model gets which). The tests hold this
table to the registry and the profiles.
"""

from __future__ import annotations

PROVIDERS: dict[str, str | None] = {
    "openai": "openai_strict",
    "openai-responses": "openai_strict",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "vertex": "gemini",
    "bedrock": "bedrock",
    "ollama": "ollama",
    "deepseek": None,
    "mistral": "mistral",
    "groq": "groq",
    "together": "together",
    "fireworks": "fireworks",
    "xai": "xai",
    "vllm": "vllm",
    "llamacpp": "llama_cpp",
    "sglang": "vllm",
}
"""Model prefix -> the dialect of its native schema mode (None: no schema on the wire)."""
