"""What a new user's first hour showed: each case the rule that fixed it (docs/cli.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import typer.main

from outform.cli import EXIT_PROVIDER, EXIT_USAGE, main
from outform.cli.app import app
from outform.errors import UsageError
from tests.test_cli import SCHEMA, isolated

ROW = {"id": "r1", "text": "Ada, 36"}


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from isolated(tmp_path, monkeypatch, {"schema.json": SCHEMA}, "OPENAI_API_KEY")


def outcome(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, " ".join(err.split())


# -- reading commands never create what they read --------------------------------------------


@pytest.mark.parametrize("args", [["batch", "status"], ["batch", "status", "job-1"]])
def test_batch_status_in_an_empty_directory_is_an_error_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], workdir: Path, args: list[str]
) -> None:
    code, err = outcome(capsys, *args)
    assert code == EXIT_USAGE
    assert "no batch manifest at .outform/batch.sqlite3" in err and "--manifest" in err
    assert not (workdir / ".outform").exists()


# -- config show: every section a call reads --------------------------------------------------


def test_config_show_reports_what_parse_section_sets(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "outform.toml").write_text('[parse]\nlevel = "full"\nmax_chars = 20\n')
    from outform.config import reload

    reload()
    assert main(["config", "show", "--json"]) == 0
    shown = orjson.loads(capsys.readouterr().out)
    assert shown["settings"]["level"] == "full" and shown["sources"]["level"] == "[parse]"
    assert shown["settings"]["parse.max_chars"] == 20
    assert shown["sources"]["parse.max_chars"] == "[parse]"
    assert shown["sources"]["parse.max_depth"] == "built-in (level full)"
    Path("long.txt").write_text('{"a": 1, "note": "longer than twenty"}')
    code, err = outcome(capsys, "parse", "long.txt")  # parse obeys the same file
    assert code == 4 and "raise --max-chars" in err  # the setting, as its flag (was 'max_chars')


def test_a_parse_limit_under_defaults_points_to_the_parse_section(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "outform.toml").write_text("[defaults]\nmax_chars = 20\n")
    from outform.config import reload

    with pytest.raises(Exception, match=r"'max_chars' is a \[parse\] key"):
        reload()


# -- library arguments are named as the flags that set them ----------------------------------


@pytest.mark.parametrize("url", ["not-a-url", "ftp://host/v1", "http://", "localhost:8000"])
def test_a_malformed_base_url_is_a_usage_error_before_any_call(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    code, err = outcome(capsys, "generate", "openai:gpt-4o", "hi", "--base-url", url)
    assert code == EXIT_USAGE
    assert "not an http(s) URL with a host" in err and "where: --base-url" in err
    import outform

    with pytest.raises(UsageError) as caught:
        outform.generate("openai:gpt-4o", "hi", base_url=url, api_key="k")
    assert caught.value.where == "base_url"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://[::1", "not a valid URL (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999/v1", "not a valid URL (Port out of range"),
        ("http://user:hunter2pass@127.0.0.1:9/v1", "credentials"),
        ("http://127.0.0.1:9/v1?api-key=QUERYSECRET", "query string"),
        ("http://127.0.0.1:9/v1#QUERYSECRET", "query string or a fragment"),
    ],
)
def test_a_base_url_that_cannot_be_joined_or_would_leak_is_refused_unquoted(
    capsys: pytest.CaptureFixture[str], url: str, why: str
) -> None:
    """Credentials would go out as Basic authentication (and be printed with the URL), the
    API paths would follow a query string: refused before any call, the URL shown without
    them; `outform serve --backend` and `[gateway] backend` keep the same rule."""
    code, err = outcome(capsys, "generate", "openai:gpt-4o", "hi", "--base-url", url)
    assert code == EXIT_USAGE and why in err and "where: --base-url" in err
    assert "hunter2pass" not in err and "QUERYSECRET" not in err
    code, err = outcome(capsys, "serve", "--backend", url)
    assert code == EXIT_USAGE and why in err and "where: --backend" in err
    assert "hunter2pass" not in err and "QUERYSECRET" not in err
    from outform.config import gateway_check

    assert not gateway_check("backend").accepts(url)
    assert gateway_check("backend").accepts("http://127.0.0.1:9/v1")


def test_a_missing_key_names_the_cli_flag_not_the_library_argument(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = outcome(capsys, "generate", "openai:gpt-4o", "hi")
    assert code == EXIT_PROVIDER
    assert "set OPENAI_API_KEY" in err and "--api-key-env NAME" in err
    assert "api_key=" not in err


def test_a_schema_file_holding_an_array_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    Path("array.json").write_text("[1, 2]")
    code, err = outcome(capsys, "parse", "-", "--schema", "array.json")
    assert code == EXIT_USAGE
    assert "the schema file holds an array, not a JSON Schema object" in err
    assert "where: array.json" in err and "not a type" not in err


def test_an_empty_reply_says_it_is_empty(capsys: pytest.CaptureFixture[str]) -> None:
    Path("empty.txt").write_text("  \n")
    code, err = outcome(capsys, "parse", "empty.txt", "--schema", "schema.json")
    assert code == 1
    assert "the reply is empty" in err and "level 'full'" not in err


# -- batch run: the input first, rows on the bar ----------------------------------------------


def test_a_missing_input_is_named_before_the_key_and_creates_no_manifest(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    code, err = outcome(
        capsys, "batch", "run", "missing.jsonl", "-m", "openai:gpt-4o", "-s", "schema.json",
        "-o", "out.jsonl",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "cannot read the input file" in err and "where: missing.jsonl" in err
    assert "API key" not in err
    assert not (workdir / ".outform").exists()


def test_batch_run_without_a_key_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    Path("rows.jsonl").write_bytes(orjson.dumps(ROW) + b"\n")
    code, err = outcome(
        capsys, "batch", "run", "rows.jsonl", "-m", "openai:gpt-4o", "-s", "schema.json",
        "-o", "out.jsonl", "-p", "{text}",
    )  # fmt: skip
    assert code == EXIT_PROVIDER
    assert "set OPENAI_API_KEY" in err and "--api-key-env NAME" in err


def test_the_checking_bar_counts_rows(tmp_path: Path) -> None:
    from outform.batch.job import JobSpec, prepare
    from outform.batch.manifest_sqlite import open_sqlite
    from outform.batch.runner import check_and_record

    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(b"".join(orjson.dumps({**ROW, "id": f"r{n}"}) + b"\n\n" for n in range(3)))
    seen: list[tuple[str, str, int | None]] = []

    class Recording:
        def start(self, phase: str, total: int | None) -> None:
            seen.append(("start", phase, total))

        def advance(self, phase: str, n: int = 1) -> None:
            seen.append(("advance", phase, n))

    spec = JobSpec(input=str(rows), model="openai:gpt-4o", format={"type": "json_schema",
                   "name": "s", "schema": SCHEMA}, prompt="{text}")  # fmt: skip
    prepared = prepare(spec, api_key="k")
    manifest = open_sqlite(tmp_path / "m.sqlite3")
    try:
        check_and_record(manifest, spec, prepared, Recording())  # type: ignore[arg-type]
    finally:
        manifest.close()
    assert seen[0] == ("start", "checking", 3)  # rows, not the file's bytes
    assert sum(n or 0 for kind, _, n in seen if kind == "advance") == 3


# -- help texts show brackets as written -----------------------------------------------------


def _commands() -> Iterator[tuple[list[str], Any]]:
    def walk(path: list[str], command: Any) -> Iterator[tuple[list[str], Any]]:
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk([*path, name], sub)

    yield from walk([], typer.main.get_command(app))


@pytest.mark.parametrize("path", [p for p, _ in _commands()], ids=" ".join)
def test_help_shows_bracketed_words_as_written(
    capsys: pytest.CaptureFixture[str], path: list[str]
) -> None:
    assert main([*path, "--help"]) == 0
    shown = capsys.readouterr().out
    assert not re.search(r"\( [a-z]", shown), shown  # "([trace] store)" eaten to "( store)"
    command = dict(_commands_by_path())[" ".join(path)]
    for text in [command.help or "", *(getattr(p, "help", "") or "" for p in command.params)]:
        for bracketed in re.findall(r"\[[a-z][a-z.A-Z_]*\]", text):
            assert bracketed in shown, f"{path}: {bracketed} missing from --help"


def _commands_by_path() -> Iterator[tuple[str, Any]]:
    for path, command in _commands():
        yield " ".join(path), command


@pytest.mark.parametrize(
    ("flag", "value", "phrase"),
    [
        ("--retries", "1000", "--retries must be a whole number from 0 to 10"),
        ("--temperature", "nan", "--temperature must be a finite number of 0 or more"),
        ("--temperature", "-1", "--temperature must be a finite number of 0 or more"),
    ],
)
def test_a_value_the_library_would_send_otherwise_is_refused(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flag: str,
    value: str,
    phrase: str,
) -> None:
    """Found by a new-user trial: `--temperature nan` was sent as null (the default, unsaid),
    and `--retries 1000` taken where outform.toml allows 10."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    code, err = outcome(capsys, "generate", "openai:gpt-4o", "hi", flag, value)
    assert code == EXIT_USAGE and phrase in err


def test_a_timeout_fix_names_the_flag_on_the_command_line() -> None:
    """Found by a new-user trial: the fix read "`Transport(--timeout ...)`"."""
    from outform.cli.io import for_cli
    from outform.errors import ConnectionFailedError

    error = ConnectionFailedError(
        "x", provider="p", fix="raise `timeout` (an argument of Transport), or check that it is up"
    )
    assert for_cli(error).fix == "raise --timeout, or check that it is up"
