"""JSON Pointers (RFC 6901): schema locations and instance paths are both written as pointers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def escape(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def join(pointer: str, *tokens: str | int) -> str:
    """Append tokens to a pointer: join("/a", "b/c") == "/a/b~1c"."""
    return pointer + "".join("/" + escape(t) for t in tokens)


def from_parts(parts: Iterable[str | int]) -> str:
    return join("", *parts)


def parts(pointer: str) -> list[str]:
    if not pointer:
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"a JSON pointer starts with '/': {pointer!r}")
    return [unescape(t) for t in pointer[1:].split("/")]


def lookup(document: Any, pointer: str) -> Any:
    """The value at `pointer`; KeyError when it does not exist."""
    node = document
    for token in parts(pointer):
        if isinstance(node, dict):
            node = node[token]
        elif isinstance(node, list):
            if not token.isdigit():
                raise KeyError(token)
            index = int(token)
            if index >= len(node):
                raise KeyError(token)
            node = node[index]
        else:
            raise KeyError(token)
    return node


def readable(pointer: str) -> str:
    """A path a person (or a model) reads easily: /items/0/price -> items[0].price."""
    if not pointer:
        return "(root)"
    out = ""
    for token in parts(pointer):
        if token.isdigit():
            out += f"[{token}]"
        elif token.isidentifier():
            out += f".{token}" if out else token
        else:
            out += f"[{token!r}]"
    return out
