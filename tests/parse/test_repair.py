"""json-repair under the time limit (parse/repair.py): its reading is json-repair's own, the
deadline interrupts it from inside its parser, wherever its work grows, and it is stopped in a
string longer than `max_repair_string`.

Nothing here measures time: the clock is a fake that stands still until json-repair's parser
reads it, then jumps past the limit; the work json-repair does on a string is counted as the
characters it copies.
"""

from __future__ import annotations

from typing import Any

import json_repair
import json_repair.parse_string
import pytest

import outform
from outform import ConfigError, InputError, OutputError, Pipeline
from outform.parse import context
from outform.parse.context import Deadline
from outform.parse.decode import MAX_REPAIR_STRING
from outform.parse.repair import LongString, repair
from tests.parse.clocks import ExpiresInside, in_module, raised_inside

UNQUOTED_ITEMS = "[" + ",".join("{name: x price: 1}" for _ in range(1000)) + "]"
"""json-repair's time grows with the square of this (it rescans the rest of the text at every
comma of an unquoted value): 2.9 s at 19 KB, 11 s at twice that (issue 10)."""

ESCAPED_STRING = '{"log": "' + 'line \\"q\\" [\\u00e9]\\n' * 20000
"""An unterminated string full of escapes: json-repair rebuilds the string at every escape
(5.1 s, blamed on stage 'unescape', in issue 10). Its brackets leave its end to json-repair
(the delimit pass writes a string cut off at the end itself only where none follows)."""


@pytest.mark.parametrize(
    ("reply", "schema"),
    [(UNQUOTED_ITEMS, {"type": "array"}), (ESCAPED_STRING, {"type": "object"})],
    ids=["unquoted-items", "escaped-string"],
)
def test_the_time_limit_interrupts_json_repair_from_inside_its_parser(
    monkeypatch: pytest.MonkeyPatch, reply: str, schema: dict[str, str]
) -> None:
    """The limit is found while json-repair reads, not after it returns: the error is raised
    from inside its parser, and names the limit and the stage doing the work."""
    monkeypatch.setattr(context, "clock", ExpiresInside(in_module("json_repair")))
    with pytest.raises(InputError) as caught:
        outform.parse(reply, schema, level="full", time_limit=0.2)
    assert "time limit (0.2 s), in stage 'decode'" in caught.value.what
    assert caught.value.fix is not None and "time_limit" in caught.value.fix
    assert raised_inside(caught.value.__traceback__, in_module("json_repair"))


def test_an_expired_deadline_stops_json_repair_at_once() -> None:
    expired = Deadline(-1.0)
    expired.stage = "decode"
    with pytest.raises(InputError, match="in stage 'decode'"):
        repair(UNQUOTED_ITEMS, expired, MAX_REPAIR_STRING)


@pytest.mark.parametrize(
    "text",
    [
        "{'a': True, 'b': None}",
        '{"a": [1, 2,',
        "{name: x price: 1}",
        '{"key": "v"alue"}',
        'Here: {"a": 1} and [2, 3',
        '{"log": "line \\"q\\" \\u00e9\\n',
        "",
    ],
)
def test_the_reading_and_its_log_are_json_repairs_own(text: str) -> None:
    expected = json_repair.repair_json(
        text, return_objects=True, skip_json_loads=True, logging=True
    )
    assert repair(text, Deadline.never(), MAX_REPAIR_STRING) == expected


# -- one string json-repair reads itself ------------------------------------------------------

ESCAPES = '\\udc00\\udc00\\ud83d\\ude00\\"\\"\\x\\\\\\/'
"""A unit of string body as the fuzzer's `long_escapes` family writes it (as written in the
reply): JSON's escapes, lone surrogates and one JSON lacks (`\\x`)."""


def cut_off(length: int) -> str:
    """A string cut off at the end of the reply, with what may be a member after a line break
    (issue 9, the fuzzer's `long_escapes` seed 8382): the delimit pass cannot tell where the
    string ends (its quote may be left out before the member), so json-repair must read it
    itself, and it is not held."""
    body = (ESCAPES * (length // len(ESCAPES) + 1))[:length]
    while body.endswith("\\"):
        body = body[:-1]
    return '{"a": "' + body + "\nnote: see"


def copies(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the length of the string json-repair has built at each piece it adds to it:
    what it copies then (its `string_acc += ...`, in the version pinned by pyproject.toml)."""
    sizes: list[int] = []
    real = json_repair.parse_string._append_string_content

    def spy(state: Any, content: str) -> None:
        sizes.append(len(state.string_acc))
        real(state, content)

    monkeypatch.setattr(json_repair.parse_string, "_append_string_content", spy)
    return sizes


def test_json_repairs_copying_stops_growing_at_max_repair_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """json-repair copies the string it builds at every piece it adds, so one string cost it
    the square of its length (0.65 s at 182,000 characters of escapes, 0.2 s at half that).
    It is stopped past `max_repair_string` characters of the text: what it copies is the same
    for a string cut off of twice the length (it was four times as much), the tier is
    skipped, and says so."""
    sizes = copies(monkeypatch)
    work = []
    for length in (2 * MAX_REPAIR_STRING, 4 * MAX_REPAIR_STRING):
        sizes.clear()
        reply = cut_off(length)
        with pytest.raises(OutputError) as caught:
            outform.parse(reply, {"type": "object"}, level="full")
        work.append(sum(sizes))
    assert work[0] > 0  # json-repair did read the string, and built it
    assert work[1] / work[0] <= 1.1  # before: 4.0
    error = caught.value
    assert f"more than {MAX_REPAIR_STRING:,} characters, over the 'max_repair_string'" in (
        error.what
    )
    assert error.fix == "raise the 'max_repair_string' option to let json-repair read the string"
    assert error.result is not None
    (skip,) = [c for c in error.result.changes if c.transform == "skip_json_repair"]
    assert skip.stage == "tolerant"
    assert skip.before == f"{len(reply):,} characters"
    assert "'max_repair_string'" in skip.detail


def test_a_string_up_to_max_repair_string_is_json_repairs_to_read() -> None:
    reply = '{"a": "' + "x" * 50 + "\nnote: see"  # (a member inside: its end is json-repair's)
    read = len(reply) - reply.index('"', 5)  # from its opening quote to the end
    expected = {"a": "x" * 50 + "\nnote: see"}
    assert outform.parse(reply, {}, level="full", max_repair_string=read).value == expected
    with pytest.raises(OutputError, match="'max_repair_string' limit"):
        outform.parse(reply, {}, level="full", max_repair_string=read - 1)
    assert outform.parse(reply, {}, level="full").value == expected


def test_a_string_held_out_of_json_repair_is_not_its_to_read() -> None:
    """A long string whose end the delimit pass decides is read by outform (held.py), at any
    `max_repair_string`: json-repair reads a placeholder."""
    body = "x\\n" * 5_000
    reply = '{"text": "' + body + '", "m": [1 2]}'
    result = outform.parse(reply, {}, level="full", max_repair_string=100)
    assert result.value == {"text": "x\n" * 5_000, "m": [1, 2]}


def test_the_stop_is_raised_from_inside_json_repairs_parser() -> None:
    text = '{"a": "' + "x" * 100
    with pytest.raises(LongString) as caught:
        repair(text, Deadline.never(), 50)
    assert caught.value.longest == 50
    assert raised_inside(caught.value.__traceback__, in_module("json_repair"))
    assert repair(text, Deadline.never(), 101)[0] == {"a": "x" * 100}


@pytest.mark.parametrize("value", [-1, 1.5, True, "10"])
def test_max_repair_string_must_be_a_whole_number(value: Any) -> None:
    with pytest.raises(ConfigError, match="max_repair_string"):
        Pipeline({}, max_repair_string=value)


def test_max_repair_string_defaults_to_the_decoders_limit() -> None:
    assert Pipeline({}).options.max_repair_string == MAX_REPAIR_STRING == 65_536
