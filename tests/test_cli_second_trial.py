"""What a second new-user trial of the command line showed: each case the rule that fixed it.

Over real HTTP where a provider is called: the OpenAI Chat Completions wire played by the fake
server on 127.0.0.1 (tests/providers/fake.py).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from outform.cli import EXIT_INPUT, EXIT_INVALID, EXIT_PROVIDER, EXIT_USAGE, main
from tests.providers import openai_wire
from tests.providers.fake import FakeServer
from tests.test_cli import isolated

MODEL = "openai:gpt-4o-2024-08-06"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
LATIN_1 = b"caf\xe9"
"""`café` in Latin-1: not UTF-8 (the byte 0xE9 starts a sequence that does not follow)."""


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    files = {"person.json": PERSON}
    yield from isolated(tmp_path, monkeypatch, files, "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


class Outcome:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code = code
        self.out = out
        self.err = " ".join(err.split())
        """Standard error, its line wrapping undone."""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Outcome:
    code = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    return Outcome(code, captured.out, captured.err)


def generate(
    capsys: pytest.CaptureFixture[str], server: FakeServer, prompt: str, *args: str
) -> Outcome:
    base = ["--base-url", server.url + "/v1", "-s", "person.json"]
    return run(capsys, "generate", MODEL, prompt, *base, *args)


def stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


# -- every text the command line reads is UTF-8, or an error that says so ---------------------


def test_a_prompt_on_standard_input_that_is_not_utf8_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was "internal error: UnicodeDecodeError", exit 3."""
    stdin(monkeypatch, LATIN_1)
    done = generate(capsys, server, "-")
    assert done.code == EXIT_USAGE
    assert "the prompt is not UTF-8 text" in done.err
    assert "where: standard input, byte 3" in done.err
    assert not server.requests


def test_a_prompt_argument_the_shell_passed_in_another_encoding_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    """Python keeps argv bytes that are not UTF-8 as lone surrogates: they were sent on, and
    failed as "internal error: TypeError"."""
    prompt = LATIN_1.decode("utf-8", "surrogateescape")
    done = generate(capsys, server, prompt)
    assert done.code == EXIT_USAGE
    assert "the prompt argument is not UTF-8 text" in done.err and "character 3" in done.err
    done = generate(capsys, server, "Ada, 36", "--system", prompt)
    assert done.code == EXIT_USAGE and "--system is not UTF-8 text" in done.err
    assert not server.requests


def test_a_batch_prompt_template_file_that_is_not_utf8_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    """Was "internal error: UnicodeDecodeError", exit 3 (`outform schema` and `outform parse`
    already said so)."""
    (workdir / "rows.jsonl").write_text('{"id": "r1", "text": "Ada, 36"}\n')
    (workdir / "prompt.txt").write_bytes(b"Extract: {text} " + LATIN_1)
    done = run(
        capsys, "batch", "run", "rows.jsonl", "-m", MODEL, "-s", "person.json",
        "-o", "out.jsonl", "-p", "@prompt.txt",
    )  # fmt: skip
    assert done.code == EXIT_USAGE
    assert "the prompt template is not UTF-8 text" in done.err
    assert "where: prompt.txt, byte 19" in done.err  # (the é of café)
    assert not (workdir / ".outform").exists()


def test_a_schema_file_that_is_not_utf8_says_it_as_before(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "latin.json").write_bytes(b'{"description": "' + LATIN_1 + b'"}')
    done = run(capsys, "schema", "latin.json", "--dialect", "openai_strict")
    assert done.code == EXIT_USAGE
    assert "the schema file is not UTF-8 text" in done.err and "byte 20" in done.err


# -- an error names only what the command takes ------------------------------------------------


def test_a_body_over_the_limit_names_a_flag_generate_has(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    """The error said "raise --max-body-bytes", which `outform generate` did not have (only
    `outform serve` did, for another limit)."""
    body = openai_wire.chat_completion(content=orjson.dumps({"name": "Ada", "age": 36}).decode())
    server.json(body)
    done = generate(capsys, server, "Ada, 36", "--max-body-bytes", "100")
    assert done.code == EXIT_PROVIDER
    assert "fix: raise --max-body-bytes" in done.err
    server.json(body)
    done = generate(capsys, server, "Ada, 36", "--max-body-bytes", "100000")
    assert done.code == 0 and orjson.loads(done.out) == {"name": "Ada", "age": 36}


def test_the_model_of_generate_is_named_as_its_argument_not_a_flag_of_batch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`where: --model` was printed for `outform generate`, whose model is an argument."""
    done = run(capsys, "generate", "bogus:x", "hi", "-s", "person.json")
    assert done.code == EXIT_USAGE
    assert "unknown provider in model 'bogus:x'" in done.err and "where: MODEL" in done.err


@pytest.mark.parametrize("model", ["openai:", "openai"])
def test_a_model_without_its_name_says_the_name_is_missing(
    capsys: pytest.CaptureFixture[str], model: str
) -> None:
    """`openai:` was "unknown provider", though the provider is known."""
    done = run(capsys, "generate", model, "hi", "-s", "person.json")
    assert done.code == EXIT_USAGE
    assert f"no model name after the provider in {model!r}" in done.err
    assert "write the model as openai:NAME" in done.err


def test_an_unknown_level_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    done = run(capsys, "generate", MODEL, "hi", "-s", "person.json", "--level", "bogus")
    assert done.code == EXIT_USAGE
    assert "unknown level 'bogus' where: --level fix: use one of: off, minimal, full" in done.err


def test_at_the_largest_max_depth_the_error_does_not_ask_to_raise_it(
    capsys: pytest.CaptureFixture[str], workdir: Path
) -> None:
    (workdir / "deep.txt").write_text("[" * 300 + "]" * 300)
    done = run(capsys, "parse", "deep.txt", "--max-depth", "250")
    assert done.code == EXIT_INPUT
    assert "--max-depth is at its maximum (250)" in done.err
    assert "raise --max-depth" not in done.err
    done = run(capsys, "parse", "deep.txt", "--max-depth", "20")
    assert "fix: raise --max-depth" in done.err


# -- an empty prompt is refused before any call ------------------------------------------------


def test_an_empty_prompt_is_refused_before_any_call(
    capsys: pytest.CaptureFixture[str], server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was sent, and paid for (`outform batch` refuses an empty --prompt so already)."""
    done = generate(capsys, server, "  ")
    assert done.code == EXIT_USAGE
    assert "the prompt is empty" in done.err and "where: PROMPT" in done.err
    stdin(monkeypatch, b"\n")
    done = generate(capsys, server, "-")
    assert done.code == EXIT_USAGE and "where: standard input" in done.err
    assert not server.requests


# -- --json: one document for every failure -----------------------------------------------------


def _failure(done: Outcome) -> dict[str, Any]:
    document: dict[str, Any] = orjson.loads(done.out)
    assert set(document) == {"ok", "error", "kind", "where", "fix", "attempts", "usage"}
    assert document["ok"] is False
    return document


def test_with_json_a_provider_failure_prints_the_failure_document(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    """Exit 5 printed nothing on standard output, where an invalid reply printed
    {"ok": false, ...}."""
    server.json({"error": {"message": "The model does not exist"}}, status=404)
    done = generate(capsys, server, "Ada, 36", "--json")
    assert done.code == EXIT_PROVIDER
    failure = _failure(done)
    assert "answered HTTP 404" in failure["error"] and failure["usage"] is None
    assert failure["attempts"] == []


def test_with_json_a_usage_error_and_an_invalid_reply_print_the_same_keys(
    capsys: pytest.CaptureFixture[str], server: FakeServer
) -> None:
    done = generate(capsys, server, "Ada, 36", "--json", "--level", "bogus")
    assert done.code == EXIT_USAGE
    assert _failure(done)["where"] == "--level"
    server.json(openai_wire.chat_completion(content='{"name": "Ada", "age": "old"}'))
    done = generate(capsys, server, "Ada, 36", "--json", "--retries", "0")
    assert done.code == EXIT_INVALID
    failure = _failure(done)
    assert failure["kind"] == "GenerationError" and len(failure["attempts"]) == 1
    assert failure["usage"]["input_tokens"] == 31
