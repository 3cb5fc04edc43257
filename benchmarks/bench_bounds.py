"""Large and hostile replies: the work stays linear, or stops at a named limit (issue 9).

Run: `python -m benchmarks.bench_bounds [--write]` (`--write` updates docs/benchmarks.md).

1. A fenced reply of 40,000 items that each need two coercions, at both levels, and the same
   reply 10× larger; beside it, orjson + jsonschema-rs reading the fence's content (the floor:
   no coercion) and json_repair with the schema.
2. Replies of 20,000 and 40,000 fenced blocks: extraction alone and a whole parse.
3. `patternProperties: {"^(a+)+$": ...}` and a key of 29 `a`s and a `!`: outform against
   Python's `re` (which outform no longer uses for schema patterns) on shorter keys.
4. An enum of 1,000,000 members with one named in a sentence: compiling, the first parse
   (which builds the index) and the next ones; beside it, jsonschema-rs checking one member.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import json_repair
import jsonschema_rs
import orjson
from tests.parse.test_bounds import ITEMS, fenced_items, fences

import outform
from benchmarks.report import machine, table, update_section
from benchmarks.timing import fmt_seconds, per_call
from outform import OutformError, Pipeline
from outform.parse.extract import candidates


def once(fn: Callable[[], Any]) -> tuple[float, str]:
    """Seconds for one call, and what came of it (for work too long to repeat)."""
    start = time.perf_counter()
    try:
        result = fn()
    except OutformError as exc:
        return time.perf_counter() - start, f"{type(exc).__name__}: {exc.what}"
    except Exception as exc:  # a peer's refusal (json_repair raises ValueError)
        return time.perf_counter() - start, f"{type(exc).__name__}: {str(exc)[:60]}"
    return time.perf_counter() - start, describe(result)


def describe(result: Any) -> str:
    data = getattr(result, "data", result)
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        items = data["items"]
        coerced = bool(items) and items[-1].get("tags") == ["x"]
        return f"{len(items):,} items" + (", all coerced" if coerced else ", not coerced")
    return str(data)[:60]


def _floor(text: str, validator: Any) -> bool:
    return bool(validator.is_valid(orjson.loads(text[8:-4])))


def large_rows() -> list[list[str]]:
    rows = []
    validator = jsonschema_rs.validator_for(ITEMS)
    for count in (40_000, 400_000):
        text = fenced_items(count)
        label = f"{count:,} items ({len(text) / 1e6:.1f} MB)"
        runs: list[tuple[str, Callable[[], Any]]] = [
            ("orjson + jsonschema-rs (floor: no coercion)", partial(_floor, text, validator)),
            ("outform, level minimal", partial(outform.parse, text, ITEMS)),
            ("outform, level full", partial(outform.parse, text, ITEMS, level="full")),
        ]
        if count > 40_000:
            runs.append(
                (
                    "outform, level minimal, max_chars=50,000,000",
                    partial(outform.parse, text, ITEMS, max_chars=50_000_000),
                )
            )
        runs.append(("json_repair.loads (schema)", partial(json_repair.loads, text, schema=ITEMS)))
        for name, fn in runs:
            seconds, outcome = once(fn)
            rows.append([label, name, fmt_seconds(seconds), outcome])
    return rows


def fence_rows() -> list[list[str]]:
    rows = []
    work: list[tuple[str, Callable[[str], Any]]] = [
        ("outform extraction (`extract.candidates`)", _extract),
        ("outform.parse, array schema (every block gathered)", _gather),
    ]
    for name, fn in work:
        times = {n: per_call(partial(fn, fences(n)), repeats=3) for n in (20_000, 40_000)}
        rows.append(
            [
                name,
                fmt_seconds(times[20_000]),
                fmt_seconds(times[40_000]),
                f"{times[40_000] / times[20_000]:.2f}×",
            ]
        )
    return rows


def _extract(text: str) -> Any:
    return candidates(text, frozenset({"object"}), collect=True)


def _gather(text: str) -> Any:
    return outform.parse(text, {"type": "array"})


PATTERN = "^(a+)+$"


def pattern_rows() -> list[list[str]]:
    schema = {
        "type": "object",
        "patternProperties": {PATTERN: {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    }
    key = "a" * 29 + "!"
    reply = f'{{"{key}": 5}}'
    rows = [
        [
            "outform.parse (jsonschema-rs's engine)",
            "29 `a`s + `!`",
            fmt_seconds(per_call(partial(outform.parse, reply, schema))),
        ]
    ]
    compiled = re.compile(PATTERN)
    measured = {}
    for length in (18, 20, 22):
        measured[length] = per_call(partial(compiled.search, "a" * length + "!"), repeats=3)
        seconds = fmt_seconds(measured[length])
        rows.append([f"Python `re.search` ({length} `a`s)", f"{length} `a`s + `!`", seconds])
    growth = (measured[22] / measured[18]) ** (1 / 4)
    rows.append(
        [
            "Python `re.search`, extrapolated",
            "29 `a`s + `!`",
            f"≈ {fmt_seconds(measured[22] * growth**7)} *(×{growth:.2f} per `a`)*",
        ]
    )
    return rows


def enum_rows() -> list[list[str]]:
    members = [f"member{i}" for i in range(1_000_000)]
    schema = {"type": "object", "properties": {"c": {"enum": members}}, "required": ["c"]}
    start = time.perf_counter()
    pipeline: Pipeline[Any] = Pipeline(schema, level="full")
    compile_seconds = time.perf_counter() - start
    first, outcome = once(partial(pipeline.run, '{"c": "I think member500000 is right"}'))
    reply = '{"c": "I think member777777 is the one"}'
    assert pipeline.run(reply).data == {"c": "member777777"}
    steady = per_call(partial(pipeline.run, reply))
    validator = jsonschema_rs.validator_for({"enum": members})
    floor = per_call(partial(validator.is_valid, "member777777"))
    return [
        ["compile the pipeline (`Pipeline(schema)`)", fmt_seconds(compile_seconds)],
        [f"first parse, building the index ({outcome})", fmt_seconds(first)],
        ["next parses", fmt_seconds(steady)],
        ["jsonschema-rs `is_valid` of one member (floor)", fmt_seconds(floor)],
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    large = table(["reply", "parser", "time", "outcome"], large_rows())
    fenced = table(["work", "20,000 blocks", "40,000 blocks", "doubling"], fence_rows())
    pattern = table(["matcher", "key", "time"], pattern_rows())
    enum = table(["step", "time"], enum_rows())
    markdown = f"""## Large and hostile replies

Command: `python -m benchmarks.bench_bounds --write` ({machine()}; one run, the machine shared
with other work: provisional numbers, ratios are what to compare).

**A large reply.** A fenced object of N items `{{"name": "item1", "price": "$1.50", "tags":
"x"}}`, each needing two coercions (price to a number, tags to a list), against `{{items:
array of {{name: string, price: number, tags: array of string}}}}`. One run each (the default
`time_limit` of 5 s applies, checked between steps: a single linear step, such as decoding
20 MB, can carry a parse past it by that step's length); the floor decodes and validates the
fence's content without coercing it (so it is not valid).

{large}

**Many fenced blocks.** N blocks, each a line `Block i:` and a fenced `{{"a": i}}`
(tagged `json`); doubling N should double the time.

{fenced}

**A catastrophic pattern.** `patternProperties: {{"{PATTERN}": ...}}` and a key that almost
matches. outform asks jsonschema-rs, whose engine is linear; Python's backtracking `re` doubles
its time with every `a`.

{pattern}

**An enum of 1,000,000 members**, one of them named in a sentence (`"I think member777777 is
the one"`, level full).

{enum}
"""
    print(markdown)
    if args.write:
        update_section("bounds", markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
