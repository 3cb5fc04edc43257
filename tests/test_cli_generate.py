"""`outform generate MODEL PROMPT`: against a real fake OpenAI server on 127.0.0.1, the value on
stdout; the mode, every attempt and the changes on stderr; exit 1 without a valid reply, 5 when
the provider fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform.cli import EXIT_INVALID, EXIT_PROVIDER, EXIT_USAGE, main
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import Run, command, isolated

MODEL = "openai:gpt-4o-2024-08-06"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty directory holding person.json; no config, no OpenAI key or URL from outside."""
    files = {"person.json": PERSON}
    yield from isolated(tmp_path, monkeypatch, files, "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


def answer(server: FakeServer, *contents: str | dict[str, Any]) -> None:
    for content in contents:
        text = content if isinstance(content, str) else orjson.dumps(content).decode()
        server.json(openai_wire.chat_completion(content=text))


def generate(
    capsys: pytest.CaptureFixture[str], server: FakeServer, *args: str, prompt: str = "Ada, 36"
) -> Run:
    code = main(["generate", MODEL, prompt, "--base-url", server.url + "/v1", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return Run(code, captured.out, captured.err)


def test_a_valid_reply_prints_the_value_the_mode_and_the_changes(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, {"name": "Ada", "age": "36"})
    result = generate(capsys, server, "--schema", "person.json")
    assert result.code == 0
    assert orjson.loads(result.out) == {"name": "Ada", "age": 36}
    assert "mode: native_schema (" in result.err
    assert "attempt 1: valid (finish: stop, 31 in, 12 out)" in result.err
    assert '/age  semantic  string_to_integer (plain): "36" -> 36' in result.err
    sent = server.last.json
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["messages"] == [{"role": "user", "content": "Ada, 36"}]


def test_an_invalid_reply_is_reasked_and_every_attempt_is_shown(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, {"name": "Ada", "age": "thirty-six"}, {"age": 36})
    result = generate(capsys, server, "--schema", "person.json")
    assert result.code == 0
    assert orjson.loads(result.out) == {"name": "Ada", "age": 36}
    assert "attempt 1: not valid" in result.err
    assert '- at age: expected integer, found string "thirty-six"' in result.err
    assert "attempt 2 (re-asked for age): valid" in result.err
    assert "tokens: 62 in, 24 out" in result.err
    assert "at age: expected integer" in str(server.requests[1].json["messages"])


def test_the_system_prompt_goes_first_and_the_prompt_can_come_from_stdin(
    capsys: pytest.CaptureFixture[str], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Extract: Ada, 36")))
    answer(server, {"name": "Ada", "age": 36})
    result = generate(capsys, server, "-s", "person.json", "--system", "Be terse.", prompt="-")
    assert result.code == 0
    messages = server.last.json["messages"]
    assert messages[0] == {"role": "system", "content": "Be terse."}
    assert messages[-1] == {"role": "user", "content": "Extract: Ada, 36"}


def test_level_full_repairs_what_minimal_would_reask_for(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, '{"name": "Ada", "age": 36,}')
    result = generate(capsys, server, "-s", "person.json", "--level", "full", "--retries", "0")
    assert (result.code, len(server.requests)) == (0, 1)
    assert "pyjson5" in result.err


def test_a_type_is_the_output_and_its_fields_are_shown_as_json(
    capsys: pytest.CaptureFixture[str], server: FakeServer, workdir: Path
) -> None:
    (workdir / "gen_models.py").write_text(
        "from pydantic import BaseModel\n\n\nclass Person(BaseModel):\n    name: str\n"
        "    age: int\n    city: str = 'London'\n"
    )
    answer(server, {"name": "Ada", "age": 36, "city": "Paris"})
    result = generate(capsys, server, "--type", "gen_models:Person")
    assert result.code == 0
    assert orjson.loads(result.out) == {"name": "Ada", "age": 36, "city": "Paris"}


def test_without_a_schema_any_json_object_is_asked_for(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, {"anything": [1, 2]})
    result = generate(capsys, server, prompt="Give me JSON")
    assert (result.code, orjson.loads(result.out)) == (0, {"anything": [1, 2]})
    assert server.last.json["response_format"] == {"type": "json_object"}


def test_json_prints_one_document_with_mode_attempts_changes_and_usage(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, {"name": "Ada", "age": "x"}, {"age": 36})
    result = generate(capsys, server, "-s", "person.json", "--json")
    assert result.code == 0
    data = orjson.loads(result.out)
    assert (data["ok"], data["data"], data["mode"]) == (
        True,
        {"name": "Ada", "age": 36},
        "native_schema",
    )
    first, second = data["attempts"]
    assert first["hint"]["violations"][0]["path"] == "/age"
    assert (second["hint"], second["fields"]) == (None, ["age"])
    assert data["usage"]["input_tokens"] == 62
    assert {"keyword": "minimum", "disposition": "enforced"}.items() <= next(
        e for e in data["ledger"] if e["keyword"] == "minimum"
    ).items()


# -- no valid value: exit 1 -----------------------------------------------------------------


def test_no_valid_reply_within_the_retries_exits_1_with_every_attempt(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, {"name": "Ada"}, {"name": "Ada"})
    result = generate(capsys, server, "-s", "person.json", "--retries", "1")
    assert result.code == EXIT_INVALID
    assert result.out == ""
    assert result.err.count("not valid") == 2
    assert "error: no valid reply: 2 attempt(s) failed" in result.err
    assert "missing required field" in result.err
    assert "Reply again" not in result.err


def test_the_fix_for_no_valid_reply_names_flags_on_the_command_line(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    """The library's fix ("raise `retries` or `token_budget`, use level='full'") is told in the
    flags that do it; the Python error keeps the argument names (tests/test_run.py)."""
    answer(server, {"name": "Ada"})
    result = generate(capsys, server, "-s", "person.json", "--retries", "0")
    assert result.code == EXIT_INVALID
    text = " ".join(result.err.split())
    assert "fix: raise --retries or --token-budget, use --level full" in text
    assert "level='full'" not in text and "`retries`" not in text


def test_no_valid_reply_with_json_is_a_document_saying_so(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    answer(server, "no idea")
    result = generate(capsys, server, "-s", "person.json", "--retries", "0", "--json")
    assert result.code == EXIT_INVALID
    data = orjson.loads(result.out)
    assert (data["ok"], len(data["attempts"])) == (False, 1)
    assert data["attempts"][0]["text"] == "no idea"


def test_a_refusal_exits_1_with_the_refusal(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    server.json(openai_wire.chat_completion(content=None, refusal="I can't help with that."))
    result = generate(capsys, server, "-s", "person.json")
    assert result.code == EXIT_INVALID
    assert "attempt 1: refused" in result.err
    assert "the model refused: I can't help with that." in result.err


# -- misuse and provider failures ----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-s", "person.json", "--mode", "magic"], "unknown mode 'magic'"),
        (["-s", "person.json", "--api-key-env", "NO_SUCH_VAR_XYZ"], "NO_SUCH_VAR_XYZ is not set"),
        (["-s", "person.json", "-t", "json:JSONDecoder"], "not both"),
    ],
)
def test_misuse_exits_2_before_any_request(
    capsys: pytest.CaptureFixture[str], server: FakeServer, args: list[str], message: str
) -> None:
    result = generate(capsys, server, *args)
    assert result.code == EXIT_USAGE
    assert message in " ".join(result.err.split())
    assert server.requests == []


def test_an_unknown_provider_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "nobody:model", "hi"]) == EXIT_USAGE
    assert "unknown provider in model 'nobody:model'" in capsys.readouterr().err


def test_a_provider_that_refuses_the_key_exits_5(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    server.json({"error": {"message": "Incorrect API key provided"}}, status=401)
    result = generate(capsys, server, "-s", "person.json")
    assert result.code == EXIT_PROVIDER == 5
    assert "error:" in result.err and "401" in result.err


def test_a_missing_key_exits_5_naming_the_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", MODEL, "hi"]) == EXIT_PROVIDER
    assert "set OPENAI_API_KEY" in capsys.readouterr().err


# -- the installed console script ----------------------------------------------------------


def test_the_console_script_generates_against_a_local_server(
    server: FakeServer, workdir: Path
) -> None:
    answer(server, {"name": "Ada", "age": "36"})
    done = command(
        workdir, "generate", MODEL, "Ada, 36", "-s", "person.json", "--base-url", server.url
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout) == {"name": "Ada", "age": 36}
    assert "mode: native_schema" in done.stderr
    assert "/age  semantic  string_to_integer" in done.stderr  # plain lines: not a terminal


def test_a_silent_provider_is_given_up_on_after_the_timeout_the_flag_sets(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    """Found by a new-user trial: the transport's 120 s could not be set from the CLI (a
    silent backend held the command 6 minutes, retries included), and the error named no
    limit. The flag sets it; the error names it and how to raise it."""
    for _ in range(3):  # the first attempt and the transport's two retries
        server.reply(body=openai_wire.chat_completion(content="{}"), delay=2.0)
    result = generate(capsys, server, "--schema", "person.json", "--timeout", "0.2")
    assert result.code == EXIT_PROVIDER
    assert "did not send a byte within the timeout of 0.2 s" in result.err
    assert "--timeout" in result.err
