"""A batch reply stopped at its token limit is taken only when it was complete as sent.

The rule is generate's (`reask.complete_at_cut`): JSON ending with `}`, `]` or a closing quote
is known to be whole; `12` may have been `120` or `12.5`, so it is asked for again as cut off.
"""

from __future__ import annotations

from typing import Any

import pytest

from outform.batch.outcome import judge
from outform.parse.pipeline import Pipeline
from outform.providers.base import Response


@pytest.mark.parametrize("text", ["12", "1.5", "true"])
def test_a_bare_value_at_the_token_limit_is_asked_for_again_as_cut_off(text: str) -> None:
    pipeline: Pipeline[Any] = Pipeline({})
    verdict = judge(Response(text, "length"), pipeline, can_reask=True)
    assert verdict.status == "reask"
    assert verdict.hint is not None and verdict.hint.is_cut


@pytest.mark.parametrize("text", ['{"n": 12}', "[1, 2]", '"twelve"'])
def test_closed_json_at_the_token_limit_is_taken(text: str) -> None:
    pipeline: Pipeline[Any] = Pipeline({})
    verdict = judge(Response(text, "length"), pipeline, can_reask=True)
    assert verdict.status == "ok"


def test_a_bare_value_the_model_ended_itself_is_taken() -> None:
    pipeline: Pipeline[Any] = Pipeline({"type": "integer"})
    assert judge(Response("12", "stop"), pipeline, can_reask=True).status == "ok"
