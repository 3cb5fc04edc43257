"""Schema dialects over JSONSchemaBench (dev split), side by side with peers' translations.

    python -m benchmarks.bench_dialects                 # print the markdown tables
    python -m benchmarks.bench_dialects --update-docs   # also rewrite docs/benchmarks.md's section

Per outform dialect: how many of the 300 schemas translate, how many translated schemas obey
the dialect's documented rules (outform's own checker, `check_rules`), how many labelled valid
instances survive forward -> wire -> reverse unchanged, and the translation time.

Peers are not installed: `schema_dialects_generated.jsonl` records what openai's
`_ensure_strict_json_schema` and pydantic-ai's transformers produced for the same schemas
(275 of them, those under 30 KB). The same rule checker is run over their outputs, and the
labelled valid instances are validated against them (peers map no values back, so a valid
instance the peer's schema rejects is an answer the provider can no longer give).
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from benchmarks.report import machine, update_section
from outform.errors import DialectError, SchemaError
from outform.schema.dialects import NotRepresentableError, check_rules, translate
from outform.schema.dialects.codec import same

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"
"""Vendored with its provenance (tests/data/corpus/README.md)."""
DIALECTS = (
    "openai_strict",
    "openai",
    "anthropic",
    "bedrock",
    "gemini",
    "gemini_openapi",
    "llama_cpp",
    "xai",
    "openai_compatible",
)
PEERS = {
    "openai.lib._pydantic._ensure_strict_json_schema": ("openai SDK strict", "openai_strict"),
    "pydantic_ai.OpenAIJsonSchemaTransformer(strict=True)": (
        "pydantic-ai OpenAI strict=True",
        "openai_strict",
    ),
    "pydantic_ai.OpenAIJsonSchemaTransformer(strict=None)": (
        "pydantic-ai OpenAI strict=None",
        "openai_strict",
    ),
    "pydantic_ai.GoogleJsonSchemaTransformer": ("pydantic-ai Google", "gemini"),
}


def records(name: str) -> list[dict[str, Any]]:
    path = CORPUS / name
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def valid_instances(row: dict[str, Any]) -> Iterator[Any]:
    for test in row.get("tests") or []:
        if test["valid"]:
            yield test["data"]


@dataclass
class Report:
    name: str
    schemas: int = 0
    translated: int = 0
    obeying: int = 0
    structural: int = 0
    """Obeying every rule but the list of accepted keywords (the benefit of the doubt)."""
    instances: int = 0
    exact: int = 0
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    broken: int = 0
    seconds: list[float] = field(default_factory=list)
    dispositions: collections.Counter[str] = field(default_factory=collections.Counter)
    violations: collections.Counter[str] = field(default_factory=collections.Counter)
    refusals: collections.Counter[str] = field(default_factory=collections.Counter)


def run_outform(dialect: str, rows: list[dict[str, Any]]) -> Report:
    report = Report(dialect, schemas=len(rows))
    for row in rows:
        start = time.perf_counter()
        try:
            result = translate(row["schema"], dialect)
        except SchemaError as error:
            report.seconds.append(time.perf_counter() - start)
            report.refusals[_cause(error)] += 1
            continue
        report.seconds.append(time.perf_counter() - start)
        report.translated += 1
        problems = check_rules(result.schema, dialect)
        report.obeying += not problems
        report.structural += not [p for p in problems if p.rule != "keyword"]
        report.violations.update(
            {f"{p.rule} `{p.keyword}`" if p.keyword else p.rule for p in problems}
        )
        report.dispositions.update(e.disposition for e in result.ledger.constraints())
        wire = jsonschema_rs.validator_for(result.validation_schema, validate_formats=True)
        for value in valid_instances(row):
            report.instances += 1
            try:
                sent = result.forward(value)
            except NotRepresentableError as refused:
                report.refused[refused.kind] += 1
                continue
            if wire.is_valid(sent) and same(result.reverse(sent), value):
                report.exact += 1
            else:
                report.broken += 1
    return report


def run_peer(
    key: str, label: str, dialect: str, peers: list[dict[str, Any]], rows: dict[str, Any]
) -> Report:
    report = Report(label, schemas=len(peers))
    declared = dialect
    for peer_row in peers:
        dialect = declared
        output = peer_row["peers"].get(key, {})
        if "value" not in output:
            continue
        report.translated += 1
        if output.get("is_strict_compatible") is False:
            dialect = "openai"  # pydantic-ai then sends the schema with strict: false
        problems = check_rules(output["value"], dialect)
        report.obeying += not problems
        report.structural += not [p for p in problems if p.rule != "keyword"]
        report.violations.update(
            {f"{p.rule} `{p.keyword}`" if p.keyword else p.rule for p in problems}
        )
        try:
            wire = jsonschema_rs.validator_for(output["value"])
        except (ValueError, jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError):
            continue
        for value in valid_instances(rows[peer_row["id"]]):
            report.instances += 1
            report.exact += bool(wire.is_valid(value))
    return report


def _cause(error: SchemaError) -> str:
    if not isinstance(error, DialectError):
        return "invalid schema"
    if "recursive" in error.what:
        return "recursion"
    found = re.search(r"has \d+ ([a-z -]+?);", error.what)
    return f"over the limit of {found.group(1)}" if found else error.what.split(";")[0]


def pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def dialect_table(reports: list[Report]) -> str:
    lines = [
        "| dialect | translated | refused before the request (why) | obey the dialect's rules "
        "| round trip exact | refused by `forward` (narrowing) | broken "
        "| constraints enforced / checked locally / dropped | mean ms |",
        "|---|---:|---|---:|---:|---|---:|---|---:|",
    ]
    for r in reports:
        refused = ", ".join(f"{kind} {n}" for kind, n in sorted(r.refused.items())) or "-"
        why = ", ".join(f"{cause} {n}" for cause, n in r.refusals.most_common()) or "-"
        d = r.dispositions
        lines.append(
            f"| `{r.name}` | {pct(r.translated, r.schemas)} | {why} "
            f"| {pct(r.obeying, r.translated)} "
            f"| {pct(r.exact, r.instances)} | {refused} | {r.broken} "
            f"| {d['enforced']} / {d['checked_locally']} / {d['dropped']} "
            f"| {1000 * statistics.mean(r.seconds):.2f} |"
        )
    return "\n".join(lines)


def peer_table(reports: list[Report]) -> str:
    lines = [
        "| translator (275 schemas under 30 KB) | produces a schema | obeys the provider's rules "
        "| obeys them, unlisted keywords aside | valid instances its schema still accepts "
        "| most frequent broken rules |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in reports:
        top = ", ".join(f"{rule} ({n})" for rule, n in r.violations.most_common(5)) or "-"
        lines.append(
            f"| {r.name} | {pct(r.translated, r.schemas)} | {pct(r.obeying, r.schemas)} "
            f"| {pct(r.structural, r.schemas)} | {pct(r.exact, r.instances)} | {top} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    rows = records("jsonschemabench_dev.jsonl")
    peers = records("schema_dialects_generated.jsonl")
    by_id = {row["id"]: row for row in rows}
    subset = [by_id[peer["id"]] for peer in peers]
    ours = [run_outform(dialect, rows) for dialect in DIALECTS]
    comparison = [
        run_peer(key, label, dialect, peers, by_id) for key, (label, dialect) in PEERS.items()
    ]
    for dialect, label in (
        ("openai_strict", "outform openai_strict"),
        ("gemini", "outform gemini"),
    ):
        mine = run_outform(dialect, subset)
        mine.name = label
        comparison.append(mine)
    text = (
        "### outform, per dialect (300 schemas, 387 labelled valid instances)\n\n"
        + dialect_table(ours)
        + "\n\n### Side by side with peers' translations\n\n"
        + peer_table(comparison)
        + "\n"
    )
    print(text)
    if args.write:
        update_docs(text)


def update_docs(tables: str) -> None:
    intro = (
        "## Schema dialects\n\n"
        f"Command: `python -m benchmarks.bench_dialects --write` ({machine()}; reads "
        "`tests/data/corpus/jsonschemabench_dev.jsonl` and `schema_dialects_generated.jsonl`; "
        "about 20 s). Aliases are not repeated: `groq` is `openai_strict`, `ollama` is "
        "`llama_cpp`, `mistral`/`fireworks`/`together`/`vllm` are `openai_compatible` (see "
        "docs/dialects.md).\n\n"
        "*round trip exact*: a labelled valid instance, mapped to the wire shape, validates under "
        "the wire schema and maps back equal. *refused by `forward`*: the instance uses a freedom "
        "the dialect narrows (an undeclared key of an object the dialect closes, an explicit null "
        "for an optional nullable field under all-required rules, a type read from the keywords); "
        "each narrowing is in the ledger. For peers, *valid instances its schema still accepts* is "
        "the same question without any mapping back, since peers have none. *obeys the provider's "
        "rules* is outform's checker (`outform.schema.dialects.check_rules`, written from the "
        "providers' documentation) run over everyone's output, outform's included; a refusal "
        "(pydantic-ai strict=True raises on 22 schemas) counts as not obeying.\n\n"
    )
    update_section("dialects", intro + tables)


if __name__ == "__main__":
    main()
