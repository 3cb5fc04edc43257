"""Reading the input file: one JSON object a line, each a row of the job.

A row becomes the messages of one request: through the prompt template (`{field}` names are
the row's keys), or from the row's own `messages` (chat messages) or `prompt` (one user
message). The row id is the row's `id` (or the field named by `id_field`), else its line
number; it is sent as the provider's custom id, so it must be 1 to 64 letters, digits, `_`
or `-` (Anthropic's rule, the strictest of the batch APIs) and unique in the file.

The file is read as a stream, line by line, and never held whole: `scan` checks every row
before anything is submitted; `rows_at` reads rows again by byte offset.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from outform.errors import UsageError
from outform.providers.base import Message, as_message

ROW_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_FIX_ID = "give each row an id of 1 to 64 letters, digits, _ or - (or no id: the line number)"


@dataclass(frozen=True)
class Row:
    index: int
    """0-based position among the file's rows (blank lines are not rows)."""
    line: int
    """1-based line number in the file."""
    offset: int
    """Byte offset of the line, to read it again."""
    id: str
    messages: tuple[Message, ...]


class Template:
    """A prompt with `{name}` fields (str.format syntax), filled from each row's keys. A row
    value that is not a string is inserted as JSON."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise UsageError(
                f"the prompt template is malformed: {exc}",
                where="--prompt",
                fix="write fields as {name}; double the braces for a literal {{ or }}",
            ) from None
        self.fields = tuple(
            dict.fromkeys(
                re.split(r"[.\[]", name, maxsplit=1)[0] for _, name, _, _ in parsed if name
            )
        )
        if any(not name for name in self.fields) or any(name.isdigit() for name in self.fields):
            raise UsageError(
                "the prompt template has a positional field ({} or {0})",
                where="--prompt",
                fix="name every field after a key of the input rows, such as {text}",
            )
        reached = [name for _, name, _, _ in parsed if name and name not in self.fields]
        if reached:
            raise UsageError(
                f"the prompt template reaches into a field ({{{reached[0]}}}): an attribute or "
                "an index of a value would put Python's text of it in every prompt",
                where="--prompt",
                fix="use plain {name} fields: a value that is not text is inserted as JSON",
            )
        if not text.strip():
            raise UsageError(
                "the prompt template is empty: every row would be sent, and paid for, as an "
                "empty message",
                where="--prompt",
                fix="write the prompt, with {name} fields from the rows, or leave --prompt out",
            )

    def render(self, row: Mapping[str, Any], where: str) -> str:
        missing = [name for name in self.fields if name not in row]
        if missing:
            raise UsageError(
                f"the row has no {', '.join(repr(m) for m in missing)} for the prompt template",
                where=where,
                fix=f"add the key to every row, or change the template (fields: "
                f"{', '.join(self.fields)})",
            )
        values = {name: _text(row[name]) for name in self.fields}
        try:
            return self.text.format_map(values)
        except (KeyError, IndexError, AttributeError, ValueError) as exc:
            raise UsageError(
                f"the prompt template cannot be filled from the row: {exc}",
                where=where,
                fix="use plain {name} fields",
            ) from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def open_input(path: Path) -> BinaryIO:
    """The input file, open for reading; UsageError naming it when it cannot be read (checked
    before anything else a job needs: the manifest, the model, the key)."""
    try:
        return path.open("rb")
    except OSError as exc:
        raise UsageError(
            f"cannot read the input file: {exc.strerror}",
            where=str(path),
            fix="check the path: one JSON object per line",
        ) from None


def count_rows(path: Path) -> int:
    """The rows of the file (its non-blank lines), for a progress bar counted in rows."""
    with open_input(path) as handle:
        return sum(1 for raw in handle if raw.strip())


def scan(path: Path, template: Template | None, id_field: str = "id") -> Iterator[Row]:
    """Every row of the file, checked; UsageError naming the line at the first bad one."""
    with open_input(path) as handle:
        offset, index = 0, 0
        for number, raw in enumerate(handle, 1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            yield parse_row(
                raw,
                path=path,
                line=number,
                offset=start,
                index=index,
                template=template,
                id_field=id_field,
            )
            index += 1


def rows_at(
    path: Path,
    places: Iterable[tuple[int, int, int]],
    template: Template | None,
    id_field: str = "id",
) -> Iterator[Row]:
    """The rows at (index, line, offset) places, read again (in the order given)."""
    with path.open("rb") as handle:
        for index, line, offset in places:
            if handle.tell() != offset:
                handle.seek(offset)
            raw = handle.readline()
            yield parse_row(
                raw,
                path=path,
                line=line,
                offset=offset,
                index=index,
                template=template,
                id_field=id_field,
            )


def parse_row(
    raw: bytes,
    *,
    path: Path,
    line: int,
    offset: int,
    index: int,
    template: Template | None,
    id_field: str,
) -> Row:
    where = f"{path}, line {line}"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise UsageError(
            f"the input line is not valid JSON: {exc}",
            where=where,
            fix="write one JSON object per line (JSON Lines)",
        ) from None
    if not isinstance(data, dict):
        raise UsageError(
            f"the input line is a JSON {type(data).__name__}, not an object",
            where=where,
            fix="write one JSON object per line (JSON Lines)",
        )
    row_id = _row_id(data.get(id_field), line, where)
    return Row(index, line, offset, row_id, _messages(data, template, where))


def _row_id(value: Any, line: int, where: str) -> str:
    if value is None:
        return str(line)
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise UsageError(
            f"the row id {value!r} is not a string or integer", where=where, fix=_FIX_ID
        )
    text = str(value)
    if not ROW_ID.fullmatch(text):
        raise UsageError(
            f"the row id {text[:80]!r} cannot be a custom id", where=where, fix=_FIX_ID
        )
    return text


def _messages(
    data: Mapping[str, Any], template: Template | None, where: str
) -> tuple[Message, ...]:
    if template is not None:
        return (Message.user(template.render(data, where)),)
    if "messages" in data:
        messages = data["messages"]
        if not isinstance(messages, list) or not messages:
            raise UsageError(
                "the row's 'messages' is not a non-empty list", where=where, fix=_FIX_MESSAGES
            )
        try:
            return tuple(as_message(m) for m in messages)
        except (UsageError, AttributeError, KeyError, TypeError) as exc:
            detail = exc.what if isinstance(exc, UsageError) else f"{type(exc).__name__}: {exc}"
            raise UsageError(
                f"a message of the row cannot be read: {detail}", where=where, fix=_FIX_MESSAGES
            ) from None
    prompt = data.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return (Message.user(prompt),)
    raise UsageError(
        "the row has no prompt: no --prompt template was given, and it has neither "
        "'messages' nor 'prompt'",
        where=where,
        fix="pass --prompt 'Extract ... from {text}', or give each row 'prompt' or 'messages'",
    )


_FIX_MESSAGES = 'give \'messages\' as [{"role": "user", "content": "..."}, ...]'
