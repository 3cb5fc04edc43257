"""`outform parse`: exit codes 0 valid, 1 invalid, 2 misuse; the value on stdout, the rest on
stderr, never a traceback."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import outform.config
from outform.cli import main
from outform.parse import clear_cache

CONSOLE_SCRIPT = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "outform"
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["a"],
}


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test runs in an empty directory holding schema.json, with no config in effect."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OUTFORM_CONFIG", raising=False)
    monkeypatch.delenv("OUTFORM_DEBUG", raising=False)
    (tmp_path / "schema.json").write_bytes(orjson.dumps(SCHEMA))
    outform.config.reload()
    clear_cache()
    yield tmp_path
    monkeypatch.undo()
    outform.config.reload()
    clear_cache()


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = err
        self.err_text = " ".join(err.split())
        """stderr with line wrapping undone, for phrase checks."""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    code = main(["parse", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return Run(code, captured.out, captured.err)


def reply(path: Path, text: str | bytes, name: str = "reply.txt") -> str:
    target = path / name
    target.write_bytes(text.encode() if isinstance(text, str) else text)
    return str(target)


# -- exit 0 ---------------------------------------------------------------------------------


def test_a_valid_reply_exits_0_and_prints_the_value(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": 1}'), "--schema", "schema.json")
    assert result.code == 0
    assert orjson.loads(result.out) == {"a": 1}
    assert "valid as sent: nothing changed" in result.err


def test_a_repaired_reply_exits_0_and_lists_the_changes_on_stderr(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, 'Sure: {"a": "12"}'), "-s", "schema.json")
    assert result.code == 0
    assert orjson.loads(result.out) == {"a": 12}
    assert "What outform changed" in result.err
    assert "extract_from_prose" in result.err
    assert "string_to_integer" in result.err


def test_level_full_repairs_malformed_json(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    path = reply(workdir, '{"a": 1,}')
    assert run(capsys, path, "-s", "schema.json").code == 1
    result = run(capsys, path, "-s", "schema.json", "--level", "full")
    assert (result.code, orjson.loads(result.out)) == (0, {"a": 1})


def test_the_reply_is_read_from_stdin_with_a_dash(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"a": "7"}')))
    result = run(capsys, "-", "-s", "schema.json")
    assert (result.code, orjson.loads(result.out)) == (0, {"a": 7})


def test_json_output_has_ok_data_changes_and_hint(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": "12"}'), "-s", "schema.json", "--json")
    assert result.code == 0
    data = orjson.loads(result.out)
    assert {"ok", "data", "changes", "hint"} <= set(data)
    assert (data["ok"], data["data"], data["hint"]) == (True, {"a": 12}, None)
    assert [c["transform"] for c in data["changes"]] == ["string_to_integer"]


def test_json_output_of_an_invalid_reply_still_parses_with_the_hint(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": "x"}'), "-s", "schema.json", "--json")
    assert result.code == 1
    data = orjson.loads(result.out)
    assert data["ok"] is False
    assert data["hint"]["violations"][0]["path"] == "/a"


def test_a_value_with_square_brackets_is_printed_as_it_is(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    value = {"a": 1, "note": "[bold]x[/bold] and [/link]"}
    result = run(capsys, reply(workdir, orjson.dumps(value)), "-s", "schema.json")
    assert result.code == 0
    assert orjson.loads(result.out) == value


def test_a_change_showing_square_brackets_is_listed_without_failing(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, 'Here: {"a": "1", "note": "[/x]"}'), "-s", "schema.json")
    assert result.code == 0
    assert orjson.loads(result.out) == {"a": 1, "note": "[/x]"}


# -- --type ---------------------------------------------------------------------------------


def test_a_type_is_imported_from_the_working_directory(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"cli_models_{workdir.name}"
    (workdir / f"{module}.py").write_text(
        "from pydantic import BaseModel\n\n\nclass Invoice(BaseModel):\n    total: int\n"
    )
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    try:
        result = run(capsys, reply(workdir, '{"total": "1,200"}'), "--type", f"{module}:Invoice")
    finally:
        sys.modules.pop(module, None)
    assert (result.code, orjson.loads(result.out)) == (0, {"total": 1200})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "--type must look like module:Name"),
        ("surely_not_a_module_xyz:Thing", "cannot import module 'surely_not_a_module_xyz'"),
        ("json:NoSuchThing", "module 'json' has no attribute 'NoSuchThing'"),
    ],
)
def test_a_type_that_cannot_be_found_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], workdir: Path, spec: str, message: str
) -> None:
    result = run(capsys, reply(workdir, "{}"), "--type", spec)
    assert result.code == 2
    assert message in result.err_text


# -- exit 1 ---------------------------------------------------------------------------------


def test_an_invalid_reply_exits_1_with_the_hint_on_stderr(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": "x"}'), "-s", "schema.json")
    assert result.code == 1
    assert result.out == ""
    assert 'at a: expected integer, found string "x"' in result.err_text
    assert "Reply again with only the corrected JSON." in result.err_text


def test_a_binary_reply_exits_1_saying_it_is_not_text(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, b"\xff\xfe{}"), "-s", "schema.json")
    assert result.code == 1
    assert "not UTF-8 text" in result.err_text


# -- --shadow -------------------------------------------------------------------------------


def test_shadow_mode_prints_the_reply_as_sent_and_what_would_change(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": "12"}'), "-s", "schema.json", "--shadow")
    assert result.code == 1
    assert orjson.loads(result.out) == {"a": "12"}
    assert "What would change (shadow mode)" in result.err
    assert "string_to_integer" in result.err


def test_shadow_mode_exits_0_for_a_reply_valid_as_sent(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": 12}'), "-s", "schema.json", "--shadow", "--json")
    assert result.code == 0
    data = orjson.loads(result.out)
    assert (data["shadow"], data["ok"], data["would_be"]) == (True, True, {"a": 12})


# -- exit 2 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --schema and --type"),
        (
            ["-s", "schema.json", "-t", "json:JSONDecoder"],
            "give exactly one of --schema and --type",
        ),
        (["-s", "schema.json", "--level", "max"], "unknown level 'max'"),
        (["-s", "missing.json"], "cannot read the schema file"),
        (["-s", "schema.json", "--frobnicate"], "No such option"),
    ],
)
def test_misuse_exits_2_with_a_message(
    capsys: pytest.CaptureFixture[str], workdir: Path, args: list[str], message: str
) -> None:
    result = run(capsys, reply(workdir, '{"a": 1}'), *args)
    assert result.code == 2
    assert message in result.err_text


def test_a_missing_reply_file_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    result = run(capsys, "no-such-reply.txt", "-s", "schema.json")
    assert result.code == 2
    assert "cannot read the reply file" in result.err_text
    assert "where: no-such-reply.txt" in result.err_text


def test_a_schema_file_that_is_not_json_exits_2_naming_line_and_column(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "broken.json").write_text('{\n  "type": objec\n}')
    result = run(capsys, reply(workdir, "{}"), "-s", "broken.json")
    assert result.code == 2
    assert "the schema file is not valid JSON" in result.err_text
    assert "line 2" in result.err_text


def test_a_schema_file_that_is_not_json_schema_exits_2_naming_the_keyword(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "bad.json").write_text('{"type": "objectx"}')
    result = run(capsys, reply(workdir, "{}"), "-s", "bad.json")
    assert result.code == 2
    assert "not a valid JSON Schema" in result.err_text
    assert "schema at /type" in result.err_text


def test_a_broken_config_file_exits_2_naming_it(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "outform.toml").write_text('[parse]\nlevel = "max"\n')
    with pytest.raises(outform.ConfigError):  # forget the settings read before the file existed
        outform.config.reload()
    result = run(capsys, reply(workdir, "{}"), "-s", "schema.json")
    assert result.code == 2
    assert "bad value 'max' for parse.level" in result.err_text


# -- the installed console script -----------------------------------------------------------


def console(workdir: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    env: dict[str, Any] = {k: v for k, v in os.environ.items() if not k.startswith("OUTFORM_")}
    return subprocess.run(
        [str(CONSOLE_SCRIPT), "parse", *args],
        cwd=workdir,
        env=env,
        input=stdin.decode(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_console_script_exits_0_for_a_valid_reply_from_stdin(workdir: Path) -> None:
    done = console(workdir, "-", "--schema", "schema.json", "--json", stdin=b'Sure: {"a": "3"}')
    assert done.returncode == 0
    data = orjson.loads(done.stdout)
    assert (data["ok"], data["data"]) == (True, {"a": 3})
    assert "Traceback" not in done.stderr


def test_the_console_script_exits_1_with_the_hint_for_an_invalid_reply(workdir: Path) -> None:
    done = console(workdir, reply(workdir, '{"a": "x"}'), "--schema", "schema.json")
    assert done.returncode == 1
    assert "expected integer" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["reply.txt"],
        ["reply.txt", "--schema", "nope.json"],
        ["reply.txt", "--schema", "schema.json", "--level", "max"],
        ["reply.txt", "--schema", "schema.json", "--unknown"],
    ],
)
def test_the_console_script_exits_2_for_misuse_without_a_traceback(
    workdir: Path, args: list[str]
) -> None:
    reply(workdir, '{"a": 1}')
    done = console(workdir, *args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip()


# -- --stream -------------------------------------------------------------------------------


def test_stream_prints_growing_snapshots_then_the_validated_value(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    text = '{"a": "12", "note": "a longer note that arrives in several chunks"}'
    result = run(capsys, reply(workdir, text), "-s", "schema.json", "--stream", "--chunk-size", "8")
    assert result.code == 0
    lines = result.out.strip().splitlines()
    snapshots = [
        orjson.loads(line) for line in lines if line.startswith("{") and line.endswith("}")
    ]
    notes = [s.get("note", "") for s in snapshots if isinstance(s, dict)]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(notes))
    assert orjson.loads("\n".join(lines[len(snapshots) :])) == {
        "a": 12,
        "note": "a longer note that arrives in several chunks",
    }
    assert "snapshot(s)" in result.err


def test_stream_stops_as_soon_as_the_reply_cannot_be_valid(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    text = '{"a": "twelve", "note": "' + "x" * 500 + '"}'
    result = run(capsys, reply(workdir, text), "-s", "schema.json", "--stream")
    assert result.code == 1
    assert "stream stopped" in result.err_text
    assert "character" in result.err_text
