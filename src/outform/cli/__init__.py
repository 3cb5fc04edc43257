"""The `outform` command line: one module per command, `main` turns errors into exit codes.

Exit codes (`outform --help` and docs/cli.md list them too): 0 a valid value, 1 no valid value
(the violations are printed), 2 wrong usage (bad option, file, schema, type or config), an
output that cannot be written (a full disk, an I/O error) or trace events the trace store could
not keep, 3 an internal error, 4 a reply that cannot be parsed at all (not text, over a
limit), 5 the provider failed or refused the request, 130 interrupted. Errors are printed as
one readable block, never as a traceback (set OUTFORM_DEBUG=1 for one).

A command that records traces closes the recording itself once its output is printed: events
the trace store could not keep are its error too (exit code 2 for a command that succeeded; a
command that failed keeps its own code), not a Python warning at exit (`recording`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from outform.cli import (
    batch_cmd,
    config_cmd,
    dashboard_cmd,
    generate_cmd,
    health_cmd,
    parse_cmd,
    recording,
    schema_cmd,
    serve_cmd,
)
from outform.cli.app import (
    EXIT_CODES,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_PROVIDER,
    EXIT_USAGE,
    app,
    stderr,
)
from outform.cli.io import (
    ENVIRONMENT_ERRNOS,
    RUNNING,
    STDOUT,
    bad_value,
    command_path,
    print_error,
    print_output_error,
    system_failed,
    write_failed,
)
from outform.errors import InputError, InternalError, OutformError, OutputError, ProviderError
from outform.trace.recorder import Recorder

__all__ = [
    "EXIT_CODES",
    "EXIT_INPUT",
    "EXIT_INTERNAL",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_PROVIDER",
    "EXIT_USAGE",
    "main",
    "run",
]

_COMMANDS = (
    batch_cmd,
    config_cmd,
    dashboard_cmd,
    generate_cmd,
    health_cmd,
    parse_cmd,
    schema_cmd,
    serve_cmd,
)  # registered by @app.command


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn errors into messages and exit codes. Standard output
    and standard error may close while it runs (`| head -c1`, `2>&-`, a reader that quit):
    what would have gone there is dropped, silently, and the exit code is still the one of
    the outcome (`_Dropping`)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _Dropping.around(sys.stdout, STDOUT)
    sys.stderr = _Dropping.around(sys.stderr, None)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


class _Dropping:
    """A standard stream whose reader may go away. The first write or flush that finds the
    pipe closed (EPIPE) turns the stream into a sink: the file descriptor then points at the
    null device, so that nothing written later, nor what Python's buffers still hold when it
    flushes them at exit ("Exception ignored ... BrokenPipeError", exit code 120), fails. A
    closed reader is no error of the command: its exit code stays the documented one.

    A write the system refuses (a full disk, an I/O error: `ENOSPC`, `EIO`...) turns the stream
    into a sink too, and on standard output (`name`) it is the command's error, naming the
    stream and the reason (exit code 2): the value was lost. Standard error holds what is
    meant for people, and there is nowhere left to tell them: it is dropped, as for EPIPE."""

    def __init__(self, stream: Any, name: str | None) -> None:
        self._stream = stream
        self._name = name
        self.gone = False
        self._refused: Exception | None = None

    @classmethod
    def around(cls, stream: Any, name: str | None) -> Any:
        return stream if stream is None or isinstance(stream, cls) else cls(stream, name)

    def write(self, text: Any) -> int:
        if not self.gone:
            try:
                return int(self._stream.write(text))
            except OSError as exc:
                self._failed(exc)
        self._again()
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._failed(exc)
        self._again()

    def _failed(self, exc: OSError) -> None:
        """Drop from now on; a refused write (not a closed pipe) to standard output is the
        command's error."""
        self._drop()
        if self._name is not None and not isinstance(exc, BrokenPipeError):
            self._refused = write_failed(exc, self._name)

    def _again(self) -> None:
        """The refusal, at every write to the stream: one that a library swallows (click
        probes a stream with an empty write) must not make the rest vanish in silence."""
        if self._refused is not None:
            raise self._refused

    def _drop(self) -> None:
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
            self._stream.flush()  # what the buffers held goes to the null device
        except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _main(argv: list[str] | None) -> int:
    running = RUNNING.set(command_path(sys.argv[1:] if argv is None else argv))
    before = recording.running()
    try:
        return _recorded(_run(argv), before)
    finally:
        RUNNING.reset(running)


def _recorded(code: int, before: Recorder | None) -> int:
    """The exit code once the recording the command started is closed, after its output:
    trace events its store could not keep are told as errors; they make a success exit 2,
    and a command that failed keeps its own code (what it found is the news; the loss is
    said after its error). Interrupted while the store finishes: 130, as any interruption."""
    try:
        lost = recording.close(before)
    except KeyboardInterrupt:
        stderr.print("aborted", style="red")
        return EXIT_INTERRUPTED
    for error in lost:
        print_error(error)
    return EXIT_USAGE if lost and code == EXIT_OK else code


def _run(argv: list[str] | None) -> int:
    try:
        # Not standalone: click's errors come here, so that a bad flag value is told as every
        # other error is (an unknown option or a missing argument keeps click's usage line).
        returned = app(args=argv, prog_name="outform", standalone_mode=False)
    except SystemExit as done:
        code = done.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except typer.BadParameter as error:
        if type(error).__name__ == "MissingParameter":
            # A missing argument or option: shown as click shows it, with the usage line
            # (typer's own copy of click raises it, so it is told by its name).
            error.show()
            return EXIT_USAGE
        print_error(bad_value(error))
        return EXIT_USAGE
    except typer.TyperException as error:  # click's own: shown as click shows it
        show = getattr(error, "show", None)
        if show is not None:
            show()
        return error.exit_code
    except typer.Abort:
        stderr.print("aborted", style="red")
        return EXIT_INTERRUPTED
    except OutputError as error:
        print_output_error(error)
        return EXIT_INVALID
    except InputError as error:
        print_error(error)
        return EXIT_INPUT
    except ProviderError as error:
        print_error(error)
        return EXIT_PROVIDER
    except InternalError as error:  # a fault of outform's, caught at a public function
        print_error(error)
        return EXIT_INTERNAL
    except OutformError as error:
        print_error(error)
        return EXIT_USAGE
    except KeyboardInterrupt:
        stderr.print("aborted", style="red")
        return EXIT_INTERRUPTED
    except Exception as error:  # the last line of defence: no traceback unless asked
        if isinstance(error, OSError) and error.errno in ENVIRONMENT_ERRNOS:
            print_error(system_failed(error))  # a full disk met where no helper knew the file
            return EXIT_USAGE
        if os.environ.get("OUTFORM_DEBUG"):
            raise
        stderr.print(
            f"internal error: {type(error).__name__}: {error}\n"
            "  fix: this is a bug in outform; rerun with OUTFORM_DEBUG=1 and report the traceback",
            style="red",
            markup=False,
        )
        return EXIT_INTERNAL
    return returned if isinstance(returned, int) else EXIT_OK  # an Exit's code, or None


def run() -> None:
    sys.exit(main())
