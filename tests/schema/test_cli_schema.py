"""`outform schema S.json --dialect D [--ledger] [--json]`."""

from __future__ import annotations

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
