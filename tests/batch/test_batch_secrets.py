"""No secret a job sends is written: not in OUT.jsonl, not in the manifest.

A new-user trial's model echoed the API key in a reply that failed validation: `generate`
printed `***` for it, but `outform batch run` stored it in plain text in the row's line
(`hint.violations[].found`, `hint.message`, `reply`, `rounds[].detail`), in OUT.jsonl and in
the manifest, on the live path and through the batch APIs. The rule: the job's key is masked
(`***`, as generate() masks it) in everything the job writes of a reply, whether the reply is
valid or not, on every path; the re-ask shows the model `***` too. Checked on the bytes of
the files, so that no column (the reply and hint kept for the next round included) is missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.batch.conftest import submit, write_rows
from tests.batch.fakes import BatchFake

KEY = "sk-echoed-SECRET-0123456789abcdef"


def echoing(custom_id: str, body: Mapping[str, Any]) -> str:
    """r1 echoes the key in a reply that fails validation (every time it is asked), r2 in a
    valid value; r3 is an ordinary answer."""
    if custom_id == "r1":
        return orjson.dumps({"name": KEY, "age": f"not a number {KEY}"}).decode()
    if custom_id == "r2":
        return orjson.dumps({"name": KEY, "age": 2}).decode()
    return '{"name": "Ada", "age": 3}'


PATHS = {
    "live": ("live", "openai:gpt-4o", "/v1", {"live": True}),
    "openai batch": ("openai", "openai:gpt-4o", "/v1", {}),
    "anthropic batch": ("anthropic", "anthropic:claude-sonnet-4-5", "", {}),
}


def written(tmp_path: Path) -> bytes:
    """Every byte the job wrote: OUT.jsonl and the manifest with its SQLite companions."""
    files = [tmp_path / "out.jsonl", *tmp_path.glob("m.sqlite3*")]
    return b"".join(path.read_bytes() for path in files if path.is_file())


@pytest.mark.parametrize("path", list(PATHS))
def test_a_key_the_model_echoes_is_masked_in_everything_the_job_writes(
    path: str, tmp_path: Path
) -> None:
    api, model, prefix, options = PATHS[path]
    rows = write_rows(tmp_path / "rows.jsonl", 3)
    with BatchFake(api, echoing) as fake:
        status = submit(
            rows,
            model,
            tmp_path / "m.sqlite3",
            fake.url + prefix,
            api_key=KEY,
            output=tmp_path / "out.jsonl",
            rounds=1,
            **options,
        )
        sent = [r.body for r in fake.requests]
    assert status.done
    assert KEY.encode() not in written(tmp_path)

    r1, r2, r3 = map(orjson.loads, (tmp_path / "out.jsonl").read_bytes().splitlines())
    # The failed row keeps what it says, with `***` for the key.
    assert r1["status"] == "failed"
    assert "***" in r1["reply"] and "***" in r1["hint"]["message"]
    assert any("***" in v["found"] for v in r1["hint"]["violations"])
    assert "***" in r1["rounds"][0]["detail"]
    # A valid value is masked as well: OUT.jsonl is a file like any other.
    assert r2["status"] == "ok" and r2["value"] == {"name": "***", "age": 2}
    assert r3["value"] == {"name": "Ada", "age": 3}
    # The re-ask of r1 quoted its reply masked: no request body holds the key.
    assert all(KEY.encode() not in body for body in sent)
