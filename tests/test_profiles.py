"""Profiles: `[defaults]` and `[profiles.NAME]` of outform.toml, chosen per call; the call's
own arguments win over the profile, the profile over the defaults."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import outform
import outform.config
from outform import ConfigError, OutputError
from outform.cli import main
from outform.parse import clear_cache
from outform.profile import active_profile, step
from outform.streaming import StreamParser
from outform.trace.events import Event
from tests.echo import Echo

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
    "required": ["n"],
}
CONFIG = """
[defaults]
anyof_strategy = "best"
retries = 0

[defaults.precheck]
max_tokens = 150

[profiles.strict]
level = "minimal"
tolerant_level = 0

[profiles.strict.coercions]
integer = ["str->int"]

[profiles.lenient]
level = "full"
mode = "prompted"
retries = 1

[profiles.lenient.precheck]
enabled = true
inject_feedback = "context_key"

[profiles.hands_off]
enabled = false
"""


@pytest.fixture(autouse=True)
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("OUTFORM_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outform.toml").write_text(CONFIG, encoding="utf-8")
    outform.config.reload()
    yield tmp_path
    monkeypatch.undo()
    outform.config.reload()
    clear_cache()


def configure(project: Path, text: str) -> Path:
    path = project / "outform.toml"
    path.write_text(text, encoding="utf-8")
    return path


def config_error(project: Path, text: str) -> ConfigError:
    path = configure(project, text)
    with pytest.raises(ConfigError) as caught:
        outform.config.reload()
    assert str(path) in str(caught.value)
    return caught.value


# -- layering --------------------------------------------------------------------------------


def test_a_profile_overrides_the_defaults_which_override_the_built_in_values() -> None:
    chosen = step("lenient")
    assert chosen.values["level"] == "full" and chosen.sources["level"] == "[profiles.lenient]"
    assert chosen.retries == 1 and chosen.sources["retries"] == "[profiles.lenient]"
    assert chosen.values["anyof_strategy"] == "best"
    assert chosen.sources["anyof_strategy"] == "[defaults]"
    assert chosen.precheck["max_tokens"] == 150 and chosen.precheck["enabled"] is True
    assert chosen.sources["precheck.consensus_samples"] == "built-in"
    assert step(None).retries == 0 and step(None).mode == "auto"


def test_enabled_false_turns_every_intervention_off() -> None:
    chosen = step("hands_off")
    assert (chosen.mode, chosen.level, chosen.retries) == ("off", "off", 0)
    assert chosen.parse_options() == {}


def test_an_unknown_profile_names_the_file_and_the_profiles(project: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        outform.parse('{"n": 1}', SCHEMA, profile="invoice")
    error = caught.value
    assert error.what == "unknown profile 'invoice'"
    assert error.where == str(project / "outform.toml")
    assert error.fix is not None and "hands_off, lenient, strict" in error.fix


@pytest.mark.parametrize(
    ("text", "what", "allowed"),
    [
        ('[defaults]\nmode = "fast"\n', "bad value 'fast' for defaults.mode", "'off'"),
        ("[profiles.a]\ntolerant_level = 3\n", "profiles.a.tolerant_level", "from 0 to 2"),
        ('[profiles.a]\nanyof = "best"\n', "unknown key 'anyof' in [profiles.a]", "anyof_strategy"),
        ("[profiles.a.precheck]\nmax_tokens = 0\n", "profiles.a.precheck.max_tokens", "1 to"),
        (
            '[profiles.a.precheck]\ninject_feedback = "append"\n',
            "profiles.a.precheck.inject_feedback",
            "'context_key'",
        ),
        (  # a provider outform does not know, found when the file is read (not at the call)
            '[profiles.a.precheck]\nvalidator_model = "opnai:gpt-5-mini"\n',
            "profiles.a.precheck.validator_model",
            "registry",
        ),
        (
            '[profiles.a.coercions]\ninteger = ["str->bool"]\n',
            "unknown conversion 'str->bool' for integer",
            "str->int",
        ),
        ('[profiles.a.coercions]\nint = ["str->int"]\n', "unknown target type 'int'", "integer"),
        (
            '[parse]\nlevel = "full"\n[defaults]\nlevel = "off"\n',
            "defaults.level and parse.level set the same option",
            "one place",
        ),
    ],
)
def test_bad_keys_and_values_name_the_file_the_key_and_what_is_allowed(
    project: Path, text: str, what: str, allowed: str
) -> None:
    error = config_error(project, text)
    assert what in error.what
    assert error.fix is not None and allowed in error.fix


# -- the pipeline's options ------------------------------------------------------------------


def test_a_coercion_not_in_the_allowlist_is_not_made_and_the_hint_says_so() -> None:
    assert outform.parse('{"n": "4"}', SCHEMA, profile="strict").data == {"n": 4}
    with pytest.raises(OutputError) as caught:
        outform.parse('{"n": 4, "ok": "yes"}', SCHEMA, profile="strict")
    (violation,) = caught.value.hint.violations
    assert violation.path == "/ok"
    assert "not converted: str->bool is not in the allowlist" in caught.value.hint.message()
    assert outform.parse('{"n": 4, "ok": "yes"}', SCHEMA).data == {"n": 4, "ok": True}


def test_a_conversion_refused_leaves_no_change_of_its_parts_behind() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    allow = {"integer": ["str->int"]}  # not list->int: ["4"] stays, and "4" is not converted
    with pytest.raises(OutputError) as caught:
        outform.parse('{"n": ["4"]}', schema, coercions=allow)
    assert caught.value.result is not None and caught.value.result.changes == ()
    assert "list->int" in caught.value.hint.message()


def test_the_calls_own_options_win_over_the_profile() -> None:
    result = outform.parse('{"n": 4, "ok": "yes"}', SCHEMA, profile="strict", coercions=None)
    assert result.data == {"n": 4, "ok": True}
    fenced = "Here: {n: 1,}"
    with pytest.raises(OutputError):
        outform.parse(fenced, SCHEMA, profile="strict")
    own = outform.parse(fenced, SCHEMA, profile="strict", level="full", tolerance=2)
    assert own.data == {"n": 1}
    assert outform.parse(fenced, SCHEMA, profile="lenient").data == {"n": 1}


def test_defaults_set_later_reach_a_schema_parsed_or_streamed_before(project: Path) -> None:
    """parse() serves a schema it has seen without reading the settings, so a reload that
    adds `[defaults]` must still reach it, and a stream's pipeline for the same schema (cached
    for a call with no level) must not stand in for it."""
    configure(project, "")
    outform.config.reload()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert outform.parse('{"n": "3"}', schema).value == {"n": 3}  # coerced at the default level
    configure(project, '[defaults]\nlevel = "off"\n')
    outform.config.reload()
    StreamParser(schema)
    with pytest.raises(OutputError):
        outform.parse('{"n": "3"}', schema)  # strict, as [defaults] says
    configure(project, "")
    outform.config.reload()
    assert outform.parse('{"n": "3"}', schema).value == {"n": 3}


def test_tolerant_level_picks_the_decode_tiers(project: Path) -> None:
    configure(
        project, "[profiles.json5]\ntolerant_level = 1\n[profiles.json]\ntolerant_level = 0\n"
    )
    outform.config.reload()
    assert outform.parse("{n: 1}", SCHEMA, profile="json5").data == {"n": 1}
    with pytest.raises(OutputError):
        outform.parse("{n: 1}", SCHEMA, profile="json")


def test_max_unescape_depth_bounds_json_inside_strings(project: Path) -> None:
    configure(project, "[profiles.none]\nmax_unescape_depth = 0\n")
    outform.config.reload()
    twice = orjson.dumps(orjson.dumps({"n": 1}).decode()).decode()
    nested = orjson.dumps(twice).decode()  # a JSON string holding a JSON string of the object
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert outform.parse(nested, schema).data == {"n": 1}
    with pytest.raises(OutputError):
        outform.parse(nested, schema, profile="none")


UNION = {
    "anyOf": [
        {"type": "object", "properties": {k: {"type": "string"} for k in "abc"}},
        {"type": "object", "properties": {k: {"type": "integer"} for k in "abc"}},
    ]
}


def test_anyof_best_takes_the_branch_with_the_fewest_changes() -> None:
    reply = '{"a": 1, "b": 2, "c": "3"}'
    first = outform.parse(reply, UNION, anyof_strategy="first-pass")
    assert first.data == {"a": "1", "b": "2", "c": "3"} and len(first.changes) == 2
    best = outform.parse(reply, UNION)  # [defaults] anyof_strategy = "best"
    assert best.data == {"a": 1, "b": 2, "c": 3} and len(best.changes) == 1
    assert [e.branch_index for e in best.events if e.branch_index is not None] == [1]


def test_anyof_best_breaks_ties_to_the_first_branch() -> None:
    tie = outform.parse('{"a": 1, "b": "2"}', UNION, anyof_strategy="best")
    assert tie.data == {"a": "1", "b": "2"}


# -- generate() ------------------------------------------------------------------------------

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}


def test_generate_takes_mode_and_retries_from_the_profile(echo: Echo) -> None:
    echo.reply("no json", {"name": "Ada"})
    result = outform.generate(
        "echo:gpt-5", "Who?", PERSON, transport=echo.transport, profile="lenient"
    )
    assert result.profile == "lenient" and result.mode == "instructions"
    assert len(result.attempts) == 2
    assert echo.sent[0]["output"] == "FreeText"
    assert '"name"' in echo.texts(0)[0]


def test_generate_without_a_profile_takes_the_defaults(echo: Echo) -> None:
    echo.reply("no json")
    with pytest.raises(outform.GenerationError):
        outform.generate("echo:gpt-5", "Who?", PERSON, transport=echo.transport)
    assert len(echo.sent) == 1  # [defaults] retries = 0


def test_the_calls_mode_wins_over_the_profile(echo: Echo) -> None:
    echo.reply({"name": "Ada"})
    result = outform.generate(
        "echo:gpt-5", "Who?", PERSON, transport=echo.transport, profile="lenient", mode="native"
    )
    assert result.mode == "native_schema"


def test_mode_off_sends_nothing_about_the_schema_and_still_validates(echo: Echo) -> None:
    echo.reply({"name": "Ada"}, {"nom": "Ada"})
    result = outform.generate(
        "echo:gpt-5", "Who?", PERSON, transport=echo.transport, profile="hands_off"
    )
    assert result.mode == "unconstrained" and result.value == {"name": "Ada"}
    assert echo.sent[0]["output"] == "FreeText" and echo.texts(0) == ["Who?"]
    with pytest.raises(outform.GenerationError):
        outform.generate("echo:gpt-5", "Who?", PERSON, transport=echo.transport, mode="off")


# -- the active profile labels the events of its call -------------------------------------------


def test_observers_see_the_active_profile_while_its_call_runs(echo: Echo) -> None:
    labels: list[tuple[str, str | None]] = []

    def observer(event: Event) -> None:
        labels.append((event.name, active_profile()))

    outform.parse('{"n": "1"}', SCHEMA, profile="strict", observers=[observer])
    echo.reply("no json", {"name": "Ada"})
    outform.generate(
        "echo:gpt-5",
        "Who?",
        PERSON,
        transport=echo.transport,
        profile="lenient",
        observers=[observer],
    )
    assert labels and {label for _, label in labels[:2]} == {"strict"}
    assert ("output.reask.attempt", "lenient") in labels
    assert active_profile() is None


# -- outform config show ---------------------------------------------------------------------


def test_config_show_prints_each_setting_and_where_it_came_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "show", "--profile", "strict", "--json"]) == 0
    shown: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    assert shown["settings"]["coercions"] == {"integer": ["str->int"]}
    assert shown["sources"]["coercions"] == "[profiles.strict]"
    assert shown["sources"]["anyof_strategy"] == "[defaults]"
    assert shown["sources"]["mode"] == "built-in"
    assert shown["profiles"] == ["hands_off", "lenient", "strict"]
    assert main(["config", "show"]) == 0
    assert "[defaults]" in capsys.readouterr().out


def test_config_show_with_an_unknown_profile_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "show", "--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown profile 'nope'" in err and "Traceback" not in err


# -- a profile's name must say something --------------------------------------------------------


@pytest.mark.parametrize("name", ['""', '"  "', "''"])
def test_an_empty_profile_name_in_the_file_is_refused(project: Path, name: str) -> None:
    error = config_error(project, f"[profiles.{name}]\nretries = 1\n")
    assert error.what.startswith("a profile's name is empty: [profiles.")
    assert error.fix is not None and "[profiles.invoice_extract]" in error.fix


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_profile_name_in_a_call_is_refused_not_taken_for_none(name: str) -> None:
    for call in (
        lambda: step(name),
        lambda: outform.parse('{"n": 1}', SCHEMA, profile=name),
    ):
        with pytest.raises(ConfigError, match="the profile name is empty") as caught:
            call()
        assert caught.value.fix is not None and "hands_off, lenient, strict" in caught.value.fix


def test_an_empty_profile_header_is_a_400_naming_the_rule() -> None:
    from outform.gateway.enforce import profile_named
    from outform.gateway.replies import GatewayError

    with pytest.raises(GatewayError, match="the profile name is empty") as caught:
        profile_named(b"")
    assert caught.value.status == 400
