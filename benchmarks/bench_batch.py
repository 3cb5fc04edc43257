"""Batch jobs at scale: 100,000 rows through a fake OpenAI Batch server on 127.0.0.1.

5% of replies are malformed JSON (JSON5, repaired at level full), 1% fail validation once
(re-asked in one follow-up round). `outform batch run` runs as a child process; it is run
clean, then killed with SIGKILL during submission and during a download and resumed with
`outform batch resume` in a new process: every output must be identical, with every row
once. Peak memory is each process's own (VmHWM, read by the process itself as it exits, or
just before it is killed): the OS's figure for a parent's children is the largest of all of
them, and a child forked from a large parent inherits the parent's mark. The parsing rate
is measured apart, in this process, from the first to the last result of each batch read.

    python -m benchmarks.bench_batch [--rows N] [--write]
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from benchmarks.report import machine, update_section

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
PER_BATCH = 25_000


class Model:
    """Every 20th reply JSON5 (repaired), every 100th invalid on its first ask."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()

    def __call__(self, custom_id: str, body: Mapping[str, Any]) -> str:
        n = int(custom_id[1:])
        self.asked[custom_id] += 1
        if n % 100 == 0 and self.asked[custom_id] == 1:
            return f'{{"name": "P{n}", "age": "unknown"}}'
        if n % 20 == 1:
            return f"{{'name': 'P{n}', 'age': {n},}}"  # JSON5: repaired
        return f'{{"name": "P{n}", "age": {n}}}'


# -- one process's peak memory ---------------------------------------------------------------


def peak_mb(pid: int | str = "self") -> float | None:
    """VmHWM of a live process (Linux), in MB."""
    try:
        with Path(f"/proc/{pid}/status").open(encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def child(argv: list[str]) -> int:
    """`outform` in this process, its peak memory written to argv[0] as it exits."""
    report = Path(argv[0])
    atexit.register(lambda: report.write_text(str(peak_mb() or "")))
    from outform.cli import main as outform

    return outform(argv[1:])


@dataclass
class Process:
    popen: subprocess.Popen[bytes]
    report: Path

    @classmethod
    def start(cls, folder: Path, name: str, args: list[str]) -> Process:
        report = folder / f"{name}.peak"
        env = {**os.environ, "OPENAI_API_KEY": "bench-key"}
        command = [sys.executable, "-m", "benchmarks.bench_batch", "--child", str(report), *args]
        stderr = (folder / f"{name}.err").open("wb")
        popen = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
        return cls(popen, report)

    def finish(self) -> float | None:
        if self.popen.wait() != 0:
            err = self.report.with_suffix(".err").read_text(errors="replace")
            raise SystemExit(f"exit {self.popen.returncode}\n{err[-2000:]}")
        text = self.report.read_text() if self.report.exists() else ""
        return float(text) if text else None

    def kill(self) -> float | None:
        peak = peak_mb(self.popen.pid)
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait()
        return peak


# -- the runs --------------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    rows: int
    seconds: float = 0.0
    peaks: dict[str, float | None] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    reasked: int = 0
    more_than_twice: int = 0
    fixed_in_one_round: bool = False
    out: Path | None = None


def _args(folder: Path, rows: Path, url: str, name: str) -> list[str]:
    schema = folder / "schema.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    return [
        "batch", "run", str(rows), "-m", "openai:gpt-5-mini", "-s", str(schema), "-p", "{text}",
        "-o", str(folder / f"{name}.jsonl"), "--base-url", url + "/v1", "--level", "full",
        "--max-requests", str(PER_BATCH), "--poll-interval", "0.05",
        "--manifest", str(folder / f"{name}.sqlite3"), "--json",
    ]  # fmt: skip


def job(folder: Path, rows: Path, count: int, name: str, kill: str | None = None) -> Run:
    """One job through the CLI, killed at the `kill` request and resumed, or clean."""
    from tests.batch.fakes import BatchFake

    slug = "-".join(name.replace(",", "").split())
    run = Run(name, count, out=folder / f"{slug}.jsonl")
    with BatchFake("openai", Model()) as fake:
        args = _args(folder, rows, fake.url, slug)
        start = time.perf_counter()
        if kill is None:
            run.peaks["run"] = Process.start(folder, slug, args).finish()
        else:
            fake.stall(kill)
            process = Process.start(folder, slug, args)
            if not fake.stalled.wait(600):
                raise SystemExit(f"{name}: the stall was never reached")
            run.peaks["killed run"] = process.kill()
            fake.release()
            manifest = folder / f"{slug}.sqlite3"
            resume = ["batch", "resume", _only_job(manifest), "--manifest", str(manifest), "--json"]
            run.peaks["resume"] = Process.start(folder, f"{slug}-resume", resume).finish()
        run.seconds = time.perf_counter() - start
        sent = Counter(fake.submitted.values())
    run.reasked, run.more_than_twice = sent[2], sum(n for k, n in sent.items() if k > 2)
    run.statuses, run.fixed_in_one_round = _check(run.out, count)
    return run


def _only_job(manifest: Path) -> str:
    from outform import batch

    store = batch.open_manifest(manifest)
    try:
        (record,) = store.jobs()
        return record.id
    finally:
        store.close()


def _check(out: Path | None, count: int) -> tuple[dict[str, int], bool]:
    """Every row once, in order, with one final status; the invalid ones fixed in round 1."""
    assert out is not None
    statuses: Counter[str] = Counter()
    fixed = True
    with out.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            row = orjson.loads(raw)
            assert row["id"] == f"r{number}", f"line {number}: {row['id']} (a duplicate or a gap)"
            statuses[row["status"]] += 1
            if number % 100 == 0:
                rounds = row.get("rounds") or []
                fixed &= row["status"] == "ok" and [r["round"] for r in rounds] == [0]
    assert sum(statuses.values()) == count, f"{count - sum(statuses.values())} missing"
    return dict(statuses), fixed


class PhaseTimer:
    """A Progress that times each phase: from its start to its last advance."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.rows: Counter[str] = Counter()
        self._since: dict[str, float] = {}

    def start(self, phase: str, total: int | None) -> None:
        self._since[phase] = time.perf_counter()

    def advance(self, phase: str, n: int = 1) -> None:
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._since.get(phase, now)
        self._since[phase] = now
        self.rows[phase] += n

    def counts(self, counts: Mapping[str, int]) -> None:
        return None

    def note(self, text: str) -> None:
        return None


def parsing(folder: Path, rows: Path, count: int, manifest: str) -> tuple[float, float, float]:
    """The job in this process: parsing rows/s, submitting rows/s, whole job rows/s."""
    from tests.batch.fakes import BatchFake

    from outform import batch

    timer = PhaseTimer()
    out = folder / "timed.jsonl"
    with BatchFake("openai", Model()) as fake:
        start = time.perf_counter()
        first = batch.submit(
            rows, "openai:gpt-5-mini", SCHEMA, prompt="{text}", output=out,
            base_url=fake.url + "/v1", api_key="bench-key", manifest=manifest,
            level="full", max_requests=PER_BATCH, poll_interval=0.05, progress=timer,
        )  # fmt: skip
        batch.resume(first.job, manifest=manifest, progress=timer)
        whole = time.perf_counter() - start
    _check(out, count)
    rate = {p: timer.rows[p] / timer.seconds[p] for p in ("parsing", "submitting")}
    return rate["parsing"], rate["submitting"], count / whole


def pipeline_rate(count: int) -> float:
    """The same replies through the job's pipeline alone, one after another: the floor of
    parsing's cost, measured in the same run (a ratio to it survives a busy machine)."""
    from outform.batch.job import JobSpec, prepare
    from outform.errors import OutputError
    from outform.format import ResponseFormat

    spec = JobSpec(
        model="openai:gpt-5-mini",
        format=ResponseFormat.json_schema(SCHEMA).to_dict(),
        input="rows.jsonl",
        level="full",
    )
    pipeline = prepare(spec, api_key="bench-key").pipeline
    model = Model()
    replies = [model(f"r{i}", {}) for i in range(1, count + 1)]
    start = time.perf_counter()
    for reply in replies:
        with contextlib.suppress(OutputError):  # the 1% invalid ones
            pipeline.run(reply)
    return count / (time.perf_counter() - start)


def postgres_rates(folder: Path, rows: Path, count: int) -> tuple[float, float, float] | None:
    """The same on a PostgreSQL manifest: a throwaway server (tests/postgres.py), when the
    machine has PostgreSQL's binaries."""
    from tests.postgres import Cluster, find_bindir

    bindir = find_bindir()
    if bindir is None:
        return None
    with Cluster(bindir) as cluster:
        return parsing(folder, rows, count, f"postgres:{cluster.dsn}")


_HEADER = (
    "| run | rows | rows/s (whole job) | peak MB per process | statuses | re-asked once "
    "| re-asked fixed in one round | sent more than twice | same output as clean |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def _mb(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


Rates = tuple[float, float, float]


def report(
    runs: list[Run], small: Run, *, rates: Rates, postgres: Rates | None, floor: float
) -> str:
    count = runs[0].rows
    reference = runs[0].out.read_bytes() if runs[0].out else b""
    rows = []
    for run in runs:
        same = run.out is not None and run.out.read_bytes() == reference
        alike = "—" if run is runs[0] or run.rows != runs[0].rows else ("yes" if same else "NO")
        peaks = ", ".join(f"{k} {_mb(v)}" for k, v in run.peaks.items())
        statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(run.statuses.items()))
        rows.append(
            f"| {run.name} | {run.rows:,} | {run.rows / run.seconds:,.0f} | {peaks} | {statuses} | "
            f"{run.reasked:,} | {'yes' if run.fixed_in_one_round else 'NO'} | "
            f"{run.more_than_twice} | {alike} |"
        )
    parse, submit, whole = rates
    on_postgres = (
        "not measured (no PostgreSQL binaries)"
        if postgres is None
        else f"parsing {postgres[0]:,.0f}, submitting {postgres[1]:,.0f}, whole job "
        f"{postgres[2]:,.0f} rows/s"
    )
    big, little = _mb(runs[0].peaks.get("run")), _mb(small.peaks.get("run"))
    return f"""## Batch jobs

Command: `python -m benchmarks.bench_batch --write` ({machine()}, {os.cpu_count()} CPUs;
provisional: one run on a shared machine, the fake server in the benchmark's process). A fake
OpenAI Batch server on 127.0.0.1 answers every request: 5% of replies are malformed JSON
(JSON5, repaired at `--level full`), 1% fail validation once. `outform batch run` runs as a
child process ({PER_BATCH:,} requests per batch); it is then run again, killed with SIGKILL
while a batch is being created (the batch exists at the provider, the client has not heard)
and half-way through a results download, and resumed with `outform batch resume` in a new
process. Peak memory is each process's own high-water mark (VmHWM).

{_HEADER}
{chr(10).join(rows)}

- Parsing alone (reading results, the pipeline, the output lines, the manifest writes),
  timed in-process from the first to the last result of each batch: **{parse:,.0f} rows/s**
  (goal ≥ 5,000). The same replies through the job's pipeline alone, in the same run:
  {floor:,.0f} rows/s; everything around the pipeline adds {floor / parse - 1:.0%} to it.
- Submitting (reading rows, building requests, writing and uploading the files):
  {submit:,.0f} rows/s. The whole job in-process: {whole:,.0f} rows/s. On a PostgreSQL
  manifest (a throwaway local server): {on_postgres}.
- Memory is flat in the number of rows: the clean run peaks at {big} MB for {count:,} rows
  and {little} MB for {small.rows:,} (goal < 300 MB). A batch's request file is uploaded
  from disk as it is read, so the size of a batch does not add to it either.
- Every row ends in exactly one final status, in input order, with 0 duplicates and 0
  missing; the re-asked rows are fixed in one follow-up round.
"""


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_batch")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    options = parser.parse_args(argv)
    count = options.rows
    with tempfile.TemporaryDirectory(prefix="outform-bench-batch-") as name:
        folder = Path(name)
        rows = _rows(folder / "rows.jsonl", count)
        runs = [
            job(folder, rows, count, "clean"),
            job(folder, rows, count, "killed in submission, resumed", "POST /v1/batches"),
            job(folder, rows, count, "killed in download, resumed", "GET /v1/files/out"),
        ]
        small_count = max(1, count // 5)
        small_rows = _rows(folder / "small.jsonl", small_count)
        small = job(folder, small_rows, small_count, "clean, a fifth of the rows")
        rates = parsing(folder, rows, count, str(folder / "timed.sqlite3"))
        postgres = postgres_rates(folder, rows, count)
        floor = pipeline_rate(count)
        text = report([*runs, small], small, rates=rates, postgres=postgres, floor=floor)
    print(text)
    if options.write:
        update_section("batch", text)
    return 0


def _rows(path: Path, count: int) -> Path:
    with path.open("wb") as handle:
        for i in range(1, count + 1):
            handle.write(orjson.dumps({"id": f"r{i}", "text": f"person number {i}"}) + b"\n")
    return path


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
