"""Provider schema dialects: translate a schema for a provider, and say what it will enforce.

    >>> from outform.schema.dialects import translate
    >>> result = translate({"type": "object", "properties": {"age": {"type": "integer"}}},
    ...                    "openai_strict")
    >>> result.schema["properties"]["age"]
    {'type': ['integer', 'null']}
    >>> result.reverse({"age": None})
    {}

Every dialect is a `DialectRules` fact sheet (one module each); the registry maps names to
them. The OpenAI-compatible servers without documented rules of their own (mistral, fireworks,
together, vllm) share `openai_compatible`; groq shares `openai_strict`; see `compatible.py`.
Model prefixes (`llamacpp`, `sglang`, ...) are accepted wherever a dialect name is: see
`vocabulary.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from outform.errors import SchemaError, guarded
from outform.schema.check import boolean_root, too_nested
from outform.schema.compiled import compile_schema
from outform.schema.dialects import (
    anthropic,
    bedrock,
    compatible,
    gemini,
    llama_cpp,
    ollama,
    openai,
    openai_strict,
    vocabulary,
    xai,
)
from outform.schema.dialects.base import Emitter, Options
from outform.schema.dialects.check import Problem
from outform.schema.dialects.check import check_rules as _check_rules
from outform.schema.dialects.codec import NotRepresentableError
from outform.schema.dialects.normalize import Document
from outform.schema.dialects.result import DialectResult
from outform.schema.dialects.rules import DialectRules, Limits

DIALECTS: dict[str, DialectRules] = {
    rules.name: rules
    for rules in (
        openai_strict.RULES,
        openai.RULES,
        anthropic.RULES,
        bedrock.RULES,
        gemini.RULES,
        gemini.OPENAPI_RULES,
        ollama.RULES,
        llama_cpp.RULES,
        xai.RULES,
        compatible.RULES,
        *compatible.FAMILY.values(),
    )
}


def names() -> tuple[str, ...]:
    """The dialects (`get` and `translate` also take the model prefixes of
    `vocabulary.PROVIDERS`)."""
    return tuple(DIALECTS)


def get(name: str | DialectRules) -> DialectRules:
    """The fact sheet of a dialect, or of the dialect a model prefix's provider uses;
    SchemaError naming the known names for any other name."""
    if isinstance(name, DialectRules):
        return name
    rules = DIALECTS.get(name)
    if rules is not None:
        return rules
    if name not in vocabulary.PROVIDERS:
        raise SchemaError(
            f"unknown schema dialect {name!r}",
            where="dialect",
            fix=f"use a dialect ({', '.join(DIALECTS)}) or a model prefix "
            f"({', '.join(p for p in vocabulary.PROVIDERS if p not in DIALECTS)})",
        )
    dialect = vocabulary.PROVIDERS[name]
    if dialect is None:
        raise SchemaError(
            f"{name} takes no schema on the wire: outform asks it for JSON (JSON mode, a forced "
            "tool or instructions) and checks the whole schema itself",
            where="dialect",
            fix="nothing to translate; to see what an OpenAI-compatible server would get, use "
            "openai_compatible",
        )
    return DIALECTS[dialect]


@guarded("schema")
def translate(
    schema: Mapping[str, Any] | bool,
    dialect: str | DialectRules,
    *,
    open_objects: Literal["close", "keep"] | None = None,
    wrap_root: bool = True,
    describe: bool = True,
) -> DialectResult:
    """Translate `schema` into `dialect`: the wire schema, its ledger and the value mappings.

    Raises SchemaError when the schema is not valid JSON Schema, and DialectError (a
    SchemaError) when the dialect cannot express it: recursion it refuses, a size over its
    limits, a non-object root with `wrap_root=False`. See `Options` for `open_objects` and
    `describe`. A boolean root is JSON Schema's: `true` is translated as `{}` (any JSON
    value), `false` is a SchemaError (it accepts no value).
    """
    rules = get(dialect)
    document: Mapping[str, Any] = boolean_root(schema)
    compile_schema(document)  # SchemaError, naming the place, for a schema outform cannot use
    emitter = Emitter(
        rules,
        Document(document),
        Options(open_objects=open_objects, wrap_root=wrap_root, describe=describe),
    )
    try:
        wire, codec, wrapped = emitter.run()
    except RecursionError:
        raise too_nested() from None
    return DialectResult(
        dialect=rules.name,
        schema=gemini.to_openapi(wire) if rules.render == "openapi" else wire,
        ledger=emitter.ledger,
        wrapped_root=wrapped,
        original=document,
        validation_schema=wire,
        rules=rules,
        codec=codec,
        definitions=emitter.codecs,
    )


@guarded("schema")
def check_rules(schema: Any, dialect: str | DialectRules) -> list[Problem]:
    """Every documented rule of `dialect` that `schema` (a wire schema) breaks."""
    return _check_rules(schema, get(dialect))


__all__ = [
    "DIALECTS",
    "DialectResult",
    "DialectRules",
    "Limits",
    "NotRepresentableError",
    "Problem",
    "check_rules",
    "get",
    "names",
    "translate",
]
