"""`outform generate`: ask a model, get a validated value; the mode, attempts and changes shown.

The shell face of `outform.generate`: the value on standard output; on standard error the mode
outform chose and why, one line per attempt (with what was wrong when a re-ask was needed),
what was changed, and the tokens spent. `--json` prints all of it as one document instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, cast

import typer

from outform.cli import options
from outform.cli.app import EXIT_INVALID, app, stderr
from outform.cli.io import (
    argument_text,
    for_cli,
    json_value,
    output_of,
    print_changes,
    print_error,
    print_json,
    read_utf8,
)
from outform.errors import GenerationError, OutformError, RefusalError, UsageError
from outform.format import ResponseFormat

if TYPE_CHECKING:
    from outform.plan import Mode
    from outform.providers.base import Usage
    from outform.run import Attempt, Generation


@app.command("generate")
def generate_command(
    model: Annotated[
        str, typer.Argument(help="provider:model, e.g. openai:gpt-4o or anthropic:claude-...")
    ],
    prompt: Annotated[str, typer.Argument(help="What to ask; - reads it from standard input.")],
    schema: options.Schema = None,
    type_: options.Type = None,
    system: Annotated[
        str | None, typer.Option("--system", help="A system prompt, sent before the prompt.")
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            "-m",
            help="auto (the strongest the model supports), native, tool, json or prompted.",
        ),
    ] = "auto",
    level: options.Level = None,
    retries: Annotated[
        int,
        typer.Option("--retries", "-r", min=0, help="Re-asks allowed after an invalid reply."),
    ] = 2,
    token_budget: Annotated[
        int | None,
        typer.Option("--token-budget", min=1, help="Stop re-asking once this many are spent."),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="Sampling temperature.")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", min=1, help="Longest reply, in tokens.")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="The provider's API URL (a proxy, a local server)."),
    ] = None,
    api_key_env: options.ApiKeyEnv = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds the provider may stay silent while it answers (each attempt).",
            callback=options.positive_seconds,
        ),
    ] = 120.0,
    total_timeout: Annotated[
        float,
        typer.Option(
            "--total-timeout",
            help="Seconds an answer may take, from the call to its last byte (each call).",
            callback=options.positive_seconds,
        ),
    ] = 600.0,
    max_body_bytes: Annotated[
        int | None,
        typer.Option(
            "--max-body-bytes",
            min=1,
            help="Largest answer accepted from the provider, in bytes (default 64 MiB).",
        ),
    ] = None,
    as_json: options.AsJson = False,
    max_chars: options.MaxChars = None,
    max_depth: options.MaxDepth = None,
    time_limit: options.TimeLimit = None,
    max_repair_chars: options.MaxRepairChars = None,
    max_repair_string: options.MaxRepairString = None,
) -> None:
    """Ask a model for a value matching a schema or type (neither: any JSON value).

    A reply that does not match is asked for again, told its violations (see --retries).

    The value goes to standard output; the mode, attempts and changes to standard error.
    """
    from outform.run import generate
    from outform.transport import MAX_BODY_BYTES, Transport

    with _failures_as_json(as_json):
        settings = options.parse_settings(
            level, max_chars, max_depth, time_limit, max_repair_chars, max_repair_string
        )
        output, _ = output_of(schema, type_)
        if prompt == "-":
            question = read_utf8(prompt, "prompt")
        else:
            question = argument_text(prompt, "the prompt argument")
        if not question.strip():
            raise UsageError(
                "the prompt is empty: the model would be asked nothing, and the call paid for",
                where="standard input" if prompt == "-" else "PROMPT",
                fix="pipe a prompt in (what was piped holds no text)"
                if prompt == "-"
                else "write the prompt, or pass - and pipe it in",
            )
        messages: list[dict[str, str]] = [{"role": "user", "content": question}]
        if system is not None:
            messages.insert(0, {"role": "system", "content": argument_text(system, "--system")})
        try:
            # One call: its connections close with the command.
            with Transport(
                timeout=timeout,
                total_timeout=total_timeout,
                max_body_bytes=max_body_bytes or MAX_BODY_BYTES,
            ) as transport:
                generation = generate(
                    model,
                    messages,
                    output if output is not None else ResponseFormat.json_object(),
                    mode=cast("Mode", mode),  # the planner refuses an unknown mode, naming them
                    retries=retries,
                    token_budget=token_budget,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    base_url=base_url,
                    api_key=options.key_from(api_key_env),
                    transport=transport,
                    **settings,
                )
        except GenerationError as error:
            _fail(error, as_json)
        except RefusalError as error:
            _fail(error, as_json, last="refused")
    if as_json:
        print_json(_document(generation))
        return
    assert generation.parse is not None  # a structured format always yields a parse
    print_json(json_value(generation.parse))
    stderr.print(f"mode: {generation.mode} ({generation.mode_reason})", markup=False)
    if generation.thinking:
        stderr.print(f"thinking: {generation.thinking}", markup=False)
    _print_attempts(generation.attempts, "valid")
    if generation.parse.changes:
        print_changes(generation.parse.changes, "What outform changed")
    stderr.print(f"tokens: {_tokens(generation.usage)}", markup=False)


@contextlib.contextmanager
def _failures_as_json(as_json: bool) -> Iterator[None]:
    """With --json, a failure (a provider's, a usage error, no valid reply...) is one JSON
    document on standard output too (`_failure`), whatever its exit code; the error itself
    still goes to standard error."""
    try:
        yield
    except OutformError as error:
        if as_json:
            print_json(_failure(error))
        raise


def _failure(error: OutformError) -> dict[str, Any]:
    """The --json document of a failure: the same keys for every one. `attempts` and `usage`
    are those the error carries (none for an error before or outside the re-asks: `usage`
    null)."""
    shown = for_cli(error)
    attempts: tuple[Attempt, ...] = getattr(error, "attempts", ())
    usage: Usage | None = getattr(error, "usage", None)
    return {
        "ok": False,
        "error": shown.what,
        "kind": type(error).__name__,
        "where": shown.where,
        "fix": shown.fix,
        "attempts": [_attempt(a) for a in attempts],
        "usage": dataclasses.asdict(usage) if usage is not None else None,
    }


def _fail(
    error: GenerationError | RefusalError, as_json: bool, last: str = "not valid"
) -> NoReturn:
    """No valid value: every attempt and what was wrong, then the error; exit 1. `last` says
    what became of a final attempt that carries no violations (a refusal)."""
    if as_json:
        print_json(_failure(error))
    else:
        _print_attempts(error.attempts, last)
        print_error(error)
        stderr.print(f"tokens: {_tokens(error.usage)}", markup=False)
    raise typer.Exit(EXIT_INVALID)


def _print_attempts(attempts: tuple[Attempt, ...], last: str) -> None:
    """One line per attempt; `last` is the outcome of a final attempt without violations."""
    for number, attempt in enumerate(attempts, 1):
        asked = f" (re-asked for {', '.join(attempt.fields)})" if attempt.fields else ""
        outcome = last if attempt.hint is None else "not valid"
        if attempt.aborted_at is not None:
            outcome = f"stopped at character {attempt.aborted_at}"
        stderr.print(
            f"attempt {number}{asked}: {outcome} (finish: {attempt.finish_reason}, "
            f"{_tokens(attempt.usage)})",
            markup=False,
        )
        if attempt.hint is not None:
            stderr.print(attempt.hint.explain(indent="  "), style="red", markup=False)


def _tokens(usage: Usage) -> str:
    return f"{usage.input_tokens} in, {usage.output_tokens} out"


def _attempt(attempt: Attempt) -> dict[str, Any]:
    return {
        "text": attempt.text,
        "finish_reason": attempt.finish_reason,
        "usage": dataclasses.asdict(attempt.usage),
        "hint": attempt.hint.to_dict() if attempt.hint is not None else None,
        "fields": list(attempt.fields),
        "aborted_at": attempt.aborted_at,
    }


def _document(generation: Generation[Any]) -> dict[str, Any]:
    parsed = generation.parse
    return {
        "ok": True,
        "data": json_value(parsed) if parsed is not None else None,
        "mode": generation.mode,
        "mode_reason": generation.mode_reason,
        "thinking": generation.thinking,
        "attempts": [_attempt(a) for a in generation.attempts],
        "changes": [c.to_dict() for c in parsed.changes] if parsed is not None else [],
        "ledger": [e.to_dict() for e in generation.ledger]
        if generation.ledger is not None
        else None,
        "usage": dataclasses.asdict(generation.usage),
    }
