"""A fenced block of code is no answer while the reply holds a value outside code.

A block is code when its info string names another language than JSON's (`python`, `text`,
`yaml`; `json`, `jsonc`, `json5`, `jsonl`, `ndjson`, `js`, `javascript` and no tag are JSON's),
or when its body begins with a word that begins no JSON value (`cfg = {...}`, `const x =`).
The stream parser skips such a block whole; `parse` reads neither it nor the regions inside it
as candidates, so both give the same value and a value shown complete stays the value. When
the reply holds nothing but code, the regions inside the code are read, and their change says
so (docs/pipeline.md, "Stages"; docs/streaming.md, "What a snapshot shows").
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError
from outform.parse.partial import plain
from outform.streaming import StreamParser, parse_stream


class Cfg(BaseModel):
    name: str
    debug: bool


TRIAL = (
    'To load it:\n```python\ncfg = {"name": "example", "debug": false}\n```\n'
    'Your config:\n{"name": "prod", "debug": true}'
)
PROD = {"name": "prod", "debug": True}
LEVELS = ["minimal", "full"]


def _streamed(text: str, size: int, level: str) -> list[Any]:
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    return list(parse_stream(pieces, type=Cfg, level=level))


@pytest.mark.parametrize("level", LEVELS)
def test_a_dict_in_a_python_block_does_not_beat_the_answer(level: str) -> None:
    """The trial's reply: `parse` took the dict of the python block ("value 1 of 2"), while the
    stream, which skips the block, showed the answer complete, then ended on the other."""
    result = outform.parse(TRIAL, type=Cfg, level=level)
    assert result.data == PROD
    (change,) = result.changes
    assert change.transform == "extract_from_prose"
    assert change.detail == "1 code block(s) in the reply (python) not read as the answer"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("size", [1, 7, 16, 64, len(TRIAL)])
def test_the_stream_ends_on_the_value_it_showed_complete(size: int, level: str) -> None:
    snapshots = _streamed(TRIAL, size, level)
    assert snapshots[-1].data == PROD
    assert all(plain(s.data) == PROD for s in snapshots if s.complete)


@pytest.mark.parametrize(
    "block",
    [
        '```\ncfg = {"name": "example", "debug": false}\n```',
        '```js\nconst cfg = {"name": "example", "debug": false}\n```',
        '```yaml\n{"name": "example", "debug": false}\n```',
        '~~~text\n{"name": "example", "debug": false}\n~~~',
    ],
)
def test_code_is_told_by_its_tag_or_its_first_word(block: str) -> None:
    reply = f'{block}\nYour config: {{"name": "prod", "debug": true}}'
    assert outform.parse(reply, type=Cfg).data == PROD
    assert _streamed(reply, 5, "minimal")[-1].data == PROD


def test_a_json_block_beside_code_is_the_answer() -> None:
    reply = (
        '```python\ncfg = {"name": "example", "debug": false}\n```\n'
        '```json\n{"name": "prod", "debug": true}\n```'
    )
    result = outform.parse(reply, type=Cfg)
    assert result.data == PROD
    assert [c.transform for c in result.changes] == ["strip_fence"]


def test_a_reply_of_nothing_but_code_is_read_and_says_so() -> None:
    reply = 'Here:\n```python\ncfg = {"name": "example", "debug": false}\n```'
    result = outform.parse(reply, type=Cfg)
    assert result.data == {"name": "example", "debug": False}
    (change,) = result.changes
    assert (change.transform, change.detail) == (
        "extract_from_code",
        "inside a code block (python)",
    )
    assert _streamed(reply, 4, "minimal")[-1].data == result.data


@pytest.mark.parametrize("level", LEVELS)
def test_code_does_not_stand_in_for_an_answer_that_fails(level: str) -> None:
    """The answer lacks `debug`: the code's dict does not replace it, in `parse` as in the
    stream (which followed the answer and showed it)."""
    reply = '```python\ncfg = {"name": "example", "debug": false}\n```\nIt is {"name": "prod"}'
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, type=Cfg, level=level)
    assert [(v.path, v.kind) for v in caught.value.hint.violations] == [("", "missing")]
    parser: StreamParser[Any] = StreamParser(Cfg, level=level)
    for start in range(0, len(reply), 6):
        parser.feed(reply[start : start + 6])
    with pytest.raises(OutputError):
        parser.finish()


def test_a_block_of_code_is_not_gathered_into_a_list() -> None:
    reply = "```python\nsizes = [10, 20]\n```\n[1, 2]\n[3]"
    result = outform.parse(reply, {"type": "array", "items": {"type": "array"}})
    assert result.data == [[1, 2], [3]]


def test_a_text_block_beside_an_object_is_no_answer_either() -> None:
    """Fuzz seed 56066 took `{}` from a `text` block when the object before it failed; the
    block is code, and the reply's one value decides (tests/fuzz/test_findings.py keeps the
    seed's other finding with an untagged block)."""
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"price": {"const": "fixed"}},
                "required": ["price"],
                "additionalProperties": False,
            },
            {"type": "object", "additionalProperties": {"type": "boolean"}},
        ]
    }
    reply = '{"code": "~~~python\\nx = 1\\n~~~"}\n````text\n{}\n```json title=x\n{}'
    with pytest.raises(OutputError):
        outform.parse(reply, schema)
