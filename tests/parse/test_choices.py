"""Enum members indexed once per compiled schema, so that a large enum costs lookups, not scans
(issue 9: one member of a million named in a sentence took a minute)."""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform import OutputError, Pipeline
from outform.parse import choices as choices_module
from outform.parse.choices import Choices

MANY = [f"member{i}" for i in range(200_000)]
SCHEMA = {"type": "object", "properties": {"c": {"enum": MANY}}, "required": ["c"]}


def test_json_equality_decides_membership() -> None:
    members = Choices(["a", 1, True, None, [1, 2], {"k": "v"}])
    assert "a" in members and 1.0 in members and True in members and None in members
    assert [1, 2] in members and {"k": "v"} in members
    assert 1 not in Choices([True]) and True not in Choices([1])
    assert "b" not in members and [2, 1] not in members


def test_a_word_names_the_members_equal_up_to_case_accents_and_punctuation() -> None:
    members = Choices(["EUR", "Café", "usd", "USD"])
    assert members.named("**eur**") == ["EUR"]
    assert members.named("cafe") == ["Café"]
    assert members.named("Usd") == ["usd", "USD"]  # two members: the caller refuses to guess
    assert members.named("gbp") == []


def test_a_sentence_mentions_one_member_as_a_whole_word() -> None:
    members = Choices(["low", "MEDIUM", "high", "1040", "1040-X"])
    assert members.mentioned("I'd say MEDIUM, not much more") == "MEDIUM"
    assert members.mentioned("file the 1040-X form") == "1040-X"
    assert members.mentioned("mediums are lower") is None
    assert members.mentioned("low or high") is None
    assert members.mentioned("Medium.") == "MEDIUM"  # case and accents ignored second


@pytest.mark.parametrize(
    "sentence", ["very-high", "VERY  HIGH", "very\nhigh", "**very** high", "It is `very high`"]
)
def test_words_parted_otherwise_than_by_one_space_still_mention_the_longer_member(
    sentence: str,
) -> None:
    """Found by a new-user trial: "very-high" named HIGH, not VERY HIGH."""
    members = Choices(["LOW", "MEDIUM", "HIGH", "VERY HIGH"])
    assert members.mentioned(sentence) == "VERY HIGH"
    assert members.mentioned("It is high") == "HIGH"
    assert Choices(["1040-X", "1040"]).mentioned("file the 1040 - X form") == "1040-X"
    assert Choices(["in_progress", "progress"]).mentioned("work in_progress") == "in_progress"


@pytest.mark.parametrize("member", ["member0", "member123456", "member199999"])
def test_a_member_of_a_large_enum_named_in_a_sentence_is_found(member: str) -> None:
    pipeline = Pipeline(SCHEMA, level="full")
    result = pipeline.run(f'{{"c": "I think {member} is right"}}')
    assert result.value == {"c": member}


def test_the_index_is_built_once_per_compiled_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    real = choices_module._Index.__init__

    def counting(self: Any, members: list[str], keys: list[str]) -> None:
        built.append(len(members))
        real(self, members, keys)

    monkeypatch.setattr(choices_module._Index, "__init__", counting)
    schema = {"type": "object", "properties": {"c": {"enum": [f"m{i}" for i in range(5000)]}}}
    for member in ("m1", "m2", "m4999"):
        reply = f'{{"c": "it is {member.upper()}"}}'  # upper case: the folded index is needed
        assert outform.parse(reply, schema, level="full").value == {"c": member}
        reply = f'{{"c": "{member.upper()}"}}'  # a word: the token index
        assert outform.parse(reply, schema, level="full").value == {"c": member}
    assert built == [5000, 5000]


def test_a_sentence_naming_two_members_of_a_large_enum_is_refused() -> None:
    with pytest.raises(OutputError):
        Pipeline(SCHEMA, level="full").run('{"c": "member1 or member2"}')


@pytest.mark.parametrize("reply", ["It is VERY HIGH", "rated VERY HIGH.", "it is very HIGH"])
def test_a_longer_mention_wins_over_an_exact_one_inside_it(reply: str) -> None:
    """Found by a new-user trial: the exact-case search found "HIGH" inside "VERY HIGH" and
    never looked further; the longer mention is the member "very high", whatever its case."""
    schema = {"enum": ["LOW", "HIGH", "very high"]}
    assert outform.parse(reply, schema, level="full").data == "very high"


# -- members alike but for case (found by a trial: members "ON" and "On", reply "on") ---------

ALIKE = {"type": "object", "properties": {"a": {"enum": ["ON", "On", "off"]}}, "required": ["a"]}


def test_of_members_alike_but_for_case_the_one_spelled_exactly_is_named() -> None:
    members = Choices(["ON", "On", "off"])
    assert members.named("**On**") == ["On"]
    assert members.named("ON.") == ["ON"]
    assert members.named("on") == ["ON", "On"]  # none spelled exactly: the caller picks none
    assert members.named("OFF") == ["off"]


def test_a_sentence_mentioning_members_alike_but_for_case_names_the_exact_one_or_none() -> None:
    """The folded search found both members at the same words and kept the first declared
    ("ON" for "I'd say on"), without a word."""
    members = Choices(["ON", "On"])
    assert members.mentioned("I'd say On") == "On"
    assert members.mentioned("I'd say ON") == "ON"
    assert members.mentioned("I'd say on") is None
    assert members.mentioned("I'd say oN today") is None


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(("reply", "member"), [("On", "On"), ("ON", "ON"), ("**On**", "On")])
def test_an_exact_case_match_wins_over_a_case_insensitive_one(
    level: str, reply: str, member: str
) -> None:
    result = outform.parse(f'{{"a": "{reply}"}}', ALIKE, level=level)
    assert result.data == {"a": member}


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize("reply", ["on", "oN", "**on**", "I'd say on"])
def test_a_value_naming_members_alike_but_for_case_is_refused_naming_them(
    level: str, reply: str
) -> None:
    """No silent pick (before, "on" was "ON", the first declared): the violation stands and the
    hint names the members the value may mean."""
    with pytest.raises(OutputError) as caught:
        outform.parse(f'{{"a": "{reply}"}}', ALIKE, level=level)
    message = caught.value.hint.message()
    if reply != "I'd say on":  # (a sentence: the members are listed as the enum's)
        assert '"ON", "On", members that differ only in case' in message
    assert '["ON","On","off"]' in message


def test_a_sentence_with_the_exact_member_still_names_it() -> None:
    assert outform.parse('{"a": "I would say On"}', ALIKE, level="full").data == {"a": "On"}
