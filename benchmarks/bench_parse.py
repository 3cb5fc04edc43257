"""Parsing benchmarks: valid-reply overhead and malformed-reply recovery, against peers.

Run: `python -m benchmarks.bench_parse [--write] [--before SRC]` (`--write` updates
docs/benchmarks.md; `--before` also measures the valid 1 KB reply with another outform source
tree, e.g. an export of main, side by side with this one: `benchmarks/sides.py`).

1. Valid replies (1 KB and 100 KB): outform's fast path against the floor it cannot beat,
   orjson.loads + a prebuilt jsonschema-rs validator, and the typed path against Pydantic's own
   `model_validate_json`. Goal: outform ≤ 1.3× the floor.
2. Malformed replies: time and recovery rate of outform (level full) and json_repair (with the
   same schema) on the same cases: the schema-aligned cases (tests/parse/data) and a realistic
   9 KB malformed reply.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal

import json_repair
import jsonschema_rs
import orjson
from pydantic import BaseModel, Field

import outform
from benchmarks import sides
from benchmarks.report import machine, table, update_section
from benchmarks.timing import fmt_seconds, paired, per_call
from outform import OutformError, Pipeline, jsontext
from outform.parse import as_read, duplicates

CASES = Path(__file__).resolve().parents[1] / "tests" / "parse" / "data"


class Customer(BaseModel):
    name: str
    email: str
    vip: bool = False


class Line(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-\d{4}$")
    description: str
    quantity: int = Field(ge=1)
    unit_price: float
    tags: list[str]


class Invoice(BaseModel):
    id: str
    customer: Customer
    currency: Literal["EUR", "USD", "GBP"]
    lines: list[Line]
    total: float
    paid: bool
    notes: str | None = None


SCHEMA = Invoice.model_json_schema()


def invoice(lines: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {
            "sku": f"ABC-{i % 10000:04d}",
            "description": f"Item number {i}, a widget of some kind",
            "quantity": 1 + i % 7,
            "unit_price": round(3.5 + i * 0.25, 2),
            "tags": ["hardware", f"batch-{i % 13}"],
        }
        for i in range(lines)
    ]
    total = sum(float(item["quantity"]) * float(item["unit_price"]) for item in items)
    return {
        "id": "INV-2026-0042",
        "customer": {"name": "Ada Lovelace", "email": "ada@example.com", "vip": True},
        "currency": "EUR",
        "lines": items,
        "total": round(total, 2),
        "paid": False,
        "notes": "Deliver to the back door.",
    }


def sized(target: int) -> bytes:
    lines = 1
    while len(orjson.dumps(invoice(lines))) < target:
        lines += 1
    return orjson.dumps(invoice(lines))


def _floor(validator: Any, text: str) -> None:
    validator.is_valid(orjson.loads(text))


def valid_replies() -> list[tuple[str, str]]:
    """The valid replies measured: compact (as orjson writes it: the fast path proves it
    read without loss in one comparison) and indented (checked the long way)."""
    small = sized(1_000)
    indented = json.dumps(orjson.loads(small), indent=2, ensure_ascii=False)
    return [
        ("1 KB", small.decode()),
        ("1 KB indented", indented),
        ("100 KB", sized(100_000).decode()),
    ]


def valid_rows() -> list[list[str]]:
    validator = jsonschema_rs.validator_for(SCHEMA)
    rows = []
    for label, text in valid_replies():
        pipeline: Pipeline[Any] = Pipeline(SCHEMA)
        bare_pipeline: Pipeline[Any] = Pipeline(SCHEMA, fill_defaults=False)
        typed: Pipeline[Invoice] = Pipeline(Invoice)
        assert pipeline.run(text).ok and not pipeline.run(text).changes

        base, (run, bare, conv), (run_r, bare_r, conv_r) = paired(
            partial(_floor, validator, text),
            [
                partial(pipeline.run, text),
                partial(bare_pipeline.run, text),
                partial(outform.parse, text, SCHEMA),
            ],
        )
        pyd, (typ,), (typ_r,) = paired(
            partial(Invoice.model_validate_json, text), [partial(typed.run, text)], rounds=11
        )
        rows.append(
            [
                f"{label} ({len(text):,} B)",
                fmt_seconds(base),
                fmt_seconds(run),
                f"{run_r:.2f}×",
                fmt_seconds(bare),
                f"{bare_r:.2f}×",
                fmt_seconds(conv),
                f"{conv_r:.2f}×",
                fmt_seconds(pyd),
                fmt_seconds(typ),
                f"{typ_r:.2f}×",
            ]
        )
    return rows


def _schema_lookup(text: str) -> None:
    """What `outform.parse` adds to `Pipeline.run`: find the cached pipeline of the schema."""
    outform.parse(text, SCHEMA)


def _as_read(text: str, data: Any) -> bool:
    """The compact reply's proof (see outform/parse/as_read.py): one writing, one `==`."""
    written = as_read.writing(data)
    return written is not None and as_read.written_as_read(text, written)


def _long_way(text: str, data: Any) -> bool:
    """The checks of a reply written otherwise: a misread number, a key written twice."""
    return jsontext.may_be_inexact(text) or duplicates.may_repeat(text, data)


def cost_rows() -> list[list[str]]:
    """What the fast path spends beyond the floor, one promise at a time: each check alone,
    as a share of the floor (medians of paired rounds, like the table above)."""
    rows = []
    for label, text in valid_replies():
        data = orjson.loads(text)
        validator = jsonschema_rs.validator_for(SCHEMA)
        pipeline: Pipeline[Any] = Pipeline(SCHEMA)
        pipeline.run(text)
        outform.parse(text, SCHEMA)
        checks: list[Callable[[], Any]] = [
            partial(_as_read, text, data),
            partial(_long_way, text, data),
            partial(as_read.opening_brackets, orjson.dumps(data)),
        ]
        _, times, ratios = paired(partial(_floor, validator, text), checks)
        _, _, (lookup_r,) = paired(partial(pipeline.run, text), [partial(_schema_lookup, text)])
        cells = [f"{fmt_seconds(t)} ({r:.0%})" for t, r in zip(times, ratios, strict=True)]
        rows.append([label, *cells, f"{lookup_r:.2f}×"])
    return rows


MALFORMED_REPLY = """Sure! I extracted the invoice. I assumed the currency from the € signs.

<think>The user wants JSON. Lines have quantities as words sometimes.</think>

```json
{
  // invoice header
  id: 'INV-2026-0042',
  "customer": {"name": "Ada Lovelace", "email": "ada@example.com", "vip": "yes"},
  "currency": "eur",
  "lines": [
%s
  ],
  "total": "€1,234.50",
  "paid": "false",
  "notes": None,
}
```
Let me know if you need anything else!"""

_LINE = """    {"sku": "ABC-%04d", "description": "Item %d, a widget", "quantity": "%d",
     "unit_price": "$%d.25", "tags": "hardware",},"""


def malformed_reply() -> str:
    return MALFORMED_REPLY % "\n".join(_LINE % (i, i, 1 + i % 5, 3 + i) for i in range(60))


def _outform(text: str, schema: Any) -> Any:
    try:
        return outform.parse(text, schema, level="full").data
    except OutformError:
        return None


def _json_repair(text: str, schema: Any) -> Any:
    try:
        return json_repair.loads(text, schema=schema)
    except Exception:  # json_repair raises ValueError and others on schemas it cannot meet
        return None


def _all(fn: Callable[[str, Any], Any], cases: list[dict[str, Any]]) -> None:
    for case in cases:
        fn(case["input"], case["schema"])


def _cases() -> list[dict[str, Any]]:
    return [
        orjson.loads(line)
        for line in (CASES / "schema_aligned_cases.jsonl").read_bytes().splitlines()
        if line.strip()
    ]


def malformed_rows() -> list[list[str]]:
    cases = _cases()
    rows = []
    parsers: list[tuple[str, Callable[[str, Any], Any]]] = [
        ("outform (level full)", _outform),
        ("json_repair (schema)", _json_repair),
    ]
    for name, fn in parsers:
        recovered = 0
        for case in cases:
            got = fn(case["input"], case["schema"])
            if case["outcome"] == "ok":
                recovered += got == case["expected"]
            else:
                recovered += got is None
        total = per_call(partial(_all, fn, cases), repeats=3)
        reply = malformed_reply()
        result = fn(reply, SCHEMA)
        valid = result is not None and jsonschema_rs.validator_for(SCHEMA).is_valid(result)
        one = per_call(partial(fn, reply, SCHEMA), repeats=5)
        rows.append(
            [
                name,
                f"{recovered}/{len(cases)} ({recovered / len(cases):.0%})",
                fmt_seconds(total),
                f"{len(reply):,} B: {'valid' if valid else 'not valid'}",
                fmt_seconds(one),
            ]
        )
    return rows


# -- side by side with another source tree ------------------------------------------------------


def probe(rounds: int = 21) -> dict[str, float]:
    """The valid 1 KB reply: `Pipeline.run` and `outform.parse` over the floor, medians of
    paired rounds of CPU time (less disturbed than wall time by the other processes)."""
    text = sized(1_000).decode()
    validator = jsonschema_rs.validator_for(SCHEMA)
    pipeline: Pipeline[Any] = Pipeline(SCHEMA)
    runs: dict[str, Callable[[], Any]] = {
        "floor": partial(_floor, validator, text),
        "run": partial(pipeline.run, text),
        "parse": partial(outform.parse, text, SCHEMA),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            fn()
            best = float("inf")
            for _ in range(3):
                start = time.process_time()
                for _ in range(1000):
                    fn()
                best = min(best, (time.process_time() - start) / 1000)
            times[name].append(best)
    return {
        "run_ratio": statistics.median(
            r / f for r, f in zip(times["run"], times["floor"], strict=True)
        ),
        "parse_ratio": statistics.median(
            p / f for p, f in zip(times["parse"], times["floor"], strict=True)
        ),
        "parse_over_run": statistics.median(
            p / r for p, r in zip(times["parse"], times["run"], strict=True)
        ),
    }


def side_by_side(before: Path, pairs: int = 5) -> str:
    old, new = sides.alternate("benchmarks.bench_parse", before, pairs)
    labels = {
        "run_ratio": "valid 1 KB reply, `Pipeline.run` ÷ (orjson + jsonschema-rs)",
        "parse_ratio": (
            "valid 1 KB reply, `outform.parse(text, schema=dict)` ÷ (orjson + jsonschema-rs)"
        ),
        "parse_over_run": "`outform.parse` ÷ `Pipeline.run`",
    }
    body = table(
        ["measure", "before", "this tree", "this ÷ before"],
        sides.rows(old, new, labels, dict.fromkeys(labels, "{:.2f}×")),
    )
    return (
        f"**Side by side with another source tree** (`--before SRC`): {pairs} child processes of"
        " each, alternating; in each, the median of 21 paired rounds of CPU time; here the"
        f" medians of those.\n\n{body}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--before", type=Path, help="another outform src/ to measure side by side")
    parser.add_argument("--probe", action="store_true", help="print this tree's measures as JSON")
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe()))
        return 0
    valid = table(
        [
            "payload",
            "orjson + jsonschema-rs",
            "Pipeline.run",
            "ratio",
            "Pipeline.run, fill_defaults=False",
            "ratio",
            "outform.parse",
            "ratio",
            "pydantic model_validate_json",
            "Pipeline(Model).run",
            "ratio",
        ],
        valid_rows(),
    )
    costs = table(
        [
            "payload",
            "orjson's writing of the reading, compared (share of the floor)",
            "the long way: a misread number, a key written twice",
            "nesting over `max_depth` (the containers opened, counted)",
            "finding the cached pipeline (`outform.parse` ÷ `Pipeline.run`)",
        ],
        cost_rows(),
    )
    malformed = table(
        [
            "parser",
            "schema-aligned cases recovered",
            f"time for all {len(_cases())}",
            "malformed invoice reply",
            "time per reply",
        ],
        malformed_rows(),
    )
    command = "python -m benchmarks.bench_parse --write" + (" --before SRC" if args.before else "")
    markdown = f"""## Parsing

Command: `{command}` ({machine()}).

**Valid replies.** The reply is already valid JSON matching the schema (an invoice, Pydantic
model with nested objects, a pattern, bounds, a literal and an optional field). The floor is
`orjson.loads` plus a prebuilt jsonschema-rs validator; `Pipeline.run` is outform's fast path
with a compiled pipeline, which also adds the schema's declared defaults for absent properties
(checked in the same validator call; `fill_defaults=False` turns it off); `outform.parse` adds
the lookup of the cached pipeline (one dict lookup and one `==` of the schema dict with its
copy, so that a dict changed since is never served a stale pipeline). Typed results are
compared with Pydantic parsing the same model (Pydantic fills the defaults there). Times and
ratios are medians of 21 rounds, each measuring every side back to back (the machine is
shared: the ratios are what to read).

{valid}

**What the fast path pays for.** Beyond the floor, a valid reply is checked for what the two
libraries would pass over silently: a number orjson misreads (an integer beyond 64 bits becomes
a float, losing digits; a fraction past a float's digits is rounded), a key written twice
(orjson keeps the last value without a word; outform records the dropped one), and nesting
deeper than `max_depth` (a limit holds on every path). A reply written as orjson writes its
reading (compact) hides neither of the first two: orjson writes its reading once and one `==`
proves it (outform/parse/as_read.py); a reply written otherwise (indented, `1.50`, `\\u00e9`)
is checked the long way, one or two passes in C each, the writing reused. The nesting is bounded
by counting the containers opened. `outform.parse` also compares the schema dict with its copy so
that a changed dict is never served a stale pipeline. Times of each check alone (the first
column is spent on every reply, the second only on one written otherwise):

{costs}

**Malformed replies.** The {len(_cases())} schema-aligned cases (`tests/parse/data/`, expected
values from BAML's parser) and one realistic 9 KB reply: prose, a reasoning block, a fence,
comments, single quotes, unquoted keys, trailing commas, Python `None`, and fields that need
coercion (`"yes"`, `"€1,234.50"`, `"3"`, `"$4.25"`, a string where a list is wanted, a
lower-case enum).
json_repair gets the same schema (its schema-guided mode).

{malformed}
"""
    if args.before is not None:
        markdown += "\n" + side_by_side(args.before) + "\n"
    print(markdown)
    if args.write:
        update_section("parse", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
