"""The schema in prompted-mode instructions: characters of outform's compact shape against the
raw JSON Schema (what outform sent before) and the indented JSON Schema many tools paste.

    python -m benchmarks.bench_instructions            # print the markdown
    python -m benchmarks.bench_instructions --write    # also rewrite docs/benchmarks.md's section

Measured on the Envelope (bare and with a typed content), on three real schemas of
JSONSchemaBench's dev split (one GitHub configuration file, one Kubernetes resource, one
function-calling schema), and over all 300 of its schemas. Characters, not tokens: no
tokenizer is a dependency, and the ratio is what matters.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import orjson
from pydantic import BaseModel
from tests import vendored

from benchmarks.report import machine, update_section
from outform.agent import Envelope
from outform.format import ResponseFormat
from outform.plan import schema_instructions
from outform.schema.compact import render
from outform.schema.derive import schema_of

CHOSEN = (
    "Github_medium/o65477",
    "Kubernetes/kb_747_Normalized",
    "Glaiveai2K/generate_invoice_3ab8d7c8",
)


class Invoice(BaseModel):
    number: str
    total: float
    paid: bool


def sizes(schema: Any) -> dict[str, int]:
    fmt = ResponseFormat.json_schema(schema)
    return {
        "indented": len(json.dumps(schema, indent=2)),
        "raw": len(orjson.dumps(schema)),
        "shape": len(render(schema)),
        "instructions": len(schema_instructions(fmt)),
        "raw_instructions": len(_raw_instructions(fmt)),
    }


def _raw_instructions(fmt: Any) -> str:
    """The instructions as outform wrote them before the compact shape."""
    return (
        "Respond with a single JSON value, with no prose and no Markdown fences, that matches "
        f"this JSON Schema:\n{orjson.dumps(fmt.schema).decode()}"
    )


def row(name: str, schema: Any) -> str:
    s = sizes(schema)
    saved = 1 - s["instructions"] / s["raw_instructions"]
    return (
        f"| {name} | {s['indented']:,} | {s['raw']:,} | {s['shape']:,} | "
        f"{s['raw_instructions']:,} | {s['instructions']:,} | {saved:.0%} |"
    )


def corpus() -> list[dict[str, Any]]:
    return vendored.corpus("jsonschemabench_dev.jsonl")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    rows = corpus()
    by_id = {r["id"]: r for r in rows}
    lines = [
        "| schema | indented JSON Schema | raw JSON Schema | compact shape | instructions "
        "before (raw) | instructions now | saved |",
        "|---|---|---|---|---|---|---|",
        row("Envelope", schema_of(Envelope)),
        row("Envelope[Invoice]", schema_of(Envelope[Invoice])),
    ]
    lines += [row(f"`{key}`", by_id[key]["schema"]) for key in CHOSEN if key in by_id]
    summary = ""
    if rows:
        saved = []
        shape_used = 0
        for r in rows:
            s = sizes(r["schema"])
            saved.append(1 - s["instructions"] / s["raw_instructions"])
            shape_used += s["instructions"] < s["raw_instructions"]
        summary = (
            f"\nOver all {len(rows)} schemas of the dev split: the compact shape is used for "
            f"{shape_used} (the raw schema for the rest, where the shape is not shorter); "
            f"characters saved: median {statistics.median(saved):.0%}, "
            f"mean {statistics.mean(saved):.0%}, largest {max(saved):.0%}; never longer "
            f"(smallest saving {min(saved):.0%}).\n"
        )
    text = (
        "## Schema instructions (prompted and JSON-object modes)\n\n"
        f"Command: `python -m benchmarks.bench_instructions --write` ({machine()}; reads "
        "`tests/data/corpus/jsonschemabench_dev.jsonl`). Characters; *instructions* is the whole "
        "system text outform adds, *before* the same text with the raw JSON Schema.\n\n"
        + "\n".join(lines)
        + "\n"
        + summary
    )
    print(text)
    if args.write:
        update_section("instructions", text)


if __name__ == "__main__":
    main()
