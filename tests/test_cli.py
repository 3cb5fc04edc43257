"""`outform parse` and what every command shares: the exit codes (0 valid, 1 not valid, 2 misuse,
4 input that cannot be parsed), the value on stdout, the rest on stderr as plain lines outside a
terminal, never a traceback."""

from __future__ import annotations

import ast
import io
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import orjson
import pytest
from pydantic import BaseModel

import outform.config
from outform.cli import EXIT_CODES, EXIT_INPUT, EXIT_INTERNAL, main
from outform.cli.app import app
from outform.parse import Options, Pipeline, clear_cache
from tests.injected import fault_in

CONSOLE_SCRIPT = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "outform"
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["a"],
}


def isolated(
    path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, Any], *unset: str
) -> Iterator[Path]:
    """Run in `path`, holding `files` (name -> JSON), with no config and `unset` variables."""
    monkeypatch.chdir(path)
    for name in ("OUTFORM_CONFIG", "OUTFORM_DEBUG", *unset):
        monkeypatch.delenv(name, raising=False)
    for name, content in files.items():
        (path / name).write_bytes(orjson.dumps(content))
    outform.config.reload()
    clear_cache()
    yield path
    monkeypatch.undo()
    outform.config.reload()
    clear_cache()


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test runs in an empty directory holding schema.json, with no config in effect."""
    yield from isolated(tmp_path, monkeypatch, {"schema.json": SCHEMA})


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
        path = reply(workdir, '{"total": "1,200,000"}')
        result = run(capsys, path, "--type", f"{module}:Invoice")
    finally:
        sys.modules.pop(module, None)
    assert (result.code, orjson.loads(result.out)) == (0, {"total": 1200000})


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


@pytest.mark.parametrize(
    ("source", "message", "line"),
    [
        ("x = 1\nraise RuntimeError('boom')\n", "raised RuntimeError: boom", 2),
        ("def f(:\n    pass\n", "raised SyntaxError", 1),
        ("import surely_not_a_dependency_xyz\n", "raised ModuleNotFoundError", 1),
        ("import sys\n\nsys.exit(0)\n", "called sys.exit(0)", 3),
    ],
)
def test_a_type_module_that_fails_to_import_is_the_modules_fault_not_outforms(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    message: str,
    line: int,
) -> None:
    module = f"cli_broken_{workdir.name}"
    (workdir / f"{module}.py").write_text(source)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        result = run(capsys, reply(workdir, "{}"), "--type", f"{module}:Model")
    finally:
        sys.modules.pop(module, None)
    assert result.code == 2  # a usage error: not "internal error", and never a silent exit 0
    assert f"importing module '{module}' {message}" in result.err_text
    assert f"{module}.py, line {line}" in result.err_text
    assert f"python -c 'import {module}'" in result.err_text


# -- exit 1 ---------------------------------------------------------------------------------


def test_an_invalid_reply_exits_1_with_the_violations_for_people_on_stderr(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": "x"}'), "-s", "schema.json")
    assert result.code == 1
    assert result.out == ""
    assert '- at a: expected integer, found string "x"' in result.err
    assert "Reply again" not in result.err  # the words written for the model stay with it
    assert "Your reply" not in result.err


# -- exit 4: a reply that cannot be parsed at all -------------------------------------------


def test_a_binary_reply_exits_4_saying_it_is_not_text(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, b"\xff\xfe{}"), "-s", "schema.json")
    assert result.code == EXIT_INPUT == 4
    assert "not UTF-8 text" in result.err_text


@pytest.mark.parametrize(
    ("flag", "text", "limit", "enough", "message"),
    [
        ("--max-chars", '{"a": 1, "note": "' + "x" * 100 + '"}', "50", "500", "over the limit"),
        ("--max-depth", 'Here: {"a": 1, "x": [[[[1]]]]}', "3", "10", "nests"),
        ("--time-limit", 'Here it is: {"a": "1"}', "0", "60", "time"),
    ],
)
def test_the_limits_errors_name_are_flags_and_exceeding_them_exits_4(
    capsys: pytest.CaptureFixture[str],
    workdir: Path,
    flag: str,
    text: str,
    limit: str,
    enough: str,
    message: str,
) -> None:
    path = reply(workdir, text)
    over = run(capsys, path, flag, limit)
    assert over.code == EXIT_INPUT
    assert message in over.err_text
    option = flag.removeprefix("--").replace("-", "_")
    # The error names the setting as the flag that sets it (it said "raise the 'max_chars'
    # option", the library's wording, before).
    assert f"fix: raise {flag}" in over.err_text
    assert option not in over.err_text
    assert run(capsys, path, flag, enough).code == 0


# -- every setting an error message names can be set from the shell --------------------------

_SRC = Path(outform.__file__).parent
_REACHED = (
    "parse",
    "schema",
    "format.py",
    "plan.py",
    "run.py",
    "reask.py",
    "providers",
    "transport.py",
    "baseurl.py",
)
"""What `outform parse` and `outform generate` run (the gateway has its own settings): the
transport too, whose limits an answer may be over (`--max-body-bytes` was named by an error
before `outform generate` had it)."""
_NAMED = (
    re.compile(r"'([a-z][a-z_]*)' option"),  # raise the 'max_chars' option
    re.compile(r"`([a-z][a-z_]*)`"),  # raise `retries`
    re.compile(r"\b([a-z][a-z_]*)='"),  # use mode='auto'
)
_NOT_FROM_THE_SHELL = {
    "tool_choice": "only with the caller's own tools, which the CLI does not pass",
    "enabled": "Thinking(enabled=...): the CLI does not turn thinking on",
}


def _named_in_errors() -> dict[str, str]:
    """Every setting named by the text of an error raised in `_REACHED`, with where."""
    named: dict[str, str] = {}
    for part in _REACHED:
        for path in sorted((_SRC / part).rglob("*.py") if "." not in part else [_SRC / part]):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and _raises(node):
                    parts = [*node.args, *(k.value for k in node.keywords)]
                elif isinstance(node, ast.Assign) and _error_part(node):
                    parts = [node.value]  # fix = "raise the ... option", raised further on
                else:
                    continue
                texts = [
                    c.value
                    for arg in parts
                    for c in ast.walk(arg)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                ]
                for text, pattern in itertools.product(texts, _NAMED):
                    for name in pattern.findall(text):
                        named.setdefault(name, f"{path.relative_to(_SRC)}:{node.lineno}")
                if isinstance(node, ast.Call) and _raises(node):
                    for keyword in node.keywords:  # InputError(..., limit="max_chars")
                        limit = getattr(keyword.value, "value", None)
                        if keyword.arg == "limit" and isinstance(limit, str):
                            named.setdefault(limit, f"{path.relative_to(_SRC)}:{node.lineno}")
    return named


def _error_part(node: ast.Assign) -> bool:
    """An assignment to a name an error is built from (`what`, `where`, `fix`)."""
    names = {getattr(t, "id", None) for t in node.targets}
    names |= {n.id for t in node.targets if isinstance(t, ast.Tuple) for n in t.elts
              if isinstance(n, ast.Name)}  # fmt: skip
    return bool(names & {"what", "where", "fix"})


def _raises(call: ast.Call) -> bool:
    name = getattr(call.func, "id", None) or getattr(call.func, "attr", "")
    return isinstance(name, str) and name.endswith("Error")


def _flags(command: str) -> set[str]:
    import typer.main

    group = typer.main.get_command(app)
    sub = group.commands[command]  # type: ignore[attr-defined]
    return {opt for param in sub.params for opt in getattr(param, "opts", ())}


def test_every_setting_an_error_names_is_a_flag_of_the_commands_that_reach_it() -> None:
    named = _named_in_errors()
    assert {"max_chars", "max_depth", "time_limit", "retries", "mode"} <= set(named)
    assert "max_repair_chars" in named  # named in a `fix` assigned before the raise
    assert "max_body_bytes" in named  # by the transport, of an answer too large
    parse_options = set(Options.__dataclass_fields__)
    for name, where in named.items():
        if name in _NOT_FROM_THE_SHELL:
            continue
        flag = "--" + name.replace("_", "-")
        assert flag in _flags("generate"), f"{where} names {name!r}: outform generate lacks {flag}"
        if name in parse_options:
            assert flag in _flags("parse"), f"{where} names {name!r}: outform parse lacks {flag}"


# -- the exit codes are documented ----------------------------------------------------------


def test_help_and_the_docs_list_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    documented = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text()
    for code, meaning in EXIT_CODES:
        assert f"{code} {meaning}" in shown
        assert re.search(rf"^\| `?{code}`? \|", documented, re.MULTILINE), f"docs/cli.md: {code}"


# -- --version, and any JSON without a schema -----------------------------------------------


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"outform {version('outform')}"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2], "b": null}',
        'The answer:\n```json\n{"a": "x"}\n```',
        '"just a string"',
        "[1, 2, 3]",
    ],
)
def test_without_schema_or_type_any_json_is_parsed_as_the_library_does(
    capsys: pytest.CaptureFixture[str], workdir: Path, text: str
) -> None:
    result = run(capsys, reply(workdir, text))
    assert result.code == 0
    assert orjson.loads(result.out) == outform.parse(text).data


def test_without_schema_a_reply_with_no_json_exits_1(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, "I could not find any invoice."))
    assert result.code == 1
    assert "no JSON value could be read" in result.err_text


# -- not a type -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind"),
    [("json:dumps", "function"), ("os:sep", "str"), ("os:path", "module"), ("math:pi", "float")],
)
def test_a_type_that_is_not_a_type_exits_2_saying_so(
    capsys: pytest.CaptureFixture[str], workdir: Path, spec: str, kind: str
) -> None:
    result = run(capsys, reply(workdir, "{}"), "--type", spec)
    assert result.code == 2
    assert f"--type {spec} is not a type (it is a {kind})" in result.err_text
    assert "internal error" not in result.err_text


@pytest.mark.parametrize("value", [json.dumps, os.sep, os, 42, "Invoice"])
def test_the_library_refuses_what_is_not_a_type_with_a_schema_error(value: Any) -> None:
    with pytest.raises(outform.SchemaError, match=r"not a type|neither a schema nor a type"):
        outform.parse("{}", type=value)


# -- --shadow -------------------------------------------------------------------------------


def test_shadow_mode_prints_the_would_be_value_and_what_would_change(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, 'Sure: {"a": "12"}'), "-s", "schema.json", "--shadow")
    assert result.code == 0  # outform would return a valid value
    assert orjson.loads(result.out) == {"a": 12}
    assert "What outform would change at level 'minimal' (shadow mode)" in result.err
    assert "extract_from_prose" in result.err and "string_to_integer" in result.err
    assert "as sent, the reply is not valid" in result.err_text


def test_shadow_mode_exits_1_when_even_the_would_be_value_is_not_valid(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, 'Sure: {"a": "many"}'), "-s", "schema.json", "--shadow")
    assert result.code == 1
    assert orjson.loads(result.out) == {"a": "many"}
    assert "Even after these changes it would not match" in result.err_text
    assert '- at a: expected integer, found string "many"' in result.err


def test_shadow_mode_shows_what_the_chosen_level_would_do_and_no_null_it_never_read(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    path = reply(workdir, '{"a": 3,}')
    result = run(capsys, path, "-s", "schema.json", "--shadow", "--level", "minimal")
    assert result.code == 1
    assert result.out == ""  # no value is read at minimal: nothing printed, not `null`
    assert "pyjson5" not in result.err and "Even after these changes" not in result.err_text
    assert "At level 'minimal', outform would refuse it" in result.err_text
    full = run(capsys, path, "-s", "schema.json", "--shadow", "--level", "full")
    assert full.code == 0 and orjson.loads(full.out) == {"a": 3}
    assert "What outform would change at level 'full' (shadow mode)" in full.err_text
    assert "pyjson5" in full.err


def test_nan_in_a_reply_is_an_invalid_reply_with_a_precise_error_not_an_internal_one(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    for level in ("off", "minimal", "full"):
        result = run(capsys, reply(workdir, '{"a": NaN}'), "--level", level)
        assert result.code == 1, result.err
        assert "writes NaN, which is not a JSON number" in result.err_text
        assert result.out == ""


def test_a_fault_of_outforms_own_exits_3_as_an_internal_error(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug inside a stage (injected here) reaches the CLI as an InternalError: exit 3, the
    stage named, no traceback; not exit 2, which says the user did something wrong."""

    monkeypatch.setattr(
        Pipeline, "_slow", fault_in("outform.parse.pipeline", RuntimeError, "injected fault")
    )
    result = run(capsys, reply(workdir, '{"a": "12"}'), "-s", "schema.json")
    assert result.code == EXIT_INTERNAL == 3
    assert "outform failed in stage" in result.err_text and "injected fault" in result.err_text
    assert "this is a bug in outform" in result.err_text


def test_shadow_mode_exits_0_for_a_reply_valid_as_sent(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, '{"a": 12}'), "-s", "schema.json", "--shadow", "--json")
    assert result.code == 0
    data = orjson.loads(result.out)
    assert (data["shadow"], data["ok"], data["would_be"]) == (True, True, {"a": 12})
    assert data["would_be_hint"] is None


# -- exit 2 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--max-chars", "0", "--max-chars must be greater than or equal to 1"),
        ("--max-chars", "many", "--max-chars must be a valid integer"),
        ("--max-depth", "1000", "--max-depth must be an integer from 1 to 250, got 1000"),
        ("--time-limit", "-1", "--time-limit must be greater than or equal to 0"),
    ],
)
def test_a_flag_out_of_range_is_told_in_one_style_naming_the_flag(
    capsys: pytest.CaptureFixture[str], workdir: Path, flag: str, value: str, said: str
) -> None:
    """Whether the command line (a range on the flag) or the library (a bound of the option)
    refuses the value, the error is outform's: the flag named in `what` and `where`, no usage
    banner, exit 2."""
    result = run(capsys, reply(workdir, '{"a": 1}'), flag, value)
    assert result.code == 2
    assert result.err.startswith(f"error: {said}"), result.err
    assert f"where: {flag}" in result.err
    assert "Usage:" not in result.err and "_" not in flag


def test_an_unknown_option_keeps_the_usage_line(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """A malformed command line (an option that does not exist) is shown with the command's
    usage line: what to type instead is the whole command."""
    result = run(capsys, reply(workdir, '{"a": 1}'), "--no-such-flag")
    assert result.code == 2
    assert "Usage: outform parse" in result.err and "No such option: --no-such-flag" in result.err


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["schema", "schema.json"], "Missing option '--dialect'"),
        (["generate"], "Missing argument 'model'"),
    ],
)
def test_a_missing_argument_or_option_is_named_with_the_usage_line(
    capsys: pytest.CaptureFixture[str], workdir: Path, args: list[str], missing: str
) -> None:
    """Found by a trial: it printed `error: --dialect:` with an empty message (click's
    MissingParameter is a bad value to typer)."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert f"Usage: outform {args[0]}" in err and missing in err


def test_a_schema_regex_that_does_not_compile_gets_a_fix_about_the_pattern(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "bad.json").write_text(
        '{"properties": {"a": {"type": "string", "pattern": "(?<=a"}}}'
    )
    result = run(capsys, reply(workdir, '{"a": "x"}'), "-s", "bad.json")
    assert result.code == 2
    assert "regular expression '(?<=a' cannot be compiled" in result.err_text
    assert "where: schema at /properties/a/pattern" in result.err_text
    assert "$ref" not in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "schema.json", "-t", "json:JSONDecoder"], "give --schema or --type, not both"),
        (["--max-chars", "0"], "--max-chars must be greater than or equal to 1"),
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


def test_a_schema_file_keeps_every_digit_of_its_integers(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """Found by a trial: schema files were read with a float for each big integer, so a
    `const` of 27 digits refused the very value it names, and a 400-digit bound was "not valid
    JSON". They are read as the library reads a schema dict: every digit kept."""
    big = 123456789012345678901234567
    schema = {"type": "object", "properties": {"a": {"type": "integer", "const": big}}}
    (workdir / "big.json").write_text(json.dumps(schema))
    result = run(capsys, reply(workdir, json.dumps({"a": big})), "-s", "big.json")
    assert result.code == 0 and str(big) in result.out
    (workdir / "bound.json").write_text(json.dumps({"type": "integer", "maximum": 10**400}))
    assert run(capsys, reply(workdir, "5"), "-s", "bound.json").code == 0


def test_a_binary_schema_file_exits_2_saying_so(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "binary.json").write_bytes(b"\xff\xfe{}")
    result = run(capsys, reply(workdir, "{}"), "-s", "binary.json")
    assert result.code == 2 and "not UTF-8 text" in result.err_text


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
    """`outform parse ARGS` as a user runs it: the installed script, no terminal."""
    return command(workdir, "parse", *args, stdin=stdin)


def command(workdir: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    env: dict[str, Any] = {k: v for k, v in os.environ.items() if not k.startswith("OUTFORM_")}
    return subprocess.run(
        [str(CONSOLE_SCRIPT), *args],
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


def test_python_dash_m_outform_runs_the_same_command_line(workdir: Path) -> None:
    """Found by a new-user trial: `python -m outform` said "No module named outform.__main__"."""
    done = subprocess.run(
        [sys.executable, "-m", "outform", "parse", "-", "--schema", "schema.json", "--json"],
        cwd=workdir,
        input='{"a": "3"}',
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["data"] == {"a": 3}


def test_the_console_script_prints_its_version(workdir: Path) -> None:
    done = command(workdir, "--version")
    assert (done.returncode, done.stdout.split()[0]) == (0, "outform")


def test_the_console_script_writes_plain_change_lines_outside_a_terminal(workdir: Path) -> None:
    long_note = "a long note " * 20
    text = f'Sure: {{"a": "12", "note": "{long_note}"}}'
    done = console(workdir, "-", "--schema", "schema.json", stdin=text.encode())
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert lines[0] == "What outform changed:"
    assert not set("─━│┃┏┡└") & set(done.stderr)  # no table borders
    (coerced,) = [line for line in lines if "string_to_integer" in line]
    assert coerced.strip().startswith("/a  semantic  string_to_integer")
    assert coerced.endswith('"12" -> 12')  # one line per change, never wrapped


@pytest.mark.parametrize(
    "args",
    [
        ["reply.txt", "--type", "json:dumps"],
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


# -- plain lines or a table -----------------------------------------------------------------


def test_outside_a_terminal_each_change_is_one_plain_line(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, 'Here: {"a": "12"}'), "-s", "schema.json")
    assert result.err.splitlines()[:3] == [
        "What outform changed:",
        '  /  extract  extract_from_prose: – -> {"a": "12"}',
        '  /a  semantic  string_to_integer (plain): "12" -> 12',
    ]


def test_on_a_terminal_the_changes_are_a_table(
    capsys: pytest.CaptureFixture[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outform.cli.app import stderr

    monkeypatch.setattr(stderr, "_force_terminal", True)
    result = run(capsys, reply(workdir, 'Here: {"a": "12"}'), "-s", "schema.json")
    assert result.code == 0
    assert "What outform changed" in result.err
    assert any(border in result.err for border in "┃│")


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


def test_stream_refuses_a_reply_over_max_chars_at_the_chunk_that_crosses_it(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """Before, --max-chars was applied by the final parse, after every snapshot was printed."""
    text = '{"a": "12", "note": "' + "x" * 200 + '"}'
    args = ("-s", "schema.json", "--stream", "--chunk-size", "8", "--max-chars", "40")
    result = run(capsys, reply(workdir, text), *args)
    assert result.code == 4
    assert "over the limit of 40" in result.err_text
    assert "raise --max-chars" in result.err_text  # the setting, as its flag (was 'max_chars')
    printed = [line for line in result.out.splitlines() if line.startswith("{")]
    assert 1 <= len(printed) <= 40 // 8


def test_stream_reads_a_valid_list_of_identical_items_to_its_end_like_parse(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    item = {"id": "abcdefgh", "name": "the same item written again", "tags": ["x", "y"]}
    path = reply(workdir, json.dumps([item] * 100))
    plain = run(capsys, path)
    streamed = run(capsys, path, "--stream")
    assert (plain.code, streamed.code) == (0, 0)
    assert orjson.loads(plain.out) == [item] * 100
    lines = streamed.out.splitlines()
    final = lines.index("[")  # the validated value, printed whole after the JSON lines
    assert orjson.loads("\n".join(lines[final:])) == orjson.loads(plain.out)
    # Stopping a loop inside the value is a bet the caller makes: --stop-loops.
    stopped = run(capsys, path, "--stream", "--stop-loops")
    assert stopped.code == 1 and "degenerating into a loop" in stopped.err_text
    assert run(capsys, path, "--stop-loops").code == 2
    assert run(capsys, path, "--stream", "--shadow").code == 2


def test_stream_stops_as_soon_as_the_reply_cannot_be_valid(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    text = '{"a": "twelve", "note": "' + "x" * 500 + '"}'
    result = run(capsys, reply(workdir, text), "-s", "schema.json", "--stream")
    assert result.code == 1
    assert "stream stopped" in result.err_text
    assert "character" in result.err_text


# -- values and changes are printed exactly (issue 10) -------------------------

BIG = 2**70  # 1180591620717411303424: beyond the 64 bits orjson writes


class Counted(BaseModel):
    n: int


@pytest.mark.parametrize(
    "flags",
    [[], ["--schema", "int.json"], ["--type", "builtins:int"]],
    ids=["any", "schema", "type"],
)
def test_an_integer_beyond_64_bits_is_printed_digit_for_digit(
    capsys: pytest.CaptureFixture[str], workdir: Path, flags: list[str]
) -> None:
    """It was "internal error: TypeError: Integer exceeds 64-bit range", exit 3."""
    (workdir / "int.json").write_text('{"type": "integer"}')
    result = run(capsys, reply(workdir, f"{BIG}\n"), *flags)
    assert (result.code, result.out) == (0, f"{BIG}\n")


class Choice(BaseModel):
    x: Literal[1, 2]


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_a_boolean_for_a_literal_of_integers_is_refused_at_every_level(
    capsys: pytest.CaptureFixture[str], workdir: Path, level: str
) -> None:
    """It exited 0 with "valid as sent" (Pydantic's strict mode matches `true` to 1), printing
    `{"x": true}` for a type whose value was `x=1`."""
    path = reply(workdir, '{"x": true}')
    result = run(capsys, path, "--type", "tests.test_cli:Choice", "--level", level, "--json")
    assert result.code == 1
    data = orjson.loads(result.out)
    assert data["ok"] is False
    assert {v["path"] for v in data["hint"]["violations"]} == {"/x"}
    valid = run(capsys, reply(workdir, '{"x": 2}'), "--type", "tests.test_cli:Choice")
    assert (valid.code, orjson.loads(valid.out)) == (0, {"x": 2})
    assert "valid as sent" in valid.err


def test_a_model_holding_an_integer_beyond_64_bits_is_printed_exactly(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    result = run(capsys, reply(workdir, f'{{"n": {BIG}}}'), "--type", "tests.test_cli:Counted")
    assert result.code == 0
    assert json.loads(result.out) == {"n": BIG}


def test_a_change_holding_an_integer_beyond_64_bits_is_printed_exactly(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """The value printed, then printing its change crashed (exit 3 after stdout was written)."""
    (workdir / "text.json").write_text('{"properties": {"a": {"type": "string"}}}')
    result = run(capsys, reply(workdir, f'{{"a": {BIG}}}'), "-s", "text.json")
    assert result.code == 0
    assert json.loads(result.out) == {"a": str(BIG)}
    assert f'/a  semantic  number_to_string: {BIG} -> "{BIG}"' in result.err


@pytest.mark.parametrize("flag", ["--json", "--stream"])
def test_json_and_stream_output_write_an_integer_beyond_64_bits_exactly(
    capsys: pytest.CaptureFixture[str], workdir: Path, flag: str
) -> None:
    result = run(capsys, reply(workdir, f'{{"a": {BIG}, "b": [1, 2, 3, 4, 5, 6, 7, 8, 9]}}'), flag)
    assert result.code == 0
    if flag == "--json":
        assert json.loads(result.out)["data"]["a"] == BIG
    else:  # snapshots (one JSON line each) show the number once complete, then the value
        lines = result.out.splitlines()
        snapshots = [json.loads(line) for line in lines if line[:1] == "{" and line[-1:] == "}"]
        assert next(s["a"] for s in snapshots if "a" in s) == BIG


def test_a_string_holding_an_emoji_code_is_printed_as_written(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """Printed through Rich, `:thumbs_up:` became an emoji: the value is written as it is."""
    result = run(capsys, reply(workdir, '{"a": 1, "note": "ok :thumbs_up: [bold]x[/bold]"}'))
    assert json.loads(result.out)["note"] == "ok :thumbs_up: [bold]x[/bold]"


# -- output is written at once, settings are named as flags (issue 10) -----------------------


class Writes(io.StringIO):
    """A stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_many_changes_are_written_at_once(
    monkeypatch: pytest.MonkeyPatch, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """80,000 changes took 28 s, one print each: the lines are built once and written once
    (a test of the writes, not of the time)."""
    items = ", ".join(f'{{"n": "{i}"}}' for i in range(2000))
    (workdir / "items.json").write_text(
        '{"type": "array", "items": {"properties": {"n": {"type": "integer"}}}}'
    )
    out, err = Writes(), Writes()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["parse", reply(workdir, f"[{items}]"), "-s", "items.json"]) == 0
    assert err.getvalue().count("string_to_integer") == 2000
    assert (out.writes, err.writes) == (1, 1)


def test_the_limit_an_error_names_is_shown_as_its_flag_in_the_changes_too(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    text = "{'a': 1, 'b': [1, 2, 3" + ", 4" * 100
    result = run(capsys, reply(workdir, text), "--level", "full", "--max-repair-chars", "100")
    assert result.code == 1
    assert "over the --max-repair-chars limit of 100" in result.err_text
    assert "fix: raise --max-repair-chars to let json-repair read the region" in result.err_text
    assert "max_repair_chars" not in result.err_text


def test_a_string_over_max_repair_string_is_told_with_its_flag(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    text = '{"a": "' + "x" * 200 + "\nnote: see"  # a member inside: json-repair finds its end
    result = run(capsys, reply(workdir, text), "--level", "full", "--max-repair-string", "100")
    assert result.code == 1
    assert "more than 100 characters, over the --max-repair-string limit" in result.err_text
    assert "fix: raise --max-repair-string to let json-repair read the string" in result.err_text
    assert "max_repair_string" not in result.err_text
    assert run(capsys, reply(workdir, text), "--level", "full").code == 0


@pytest.mark.parametrize("command", ["parse", "generate", "schema", "serve", "health", "batch"])
def test_help_texts_show_brackets_without_escapes(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """`outform serve --help` printed "\\[gateway]"."""
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "\\[" not in out
    if command == "serve":
        assert "the [gateway] section" in out
