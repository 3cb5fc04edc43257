"""Streaming benchmark: the total cost of parsing a reply while it arrives in 16-character chunks.

Run: `python -m benchmarks.bench_stream [--write] [--before SRC]` (`--write` updates
docs/benchmarks.md; `--before` also measures another outform source tree, e.g. an export of
main, side by side with this one: `benchmarks/sides.py`).

The document is a list of products, as in a bulk extraction: `{"items": [{id, name, tags[3], price,
note}, ...]}`. The peers are used the way every Python structured-output library uses them:
after each chunk, the whole text received so far is parsed again (jiter in
`partial_mode="trailing-strings"`, partial-json-parser's `loads`, LangChain's
`parse_partial_json`). Their cost grows with the square of the length, so they are measured at
17, 34 and 68 KB and their 1 MB cost is *extrapolated* from a fit `a·n² + b·n` through those three
points. outform is measured at every size, 1 MB included, with and without incremental schema
validation, taking a snapshot after every chunk, and with snapshots batched every 256 characters.
A snapshot is read at its root (the views below it are built when first read), or, in one row,
down to the item being written, as a display of the last item would.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel

from benchmarks import sides
from benchmarks.report import machine, table, update_section
from benchmarks.timing import fmt_seconds, per_call
from outform.parse.partial import PartialParser
from outform.streaming import StreamParser

CHUNK = 16
SIZES = (("17 KB", 17_153), ("34 KB", 34_306), ("68 KB", 68_612), ("1 MB", 1_000_000))
PEER_SIZES = SIZES[:3]
ROUNDS = 3


class Product(BaseModel):
    id: int
    name: str
    tags: list[str]
    price: float
    note: str


class Catalogue(BaseModel):
    items: list[Product]


def document(size: int) -> str:
    """The §13 document, grown item by item to at least `size` characters."""
    items: list[str] = []
    total = len('{"items":[]}')
    i = 0
    while total < size:
        item = orjson.dumps(
            {
                "id": i,
                "name": f"Item {i}",
                "tags": ["red", f"size-{i % 5}", "sale"],
                "price": round(3.5 + i * 0.25, 2),
                "note": f"A short note about item {i}, with some words.",
            }
        ).decode()
        items.append(item)
        total += len(item) + 1
        i += 1
    return '{"items":[' + ",".join(items) + "]}"


def chunks_of(text: str) -> list[str]:
    return [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]


# -- the parsers, each over a whole stream ------------------------------------------------------


def outform_parser(parts: list[str]) -> Any:
    """The push parser alone, a snapshot after every chunk."""
    parser = PartialParser()
    value = None
    for part in parts:
        parser.feed(part)
        value = parser.value
    return value


def outform_parser_item(parts: list[str]) -> Any:
    """The push parser alone, the item being written read after every chunk."""
    parser = PartialParser()
    value = None
    for part in parts:
        parser.feed(part)
        value = parser.value
        items = value.get("items") if isinstance(value, Mapping) else None
        if items:
            items[-1]
    return value


def outform_stream(parts: list[str], *, validate: bool, every: int = 0) -> Any:
    """What a caller runs: StreamParser with the type's schema, a snapshot when one is due."""
    parser: StreamParser[Catalogue] = StreamParser(Catalogue, validate=validate, every=every)
    data = None
    for part in parts:
        for snapshot in parser.feed(part):
            data = snapshot.data
    for snapshot in parser.flush():
        data = snapshot.data
    return data


def reparse(parse: Callable[[Any], Any], parts: list[Any]) -> Any:
    """A peer the usual way: parse the whole text received so far after every chunk."""
    received = parts[0][:0]
    value = None
    for part in parts:
        received += part
        value = parse(received)
    return value


def _peers() -> list[tuple[str, Callable[[Any], Any], bool]]:
    """(name, parse, wants bytes) for each peer that is installed."""
    found: list[tuple[str, Callable[[Any], Any], bool]] = []
    try:
        import jiter

        found.append(
            (
                "jiter `from_json(partial_mode='trailing-strings')`",
                partial(jiter.from_json, partial_mode="trailing-strings"),
                True,
            )
        )
    except ImportError:
        pass
    try:
        import partial_json_parser

        found.append(("partial-json-parser `loads`", partial_json_parser.loads, False))
    except ImportError:
        pass
    try:
        from langchain_core.utils.json import parse_partial_json

        found.append(("LangChain `parse_partial_json`", parse_partial_json, False))
    except ImportError:
        pass
    return found


# -- timing -------------------------------------------------------------------------------------


def measure(fn: Callable[[], Any]) -> float:
    """Seconds per run: the fastest of repeated batches, or of three single runs for slow ones."""
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    if once > 0.5:
        runs = [once]
        for _ in range(2):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        return min(runs)
    return per_call(fn, budget=max(1.0, once * 10), repeats=5)


def fit(points: list[tuple[int, float]], size: int) -> float:
    """`a·n² + b·n` through the measured points (least squares), evaluated at `size`."""
    s4 = sum(n**4 for n, _ in points)
    s3 = sum(n**3 for n, _ in points)
    s2 = sum(n**2 for n, _ in points)
    t2 = sum(n**2 * t for n, t in points)
    t1 = sum(n * t for n, t in points)
    det = s4 * s2 - s3 * s3
    a = (t2 * s2 - s3 * t1) / det
    b = (s4 * t1 - s3 * t2) / det
    return a * size * size + b * size


# -- the run ------------------------------------------------------------------------------------


def run(command: str = "python -m benchmarks.bench_stream --write") -> str:
    texts = {label: document(size) for label, size in SIZES}
    expected = {label: orjson.loads(text) for label, text in texts.items()}
    parts = {label: chunks_of(text) for label, text in texts.items()}

    ours: list[tuple[str, Callable[[list[str]], Any]]] = [
        ("outform, parser only (snapshot every chunk)", outform_parser),
        (
            "outform, parser only (snapshot every chunk, read down to the item being written)",
            outform_parser_item,
        ),
        (
            "outform StreamParser, no validation (snapshot every chunk)",
            partial(outform_stream, validate=False),
        ),
        (
            "outform StreamParser + incremental validation (snapshot every chunk)",
            partial(outform_stream, validate=True),
        ),
        (
            "outform StreamParser + incremental validation (snapshot every 256 chars)",
            partial(outform_stream, validate=True, every=256),
        ),
    ]
    rows: list[list[str]] = []
    times: dict[str, dict[str, float]] = {name: {} for name, _ in ours}
    for name, fn in ours:
        for label, _ in SIZES:
            assert fn(parts[label]) == expected[label], name  # the last snapshot is the value
    for _ in range(ROUNDS):  # rounds far apart in time: a busy moment spoils one, not all
        for name, fn in ours:
            for label, _ in SIZES:
                took = measure(partial(fn, parts[label]))
                times[name][label] = min(times[name].get(label, took), took)
    for name, _ in ours:
        t = times[name]
        print(
            f"  {name}: " + ", ".join(fmt_seconds(t[label]) for label, _ in SIZES), file=sys.stderr
        )
        rows.append(
            [
                name,
                *(fmt_seconds(t[label]) for label, _ in SIZES),
                f"{t['34 KB'] / t['17 KB']:.2f}× / {t['68 KB'] / t['34 KB']:.2f}×",
            ]
        )

    for name, parse, wants_bytes in _peers():
        times[name] = {}
        points = []
        for label, _ in PEER_SIZES:
            pieces: list[Any] = [p.encode() for p in parts[label]] if wants_bytes else parts[label]
            times[name][label] = measure(partial(reparse, parse, pieces))
            points.append((len(texts[label]), times[name][label]))
            print(f"  {name} @ {label}: {fmt_seconds(times[name][label])}", file=sys.stderr)
        t = times[name]
        extrapolated = fit(points, len(texts["1 MB"]))
        rows.append(
            [
                name + " (re-parsing the text so far)",
                *(fmt_seconds(t[label]) for label, _ in PEER_SIZES),
                f"≈ {fmt_seconds(extrapolated)} *(extrapolated)*",
                f"{t['34 KB'] / t['17 KB']:.2f}× / {t['68 KB'] / t['34 KB']:.2f}×",
            ]
        )

    full = "outform StreamParser + incremental validation (snapshot every chunk)"
    peer = next((name for name in times if name.startswith("jiter")), full)
    batched = "outform StreamParser + incremental validation (snapshot every 256 chars)"
    one_mb = len(texts["1 MB"]) / len(texts["68 KB"])
    header = (
        "| parser (16-character chunks) | "
        + " | ".join(
            f"{label} ({len(texts[label]):,} chars, {len(parts[label]):,} chunks)"
            for label, _ in SIZES
        )
        + " | doubling 17→34 / 34→68 KB |"
    )
    lines = [
        "## Streaming",
        "",
        f"Command: `{command}` ({machine()}). Total time to parse",
        "one reply streamed in 16-character chunks, the value read after every chunk (or, in the",
        "batched row, every 256 characters). Peers re-parse the whole text received so far after",
        "each chunk, as every Python structured-output library does; their 1 MB cost is fitted",
        "(a·n² + b·n through the 17, 34 and 68 KB points), not measured. outform's incremental",
        "validation checks each member once as it completes, against the schema of",
        "`Catalogue` (a Pydantic model); the final full validation is not included (it runs once,",
        "through the pipeline, when the stream ends).",
        "",
        header,
        "|---|" + "---:|" * (len(SIZES) + 1),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        f"- outform with validation, a snapshot every chunk: {fmt_seconds(times[full]['17 KB'])}"
        f" at 17 KB, {fmt_seconds(times[full]['1 MB'])} at 1 MB; 1 MB is"
        f" {one_mb:.1f}× the length of 68 KB and cost"
        f" {times[full]['1 MB'] / times[full]['68 KB']:.1f}× as much (linear).",
        f"- Batched every 256 characters: {fmt_seconds(times[batched]['17 KB'])} at 17 KB,"
        f" {fmt_seconds(times[batched]['1 MB'])} at 1 MB"
        f" ({times[batched]['1 MB'] / times[batched]['68 KB']:.1f}× the 68 KB cost).",
        f"- jiter, the fastest peer, costs {times[peer]['17 KB'] / times[full]['17 KB']:.1f}×"
        " outform's every-chunk time at 17 KB and"
        f" {times[peer]['68 KB'] / times[full]['68 KB']:.0f}× at 68 KB; the gap grows with the"
        " length.",
    ]
    return "\n".join(lines)


# -- side by side with another source tree ------------------------------------------------------

PROBES: dict[str, str] = {
    "parser": "parser only, snapshot every chunk",
    "parser_item": "parser only, snapshot every chunk read down to the item being written",
    "stream": "StreamParser, no validation",
    "stream_validate": "StreamParser + incremental validation",
    "jiter": "jiter re-parsing the text so far (the same in both)",
}


def probe() -> dict[str, float]:
    """The 17 KB stream each way, in milliseconds of CPU time (the fastest of 5 runs): CPU
    time is less disturbed than wall time by the other processes of a shared machine."""
    parts = chunks_of(document(SIZES[0][1]))
    runs: dict[str, Callable[[], Any]] = {
        "parser": partial(outform_parser, parts),
        "parser_item": partial(outform_parser_item, parts),
        "stream": partial(outform_stream, parts, validate=False),
        "stream_validate": partial(outform_stream, parts, validate=True),
    }
    peers = [peer for peer in _peers() if peer[0].startswith("jiter")]
    if peers:
        runs["jiter"] = partial(reparse, peers[0][1], [p.encode() for p in parts])
    found = {}
    for name, fn in runs.items():
        fn()
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            fn()
            best = min(best, time.process_time() - start)
        found[name] = best * 1e3
    return found


def side_by_side(before: Path, pairs: int = 7) -> str:
    old, new = sides.alternate("benchmarks.bench_stream", before, pairs)
    labels = {key: label for key, label in PROBES.items() if key in old[0] and key in new[0]}
    body = table(
        ["17 KB in 16-character chunks", "before", "this tree", "this ÷ before"],
        sides.rows(old, new, labels, dict.fromkeys(labels, "{:.2f} ms")),
    )
    jiter = ""
    if "jiter" in labels:
        ratios = [
            statistics.median(run["jiter"] / run["parser"] for run in runs) for runs in (old, new)
        ]
        jiter = (
            f"\n\njiter's re-parse costs {ratios[0]:.1f}× the parser's time before and"
            f" {ratios[1]:.1f}× with this tree (medians over the runs)."
        )
    return (
        f"**Side by side with another source tree** (`--before SRC`): {pairs} child processes of"
        " each, alternating; CPU time, the fastest of 5 runs in each process; medians, and the"
        f" median of the per-pair ratios.\n\n{body}{jiter}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument("--before", type=Path, help="another outform src/ to measure side by side")
    parser.add_argument("--probe", action="store_true", help="print this tree's measures as JSON")
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe()))
        return
    command = "python -m benchmarks.bench_stream --write"
    markdown = run(command + (" --before SRC" if args.before is not None else ""))
    if args.before is not None:
        markdown += "\n\n" + side_by_side(args.before)
    print(markdown)
    if args.write:
        update_section("stream", markdown)


if __name__ == "__main__":
    main()
