"""Bad input is reported before anything is submitted: the line, what is wrong, the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from outform import batch
from outform.errors import UsageError
from tests.batch.conftest import Scripted, submit
from tests.batch.fakes import BatchFake


def _submit(fake: BatchFake, rows: Path, tmp_path: Path, **options: object) -> None:
    model = str(options.pop("model", "openai:gpt-5-mini"))
    submit(rows, model, tmp_path / "m.sqlite3", fake.url + "/v1", **{"prompt": None, **options})


@pytest.mark.parametrize(
    ("lines", "options", "what", "where"),
    [
        (
            ['{"text": "a"}', '{"text": "b"', '{"text": "c"}'],
            {"prompt": "{text}"},
            "not valid JSON",
            "line 2",
        ),
        (['{"text": "a"}', "", "[1, 2]"], {"prompt": "{text}"}, "not an object", "line 3"),
        (['{"text": "a"}', '{"body": "b"}'], {"prompt": "Read {text}"}, "no 'text'", "line 2"),
        (['{"id": "a b", "prompt": "x"}'], {}, "cannot be a custom id", "line 1"),
        (
            ['{"id": 1, "prompt": "x"}', '{"prompt": "y"}', '{"id": 1, "prompt": "z"}'],
            {},
            "more than once",
            "lines 1, 3",
        ),
        (['{"prompt": "x"}', '{"other": "y"}'], {}, "has no prompt", "line 2"),
        (['{"messages": [{"role": "robot", "content": "x"}]}'], {}, "cannot be read", "line 1"),
    ],
)
def test_a_bad_row_stops_the_job_before_any_request(
    lines: list[str], options: dict[str, object], what: str, where: str, tmp_path: Path
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(lines) + "\n")
    with BatchFake("openai", Scripted()) as fake:
        with pytest.raises(UsageError) as caught:
            _submit(fake, rows, tmp_path, **options)
        assert fake.requests == []
    assert what in caught.value.what
    assert where in (caught.value.where or "")
    assert batch.open_manifest(tmp_path / "m.sqlite3").jobs() == []  # nothing recorded


def test_an_unknown_model_or_a_bad_template_is_named(rows: Path, tmp_path: Path) -> None:
    with BatchFake("openai", Scripted()) as fake:
        with pytest.raises(UsageError, match="unknown provider"):
            _submit(fake, rows, tmp_path, model="nowhere:model", prompt="{text}")
        with pytest.raises(UsageError, match="positional field"):
            _submit(fake, rows, tmp_path, prompt="{} {text}")
        assert fake.requests == []


def test_a_changed_input_file_is_refused_on_resume(rows: Path, tmp_path: Path) -> None:
    with BatchFake("openai", Scripted(), polls=5) as fake:
        job = submit(rows, "openai:gpt-5-mini", tmp_path / "m.sqlite3", fake.url + "/v1")
        rows.write_text(rows.read_text() + '{"text": "one more"}\n')
        with pytest.raises(UsageError, match="input file changed"):
            batch.resume(job.job, manifest=tmp_path / "m.sqlite3", api_key="k")
