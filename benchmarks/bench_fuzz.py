"""The fuzzer's big run: a million generated inputs over every public surface (issue 9).

Run: `python -m benchmarks.bench_fuzz [--inputs 1000000] [--workers 2] [--seed 0] [--write]
[--checkpoint FILE]` (`--write` updates docs/benchmarks.md; with `--checkpoint`, a run stopped
part way goes on where it stopped when started again with the same file).
`python -m benchmarks.bench_fuzz --doubling KIND:SEED ...` only measures the growth of those
inputs (the slowest of a run, say), as the run's report does.

Inputs come from the seeded grammar of `tests/fuzz/grammar.py` (the families the hypothesis
tests of `make test` draw from), one family after the other: each reply family is parsed at
one level (off, minimal, full in turn) and every fourth one also streamed in a random
chunking; schemas go through every dialect translator, request bodies through the gateway's
request parsing. Each input is checked for the properties of `tests/fuzz/checks.py`. The run
reports:

- exceptions that are not outform's, and every other broken property (goal: none);
- inputs whose work took longer than the time limit (goal: none): a public call that ran past
  `time_limit`, and replies refused by the limit itself;
- per family, the slowest input, and how its time grows with its size (goal: at most 2.2× per
  doubling). The input is first scaled up until one call takes 50 ms, so that fixed costs do
  not hide the growth, then timed at that scale and at twice and four times it (the same
  seed; each time the best of 5). The growth is the time per doubling of the size over both
  doublings, 2 ** (log of the time ratio / log of the size ratio): the same seed at another
  scale is another draw of the grammar (where a reasoning tag is left open, how many regions
  are broken), so one doubling alone measured that draw as much as the code (the reasoning
  family's slowest input took 2.8×, 2.4×, then 0.7× over three successive doublings, while
  outform's own work grew 2.6×, 2.0×), and a size that grew 2.2× for a scale doubled read as
  2.2× for linear work. A quadratic step still shows: 4× per doubling where it dominates.
  Both steps' own ratios are in the table.
"""

from __future__ import annotations

import argparse
import itertools
import math
import multiprocessing
import os
import pickle
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.checks import (
    CLOCK,
    LEVELS,
    BrokenPromiseError,
    check_dialects,
    check_gateway,
    check_parse,
    check_stream,
)
from tests.fuzz.grammar import (
    FAMILIES,
    RandomSource,
    chunking,
    dialect_schema,
    gateway_request,
    value_for,
)

from benchmarks.report import machine, table, update_section
from benchmarks.timing import fmt_seconds

TIME_LIMIT = 5.0
"""The default `time_limit` of a parse, which the run leaves as it is."""
KINDS = (*FAMILIES, "dialects", "gateway")
STREAM_EVERY = 4
"""Every fourth reply is also streamed."""
CHUNK = 2_000
"""Inputs per task handed to a worker."""
EXAMPLES = 3
"""Inputs kept per kind of finding."""


def size(seed: int) -> int:
    """The scale of input `seed`: mostly small, sometimes large (up to 512 units)."""
    draw = random.Random(seed * 7919 + 17)
    roll = draw.random()
    if roll < 0.9:
        return 1 + draw.randrange(8)
    if roll < 0.99:
        return 9 + draw.randrange(56)
    return 65 + draw.randrange(448)


@dataclass
class Slowest:
    seconds: float = 0.0
    seed: int = 0
    n: int = 0
    chars: int = 0


@dataclass
class Tally:
    """What one worker saw."""

    inputs: Counter[str] = field(default_factory=Counter)
    findings: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    over_limit: list[str] = field(default_factory=list)
    refused_by_limit: list[str] = field(default_factory=list)
    slowest: dict[str, Slowest] = field(default_factory=dict)
    """Per family, the input whose call took longest (for a parse, the second of its two
    calls: the reply's work, the schema compiled)."""
    compiling: dict[str, Slowest] = field(default_factory=dict)
    """Per family, the slowest first parse (which compiled the schema, when new)."""
    outcomes: Counter[str] = field(default_factory=Counter)

    def merge(self, other: Tally) -> None:
        self.inputs.update(other.inputs)
        self.findings.update(other.findings)
        for key, found in other.examples.items():
            kept = self.examples.setdefault(key, [])
            kept.extend(found[: EXAMPLES - len(kept)])
        self.over_limit += other.over_limit
        self.refused_by_limit += other.refused_by_limit
        self.outcomes.update(other.outcomes)
        for mine, theirs in ((self.slowest, other.slowest), (self.compiling, other.compiling)):
            for kind, slow in theirs.items():
                if slow.seconds > mine.get(kind, Slowest()).seconds:
                    mine[kind] = slow

    def timed(
        self, kind: str, seed: int, n: int, chars: int, seconds: float, *, first: float = 0.0
    ) -> None:
        if seconds > self.slowest.get(kind, Slowest()).seconds:
            self.slowest[kind] = Slowest(seconds, seed, n, chars)
        if first > self.compiling.get(kind, Slowest()).seconds:
            self.compiling[kind] = Slowest(first, seed, n, chars)
        if max(seconds, first) > TIME_LIMIT:
            self.over_limit.append(f"{kind} seed {seed} n {n}: {max(seconds, first):.2f} s")


def size_of(value: object) -> int:
    """About the length of `value` written as JSON, without recursion (a hostile schema nests
    deeper than `repr` can go)."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            total += 2 + len(item)
            for key, inner in item.items():
                total += len(str(key)) + 3
                stack.append(inner)
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += len(str(item))
    return total


def kind_of(seed: int) -> str:
    return KINDS[seed % len(KINDS)]


def level_of(seed: int) -> str:
    return LEVELS[(seed // len(KINDS)) % len(LEVELS)]


def run_one(seed: int, n: int, tally: Tally) -> None:
    """Input `seed` at scale `n`, every check that applies; findings go to the tally."""
    kind = kind_of(seed)
    source = RandomSource(seed)
    level = level_of(seed)
    tally.inputs[kind] += 1
    try:
        if kind == "dialects":
            schema = dialect_schema(source, n)
            check_dialects(schema, value_for(source, schema))
            tally.timed(kind, seed, n, size_of(schema), CLOCK.last)
            return
        if kind == "gateway":
            body = gateway_request(source, n)
            reply = FAMILIES["broken_json"](source, 1).text
            tally.outcomes[f"gateway {check_gateway(body, reply, level)}"] += 1
            tally.timed(kind, seed, n, len(body), CLOCK.last)
            return
        case = FAMILIES[kind](source, n)
        outcome = check_parse(case, level)
        tally.timed(kind, seed, n, len(case.text), CLOCK.last, first=CLOCK.first)
        tally.outcomes[outcome[0]] += 1
        if outcome[0] == "InputError" and "time_limit" in str(outcome[1]):
            tally.refused_by_limit.append(f"{kind} seed {seed} n {n} level {level}")
        if seed // len(KINDS) % STREAM_EVERY == 0:
            tally.inputs["stream"] += 1
            check_stream(case, level, chunking(source, len(case.text)), outcome)
            tally.timed("stream", seed, n, len(case.text), CLOCK.last)
    except BrokenPromiseError as found:
        cause = found.__cause__
        key = f"{kind}: {found.what}" + (f" ({type(cause).__name__})" if cause else "")
        tally.findings[key] += 1
        kept = tally.examples.setdefault(key, [])
        if len(kept) < EXAMPLES:
            kept.append(f"seed {seed}, n {n}, level {level}: {str(found)[:1500]}")


def run_range(task: tuple[int, int]) -> Tally:
    start, count = task
    tally = Tally()
    for seed in range(start, start + count):
        run_one(seed, size(seed), tally)
    return tally


# -- the size-doubling ratio ---------------------------------------------------------------------


def input_call(kind: str, seed: int, n: int) -> tuple[Callable[[], str], int]:
    """The public call input (seed, n) makes, to be timed alone (`CLOCK.last`), returning what
    came of it; and the input's size."""
    source = RandomSource(seed)
    level = level_of(seed)
    if kind == "dialects":
        schema = dialect_schema(source, n)
        return lambda: f"{check_dialects(schema)} translated", size_of(schema)
    if kind == "gateway":
        body = gateway_request(source, n)
        reply = FAMILIES["broken_json"](source, 1).text
        return lambda: check_gateway(body, reply, level), len(body)
    family = kind if kind != "stream" else kind_of(seed)
    case = FAMILIES[family](source, n)
    if kind == "stream":
        cuts = chunking(source, len(case.text))
        expected = check_parse(case, level)

        def stream() -> str:
            check_stream(case, level, cuts, expected)
            return "streamed"

        return stream, len(case.text)
    return lambda: ending(check_parse(case, level)), len(case.text)


def ending(outcome: tuple[str, object]) -> str:
    """How a parse ended, as the growth measure compares it: a reply that is not JSON and one
    that does not match the schema are both OutputErrors, but end on paths of unlike cost."""
    kind, what = outcome
    if kind != "OutputError":
        return kind
    return f"{kind} ({'not JSON' if 'could not be read' in str(what) else 'not the schema'})"


def best_time(call: Callable[[], str], repeats: int = 3) -> tuple[float, str]:
    """The shortest of `repeats` runs of the timed public call (`CLOCK.last`), and what came
    of it."""
    best = float("inf")
    outcome = ""
    for _ in range(repeats):
        outcome = call()
        best = min(best, CLOCK.last)
    return best, outcome


SCALE_TO = 0.05
"""An input is scaled up until one call takes this long (seconds)."""
DOUBLINGS = 2
"""The growth is measured over this many doublings of the scaled input."""


def per_doubling(sizes: list[int], times: list[float]) -> float:
    """How many times longer a call takes when the input's size doubles, between the first
    and the last measurement (per doubling of the scale where the size does not follow it)."""
    span = sizes[-1] / max(sizes[0], 1)
    ratio = times[-1] / times[0]
    steps = len(times) - 1
    if span < 2 ** (steps / 2):
        return float(ratio ** (1 / steps))
    return float(2 ** (math.log(ratio) / math.log(span)))


def doubling(kind: str, slow: Slowest) -> list[str]:
    """The input scaled up until a call takes SCALE_TO, then timed at that scale and at each
    of DOUBLINGS doublings of it; if they end differently (a limit reached at a larger one),
    one scale up again (at most twice)."""
    n = slow.n
    call, chars = input_call(kind, slow.seed, n)
    while best_time(call, 1)[0] < SCALE_TO and chars < 2_000_000 and n < 1 << 14:
        n *= 2
        call, chars = input_call(kind, slow.seed, n)
    for _ in range(3):
        larger = [input_call(kind, slow.seed, n << step) for step in range(1, DOUBLINGS + 1)]
        inputs = [(call, chars), *larger]
        sizes = [size for _, size in inputs]
        measured = [best_time(scaled, 5) for scaled, _ in inputs]
        times = [seconds for seconds, _ in measured]
        ends = [end for _, end in measured]
        if len(set(ends)) == 1:
            break
        n *= 2
        call, chars = input_call(kind, slow.seed, n)
    steps = ", ".join(f"{later / earlier:.2f}×" for earlier, later in itertools.pairwise(times))
    found = (
        f"{fmt_seconds(slow.seconds)} (seed {slow.seed}, {slow.chars:,} chars)"
        if slow.seconds
        else f"(seed {slow.seed}, scale {slow.n})"
    )
    return [
        kind,
        found,
        " → ".join(f"{size:,}" for size in sizes),
        " → ".join(fmt_seconds(seconds) for seconds in times),
        steps,
        f"{per_doubling(sizes, times):.2f}×",
        ends[0] if len(set(ends)) == 1 else " → ".join(ends),
    ]


DOUBLING_HEADER = [
    *("family", "slowest in the run", "size", "time", "each doubling", "growth", "outcome")
]


# -- the run -------------------------------------------------------------------------------------


def tasks(first: int, inputs: int) -> Iterable[tuple[int, int]]:
    for start in range(first, first + inputs, CHUNK):
        yield start, min(CHUNK, first + inputs - start)


def run(
    inputs: int, workers: int, first: int, checkpoint: Path | None = None
) -> tuple[Tally, float]:
    """Every input from `first` on, in chunks over `workers` processes. With a `checkpoint`,
    the tally so far is saved after each chunk, and a run started again with the same file and
    arguments goes on from there (a million inputs take hours on a small machine)."""
    total, done_chunks, seconds = Tally(), set[int](), 0.0
    if checkpoint is not None and checkpoint.exists():
        saved = pickle.loads(checkpoint.read_bytes())
        if saved["run"] != (inputs, first):
            raise SystemExit(f"{checkpoint} belongs to another run: {saved['run']}")
        total, done_chunks, seconds = saved["total"], saved["done"], saved["seconds"]
    started = time.perf_counter() - seconds
    done = sum(count for kind, count in total.inputs.items() if kind != "stream")
    todo = [task for task in tasks(first, inputs) if task[0] not in done_chunks]
    with multiprocessing.Pool(workers) as pool:
        for start, tally in pool.imap_unordered(run_chunk, todo):
            total.merge(tally)
            done_chunks.add(start)
            done += sum(count for kind, count in tally.inputs.items() if kind != "stream")
            if checkpoint is not None:
                state = {
                    "run": (inputs, first),
                    "total": total,
                    "done": done_chunks,
                    "seconds": time.perf_counter() - started,
                }
                partial = checkpoint.with_suffix(".partial")
                partial.write_bytes(pickle.dumps(state))
                partial.replace(checkpoint)
            if done % (inputs // 20 or 1) < CHUNK:
                print(f"  {done:,} / {inputs:,} inputs", file=sys.stderr)
    return total, time.perf_counter() - started


def run_chunk(task: tuple[int, int]) -> tuple[int, Tally]:
    return task[0], run_range(task)


def report(total: Tally, seconds: float, inputs: int, workers: int, first: int) -> str:
    counted = [[kind, f"{total.inputs[kind]:,}"] for kind in (*KINDS, "stream")]
    found = [[key, f"{count:,}"] for key, count in total.findings.most_common()] or [["none", "0"]]
    doubled = [
        doubling(kind, slow) for kind, slow in sorted(total.slowest.items()) if slow.seconds > 0
    ]
    compiling = [
        [kind, f"{fmt_seconds(slow.seconds)} (seed {slow.seed}, {slow.chars:,} chars)"]
        for kind, slow in sorted(total.compiling.items())
    ]
    outcomes = ", ".join(f"{name} {count:,}" for name, count in total.outcomes.most_common())
    examples = "\n".join(
        f"- {key}\n  - " + "\n  - ".join(kept) for key, kept in total.examples.items()
    )
    return f"""## Fuzzing

Command: `python -m benchmarks.bench_fuzz --inputs {inputs} --workers {workers} --seed {first}
--write` ({machine()}, {workers} worker processes; one run, the machine shared with other work:
provisional numbers). {inputs:,} inputs in {seconds:,.0f} s, each checked for the properties of
`tests/fuzz/checks.py` (only outform's errors, no unrecorded change, a valid result,
determinism, the stream ending where `parse` does). Inputs per family (every
{STREAM_EVERY}th reply is also streamed):

{table(["family", "inputs"], counted)}

Outcomes of the parses: {outcomes}.

**Exceptions that are not outform's, and other broken properties** (goal: none):

{table(["finding", "inputs"], found)}

{examples}

**Inputs over the time limit** ({TIME_LIMIT:g} s; goal: none): {len(total.over_limit)} public
calls ran past it{": " + "; ".join(total.over_limit[:5]) if total.over_limit else ""};
{len(total.refused_by_limit)} replies were refused by it (`InputError` naming `time_limit`)
{": " + "; ".join(total.refused_by_limit[:5]) if total.refused_by_limit else ""}.

**The slowest input per family, and how its time grows with its size** (a parse timed at its
second call, the schema compiled; the input scaled up until one call takes 50 ms, then timed
at that scale and at twice and four times it, the same seed, once more scaled up if the sizes
end differently; best of 5 each. The growth is the time per doubling of the size over both
doublings (see the module's docstring: the same seed at another scale is another draw of
the grammar); goal: at most 2.2×):

{table(DOUBLING_HEADER, doubled)}

The slowest first parse per family (compiling a schema not seen before, at most one per
input):

{table(["family", "slowest first parse"], compiling)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--seed", type=int, default=0, help="the first input's seed")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="save the tally here after each chunk; run again with it to go on where it stopped",
    )
    parser.add_argument(
        "--doubling",
        nargs="+",
        metavar="KIND:SEED",
        help="only measure how these inputs' time grows with their size (as the report does)",
    )
    args = parser.parse_args(argv)
    if args.doubling:
        rows = []
        for spec in args.doubling:
            kind, _, seed = spec.partition(":")
            if kind not in (*KINDS, "stream") or not seed.isdigit():
                parser.error(f"--doubling takes KIND:SEED, KIND one of {', '.join(KINDS)}, stream")
            rows.append(doubling(kind, Slowest(0.0, int(seed), size(int(seed)), 0)))
            print(table(DOUBLING_HEADER, rows[-1:]).splitlines()[-1], flush=True)
        print(table(DOUBLING_HEADER, rows))
        return 0
    total, seconds = run(args.inputs, args.workers, args.seed, args.checkpoint)
    markdown = report(total, seconds, args.inputs, args.workers, args.seed)
    print(markdown)
    if args.write:
        update_section("fuzz", markdown)
    return 1 if total.findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
