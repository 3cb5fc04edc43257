"""Hypothesis strategies shared by the parse tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Text without lone surrogates: what a UTF-8 reply can hold.
_chars = st.characters(codec="utf-8")
_text = st.text(_chars)

# orjson writes integers of up to 64 bits, finite floats and UTF-8 strings: the JSON a model
# can send.
json_scalars: st.SearchStrategy[Any] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text
)

json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_text, children, max_size=5),
    max_leaves=20,
)

json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(_text, json_values, max_size=5)

# Prose a model writes around its JSON: no brackets, braces or backticks (which would make it
# JSON-shaped or fenced), no `<` (reasoning tags) and no `~` (tilde fences).
prose: st.SearchStrategy[str] = st.text(
    st.characters(codec="utf-8", exclude_characters="{}[]`<~\x00"),
    max_size=60,
)
