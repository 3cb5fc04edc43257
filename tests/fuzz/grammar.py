"""A grammar of hostile model replies, schemas and gateway requests.

One definition of every family, two sources of choices: `RandomSource` (seeded, fast: the
million-input run of `benchmarks/bench_fuzz.py`) and `tests.fuzz.strategies.DrawSource`
(hypothesis, which shrinks a failure to its smallest form: `make test`). A family is a function
`(source, n) -> Case`; `n` scales the input (repetitions, depth, digits) and the choices are
drawn unit by unit, so that the same seed at `2 * n` gives an input about twice as large.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import orjson

from outform.jsontext import loads_exact

T = TypeVar("T")


class Source(Protocol):
    """Where a family's choices come from."""

    def below(self, n: int) -> int:
        """A whole number in [0, n)."""
        ...

    def chance(self, p: float) -> bool:
        """True with probability about `p` (hypothesis shrinks towards False)."""
        ...

    def chars(self, alphabet: str, n: int) -> str:
        """`n` characters of `alphabet`."""
        ...

    def unit(self, index: int) -> Source:
        """The choices of a family's `index`th unit (a block, a number, a key): a source of
        their own for the seeded generator, so that the same seed at twice the size keeps
        every other choice and adds units (the hypothesis source draws them in turn)."""
        ...


class RandomSource:
    """Choices from a seeded `random.Random`: the same seed, the same input."""

    __slots__ = ("_random", "_seed")

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._random = random.Random(seed).random

    def below(self, n: int) -> int:
        return int(self._random() * n)

    def chance(self, p: float) -> bool:
        return self._random() < p

    def chars(self, alphabet: str, n: int) -> str:
        draw = self._random
        size = len(alphabet)
        return "".join([alphabet[int(draw() * size)] for _ in range(n)])

    def unit(self, index: int) -> RandomSource:
        return RandomSource(self._seed * 1_000_003 + index + 1)


def pick(source: Source, options: Sequence[T]) -> T:
    return options[source.below(len(options))]


def place(source: Source, length: int) -> int:
    """A position in [0, length], drawn as a fraction (the same draw, the same proportion,
    whatever the length)."""
    return source.below(1024) * (length + 1) // 1024


@dataclass(frozen=True, slots=True)
class Case:
    """One reply and the schema it is parsed against."""

    family: str
    text: str
    schema: Any


class Raw(str):
    """A token written into the JSON text as it is (`1e400`, `NaN`, a digit string)."""


def plain(value: Any) -> Any:
    """`value` as plain JSON data (a `Raw` token read as JSON reads it, every digit kept);
    ValueError when a token is no JSON value (`1e400`, `NaN`)."""
    if isinstance(value, Raw):
        return loads_exact(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# -- the pieces ------------------------------------------------------------------------------

KEYS = ("a", "b", "name", "age", "tags", "value", "items", "Name", " name ", "é", "price", "a/b")
WORDS = (
    "yes",
    "no",
    "true",
    "FALSE",
    "null",
    "None",
    "n/a",
    "",
    "EUR",
    "eur",
    "**EUR**",
    "Eur.",
    "42",
    "42.0",
    "3.14",
    "$1,234.50",
    "12%",
    "3/4",
    "about 42 apples",
    "I'd say MEDIUM, not high",
    "The answer is: true.",
    "[1, 2]",
    '{"a": 1}',
    "café",
    "x",
)
NUMBERS = (
    "0",
    "-0",
    "-0.0",
    "1.5",
    "42",
    "1e400",
    "-1e400",
    "1e-400",
    "0.1e99999",
    "1E+2",
    "18446744073709551616",
    "-9223372036854775809",
    str(2**200),
    "123456789012345678901234567890.5",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x1F",
    ".5",
    "5.",
    "+1",
    "01",
)
ESCAPES = ('\\"', "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "\\udc00", "\\/", "\\x")
SURROGATES = ("\ud800", "\udfff", "\udc00\ud800", "\ud83d")
PROSE = (
    "Here is the JSON:",
    "Sure! ",
    "Use { or [ here.",
    "The answer is",
    "**one** is the answer",
    "Note: ",
    "I think ] is odd }",
    "Let me see...",
    "- item\n- item",
    "# Result\n",
    "it's ",
    "done.",
)
TAGS = ("think", "thinking", "reasoning", "reflection", "thought", "scratchpad", "THINK", "answer")
LANGS = ("", "json", "JSON", "jsonc", "js", "python", "text", "json title=x")
ALPHABET = "abcdefgh EUR01234,.:{}[]\"'\\`\n\t-_*#é€😀"
REGEXES = ("^(a+)+$", "(a|a)*b", "(x+x+)+y", "^(a|aa)+$", "(?=a)a+", "(a)\\1", "^[a-z]+$", "(")


# -- values and how a model writes them ------------------------------------------------------


def any_value(source: Source, depth: int) -> Any:
    """A JSON-ish value: nested containers, awkward strings and awkward numbers."""
    kind = source.below(10 if depth > 0 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return source.chance(0.5)
    if kind == 2:
        return Raw(pick(source, NUMBERS))
    if kind == 3:
        return source.below(2000) - 1000
    if kind == 4:
        return pick(source, WORDS)
    if kind == 5:
        return source.chars(ALPHABET, source.below(12))
    if kind == 6:
        return source.below(1000) / 8
    if kind in (7, 8):
        return [any_value(source, depth - 1) for _ in range(source.below(4))]
    return {pick(source, KEYS): any_value(source, depth - 1) for _ in range(source.below(4))}


def value_for(source: Source, schema: Any, depth: int = 3) -> Any:
    """A value close to what `schema` wants: often valid, often one coercion away, sometimes
    anything at all."""
    if not isinstance(schema, dict) or source.chance(0.1) or depth < 0:
        return any_value(source, min(depth, 2))
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        member = pick(source, schema["enum"])
        if isinstance(member, str) and source.chance(0.4):
            return pick(source, (member.lower(), f"**{member}**", f"I'd say {member}, yes"))
        return member
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return value_for(source, pick(source, branches), depth - 1)
    kind = schema.get("type")
    if isinstance(kind, list) and kind:
        kind = pick(source, kind)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            if source.chance(0.8):
                out[name if source.chance(0.9) else name.upper()] = value_for(
                    source, sub, depth - 1
                )
        if source.chance(0.15):
            out[pick(source, KEYS)] = any_value(source, 1)
        return out
    if kind == "array":
        items = schema.get("items", {})
        return [value_for(source, items, depth - 1) for _ in range(source.below(4))]
    if kind == "integer":
        return pick(
            source, (source.below(200) - 50, "42", Raw("18446744073709551616"), 7.0, "1,234")
        )
    if kind == "number":
        return pick(source, (source.below(999) / 4, "$4.25", "12%", Raw("1e400"), "3/4", Raw("-0")))
    if kind == "boolean":
        return pick(source, (True, False, "yes", "off", 1, "The answer is: true."))
    if kind == "null":
        return pick(source, (None, "null", "n/a", ""))
    if kind == "string":
        return pick(source, (source.chars(ALPHABET, source.below(10)), 42, True, {"result": "x"}))
    return any_value(source, min(depth, 2))


def render(source: Source, value: Any, quirks: float) -> str:
    """`value` written as JSON; with probability `quirks` per place, the way a model slips:
    single quotes, unquoted keys, trailing commas, comments, Python literals, code strings."""
    out: list[str] = []
    _render(source, value, quirks, out)
    return "".join(out)


def _render(source: Source, value: Any, quirks: float, out: list[str]) -> None:
    slip = quirks > 0 and source.chance(quirks)
    if isinstance(value, Raw):
        out.append(value)
    elif value is None:
        out.append("None" if slip else "null")
    elif value is True or value is False:
        out.append(("True" if value else "False") if slip else ("true" if value else "false"))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(orjson.dumps(value).decode())
    elif isinstance(value, str):
        out.append(_string(source, value, slip))
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(" " if slip and source.chance(0.3) else ", ")
            _render(source, item, quirks, out)
        if slip and source.chance(0.5):
            out.append(",")
        out.append("]")
    else:
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(",\n  " if not slip else pick(source, (", ", " ", ",,", " // c\n")))
            if slip and source.chance(0.3) and key.isidentifier():
                out.append(key)
            else:
                out.append(_string(source, key, slip and source.chance(0.3)))
            out.append(": ")
            _render(source, item, quirks, out)
        if slip and source.chance(0.5):
            out.append(pick(source, (",", " /* end */", "\n")))
        out.append("}")


def _string(source: Source, text: str, slip: bool) -> str:
    written = orjson.dumps(text).decode() if _encodable(text) else '"' + text + '"'
    if not slip:
        return written
    body = written[1:-1]
    style = source.below(5)
    if style == 0:
        return "'" + body.replace("'", "\\'") + "'"
    if style == 1:
        return '"""' + text + '"""'
    if style == 2:
        return "`" + text + "`"
    if style == 3:
        return '"' + text + '"'  # quotes inside not escaped
    return '"' + body + pick(source, ESCAPES) + '"'


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- schemas ---------------------------------------------------------------------------------

_SCALARS: tuple[dict[str, Any], ...] = (
    {"type": "integer"},
    {"type": "number"},
    {"type": "string"},
    {"type": "boolean"},
    {"type": "null"},
    {"type": ["integer", "null"]},
    {"type": ["string", "number"]},
    {"enum": ["EUR", "USD", "GBP"]},
    {"enum": ["LOW", "MEDIUM", "HIGH", "café"]},
    {"enum": [1, "1", None, 2.5, True]},
    {"enum": [12345678901234567890123, "x"]},
    {"const": "fixed"},
    {"type": "string", "minLength": 2, "maxLength": 5},
    {"type": "integer", "minimum": 0, "maximum": 100},
    {"type": "integer", "maximum": 18446744073709551616},
    {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"type": "string", "format": "date"},
    {"type": "integer", "default": 7},
    {},
)


def schema(source: Source, depth: int = 2) -> Any:
    """A schema of the kinds callers write: objects of typed fields, lists, maps, unions,
    enums, defaults, references."""
    kind = source.below(9) if depth > 0 else 0
    if kind <= 2:
        return dict(pick(source, _SCALARS))
    if kind <= 4:
        names = [pick(source, KEYS) for _ in range(1 + source.below(4))]
        properties = {name: schema(source, depth - 1) for name in names}
        node: dict[str, Any] = {"type": "object", "properties": properties}
        if source.chance(0.6):
            node["required"] = [name for name in properties if source.chance(0.6)]
        if source.chance(0.5):
            node["additionalProperties"] = False
        if source.chance(0.2):
            name = pick(source, list(properties))
            node["properties"][name] = {**properties[name], "default": any_value(source, 0)}
        return node
    if kind == 5:
        node = {"type": "array", "items": schema(source, depth - 1)}
        if source.chance(0.3):
            node["minItems"] = source.below(3)
        return node
    if kind == 6:
        return {pick(source, ("anyOf", "oneOf")): [schema(source, depth - 1) for _ in range(2)]}
    if kind == 7:
        return {"type": "object", "additionalProperties": schema(source, depth - 1)}
    return {"$defs": {"it": schema(source, depth - 1)}, "$ref": "#/$defs/it"}


def hostile_schema(source: Source, n: int) -> Any:
    """Schemas that attack the work: catastrophic patterns, huge enums, long and circular
    `$ref` chains, contradictions, and schemas that are not valid at all."""
    kind = source.below(8)
    if kind == 0:
        pattern = pick(source, REGEXES)
        where = source.below(3)
        if where == 0:
            return {
                "type": "object",
                "patternProperties": {pattern: {"type": "integer"}},
                "additionalProperties": False,
            }
        if where == 1:
            return {"type": "string", "pattern": pattern}
        return {"type": "object", "propertyNames": {"pattern": pattern}}
    if kind == 1:
        return {"enum": _enum(n)}
    if kind == 2:
        chain = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(10 * n)}
        chain[f"d{10 * n}"] = schema(source, 1)
        return {"$defs": chain, "$ref": "#/$defs/d0"}
    if kind == 3:
        return pick(
            source,
            (
                {
                    "$defs": {
                        "node": {
                            "type": "object",
                            "properties": {
                                "v": {"type": "integer"},
                                "child": {"$ref": "#/$defs/node"},
                                "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                            },
                        }
                    },
                    "$ref": "#/$defs/node",
                },
                {
                    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                    "$ref": "#/$defs/a",
                },
                {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]},
                {"$ref": "#"},
                {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]},
            ),
        )
    if kind == 4:
        return pick(
            source,
            (
                {"type": "integer", "minimum": 5, "maximum": 3},
                {"allOf": [{"type": "string"}, {"type": "integer"}]},
                {"enum": [1, 2], "type": "string"},
                {"not": {}},
                False,
                True,
                {"type": "object", "required": ["a"], "additionalProperties": False},
                {"type": "array", "minItems": 3, "maxItems": 1},
                {"const": 1, "type": "string"},
                {"type": "string", "minLength": 4, "maxLength": 2},
                {"oneOf": [{"type": "integer"}, {"type": "number"}]},
                {"type": "object", "properties": {"a": False}, "required": ["a"]},
            ),
        )
    if kind == 5:
        return pick(
            source,
            (
                {"type": 5},
                {"$ref": "http://example.com/schema.json"},
                {"$ref": "#/nowhere"},
                {"properties": []},
                {"minimum": "a"},
                {"required": "a"},
                {"type": "string", "pattern": "("},
                {"enum": []},
                [],
                "string",
            ),
        )
    if kind == 6:
        wide = {f"k{i}": schema(source.unit(i), 0) for i in range(4 * n)}
        return {"type": "object", "properties": wide, "required": list(wide)[: 2 * n]}
    deep: Any = {"type": "integer"}
    for _ in range(4 * n):
        deep = {"type": "object", "properties": {"a": deep}, "required": ["a"]}
    return deep


_ENUMS: dict[int, list[str]] = {}
MAX_ENUM = 64_000
"""The largest enum drawn (compiled schemas are cached: a run must not hold many larger)."""


def _enum(n: int) -> list[str]:
    """An enum of `1000 * n` members, at most MAX_ENUM (the last size is kept: the generator
    stays fast)."""
    size = min(1000 * n, MAX_ENUM)
    members = _ENUMS.get(size)
    if members is None:
        _ENUMS.clear()
        members = _ENUMS[size] = [f"member{i}" for i in range(size)]
    return members


# -- the families ----------------------------------------------------------------------------


def _wrap(source: Source, body: str) -> str:
    """A JSON body as a model may surround it (its own choices: whatever the body's size)."""
    source = source.unit(-1)
    style = source.below(6)
    if style == 0:
        return body
    if style == 1:
        return f"{pick(source, PROSE)} {body} {pick(source, PROSE)}"
    if style == 2:
        return f"```{pick(source, LANGS)}\n{body}\n```"
    if style == 3:
        return f"<think>{pick(source, PROSE)} {{</think>\n{body}"
    if style == 4:
        return body[: place(source, len(body))]  # cut off
    return f"{body}\n{pick(source, PROSE)}"


def _schema_and_value(source: Source) -> tuple[Any, Any]:
    chosen = schema(source)
    return chosen, value_for(source, chosen)


def surrogates(source: Source, n: int) -> Case:
    chosen, _ = _schema_and_value(source)
    parts = []
    for i in range(n):
        unit = source.unit(i)
        style = unit.below(4)
        if style == 0:
            parts.append('"' + pick(unit, SURROGATES) + '"')
        elif style == 1:
            parts.append('"' + pick(unit, ("\\ud800", "\\udfff", "\\udc00\\ud800")) + 'x"')
        elif style == 2:
            parts.append('{"' + pick(unit, SURROGATES) + '": 1}')
        else:
            parts.append(render(unit, value_for(unit, chosen), 0.2))
    body = "[" + ", ".join(parts) + "]"
    return Case("surrogates", _wrap(source, body), chosen)


def huge_numbers(source: Source, n: int) -> Case:
    chosen = pick(
        source,
        (
            {"type": "integer"},
            {"type": "number"},
            {"type": "string"},
            {"type": "array", "items": {"type": "integer"}},
            {"type": "array", "items": {"type": "string"}},
            {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "number"}}},
            {"enum": [12345678901234567890123, 1, "x"]},
            {"type": "array", "items": {"type": "boolean"}},
            {},
        ),
    )
    shape = source.below(4)
    numbers = []
    for i in range(n):
        unit = source.unit(i)
        style = unit.below(4)
        if style == 0:
            numbers.append(pick(unit, NUMBERS))
        elif style == 1:
            numbers.append(pick(unit, ("", "-")) + "9" * (1 + unit.below(400)))
        elif style == 2:
            numbers.append(f'"{pick(unit, NUMBERS)}"')
        else:
            numbers.append("1" + "0" * unit.below(5000) + pick(unit, ("", ".5", "e5")))
    if shape == 0:
        body = "".join(numbers)  # one long number
    elif shape == 1:
        body = "{" + ", ".join(f'"k{i}": {number}' for i, number in enumerate(numbers)) + "}"
    else:
        body = "[" + ", ".join(numbers) + "]"
    return Case("huge_numbers", _wrap(source, body), chosen)


def fences(source: Source, n: int) -> Case:
    chosen, _ = _schema_and_value(source)
    blocks = []
    for i in range(n):
        unit = source.unit(i)
        marker = pick(unit, ("```", "~~~", "````", "``"))
        body = render(unit, value_for(unit, chosen), 0.1)
        style = unit.below(5)
        if style == 0:
            blocks.append(f"{marker}{pick(unit, LANGS)}\n{body}\n{marker}")
        elif style == 1:
            blocks.append(f"{marker}{pick(unit, LANGS)}\n{body}")  # never closed
        elif style == 2:
            blocks.append(f"{pick(unit, PROSE)} {marker}{pick(unit, LANGS)} {body} {marker}")
        elif style == 3:
            blocks.append(f'{{"code": "{marker}python\\nx = 1\\n{marker}"}}')
        else:
            blocks.append(pick(unit, PROSE))
    return Case("fences", "\n".join(blocks), chosen)


def reasoning(source: Source, n: int) -> Case:
    chosen, value = _schema_and_value(source)
    at = source.below(1024)
    parts = []
    for i in range(n):
        unit = source.unit(i)
        tag = pick(unit, TAGS)
        style = unit.below(5)
        inner = pick(unit, PROSE) + " " + render(unit, any_value(unit, 1), 0.1)
        if style == 0:
            parts.append(f"<{tag}>{inner}</{tag}>")
        elif style == 1:
            parts.append(f"<{tag}>{inner}")  # never closed
        elif style == 2:
            parts.append(f"{inner}</{tag}>")  # dangling close
        elif style == 3:
            parts.append(f"<{tag} effort='high'><{tag}>{inner}</{tag}>")
        else:
            parts.append(pick(unit, PROSE))
    parts.insert(at * (n + 1) // 1024, render(source, value, 0.1))
    return Case("reasoning", "\n".join(parts), chosen)


def stray_brackets(source: Source, n: int) -> Case:
    chosen, value = _schema_and_value(source)
    at = source.below(1024)
    parts = []
    for i in range(n):
        unit = source.unit(i)
        style = unit.below(4)
        if style == 0:
            parts.append(unit.chars("{}[] ", 1 + unit.below(6)))
        elif style == 1:
            parts.append(pick(unit, PROSE))
        elif style == 2:
            parts.append(render(unit, any_value(unit, 1), 0.2)[: 1 + unit.below(8)])
        else:
            parts.append(render(unit, value_for(unit, chosen), 0.1))
    parts.insert(at * (n + 1) // 1024, render(source, value, 0.1))
    return Case("stray_brackets", " ".join(parts), chosen)


def deep_nesting(source: Source, n: int) -> Case:
    depth = 20 * n + source.below(20)
    style = source.below(5)
    if style == 0:
        body = "[" * depth + "1" + "]" * depth
    elif style == 1:
        body = '{"a": ' * depth + "1" + "}" * depth
    elif style == 2:
        body = "[" * depth  # never closed
    elif style == 3:
        body = "".join(pick(source.unit(i), ('{"a": [', "[{", "[")) for i in range(depth))
    else:
        inner = "1"
        for _ in range(min(2 + n, 12)):  # each level doubles the backslashes
            inner = orjson.dumps([inner]).decode()  # JSON in a string in a string...
        body = inner
    chosen = pick(
        source,
        (
            {},
            {"type": "array"},
            {"type": "object"},
            {
                "$defs": {"n": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/n"}}},
                "$ref": "#/$defs/n",
            },
            {"type": "integer"},
        ),
    )
    return Case("deep_nesting", _wrap(source, body), chosen)


def long_escapes(source: Source, n: int) -> Case:
    chosen = pick(
        source,
        (
            {"type": "object"},
            {"type": "string"},
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "array", "items": {"type": "integer"}},
            {},
        ),
    )
    runs = []
    for i in range(n):
        unit = source.unit(i)
        runs.append(pick(unit, ESCAPES) * (1 + unit.below(50)))
    body = "".join(runs)
    style = source.below(4)
    if style == 0:
        text = f'{{"a": "{body}"}}'
    elif style == 1:
        text = f'"{body}"'
    elif style == 2:
        nested = render(source, value_for(source, chosen), 0.0)
        for _ in range(1 + source.below(4)):
            nested = orjson.dumps(nested).decode()
        text = nested
    else:
        text = f'{{"a": "{body}'  # the string never ends
    return Case("long_escapes", _wrap(source, text), chosen)


def hostile_schemas(source: Source, n: int) -> Case:
    chosen = hostile_schema(source, n)
    style = source.below(4)
    if style == 0:
        key = "a" * (1 + source.below(30)) + pick(source, ("!", "", "b"))
        text = render(source, {key: "1", "y": 2}, 0.1)
    elif style == 1:
        members = _enum(n)
        text = f"I'd pick {pick(source, members)} here, or maybe {pick(source, members)}."
    else:
        scaled = source.unit(-2)  # its draws grow with the schema
        text = _wrap(source, render(scaled, value_for(scaled, chosen), 0.2))
    return Case("hostile_schemas", text, chosen)


def mixed_prose(source: Source, n: int) -> Case:
    chosen, _ = _schema_and_value(source)
    parts = []
    for i in range(n):
        unit = source.unit(i)
        style = unit.below(5)
        if style == 0:
            parts.append(render(unit, value_for(unit, chosen), 0.3))
        elif style == 1:
            parts.append(pick(unit, WORDS))
        elif style == 2:
            parts.append(f"**{unit.chars(ALPHABET, 1 + unit.below(10))}**\n")
        else:
            parts.append(pick(unit, PROSE))
    return Case("mixed_prose", " ".join(parts), chosen)


def broken_json(source: Source, n: int) -> Case:
    chosen = schema(source)
    items = [value_for(source.unit(i), chosen) for i in range(n)]
    value = items[0] if n == 1 else items
    if isinstance(chosen, dict) and chosen.get("type") == "array":
        value = [item for many in items for item in (many if isinstance(many, list) else [many])]
    return Case("broken_json", _wrap(source, render(source.unit(-2), value, 0.3)), chosen)


Family = Callable[[Source, int], Case]
FAMILIES: dict[str, Family] = {
    family.__name__: family
    for family in (
        surrogates,
        huge_numbers,
        fences,
        reasoning,
        stray_brackets,
        deep_nesting,
        long_escapes,
        hostile_schemas,
        mixed_prose,
        broken_json,
    )
}
"""The reply families, by name."""


def chunking(source: Source, size: int) -> list[int]:
    """Where to cut a reply of `size` characters into stream chunks."""
    cuts = []
    at = 0
    while at < size:
        at += 1 + (source.below(3) if source.chance(0.7) else source.below(64))
        cuts.append(min(at, size))
    return cuts


# -- gateway requests ------------------------------------------------------------------------


def _any_field(source: Source) -> Any:
    return pick(
        source,
        (
            None,
            True,
            0,
            -1,
            2**63,
            1.5,
            "",
            "x",
            [],
            {},
            [None],
            {"type": None},
            "\ud800",
            Raw("1e400"),
        ),
    )


def _item(source: Source) -> Any:
    kind = source.below(8)
    text = pick(source, ("hi", "", "\ud800", "é" * 3))
    if kind == 0:
        return {
            "role": pick(source, ("user", "assistant", "system", "developer", "tool", 1)),
            "content": text,
        }
    if kind == 1:
        part_type = pick(
            source,
            (
                "input_text",
                "output_text",
                "text",
                "input_image",
                "input_file",
                "input_audio",
                "refusal",
                7,
            ),
        )
        part = {
            "type": part_type,
            pick(source, ("text", "image_url", "file_url", "file_data", "refusal")): text,
        }
        content = pick(source, ([part], [part, part], [None], [part, "x"], part))
        return {"type": "message", "role": pick(source, ("user", "assistant")), "content": content}
    if kind == 2:
        return {
            "type": "function_call",
            "call_id": "c1",
            "name": "f",
            "arguments": pick(source, ("{}", 1, None)),
        }
    if kind == 3:
        output = pick(
            source, ("ok", [{"type": "input_text", "text": "ok"}], [{"type": "image"}], 5, [None])
        )
        return {
            "type": "function_call_output",
            "call_id": pick(source, ("c1", None)),
            "output": output,
        }
    if kind == 4:
        return {"type": pick(source, ("reasoning", "item_reference", "web_search_call", None))}
    if kind == 5:
        return {"role": "user", "content": text, "id": pick(source, ("", "x", None, 5))}
    if kind == 6:
        return {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text"}],
            "status": 1,
        }
    return _any_field(source)


def gateway_request(source: Source, n: int) -> bytes:
    """The body of a `POST /v1/responses`: mostly the fields the API has, in every shape, and
    sometimes bytes that are no JSON request at all."""
    style = source.below(12)
    if style == 0:
        return pick(source, (b"", b"{", b"[]", b"null", b"\xff\xfe", b'{"model": NaN}', b"{}" * n))
    if style == 1:
        return b'{"model": "m", "input": ' + b"[" * (50 * n) + b"]" * (50 * n) + b"}"
    req: dict[str, Any] = {}
    if source.chance(0.9):
        req["model"] = pick(source, ("gpt-4o", "m", "", 5, None))
    if source.chance(0.8):
        req["input"] = (
            pick(source, ("hi", "", 5))
            if source.chance(0.3)
            else [_item(source.unit(i)) for i in range(2 * n)]
        )
    if source.chance(0.5):
        fmt_kind = source.below(6)
        fmt: Any
        if fmt_kind == 0:
            fmt = {"type": "json_schema", "name": "x", "schema": _request_schema(source, n)}
        elif fmt_kind == 1:
            fmt = {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": _request_schema(source, n)},
            }
        elif fmt_kind == 2:
            fmt = {"type": "json_schema", "name": "x", "json_schema": {"schema": {}}}
        elif fmt_kind == 3:
            fmt = {"type": pick(source, ("json_object", "text", "grammar", 5))}
        elif fmt_kind == 4:
            fmt = {
                "type": "json_schema",
                "name": pick(source, (5, None, "")),
                "strict": pick(source, ("yes", True)),
            }
        else:
            fmt = _any_field(source)
        req["text"] = pick(source, ({"format": fmt}, {"format": fmt, "verbosity": "low"}, fmt))
    for key in (
        "instructions",
        "temperature",
        "top_p",
        "max_output_tokens",
        "stream",
        "store",
        "metadata",
        "include",
        "tool_choice",
        "reasoning",
        "previous_response_id",
        "parallel_tool_calls",
        "background",
        "top_k",
    ):
        if source.chance(0.15):
            req[key] = _any_field(source)
    if source.chance(0.2):
        req["tools"] = [
            pick(
                source,
                (
                    {"type": "function", "name": "f", "parameters": {"type": "object"}},
                    {"type": "function"},
                    {"type": "web_search"},
                    "f",
                    {"type": "function", "name": "f", "strict": True, "description": None},
                ),
            )
            for _ in range(1 + source.below(3))
        ]
    if source.chance(0.2):
        req["tool_choice"] = pick(
            source,
            (
                "auto",
                "sometimes",
                {"type": "function", "name": "f"},
                {"type": "function"},
                {
                    "type": "allowed_tools",
                    "tools": [{"type": "function", "name": "f"}, "x", {"type": "web"}],
                },
                {"type": "allowed_tools", "tools": [None]},
                {"type": "custom", "name": "c"},
                {"type": "file_search"},
                7,
            ),
        )
    return _dump(req)


def _request_schema(source: Source, n: int) -> Any:
    return hostile_schema(source, min(n, 3)) if source.chance(0.5) else schema(source)


def _dump(value: Any) -> bytes:
    """JSON bytes as a hostile client may send them: `Raw` tokens as they are, integers of
    any size, lone surrogates encoded as they stand (not UTF-8)."""
    return _dump_text(value).encode("utf-8", "surrogatepass")


def _dump_text(value: Any) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_dump_text(k)}:{_dump_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump_text(v) for v in value) + "]"
    if isinstance(value, str) and not _encodable(value):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return orjson.dumps(value).decode()


def dialect_schema(source: Source, n: int) -> Any:
    """A schema for the dialect translators: ordinary, then hostile."""
    return schema(source, 3) if source.chance(0.5) else hostile_schema(source, n)
