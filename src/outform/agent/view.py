"""An envelope for people, in Streamlit: the way assistant UIs show a reply.

    from outform.agent.view import show_envelope
    show_envelope(result.value)          # inside a Streamlit script

The content first; then a collapsed metadata panel (confidence in three colour bands, the
first three sources and the rest on demand, the reasoning steps, the kind of reply); the tool
calls the reply asks for; and the error, if the model reported one. Needs the `streamlit`
extra (`pip install 'outform[streamlit]'`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from outform.agent.envelope import Envelope

SOURCES_SHOWN = 3
"""Sources listed before "show more"."""


def confidence_band(confidence: float) -> tuple[str, str]:
    """(label, Streamlit colour) of a confidence: high above 0.8, medium above 0.6, else low."""
    if confidence > 0.8:
        return "high", "green"
    if confidence > 0.6:
        return "medium", "orange"
    return "low", "red"


def show_envelope(envelope: Envelope[Any] | Mapping[str, Any], *, key: str = "envelope") -> None:
    """Render one envelope (or its JSON as a dict) into the running Streamlit script. `key`
    tells the widgets of several envelopes on one page apart."""
    import streamlit as st

    reply = envelope if isinstance(envelope, Envelope) else Envelope[Any].model_validate(envelope)
    content = reply.content
    if isinstance(content, str):
        st.markdown(content)
    else:
        st.json(_plain(content))
    meta = reply.metadata
    label, colour = confidence_band(meta.confidence)
    with st.expander(f"Details: {label} confidence ({meta.confidence:.0%})", expanded=False):
        st.markdown(f":{colour}-badge[confidence {meta.confidence:.2f} · {label}]")
        st.caption(f"reply type: {meta.response_type}")
        if meta.sources:
            st.markdown("**Sources**")
            st.markdown(_bullets(meta.sources[:SOURCES_SHOWN]))
            rest = meta.sources[SOURCES_SHOWN:]
            if rest and st.toggle(f"Show {len(rest)} more sources", key=f"{key}-sources"):
                st.markdown(_bullets(rest))
        if meta.reasoning_steps:
            st.markdown("**Reasoning**")
            st.markdown("\n".join(f"{i}. {step}" for i, step in enumerate(meta.reasoning_steps, 1)))
    for call in reply.tool_calls:
        with st.container(border=True):
            st.markdown(f"**Tool call:** `{call.function_name}`")
            if call.reasoning:
                st.caption(call.reasoning)
            st.code(orjson.dumps(call.arguments, option=orjson.OPT_INDENT_2).decode(), "json")
    if reply.error is not None:
        error = reply.error
        text = f"{error.code}: {error.message}"
        if error.recoverable:
            st.warning(f"{text} (recoverable)")
        else:
            st.error(text)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def _plain(content: Any) -> Any:
    dump = getattr(content, "model_dump", None)
    return dump(mode="json") if callable(dump) else content


__all__ = ["SOURCES_SHOWN", "confidence_band", "show_envelope"]
