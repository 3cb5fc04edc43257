"""Found by a new-user trial of `outform batch`: a resumed job adopting another job's batch,
a key in a stored row, a row over `--max-bytes`, an output that cannot be written."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform import batch
from outform.batch.carriers import AnthropicCarrier
from outform.errors import BadRequestError, OutformError, UsageError
from tests.batch.conftest import Scripted, submit
from tests.batch.fakes import BatchFake, Error

KEY = "sk-trial-0123456789abcdef"


def _echo(custom_id: str, body: Mapping[str, Any]) -> str:
    """A reply naming the prompt it was asked (so that one job's answers are not another's)."""
    prompt = body["messages"][-1]["content"]
    text = prompt if isinstance(prompt, str) else prompt[0]["text"]
    return orjson.dumps({"name": text, "age": int(custom_id.lstrip("r"))}).decode()


def test_a_resumed_job_never_adopts_another_jobs_batch(
    rows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Message Batches carry no label: a batch is matched by size and time. Job A's batch
    was refused outright (HTTP 400); job B then ran the same rows; resuming A took B's batch
    and wrote B's answers as A's, exit 0. A refused creation now releases A's batch, and no
    batch another job of the manifest holds is ever adopted."""
    manifest = tmp_path / "m.sqlite3"
    with BatchFake("anthropic", _echo) as fake:
        submit_batch = AnthropicCarrier.submit

        def refused(self: AnthropicCarrier, *args: Any) -> str:
            raise BadRequestError("anthropic answered HTTP 400", provider="anthropic", status=400)

        monkeypatch.setattr(AnthropicCarrier, "submit", refused)
        with pytest.raises(BadRequestError):
            submit(
                rows,
                "anthropic:claude-sonnet-4-5",
                manifest,
                fake.url,
                prompt="A {text}",
                output=tmp_path / "a.jsonl",
            )
        (job_a,) = batch.open_manifest(manifest).jobs()
        assert not batch.open_manifest(manifest).batches(job_a.id, ["submitting"])
        monkeypatch.setattr(AnthropicCarrier, "submit", submit_batch)
        output_b = tmp_path / "b.jsonl"
        submit(
            rows,
            "anthropic:claude-sonnet-4-5",
            manifest,
            fake.url,
            prompt="B {text}",
            output=output_b,
        )
        done = batch.resume(job_a.id, manifest=manifest, api_key="k")
    assert done.done
    lines = [orjson.loads(line) for line in (tmp_path / "a.jsonl").read_bytes().splitlines()]
    assert lines and all(line["value"]["name"].startswith("A ") for line in lines)


def test_a_provider_error_quoting_the_key_is_not_stored(rows: Path, tmp_path: Path) -> None:
    def model(custom_id: str, body: Mapping[str, Any]) -> str | Error:
        if custom_id == "r2":
            return Error(400, f"Incorrect API key provided: {KEY}")
        return Scripted()(custom_id, body)

    manifest = tmp_path / "m.sqlite3"
    with BatchFake("openai", model) as fake:
        output = tmp_path / "out.jsonl"
        submit(rows, "openai:gpt-5-mini", manifest, fake.url + "/v1", api_key=KEY, output=output)
    assert "r2" in output.read_text() and KEY not in output.read_text()
    assert KEY.encode() not in manifest.read_bytes()


def test_a_row_over_max_bytes_is_refused_before_it_is_sent(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "r1", "text": "' + "x" * 3000 + '"}\n' * 1)
    with BatchFake("openai", Scripted()) as fake:
        with pytest.raises(UsageError, match="over the 1,024 bytes") as caught:
            submit(
                rows,
                "openai:gpt-5-mini",
                tmp_path / "m.sqlite3",
                fake.url + "/v1",
                max_bytes=1024,
                live=False,
            )
        assert not [r for r in fake.requests if "batches" in r.path or "files" in r.path]
    assert caught.value.where == "--max-bytes"


@pytest.mark.parametrize("where", ["a folder", "the input"])
def test_an_output_that_cannot_be_written_is_refused_before_anything_is_sent(
    rows: Path, tmp_path: Path, where: str
) -> None:
    output = tmp_path / "out" if where == "a folder" else rows
    output.mkdir(exist_ok=True) if where == "a folder" else None
    with BatchFake("openai", Scripted()) as fake:
        with pytest.raises(UsageError) as caught:
            submit(
                rows, "openai:gpt-5-mini", tmp_path / "m.sqlite3", fake.url + "/v1", output=output
            )
        assert fake.requests == []
    assert caught.value.where == "-o"
    assert batch.open_manifest(tmp_path / "m.sqlite3").jobs() == []


def test_the_changes_of_a_value_a_re_ask_gave_are_on_that_attempt() -> None:
    """They said attempt 1 whatever the attempt whose reply gave the value."""
    from outform.batch.outcome import Verdict, output_line
    from outform.parse.result import Change

    change = Change("/age", "semantic", "string_to_integer", '"3"', "3")
    verdict = Verdict("repaired", {"age": 3}, (change,))
    line = orjson.loads(output_line("r1", 1, verdict, attempts=2))
    assert [c["attempt"] for c in line["changes"]] == [2]


def test_a_base_url_holding_a_password_is_refused_before_it_is_stored(
    rows: Path, tmp_path: Path
) -> None:
    """The job's settings are stored in the manifest for resume (a trial found the URL's
    password there)."""
    with pytest.raises(UsageError, match="holds credentials") as caught:
        submit(
            rows, "openai:gpt-5-mini", tmp_path / "m.sqlite3", "http://u:pw-secret@127.0.0.1:9/v1"
        )
    assert "pw-secret" not in str(caught.value)
    assert (
        not (tmp_path / "m.sqlite3").exists()
        or b"pw-secret" not in (tmp_path / "m.sqlite3").read_bytes()
    )


class _Told:
    """A progress that keeps what it was told, in order."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def start(self, phase: str, total: int | None) -> None:
        self.said.append(f"start {phase}")

    def advance(self, phase: str, n: int = 1) -> None:
        return None

    def counts(self, counts: Mapping[str, int]) -> None:
        return None

    def note(self, text: str) -> None:
        self.said.append(text)


def test_the_job_id_is_told_before_anything_is_sent(rows: Path, tmp_path: Path) -> None:
    """Found by a new-user trial: `batch run` printed the job id only after the first
    submission pass, so a run stopped before it left the id to `batch status` to find."""
    told = _Told()
    with BatchFake("openai", Scripted()) as fake:
        status = submit(
            rows, "openai:gpt-5-mini", tmp_path / "m.sqlite3", fake.url + "/v1", progress=told
        )
    first_sent = next(i for i, said in enumerate(told.said) if said.startswith("start submit"))
    recorded = told.said.index(
        f"job {status.job} recorded: `outform batch status {status.job}` follows it"
    )
    assert recorded < first_sent


def test_a_batch_whose_creation_never_reached_the_provider_is_not_looked_for(
    rows: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a new-user trial: job Y's creation failed to connect (nothing listening),
    its batch stayed `submitting`; job X of another manifest then made a batch of the same
    size, and resuming Y adopted it (X's answers written as Y's, exit 0). A creation that no
    attempt could deliver is released, as one refused outright is."""
    from outform.errors import ConnectionFailedError

    manifest_y, manifest_x = tmp_path / "y.sqlite3", tmp_path / "x.sqlite3"
    with BatchFake("anthropic", _echo) as fake:
        submit_batch = AnthropicCarrier.submit

        def unreachable(self: AnthropicCarrier, *args: Any) -> str:
            raise ConnectionFailedError("ConnectError", provider="anthropic", reached=False)

        monkeypatch.setattr(AnthropicCarrier, "submit", unreachable)
        with pytest.raises(ConnectionFailedError):
            submit(rows, "anthropic:claude-sonnet-4-5", manifest_y, fake.url, prompt="Y {text}",
                   output=tmp_path / "y.jsonl")  # fmt: skip
        (job_y,) = batch.open_manifest(manifest_y).jobs()
        assert not batch.open_manifest(manifest_y).batches(job_y.id, ["submitting"])
        monkeypatch.setattr(AnthropicCarrier, "submit", submit_batch)
        submit(rows, "anthropic:claude-sonnet-4-5", manifest_x, fake.url, prompt="X {text}",
               output=tmp_path / "x.jsonl")  # fmt: skip
        done = batch.resume(job_y.id, manifest=manifest_y, api_key="k")
    assert done.done
    lines = [orjson.loads(line) for line in (tmp_path / "y.jsonl").read_bytes().splitlines()]
    assert lines and all(line["value"]["name"].startswith("Y ") for line in lines)


@pytest.mark.parametrize(
    ("options", "where", "phrase"),
    [
        ({"output": Path("/dev/null")}, "-o", "not a regular file"),
        ({"poll_interval": -1.0}, "--poll-interval", "above 0, at most 86400"),
        ({"poll_interval": float("nan")}, "--poll-interval", "above 0, at most 86400"),
        ({"poll_interval": float("inf")}, "--poll-interval", "above 0, at most 86400"),
        ({"prompt": "  "}, "--prompt", "template is empty"),
        ({"prompt": "{text.upper}"}, "--prompt", "reaches into a field ({text.upper})"),
        ({"base_url": "http://[::1"}, "--base-url", "not a valid URL"),
    ],
)
def test_a_setting_that_would_break_a_paid_job_is_refused_before_anything_is_made(
    rows: Path, tmp_path: Path, options: dict[str, Any], where: str, phrase: str
) -> None:
    """Found by a new-user trial: `-o /dev/null` (as root) replaced the device with the
    output; a negative or NaN poll interval crashed a paid job while it waited; an empty
    prompt sent every row as an empty message; `{text.upper}` sent Python's text of a method;
    a malformed base URL left a new manifest behind."""
    manifest = tmp_path / "m.sqlite3"
    settings: dict[str, Any] = {"prompt": "{text}", "api_key": "k", **options}
    with pytest.raises(UsageError) as caught:
        batch.submit(rows, "openai:gpt-5-mini", {"type": "object"}, manifest=manifest, **settings)
    assert caught.value.where == where and phrase in caught.value.what
    assert not manifest.exists()


def test_a_re_ask_grown_past_max_bytes_ends_its_row_failed_and_the_job_goes_on(
    tmp_path: Path,
) -> None:
    """Found by a new-user trial: a re-ask longer than --max-bytes stopped the job for good
    (every resume failed the same way, the paid answers never written). The row ends failed,
    saying why; the other rows finish."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(f'{{"id": "r{i}", "text": "{"x" * 600}"}}\n' for i in range(1, 4)))

    def wordy(custom_id: str, body: Mapping[str, Any]) -> str:
        if custom_id == "r1":
            return '{"name": "' + "y" * 600 + '", "age": "unknown"}'  # invalid, and long
        return '{"name": "P", "age": 3}'

    output = tmp_path / "out.jsonl"
    with BatchFake("openai", wordy) as fake:
        status = submit(rows, "openai:gpt-5-mini", tmp_path / "m.sqlite3", fake.url + "/v1",
                        max_bytes=1500, live=False, output=output)  # fmt: skip
    assert status.done
    lines = {line["id"]: line for line in map(orjson.loads, output.read_bytes().splitlines())}
    assert lines["r1"]["status"] == "failed" and "--max-bytes" in lines["r1"]["error"]
    assert lines["r2"]["status"] == lines["r3"]["status"] == "ok"


def test_resuming_a_finished_job_writes_its_output_again_when_it_is_gone(
    rows: Path, tmp_path: Path
) -> None:
    """Found by a new-user trial: `batch resume` of a done job whose output was deleted said
    `written: out.jsonl` about a file that was not there."""
    manifest, output = tmp_path / "m.sqlite3", tmp_path / "out.jsonl"
    with BatchFake("openai", Scripted()) as fake:
        done = submit(rows, "openai:gpt-5-mini", manifest, fake.url + "/v1", output=output)
        written = output.read_bytes()
        output.unlink()
        again = batch.resume(done.job, manifest=manifest, api_key="k")
    assert again.done and output.read_bytes() == written


def test_a_reading_command_never_makes_a_manifest_of_another_database(tmp_path: Path) -> None:
    """Found by a new-user trial: `batch status --manifest other.db` added outform's tables to
    any SQLite file and listed no job."""
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (a)")
    with pytest.raises(OutformError, match="without outform's batch tables"):
        batch.jobs(manifest=other)
    with sqlite3.connect(other) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
