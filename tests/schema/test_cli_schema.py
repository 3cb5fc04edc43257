"""`outform schema S.json --dialect D [--ledger] [--json]`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import orjson
import pytest

from outform.cli import EXIT_OK, EXIT_USAGE, main


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_bytes(
        orjson.dumps({"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}})
    )
    return path


def test_prints_the_translated_schema(
    schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", str(schema_file), "--dialect", "openai_strict"]) == EXIT_OK
    out, err = capsys.readouterr()
    assert orjson.loads(out)["additionalProperties"] is False
    assert "1 checked locally" in err


def test_ledger_table(schema_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", str(schema_file), "--dialect", "gemini", "--ledger"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "Constraint ledger (gemini)" in err
    assert "maxLength" in err and "checked_locally" in err


def test_json_output(schema_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", str(schema_file), "-d", "bedrock", "--json"]) == EXIT_OK
    data = orjson.loads(capsys.readouterr().out)
    assert data["dialect"] == "bedrock"
    assert data["counts"] == {"enforced": 3, "checked_locally": 1, "dropped": 0}
    assert {"path": "/properties/name", "keyword": "maxLength"}.items() <= next(
        e for e in data["ledger"] if e["keyword"] == "maxLength"
    ).items()


def test_unknown_dialect_and_refused_schema_exit_2(
    schema_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", str(schema_file), "--dialect", "nope"]) == EXIT_USAGE
    assert "openai_strict" in capsys.readouterr().err
    recursive = tmp_path / "r.json"
    recursive.write_bytes(orjson.dumps({"type": "object", "properties": {"n": {"$ref": "#"}}}))
    assert main(["schema", str(recursive), "--dialect", "anthropic"]) == EXIT_USAGE
    assert "recursive" in capsys.readouterr().err


@pytest.mark.parametrize(("prefix", "dialect"), [("llamacpp", "llama_cpp"), ("sglang", "vllm")])
def test_a_model_prefix_is_accepted_as_a_dialect(
    schema_file: Path, capsys: pytest.CaptureFixture[str], prefix: str, dialect: str
) -> None:
    assert main(["schema", str(schema_file), "--dialect", prefix]) == EXIT_OK
    assert capsys.readouterr().err.startswith(f"{dialect}: ")


def test_a_provider_without_a_schema_field_says_so(
    schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", str(schema_file), "--dialect", "deepseek"]) == EXIT_USAGE
    assert "deepseek takes no schema on the wire" in capsys.readouterr().err


def stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


BIG = 2**70 + 1  # more digits than a float holds, and than orjson reads


def test_a_dash_reads_the_schema_from_standard_input_digit_for_digit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = b'{"type": "object", "properties": {"n": {"type": "integer", "maximum": %d}}}' % BIG
    stdin(monkeypatch, schema)
    assert main(["schema", "-", "--dialect", "openai_strict"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f'"maximum": {BIG}' in out


def test_a_schema_on_standard_input_is_named_so_in_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin(monkeypatch, b'{"type": ')
    assert main(["schema", "-", "--dialect", "gemini"]) == EXIT_USAGE
    assert "where: standard input, line 1" in capsys.readouterr().err


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_true_schema_is_any_json_value_and_false_is_refused(
    source: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def run(text: bytes) -> int:
        if source == "stdin":
            stdin(monkeypatch, text)
            return main(["schema", "-", "--dialect", "gemini"])
        path = tmp_path / "s.json"
        path.write_bytes(text)
        return main(["schema", str(path), "--dialect", "gemini"])

    assert run(b"true") == EXIT_OK
    assert orjson.loads(capsys.readouterr().out) == {}
    assert run(b"false") == EXIT_USAGE
    assert "the schema is false: it accepts no value" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("schema", "place"),
    [
        (b'{"$ref": "#Anchor"}', ""),  # the compiler names the schema as a whole
        (b'{"$ref": "#/$defs/Nope"}', " at /$ref"),  # the check names the $ref's pointer
    ],
)
def test_a_schema_error_is_placed_in_the_file_not_at_a_flag_the_command_lacks(
    schema: bytes, place: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The library names its argument (`schema`), which other commands take as `--schema`:
    the `schema` command, which takes FILE, said `where: --schema`."""
    path = tmp_path / "s.json"
    path.write_bytes(schema)
    assert main(["schema", str(path), "--dialect", "openai"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"where: {path}{place}\n" in err
    assert "--schema" not in err


def test_the_ledger_off_a_terminal_is_plain_lines(
    schema_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the changes are: a box table written to a file or a pipe was some 6,000 rows of
    borders for a large schema."""
    assert main(["schema", str(schema_file), "--dialect", "gemini", "--ledger"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "Constraint ledger (gemini):\n" in err
    assert not any(border in err for border in "┏┃│━─")
    assert any(
        line.startswith("  ") and "maxLength  checked_locally  " in line
        for line in err.splitlines()
    )
