"""`outform health`: the same report as the library, as tables, JSON or CSV, to a file or
standard output; usage errors exit 2 without a traceback."""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

import orjson
import pytest

from outform.cli import EXIT_OK, EXIT_USAGE, main
from outform.trace import Batch
from outform.trace.sqlite_store import SqliteTraceStore
from tests.trace.runs import RunSpec, run_events


@pytest.fixture
def store_spec(tmp_path: Path) -> str:
    path = tmp_path / "trace.sqlite"
    store = SqliteTraceStore(path)
    store.open()
    now = time.time()
    events = []
    for n in range(6):
        changes = (("extract", "strip_fence", ""),) if n % 2 else ()
        events += run_events(RunSpec(step="triage", changes=changes), now - 600 + n)
    store.write(Batch(events, time=now))
    store.close()
    return f"sqlite:{path}"


def health(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["health", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_tables_by_default(capsys: pytest.CaptureFixture[str], store_spec: str) -> None:
    code, out, _ = health(capsys, "--store", store_spec, "--since-hours", "1")
    assert code == EXIT_OK
    assert "Steps by interventions per 100 runs" in out and "triage" in out
    assert "strip_fence" in out and "Recommendations" in out


def test_json_to_a_file(
    capsys: pytest.CaptureFixture[str], store_spec: str, tmp_path: Path
) -> None:
    target = tmp_path / "report.json"
    code, out, _ = health(capsys, "--store", store_spec, "--json", "--output", str(target))
    assert code == EXIT_OK and out == ""
    data = orjson.loads(target.read_bytes())
    assert data["version"] == 1 and data["generated_at"].endswith("Z")
    assert data["totals"]["runs"] == 6 and data["totals"]["interventions"] == 3
    assert data["top_steps"][0]["per_100_runs"] == 50.0


def test_csv_blocks_one_per_table(capsys: pytest.CaptureFixture[str], store_spec: str) -> None:
    code, out, _ = health(capsys, "--store", store_spec, "--csv", "--step", "triage")
    assert code == EXIT_OK
    rows = list(csv.reader(io.StringIO(out)))
    headers = [r for r in rows if r and r[0] == "table"]
    assert ["table", "stage", "transform", "count", "share", "per_100_runs"] in headers
    assert ["top_transforms", "extract", "strip_fence", "3", "1.0", "50.0"] in rows
    assert ["totals", "runs", "6"] in rows


def test_an_empty_store_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    SqliteTraceStore(tmp_path / "empty.sqlite").open()
    code, out, _ = health(capsys, "--store", f"sqlite:{tmp_path / 'empty.sqlite'}")
    assert code == EXIT_OK and "no runs recorded in this window" in out


@pytest.mark.parametrize("command", ["health", "dashboard"])
def test_a_store_that_does_not_exist_is_an_error_and_is_not_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "typo" / "dir" / "x.db"
    code = main([command, "--store", f"sqlite:{missing}"])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert f"no trace store at {missing}" in err and "where: --store" in err
    assert "fix:" in err and "Traceback" not in err
    assert not (tmp_path / "typo").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "--csv"], "--json and --csv exclude each other"),
        (["--since-hours", "0"], "--since-hours must be more than 0"),
        (["--store", "mysql://x"], "unknown trace store"),
        (["--json", "--output", "/nonexistent/dir/r.json"], "cannot write the report"),
    ],
)
def test_usage_errors_exit_2_with_a_message(
    capsys: pytest.CaptureFixture[str], store_spec: str, args: list[str], message: str
) -> None:
    code, _, err = health(capsys, "--store", store_spec, *args)
    assert code == EXIT_USAGE and message in err and "Traceback" not in err
