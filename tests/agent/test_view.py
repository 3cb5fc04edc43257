"""The Streamlit view of an envelope, run headless with Streamlit's AppTest."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("streamlit", reason="pip install 'outform[streamlit]' for the view's tests")

from streamlit.testing.v1 import AppTest

from outform.agent.view import confidence_band

SOURCES = ["met.no", "yr.no", "smhi.se", "dmi.dk", "fmi.fi"]


def app(reply: object) -> None:  # AppTest runs this function's source as a script
    from outform.agent.view import show_envelope

    show_envelope(reply)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _keep_main_module() -> Iterator[None]:
    """AppTest leaves its script installed as `__main__`; a process started later in the same
    test run (the gateway's worker pool) would then try to import that deleted script."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


def run(reply: dict[str, Any]) -> AppTest:
    test = AppTest.from_function(app, args=(reply,), default_timeout=30)
    test.run()
    assert not test.exception, test.exception
    return test


def texts(test: AppTest) -> list[str]:
    return [m.value for m in test.markdown]


@pytest.mark.parametrize(
    ("confidence", "band"),
    [(0.95, "high"), (0.81, "high"), (0.8, "medium"), (0.61, "medium"), (0.6, "low"), (0.0, "low")],
)
def test_confidence_falls_in_three_bands(confidence: float, band: str) -> None:
    assert confidence_band(confidence)[0] == band


def test_the_content_then_a_collapsed_panel_with_the_first_three_sources() -> None:
    test = run(
        {
            "content": "Oslo will be **mild**.",
            "metadata": {
                "confidence": 0.9,
                "sources": SOURCES,
                "reasoning_steps": ["read the forecast", "summarise"],
            },
        }
    )
    shown = texts(test)
    assert shown[0] == "Oslo will be **mild**."
    (panel,) = test.expander
    assert panel.label == "Details: high confidence (90%)"
    assert ":green-badge[confidence 0.90 · high]" in shown
    assert "- met.no\n- yr.no\n- smhi.se" in shown
    assert not any("dmi.dk" in text for text in shown)
    assert "1. read the forecast\n2. summarise" in shown
    test.toggle(key="envelope-sources").set_value(True).run()
    assert "- dmi.dk\n- fmi.fi" in texts(test)


def test_medium_and_low_confidence_are_orange_and_red() -> None:
    assert ":orange-badge[confidence 0.70 · medium]" in texts(
        run({"content": "x", "metadata": {"confidence": 0.7}})
    )
    low = run({"content": "x", "metadata": {"confidence": 0.3, "sources": SOURCES[:2]}})
    assert ":red-badge[confidence 0.30 · low]" in texts(low)
    assert len(low.toggle) == 0  # three sources or fewer: nothing more to show


def test_tool_calls_and_the_error_are_shown() -> None:
    test = run(
        {
            "content": "",
            "tool_calls": [
                {"function_name": "forecast", "arguments": {"city": "Oslo"}, "reasoning": "need it"}
            ],
            "error": {"code": "partial", "message": "one day missing", "recoverable": False},
        }
    )
    assert "**Tool call:** `forecast`" in texts(test)
    assert [c.value for c in test.caption][-1] == "need it"
    assert '"city": "Oslo"' in test.code[0].value
    assert test.error[0].value == "partial: one day missing"


def test_a_recoverable_error_is_a_warning_and_structured_content_is_json() -> None:
    test = run(
        {
            "content": {"total": 12.5},
            "error": {"code": "late", "message": "try again", "recoverable": True},
        }
    )
    assert test.json[0].value == '{"total": 12.5}'
    assert test.warning[0].value == "late: try again (recoverable)"
