"""Batch jobs at scale: 100,000 rows through a fake OpenAI Batch server on 127.0.0.1.

5% of replies are malformed JSON (repaired at level full), 1% fail validation once (re-asked
in one follow-up round). The job runs in a child process (`outform batch run`), whose peak
memory is read from the OS; then again, killed with SIGKILL during submission and during a
download, and resumed: the three outputs must be identical, with every row once.

    python -m benchmarks.bench_batch [--rows N] [--write]
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
from tests.batch.fakes import BatchFake

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


class Model:
    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __call__(self, custom_id: str, body: Mapping[str, Any]) -> str:
        n = int(custom_id[1:])
        first = custom_id not in self.asked
        self.asked.add(custom_id)
        if n % 100 == 0 and first:
            return f'{{"name": "P{n}", "age": "unknown"}}'
        if n % 20 == 1:
            return f"{{'name': 'P{n}', 'age': {n},}}"  # JSON5: repaired
        return f'{{"name": "P{n}", "age": {n}}}'


def _cli(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": "bench-key"}
    return subprocess.Popen(
        [sys.executable, "-m", "outform.cli", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _job(folder: Path, rows: Path, fake: BatchFake, name: str, kill: str | None) -> dict[str, Any]:
    out, manifest = folder / f"{name}.jsonl", folder / f"{name}.sqlite3"
    schema = folder / "schema.json"
    schema.write_bytes(orjson.dumps(SCHEMA))
    args = [
        "batch",
        "run",
        str(rows),
        "-m",
        "openai:gpt-5-mini",
        "-s",
        str(schema),
        "-p",
        "{text}",
        "-o",
        str(out),
        "--base-url",
        fake.url + "/v1",
        "--level",
        "full",
        "--max-requests",
        "25000",
        "--poll-interval",
        "0.05",
        "--manifest",
        str(manifest),
        "--json",
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    if kill is not None:
        fake.stall(kill)
        process = _cli(*args)
        fake.stalled.wait(600)
        process.send_signal(signal.SIGKILL)
        process.wait()
        fake.release()
        from outform import batch

        store = batch.open_manifest(manifest)
        (record,) = store.jobs()
        store.close()
        process = _cli("batch", "resume", record.id, "--manifest", str(manifest), "--json")
    else:
        process = _cli(*args)
    _, err = process.communicate()
    elapsed = time.perf_counter() - start
    if process.returncode != 0:
        raise SystemExit(f"{name}: exit {process.returncode}\n{err.decode()[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"name": name, "seconds": elapsed, "peak_kb": max(peak, before), "out": out}


def _check(out: Path, count: int) -> dict[str, int]:
    ids: set[str] = set()
    statuses: dict[str, int] = {}
    for line in out.read_bytes().splitlines():
        row = orjson.loads(line)
        assert row["id"] not in ids, f"duplicate {row['id']}"
        ids.add(row["id"])
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    assert len(ids) == count, f"{count - len(ids)} missing"
    return statuses


def main(argv: list[str]) -> int:
    count = int(argv[argv.index("--rows") + 1]) if "--rows" in argv else 100_000
    with tempfile.TemporaryDirectory(prefix="outform-bench-batch-") as name:
        folder = Path(name)
        rows = folder / "rows.jsonl"
        with rows.open("wb") as handle:
            for i in range(1, count + 1):
                handle.write(orjson.dumps({"id": f"r{i}", "text": f"person number {i}"}) + b"\n")
        results = []
        for run, kill in (
            ("clean", None),
            ("killed-in-submission", "POST /v1/batches"),
            ("killed-in-download", "GET /v1/files/out"),
        ):
            model = Model()
            with BatchFake("openai", model) as fake:
                result = _job(folder, rows, fake, run, kill)
                result["statuses"] = _check(result["out"], count)
                result["duplicates"] = sum(1 for n in fake.submitted.values() if n > 2)
                result["reasked"] = sum(1 for n in fake.submitted.values() if n == 2)
            results.append(result)
        reference = results[0]["out"].read_bytes()
        for result in results[1:]:
            result["same"] = result["out"].read_bytes() == reference
        lines = [
            f"| {r['name']} | {count:,} | {count / r['seconds']:,.0f} | "
            f"{r['peak_kb'] / 1024:,.0f} | {r['statuses']} | {r['reasked']:,} | "
            f"{r['duplicates']} | {r.get('same', '—')} |"
            for r in results
        ]
    table = "\n".join(
        [
            "| run | rows | rows/s (whole job) | peak MB (child) | statuses | re-asked once | "
            "sent > twice | same output |",
            "|---|---|---|---|---|---|---|---|",
            *lines,
        ]
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
