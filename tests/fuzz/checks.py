"""The properties every input must keep, as functions shared by the fuzz tests and the big run.

Each check runs one input through one public surface and raises `BrokenPromiseError` when a
promise is broken:

- only outform's errors leave (an `InternalError` is a finding too: the last-line guard caught
  a bug);
- no value is changed without a recorded change: a result without changes holds the reply's
  own JSON, as a strict reader reads it (or the reply itself, as a string);
- every result validates against its schema (checked by jsonschema-rs, not by outform);
- results are deterministic: the same input twice gives the same value, changes or error;
- no value nests deeper than `max_depth`;
- the stream parser, fed in any chunking, ends where `parse` does, and stops a stream early
  only on a value that is doomed: no JSON value starts where a syntax stop says (JSON as
  outform reads it, which is stricter than the standard library: see `_json_starts`), and the
  value a schema stop followed does not parse on its own (that value only, not those written
  after it: see `_value_end`);
- every dialect translates a schema or refuses it with outform's error; a translation obeys its
  dialect's rules and compiles, and a valid value makes the round trip;
- the gateway's request parsing answers any body with at worst a 4xx, and enforcement's check of
  a reply never fails.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import jsonschema_rs
import orjson

import outform
from outform.errors import (
    InputError,
    InternalError,
    OutformError,
    OutputError,
    StreamAbortedError,
)
from outform.gateway import chain
from outform.gateway import translate as gateway_translate
from outform.gateway.checks import CheckSettings, Verdict, check_reply
from outform.gateway.enforce import checkable
from outform.gateway.handlers import _json_object
from outform.gateway.replies import GatewayError
from outform.parse.decode import Decoded, decode
from outform.schema.dialects import NotRepresentableError, check_rules, names, translate
from outform.streaming import StreamParser
from tests.fuzz.grammar import Case, plain


class Clock:
    """How long the last public call took (`last`), for the big run's time report; for a
    parse, `first` is the first of its two calls (which compiled the schema, if new)."""

    last = 0.0
    first = 0.0


CLOCK = Clock()


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(...)`, its duration in `CLOCK.last` (also when it raises)."""
    start = time.perf_counter()
    try:
        return fn(*args, **kwargs)
    finally:
        CLOCK.last = time.perf_counter() - start


class BrokenPromiseError(AssertionError):
    """A broken promise, with the input that breaks it."""

    def __init__(self, what: str, subject: Any, cause: BaseException | None = None) -> None:
        self.what = what
        self.subject = subject
        detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
        super().__init__(f"{what}{detail}\n  input: {_short(subject)}")
        if cause is not None:
            self.__cause__ = cause


def _short(subject: Any, limit: int = 600) -> str:
    text = repr(subject)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text):,} characters)"


def _foreign(exc: BaseException, what: str, subject: Any) -> BrokenPromiseError:
    if isinstance(exc, InternalError):
        return BrokenPromiseError(f"{what}: outform's guard caught a bug", subject, exc)
    return BrokenPromiseError(f"{what}: an exception that is not outform's", subject, exc)


# -- parse ---------------------------------------------------------------------------------------


Outcome = tuple[str, Any]
"""("ok", (data, changes)) or (error class name, what it says)."""


def parse_outcome(case: Case, level: str, **options: Any) -> tuple[Outcome, Any]:
    """Parse once: the outcome, and the result (None on an error). Only outform's errors may
    leave, and an InternalError is a bug."""
    try:
        result = timed(outform.parse, case.text, case.schema, level=level, **options)
    except InternalError as exc:
        raise _foreign(exc, f"parse at level {level!r}", case) from exc
    except OutputError as exc:
        return (type(exc).__name__, exc.hint.message()), None
    except OutformError as exc:
        return _error(exc), None
    except Exception as exc:
        raise _foreign(exc, f"parse at level {level!r}", case) from exc
    if depth(result.data) > options.get("max_depth", MAX_DEPTH):
        raise BrokenPromiseError(f"the value at level {level!r} nests deeper than max_depth", case)
    changes = tuple(_change_key(c) for c in result.changes)
    return ("ok", (_key(result.data), changes)), result


def check_parse(case: Case, level: str, **options: Any) -> Outcome:
    """Every parse property for one case at one level; the outcome."""
    outcome, result = parse_outcome(case, level, **options)
    first = CLOCK.last
    if result is not None:
        if not _valid(case.schema, result.data):
            raise BrokenPromiseError(
                f"the result at level {level!r} does not match its schema", case
            )
        if not result.changes and not _as_written(case.text, result.data):
            raise BrokenPromiseError(
                f"the value at level {level!r} differs from the reply with no change recorded",
                (case, result.data),
            )
    again, _ = parse_outcome(case, level, **options)
    if again != outcome and not _timed_out(outcome, again):
        raise BrokenPromiseError(f"two parses at level {level!r} differ", (case, outcome, again))
    CLOCK.first = first
    return outcome


MAX_DEPTH = 200
"""The default `max_depth`."""


def depth(value: Any) -> int:
    """How deep a JSON value nests (a scalar: 0), without recursion."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
        else:
            continue
        deepest = max(deepest, level + 1)
    return deepest


def _error(exc: OutformError) -> Outcome:
    """An error as an outcome: a limit by the option it names (the stream parser meets a
    limit earlier than the pipeline, in other words), anything else by what it says."""
    if isinstance(exc, InputError) and exc.fix and "option" in exc.fix:
        return ("InputError", exc.fix)
    return (type(exc).__name__, exc.what)


def _timed_out(*outcomes: Outcome) -> bool:
    """A time limit may fall at a different place on a busy machine."""
    return any(kind == "InputError" and "time_limit" in str(what) for kind, what in outcomes)


def _as_written(text: str, data: Any) -> bool:
    """Whether `data` is the reply as written: its JSON read strictly (exact integers, or as
    orjson reads them), or the reply itself as a string."""
    if isinstance(data, str) and data == text:
        return True
    stripped = text.strip()
    for read in (_exact, _integers_kept, orjson.loads):
        try:
            value = read(stripped)
        except (ValueError, TypeError, RecursionError):
            continue
        if _same(value, data):
            return True
    return False


def _exact(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant)


def _integers_kept(text: str) -> Any:
    """The documented reading of an integer written with a fraction or an exponent past a
    float's exact integers (docs/pipeline.md#values): `9007199254740993.0` and
    `100000000000000010e5` are the integers they write, where a float rounds them; a float's
    own shortest spelling stays that float."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_integer_if_rounded)


def _integer_if_rounded(literal: str) -> Any:
    number = float(literal)
    exact = Decimal(literal)
    if (
        number.is_integer()
        and abs(number) >= 2**53
        and exact == exact.to_integral_value()
        and exact != Decimal(repr(number))
    ):
        return int(exact)
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _same(a: Any, b: Any) -> bool:
    """JSON equality that tells true from 1 and 1 from 1.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


_VALIDATORS: dict[bytes, Any] = {}


def _valid(schema: Any, data: Any) -> bool:
    key = _schema_key(schema)
    validator = _VALIDATORS.get(key)
    if validator is None:
        if len(_VALIDATORS) > 256:
            _VALIDATORS.clear()
        validator = _VALIDATORS[key] = jsonschema_rs.validator_for(schema)
    return bool(validator.is_valid(data))


def _schema_key(schema: Any) -> bytes:
    try:
        return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return repr(schema).encode("utf-8", "surrogatepass")


def _key(value: Any) -> Any:
    """A comparable, hashable form of a JSON value (floats and ints kept apart)."""
    if isinstance(value, dict):
        return ("{", tuple((k, _key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[", tuple(_key(v) for v in value))
    if isinstance(value, float):
        return ("float", repr(value))  # NaN equals no NaN
    return (type(value).__name__, value)


def _change_key(change: Any) -> Any:
    return (
        change.path,
        change.stage,
        change.transform,
        _key(change.before),
        _key(change.after),
        change.detail,
        change.lost,
    )


# -- the stream parser ---------------------------------------------------------------------------


def check_stream(case: Case, level: str, cuts: Sequence[int], expected: Outcome) -> None:
    """Feed `case.text` cut at `cuts`; the end must be `expected` (parse's outcome)."""
    subject = (case, level, list(cuts))
    parser: StreamParser[Any] | None = None
    got: Outcome

    def stream() -> Any:
        nonlocal parser
        parser = StreamParser(case.schema, level=level, degeneration=None)
        start = 0
        for cut in cuts:
            parser.feed(case.text[start:cut])
            start = cut
        return parser.finish()

    try:
        result = timed(stream)
        got = ("ok", (_key(result.data), tuple(_change_key(c) for c in result.changes)))
    except StreamAbortedError as exc:
        # The stream follows one JSON value, and a reply that corrects itself in a later block
        # is stopped on the first one's mistake (docs/streaming.md, "Limits"): the value it
        # followed must be doomed. A syntax stop: no JSON value, as outform reads JSON, starts
        # where it starts; a schema stop: that value alone does not parse at this level.
        seconds = CLOCK.last
        if expected[0] == "ok" and parser is not None:
            followed = parser.parser
            broken = followed.error is not None
            _check_stop(case, level, exc, followed.start, followed.end, broken, subject)
        CLOCK.last = seconds
        return
    except InternalError as exc:
        raise _foreign(exc, f"the stream parser at level {level!r}", subject) from exc
    except OutputError as exc:
        got = (type(exc).__name__, exc.hint.message())
    except OutformError as exc:
        got = _error(exc)
    except Exception as exc:
        raise _foreign(exc, f"the stream parser at level {level!r}", subject) from exc
    if got != expected and not _timed_out(got, expected):
        raise BrokenPromiseError(
            f"the stream at level {level!r} ends unlike parse", (subject, expected, got)
        )


def _check_stop(
    case: Case,
    level: str,
    stop: StreamAbortedError,
    start: int | None,
    end: int | None,
    broken: bool,
    subject: Any,
) -> None:
    text = stop.text
    begin = start if start is not None else len(text) - len(text.lstrip())
    if stop.reason == "syntax" or (broken and level != "full"):
        # (A schema stop in the chunk where the value also broke as JSON is a syntax stop too:
        # below `full` the stream stops on either, and the pipeline reads the regions inside a
        # value that is not JSON as it reads prose.)
        valid = _json_starts(text, begin)
        followed = text[begin:]
    else:
        followed = text[begin : end if end is not None else _value_end(text, begin)]
        valid = parse_outcome(Case(case.family, followed, case.schema), level)[0][0] == "ok"
    if valid:
        raise BrokenPromiseError(
            f"the stream at level {level!r} stopped ({stop.reason}) on a value that can be valid",
            (subject, followed),
            stop,
        ) from stop


def _json_starts(text: str, begin: int) -> bool:
    """Whether a JSON value starts at `begin`, as outform reads JSON below `full` (where no
    syntax error stops a stream): RFC 8259 text that is also Unicode text, as orjson reads it
    (the reader of the pipeline's strict tier and of the stream parser), a number or literal
    read as the whole word it begins (docs/pipeline.md, "Values"). The standard library's
    reader only finds where the value ends: it takes more than outform, an escaped lone
    surrogate (`"\\ud800"`, half of a UTF-16 pair, which no UTF-8 text can hold), `NaN`,
    `1e400` (as infinity), and the `0` of `01` or of `0x1F` (a word that is no JSON number).
    None of those is a value to outform, so a stop on one is by the rule (the first value
    decides); outform's strict reading (orjson, and a number no float holds refused, `1e-400`
    as `1e400`: docs/pipeline.md, "Values") alone judges the value read."""
    try:
        _, end = _FINDER.raw_decode(text, begin)
    except ValueError:
        return False
    if text[begin] not in '"[{':
        end = _word_end(text, begin)
    return isinstance(decode(text[begin:end], 0), Decoded)


def _value_end(text: str, begin: int) -> int:
    """Where the value that starts at `begin` ends, for a schema stop whose value the parser
    did not see end (it broke on a syntax error later in the same chunk): a container where its
    brackets balance (strings skipped), as the pipeline delimits a region of a reply; a string
    at its closing quote; a number or literal at the end of its word; the end of the text if it
    is still open. "That value alone" is this, not the values written after it, one of which
    `parse` may well take."""
    head = text[begin : begin + 1]
    if head not in ('"', "{", "["):
        return _word_end(text, begin)
    depth = 0
    for part in _VALUE_PARTS.finditer(text, begin):
        token = part.group()
        if token in ("{", "["):
            depth += 1
        elif token in ("}", "]"):
            depth -= 1
        if depth <= 0:
            return part.end()
    return len(text)


def _word_end(text: str, begin: int) -> int:
    match = _WORD.match(text, begin)
    return match.end() if match else begin


_FINDER = json.JSONDecoder()
_WORD = re.compile(r"[-+.0-9A-Za-z]*")
"""A number or literal is read as the whole word it begins (`0x1F`, `7apples` and `trueish`
are one word each, and no JSON), as the stream parser and the pipeline read it."""
_VALUE_PARTS = re.compile(r'"(?:[^"\\]|\\.?)*+"?|[{}\[\]]', re.DOTALL)
"""A string (closed or not) or a bracket."""


# -- the dialect translators ---------------------------------------------------------------------


def check_dialects(schema: Any, instance: Any = None, dialects: Sequence[str] = ()) -> int:
    """Translate `schema` into every dialect: only outform's errors; a translation obeys its
    dialect's rules and compiles; an instance valid under the schema makes the round trip or
    is refused with a NotRepresentableError. How many dialects translated it (`CLOCK.last`:
    the slowest translation)."""
    translated = 0
    slowest = 0.0
    valid = _valid_instance(schema, instance)
    for dialect in dialects or names():
        subject = (schema, dialect)
        try:
            result = timed(translate, schema, dialect)
        except InternalError as exc:
            raise _foreign(exc, f"translate into {dialect!r}", subject) from exc
        except OutformError:
            continue
        except Exception as exc:
            raise _foreign(exc, f"translate into {dialect!r}", subject) from exc
        finally:
            slowest = max(slowest, CLOCK.last)
        translated += 1
        problems = check_rules(result.schema, dialect)
        if problems:
            raise BrokenPromiseError(
                f"the {dialect} translation breaks its rules: {problems}", subject
            )
        try:
            jsonschema_rs.validator_for(result.validation_schema)
        except Exception as exc:
            raise BrokenPromiseError(
                f"the {dialect} wire schema does not compile", subject, exc
            ) from exc
        if valid:
            _round_trip(result, plain(instance), (schema, dialect, instance))
    CLOCK.last = slowest
    return translated


def _valid_instance(schema: Any, instance: Any) -> bool:
    if instance is None:
        return False
    try:
        return _valid(schema, plain(instance))
    except Exception:  # not JSON (a `1e400` token), or a schema jsonschema-rs refuses
        return False


def _round_trip(result: Any, instance: Any, subject: Any) -> None:
    try:
        sent = result.forward(instance)
    except NotRepresentableError:
        return  # a narrowing the dialect documents
    except InternalError as exc:
        raise _foreign(exc, "forward", subject) from exc
    except OutformError:
        return
    except Exception as exc:
        raise _foreign(exc, "forward", subject) from exc
    if not _valid(result.validation_schema, sent):
        raise BrokenPromiseError("forward gives a value the wire schema refuses", (subject, sent))
    try:
        back = result.reverse(sent)
    except Exception as exc:
        raise _foreign(exc, "reverse", subject) from exc
    if not _same(back, instance) and not _loose_same(back, instance):
        raise BrokenPromiseError("forward then reverse changes the value", (subject, sent, back))


def _loose_same(a: Any, b: Any) -> bool:
    from outform.schema.dialects.codec import same

    return same(a, b)


# -- the gateway's request parsing ---------------------------------------------------------------


def check_gateway(body: bytes, reply: str = "", level: str = "minimal") -> str:
    """A `POST /v1/responses` body through the gateway's pure request functions (what
    `create_response` runs before it calls the backend), then, for a format enforcement can
    check, a reply through the check a worker runs. Only a GatewayError (a 4xx answer) may
    leave; anything else is a 500. What came of it (`CLOCK.last`: the request's parsing and,
    if any, the reply's check)."""
    start = time.perf_counter()
    try:
        return _gateway(body, reply, level)
    finally:
        CLOCK.last = time.perf_counter() - start


def _gateway(body: bytes, reply: str, level: str) -> str:
    try:
        req = _json_object(body)
        gateway_translate.check_request(req)
        text = req.get("text")
        fmt = checkable(text.get("format") if text else None)
        value = req.get("input")
        items = chain.input_items(value if value is not None else [])
        chat = gateway_translate.chat_request(
            req, req["model"], chain.conversation_for(None, items), stream=bool(req.get("stream"))
        )
        orjson.dumps(chat)
    except GatewayError as exc:
        if not 400 <= exc.status < 500:
            raise BrokenPromiseError(
                f"the gateway answers {exc.status} to a request", body, exc
            ) from exc
        return f"{exc.status}"
    except Exception as exc:
        raise BrokenPromiseError("the gateway's request parsing fails: a 500", body, exc) from exc
    if fmt is None:
        return "forwarded"
    try:
        verdict: Verdict = check_reply(reply, fmt, CheckSettings(level, 5.0), False)
    except Exception as exc:
        raise BrokenPromiseError(
            "enforcement's check of a reply fails: a 500", (body, reply), exc
        ) from exc
    return verdict.kind


LEVELS = ("off", "minimal", "full")

__all__ = [
    "CLOCK",
    "LEVELS",
    "BrokenPromiseError",
    "check_dialects",
    "check_gateway",
    "check_parse",
    "check_stream",
    "parse_outcome",
]
