"""Replies, schemas and options outform refuses, each with an error that says why."""

from __future__ import annotations

import datetime
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import outform
from outform import ConfigError, InputError, OutputError, Processor, SchemaError, UsageError
from outform.parse import LEVELS, values
from outform.streaming import StreamParser

OBJECT = {"type": "object"}

# -- replies --------------------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["", "   \n\t"])
def test_an_empty_reply_is_an_output_error_saying_it_is_empty(reply: str) -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, OBJECT)
    assert caught.value.hint.is_syntax
    assert "the reply is empty" in caught.value.hint.message()


def test_an_empty_reply_is_a_valid_empty_string_when_a_string_is_wanted() -> None:
    assert outform.parse("", {"type": "string"}).value == ""


def test_bytes_that_are_not_utf8_are_refused_naming_the_byte() -> None:
    with pytest.raises(InputError) as caught:
        outform.parse(b'{"a": "\xff"}', OBJECT)
    assert caught.value.where == "byte 7"
    assert "UTF-8" in caught.value.what


def test_a_nul_character_is_refused_naming_its_position() -> None:
    with pytest.raises(InputError) as caught:
        outform.parse('{"a": 1}\x00', OBJECT)
    assert caught.value.where == "character 8"


def test_a_reply_over_max_chars_is_refused_with_the_option_to_raise() -> None:
    with pytest.raises(InputError) as caught:
        outform.parse("x" * 101, {"type": "string"}, max_chars=100)
    assert "101 characters" in caught.value.what
    assert caught.value.fix is not None
    assert "max_chars" in caught.value.fix


def test_a_reply_of_exactly_max_chars_is_accepted() -> None:
    assert outform.parse("x" * 100, {"type": "string"}, max_chars=100).value == "x" * 100


def test_a_reply_that_is_not_text_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="got int"):
        outform.parse(42, OBJECT)  # type: ignore[arg-type]


def test_a_broken_reply_nested_over_max_depth_is_refused_with_the_option_to_raise() -> None:
    with pytest.raises(InputError) as caught:
        outform.parse("[" * 300, {})
    assert "300 levels" in caught.value.what
    assert caught.value.fix is not None
    assert "max_depth" in caught.value.fix


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize("schema", [{}, {"type": "array"}])
def test_max_depth_holds_for_valid_json_too(level: str, schema: dict[str, Any]) -> None:
    """A limit is a limit on every path: valid JSON (the fast path) nested deeper than
    `max_depth` is refused like a broken reply."""
    assert outform.parse("[" * 10 + "]" * 10, schema, max_depth=10, level=level).ok
    for reply in ("[" * 11 + "]" * 11, "[" * 50 + "]" * 49):
        with pytest.raises(InputError) as caught:
            outform.parse(reply, schema, max_depth=10, level=level)
        assert "over the limit of 10" in caught.value.what


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    "reply",
    [
        "[" * 201 + ' here is it {"a": 1}',
        "Use [ here. " * 100_000 + '{"a": 1}',
        "{ or " * 300 + '{"a": 1}',
        "Here: " + "[ [" * 150 + ' x {"a": 1}',
    ],
    ids=["a run of 201", "100,000 apart", "300 braces", "after prose"],
)
def test_brackets_in_prose_do_not_count_toward_max_depth(reply: str, level: str) -> None:
    """`max_depth` measures the nesting of what is read as JSON: openers that cannot begin it
    (a run of them is judged by its innermost, `[[ here`) are prose, however many."""
    assert outform.parse(reply, OBJECT, level=level).value == {"a": 1}


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    "reply",
    [
        "Here: " + '{"a": ' * 201 + "1" + "}" * 201,
        "Use [ here. " * 1000 + "[" * 201 + "1",
        "[ here " + "[" * 201 + "]" * 201,
        "{ or " * 300 + "[" * 201,
    ],
    ids=["after prose", "after prose brackets", "inside a prose bracket", "left open"],
)
def test_json_nested_too_deep_after_prose_brackets_is_still_refused(reply: str, level: str) -> None:
    with pytest.raises(InputError, match="over the limit of 200"):
        outform.parse(reply, OBJECT, level=level)


def test_max_depth_holds_for_a_typed_reply_valid_as_sent() -> None:
    class Deep(BaseModel):
        a: list[Any]

    nested = '{"a": ' + "[" * 30 + "]" * 30 + "}"
    assert outform.parse(nested, type=Deep, max_depth=40).value.a
    with pytest.raises(InputError, match="31 levels deep"):
        outform.parse(nested, type=Deep, max_depth=30)


def test_a_deep_reply_valid_as_sent_is_refused_at_the_default_depth() -> None:
    """Found by the fuzzer: 1,000 nested objects (valid JSON, which orjson reads up to 1,024
    levels) were returned whole although `max_depth` is 200."""
    reply = '{"a": ' * 1000 + "1" + "}" * 1000
    with pytest.raises(InputError, match="1000 levels deep, over the limit of 200"):
        outform.parse(reply, {"type": "object"})


@pytest.mark.parametrize(
    "reply",
    [
        "{" * 5000,
        "}" * 5000,
        "{]" * 5000,
        "[{" * 3000,
        "}{" * 5000,
        "{}," * 5000,
        '{"a":' * 3000,
        '"' + "{" * 5000,
        "\\" * 5000 + "{",
        "[," * 5000,
    ],
    ids=lambda reply: repr(reply[:6]),
)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_thousands_of_unbalanced_brackets_are_handled(reply: str, level: str) -> None:
    """The reply is refused with an outform error, or read into a value of the schema."""
    try:
        result = outform.parse(reply, OBJECT, level=level)
    except (InputError, OutputError):
        return
    assert isinstance(result.value, dict)


def test_thousands_of_open_brackets_under_the_highest_depth_limit_are_refused() -> None:
    with pytest.raises(InputError, match="over the limit of 250"):
        outform.parse("{" * 5000, OBJECT, level="full", max_depth=250)


def test_max_depth_stops_where_the_value_libraries_do() -> None:
    """orjson writes, and jsonschema-rs reports on, values of at most 254 levels: a higher
    `max_depth` could not be honoured, so it is refused up front."""
    with pytest.raises(ConfigError, match="an integer from 1 to 250"):
        outform.parse("{}", OBJECT, max_depth=251)
    deep = '{"a": ' * 250 + '"x"' + "}" * 250
    node = {"type": ["object", "integer"], "properties": {"a": {"$ref": "#/$defs/node"}}}
    schema = {"$defs": {"node": node}, "$ref": "#/$defs/node"}
    for level in LEVELS:  # a violation 250 levels down is reported
        with pytest.raises(OutputError) as caught:
            outform.parse(deep, schema, max_depth=250, level=level)
        assert caught.value.hint.violations[0].path == "/a" * 250


def test_unbalanced_brackets_around_an_object_do_not_hide_it() -> None:
    reply = "}" * 2000 + ' {"a": 1} ' + "]" * 2000
    assert outform.parse(reply, OBJECT).value == {"a": 1}


# -- schemas --------------------------------------------------------------------------------


def test_a_schema_that_is_not_json_schema_is_refused_naming_the_location() -> None:
    with pytest.raises(SchemaError) as caught:
        outform.parse("{}", {"type": "object", "properties": {"a": {"type": "integr"}}})
    assert caught.value.where == "schema at /properties/a/type"
    assert caught.value.fix is not None


def test_a_schema_keyword_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(SchemaError, match="not a valid JSON Schema"):
        outform.parse("{}", {"properties": 5})


def test_a_schema_that_is_not_json_serialisable_is_refused() -> None:
    with pytest.raises(SchemaError, match="not JSON-serialisable"):
        outform.parse("{}", {"default": object()})


def test_a_ref_to_a_missing_local_definition_is_refused() -> None:
    with pytest.raises(SchemaError, match="points at /\\$defs/missing, which is not in the"):
        outform.parse("{}", {"$ref": "#/$defs/missing"})


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"$ref": "https://example.com/schema.json"}, "schema at /$ref"),
        (
            {"type": "object", "properties": {"a": {"$ref": "other.json#/x"}}},
            "schema at /properties/a/$ref",
        ),
        ({"allOf": [{"$ref": "http://example.com/a.json#"}]}, "schema at /allOf/0/$ref"),
    ],
)
def test_a_remote_ref_is_refused_naming_where_it_is(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(SchemaError) as caught:
        outform.parse("{}", schema)
    assert caught.value.where == where
    assert "never fetches" in caught.value.what


def test_a_ref_to_the_document_itself_through_its_id_is_local() -> None:
    schema = {
        "$id": "https://example.com/root.json",
        "type": "object",
        "properties": {"n": {"$ref": "https://example.com/root.json#/$defs/n"}},
        "$defs": {"n": {"type": "integer"}},
    }
    assert outform.parse('{"n": "1"}', schema).value == {"n": 1}


# A tiny HTTP server in its own process (a validator may hold the GIL while it fetches, so a
# server thread of this process could not answer). It counts the connections it accepts, one
# at a time, and tells the count on GET /count: every connection made before that request has
# been counted by the time it is answered.
_SERVER = """
import socket
server = socket.create_server(("127.0.0.1", 0))
print(server.getsockname()[1], flush=True)
count = 0
while True:
    connection, _ = server.accept()
    with connection:
        request = connection.recv(65536)
        if request.startswith(b"GET /count "):
            body = str(count).encode()
            connection.sendall(b"HTTP/1.0 200 OK\\r\\n\\r\\n" + body)
        else:
            count += 1
            connection.sendall(b"HTTP/1.0 404 Not Found\\r\\nContent-Length: 0\\r\\n\\r\\n")
"""


class _Recording:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"

    def connections(self) -> int:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{self.url}/count", timeout=30) as response:
            return int(response.read())


@pytest.fixture
def server() -> Iterator[_Recording]:
    process = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield _Recording(int(process.stdout.readline()))
    finally:
        process.kill()
        process.wait()


def test_the_recording_server_counts_a_connection(server: _Recording) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with pytest.raises(urllib.error.HTTPError):
        opener.open(f"{server.url}/anything", timeout=30)
    assert server.connections() == 1


def test_an_unknown_meta_schema_is_refused_without_fetching_it(server: _Recording) -> None:
    with pytest.raises(SchemaError) as caught:
        outform.parse("{}", {"$schema": f"{server.url}/meta-schema", "type": "object"})
    assert caught.value.where == "schema at /$schema"
    assert server.connections() == 0


@pytest.mark.parametrize(
    "schema",
    [
        lambda url: {"$ref": f"{url}/s.json"},
        lambda url: {"$dynamicRef": f"{url}/d.json"},
        lambda url: {"properties": {"a": {"$ref": f"{url}/p.json"}}},
    ],
)
def test_a_remote_reference_is_never_fetched(server: _Recording, schema: Any) -> None:
    with pytest.raises(SchemaError):
        outform.parse("{}", schema(server.url))
    assert server.connections() == 0


def test_a_response_format_outform_does_not_know_cannot_be_parsed() -> None:
    unknown = outform.ResponseFormat.from_dict({"type": "grammar", "definition": "start: x"})
    with pytest.raises(UsageError, match="'grammar'"):
        outform.parse("x", unknown)


def test_an_unknown_type_is_a_schema_error_naming_the_type() -> None:
    class Opaque:
        pass

    with pytest.raises(SchemaError) as caught:
        outform.parse("{}", type=Opaque)
    assert "Opaque" in caught.value.what


# -- options --------------------------------------------------------------------------------


def test_an_unknown_level_is_a_config_error_listing_the_levels() -> None:
    with pytest.raises(ConfigError) as caught:
        outform.parse("{}", OBJECT, level="maximal")
    assert caught.value.fix == "use one of: off, minimal, full"


def test_an_unknown_stage_is_a_config_error_listing_the_stages() -> None:
    with pytest.raises(ConfigError) as caught:
        outform.parse("{}", OBJECT, stages=("extract", "validate"))
    assert "validate" in caught.value.what
    assert caught.value.fix == "use a subset of: extract, unescape, decode, coerce"


def test_an_unknown_option_is_a_config_error_listing_the_options() -> None:
    with pytest.raises(ConfigError) as caught:
        outform.parse("{}", OBJECT, max_chars_typo=5)
    assert "max_chars_typo" in caught.value.what
    assert caught.value.fix is not None
    assert "max_chars" in caught.value.fix


def test_a_tolerance_outside_the_tiers_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tolerance must be 0, 1 or 2"):
        outform.parse("{}", OBJECT, tolerance=3)


def test_an_unknown_processor_point_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        Processor("after_validate", str)  # type: ignore[arg-type]


def test_a_pipeline_refuses_bad_options_when_built_not_when_run() -> None:
    with pytest.raises(ConfigError):
        outform.Pipeline(OBJECT, level="everything")


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value, "x"] if level % 2 else {"k": value, "[": "]]"}
    return value


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


@pytest.mark.parametrize("leaf", ["plain", "[[[{{{", "}}]]", 'a \\" [ quote', None])
@pytest.mark.parametrize("depth", [3, 31, 32, 33, 40])
def test_the_depth_counted_on_the_brackets_is_the_depth_of_the_value(depth: int, leaf: Any) -> None:
    """The fast path measures nesting on the text's brackets (values.within_depth): brackets
    and escaped quotes inside strings, and nesting past the rounds it peels, must not change
    the answer."""
    value = [_nested(depth - 1, leaf) for _ in range(60)]  # long, and many brackets
    for option in (None, orjson.OPT_INDENT_2):
        text = orjson.dumps(value, option=option).decode()
        assert _depth(value) == depth
        for limit in (depth - 1, depth, depth + 1):
            assert values.within_depth(text, limit) is (depth <= limit), (limit, text[:80])


# -- a caller's mistakes are UsageErrors naming the argument (issue 10) ----------------------


@pytest.mark.parametrize(
    ("arguments", "what"),
    [
        ({"processors": 5}, "processors must be a list, each item an outform.Processor, got int 5"),
        ({"processors": [5]}, "processors[0] must be an outform.Processor, got int 5"),
        (
            {"processors": [Processor("after_decode", str), str]},
            "processors[1] must be an outform.Processor, got type <class 'str'>",
        ),
        ({"observers": 5}, "observers must be a list, each item a callable"),
        ({"observers": [print, 5]}, "observers[1] must be a callable (it receives each Event)"),
    ],
)
def test_processors_and_observers_of_the_wrong_type_are_named(
    arguments: dict[str, Any], what: str
) -> None:
    """They were an InternalError ("this is a bug in outform")."""
    with pytest.raises(UsageError) as caught:
        outform.Pipeline(OBJECT, **arguments)
    assert caught.value.what.startswith(what)
    assert caught.value.where == what.split(" ", maxsplit=1)[0]


@pytest.mark.parametrize("argument", ["processors", "observers"])
def test_parse_names_them_too(argument: str) -> None:
    with pytest.raises(UsageError, match=f"^{argument} must be a list"):
        arguments: dict[str, Any] = {argument: 5}
        outform.parse("{}", OBJECT, **arguments)


def test_a_global_observer_must_be_callable() -> None:
    with pytest.raises(UsageError, match="observer must be a callable"):
        outform.add_observer(5)  # type: ignore[arg-type]


def test_a_processor_must_wrap_a_function() -> None:
    with pytest.raises(UsageError, match="Processor fn must be a function, got int 5"):
        Processor("after_decode", 5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "what"),
    [
        ({"stages": 5}, "stages must be a list of stage names, got 5"),
        ({"stages": ["extract", 5]}, "unknown stage(s): 5"),
        ({"stages": [["extract"]]}, "unknown stage(s): ['extract']"),
        ({"coercions": 5}, "coercions must map target types to lists of conversion names"),
        ({"coercions": [5]}, "coercions must map target types to lists of conversion names"),
        ({"shadow": "yes"}, "shadow must be True or False, got 'yes'"),
        ({"fill_defaults": 0}, "fill_defaults must be True or False, got 0"),
    ],
)
def test_a_parse_option_of_the_wrong_type_is_a_config_error_naming_it(
    options: dict[str, Any], what: str
) -> None:
    """Parse options are settings (outform.toml's [parse] takes them too): a bad value is a
    ConfigError naming the option, as for `level` and `max_chars`; before, a number for
    `stages` or `coercions` was an InternalError, and "yes" for `shadow` was taken as true."""
    with pytest.raises(ConfigError) as caught:
        outform.Pipeline(OBJECT, **options)
    assert what in caught.value.what
    assert caught.value.where == next(iter(options))


def test_one_stage_may_be_named_alone() -> None:
    """`stages="extract"` is that stage, not the letters a, c, e, r, t, x."""
    assert outform.Pipeline(OBJECT, stages="extract").options.stages == {"extract"}


def _self_holding() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


@pytest.mark.parametrize(
    ("returned", "why"),
    [
        ({1, 2}, "a set (return a list)"),
        ((1, 2), "a tuple (return a list)"),
        ({"when": datetime.date(2024, 5, 1)}, "a date, which is not a JSON value"),
        (_self_holding(), "a cycle: a dict holds itself"),
    ],
    ids=["set", "tuple", "date", "cycle"],
)
def test_a_processor_returning_what_is_not_json_is_named(returned: Any, why: str) -> None:
    """A set was an InternalError from the validator; a dict holding itself was walked until
    the time limit passed, blamed on stage 'unescape'."""
    processor = Processor("after_decode", lambda value: returned, name="mine")
    with pytest.raises(UsageError) as caught:
        outform.parse('{"a": 1}', OBJECT, processors=[processor])
    assert caught.value.what == f"processor 'mine' returned a value that is not JSON: {why}"
    assert caught.value.where == "after_decode"


@pytest.mark.parametrize(
    ("returned", "why"),
    [
        ('"\ud800"', "text that is not valid Unicode: a lone surrogate (U+D800) at character 1"),
        ("a\x00b", "text with a NUL character at character 1"),
        ("x" * 101, "text of 101 characters, over the 'max_chars' limit of 100"),
    ],
    ids=["surrogate", "nul", "too-long"],
)
def test_a_text_processor_returning_what_no_reply_could_be_is_named(
    returned: str, why: str
) -> None:
    """A lone surrogate from a before_extract processor was an InternalError of a later stage."""
    processor = Processor("before_extract", lambda text: returned, name="mine")
    with pytest.raises(UsageError) as caught:
        outform.parse('"x"', {"type": "string"}, processors=[processor], max_chars=100)
    assert caught.value.what == f"processor 'mine' returned {why}"
    assert caught.value.where == "before_extract"


def test_a_processor_may_return_a_value_shared_by_two_places() -> None:
    shared = [1, 2]
    processor = Processor("after_decode", lambda value: {"a": shared, "b": shared})
    assert outform.parse("{}", OBJECT, processors=[processor]).value == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("schema", ["foo", b"{}", [1], 3])  # (True, False: boolean schemas)
def test_a_schema_that_is_no_schema_is_named_as_neither_schema_nor_type(schema: Any) -> None:
    # not "not a type" for schema="...": the argument may be either; the stream says the same
    calls: list[Callable[[], object]] = [
        lambda: outform.parse("{}", schema=schema),
        lambda: StreamParser(schema).finish(),
    ]
    for call in calls:
        with pytest.raises(SchemaError) as caught:
            call()
        assert caught.value.what.startswith("neither a schema nor a type: ")
        assert caught.value.where == "the output (schema= or type=)"


def test_at_level_off_json_inside_prose_points_to_minimal_not_to_full() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('Sure: {"n": 1}', {"type": "object"}, level="off")
    assert caught.value.fix is not None
    assert caught.value.fix.startswith("level 'minimal' reads JSON out of prose")
