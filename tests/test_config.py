"""outform.toml and [tool.outform]: found upward from the working directory, checked key by key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import outform
import outform.config
from outform import ConfigError
from outform.config import find_config, load

# `outform.parse` is the function (it shadows the subpackage), so import from the module.
from outform.parse import Options, clear_cache
from outform.streaming import StreamParser


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test reads the config of its own directory; the next test starts clean."""
    monkeypatch.delenv("OUTFORM_CONFIG", raising=False)
    outform.config.reload()
    clear_cache()
    yield
    monkeypatch.undo()
    outform.config.reload()
    clear_cache()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project directory, made the working directory."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_from(path: Path, table: str = "") -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load(path, table)
    return caught.value


# -- discovery ------------------------------------------------------------------------------


def test_without_a_config_file_the_built_in_defaults_apply(project: Path) -> None:
    settings = outform.config.reload()
    assert settings.source is None
    assert settings.parse.level == "minimal"
    assert outform.Pipeline({}).options.level == "minimal"


def test_outform_toml_in_the_working_directory_is_found(project: Path) -> None:
    config = write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    settings = outform.config.reload()
    assert settings.source == config
    assert settings.parse.level == "full"


def test_outform_toml_is_found_from_a_subdirectory(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(project / "outform.toml", '[parse]\nlevel = "off"\n')
    nested = project / "src" / "app"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    assert outform.config.reload().source == config


def test_a_tool_outform_table_in_pyproject_is_found(project: Path) -> None:
    pyproject = write(
        project / "pyproject.toml",
        '[project]\nname = "demo"\n\n[tool.outform.parse]\nlevel = "full"\nmax_depth = 50\n',
    )
    assert find_config() == (pyproject, "tool.outform")
    settings = outform.config.reload()
    assert (settings.source, settings.parse.level) == (pyproject, "full")
    assert settings.parse.overrides == {"max_depth": 50}


def test_a_pyproject_without_the_table_is_passed_over_for_one_further_up(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    write(project / "pkg" / "pyproject.toml", '[project]\nname = "pkg"\n')
    monkeypatch.chdir(project / "pkg")
    assert outform.config.reload().source == config


@pytest.mark.parametrize("tool", ['tool = "outform"', 'tool = ["outform"]'])
def test_a_pyproject_whose_tool_is_no_table_is_passed_over(
    project: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """Found by a trial: `tool = "outform"` in any pyproject.toml up the tree made every call
    an internal error (`'str' object has no attribute 'get'`). It holds no [tool] table, so
    it is not outform's config."""
    config = write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    write(project / "pkg" / "pyproject.toml", tool + "\n")
    monkeypatch.chdir(project / "pkg")
    assert outform.config.reload().source == config
    assert outform.parse('{"a": 1}').data == {"a": 1}


def test_an_outform_config_of_the_wrong_shape_names_the_file(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = write(tmp_path / "odd" / "pyproject.toml", 'tool = "outform"\n')
    monkeypatch.setenv("OUTFORM_CONFIG", str(odd))
    with pytest.raises(ConfigError, match="must be a table") as caught:
        outform.config.reload()
    assert caught.value.where == str(odd)


def test_the_nearest_config_file_wins(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    inner = write(project / "pkg" / "outform.toml", '[parse]\nlevel = "off"\n')
    monkeypatch.chdir(project / "pkg")
    assert outform.config.reload().source == inner


def test_outform_toml_wins_over_pyproject_in_the_same_directory(project: Path) -> None:
    config = write(project / "outform.toml", '[parse]\nlevel = "off"\n')
    write(project / "pyproject.toml", '[tool.outform.parse]\nlevel = "full"\n')
    assert outform.config.reload().source == config


def test_the_environment_variable_names_the_config_file(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    elsewhere = write(tmp_path / "elsewhere" / "settings.toml", '[parse]\nlevel = "off"\n')
    monkeypatch.setenv("OUTFORM_CONFIG", str(elsewhere))
    settings = outform.config.reload()
    assert (settings.source, settings.parse.level) == (elsewhere, "off")


def test_the_environment_variable_may_name_a_pyproject(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = write(
        tmp_path / "other" / "pyproject.toml", '[tool.outform.parse]\nlevel = "off"\n'
    )
    monkeypatch.setenv("OUTFORM_CONFIG", str(pyproject))
    assert outform.config.reload().parse.level == "off"


def test_the_environment_variable_naming_a_missing_file_is_an_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTFORM_CONFIG", str(project / "nope.toml"))
    with pytest.raises(ConfigError) as caught:
        outform.config.reload()
    assert caught.value.where == "environment variable OUTFORM_CONFIG"
    assert "nope.toml" in caught.value.what


def test_settings_are_cached_until_reloaded(project: Path) -> None:
    assert outform.config.settings().parse.level == "minimal"
    write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    assert outform.config.settings().parse.level == "minimal"
    assert outform.config.reload().parse.level == "full"


# -- the settings reach the pipeline --------------------------------------------------------


def test_the_configured_level_and_options_become_pipeline_defaults(project: Path) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "full"\nmax_depth = 7\n')
    outform.config.reload()
    options = outform.Pipeline({}).options
    assert (options.level, options.max_depth, options.tolerance) == ("full", 7, 2)


def test_a_call_overrides_the_configured_level_and_options(project: Path) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "off"\nmax_depth = 7\n')
    outform.config.reload()
    options = outform.Pipeline({}, level="minimal", max_depth=9).options
    assert (options.level, options.max_depth) == ("minimal", 9)


def test_parse_uses_the_configured_level(project: Path) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    outform.config.reload()
    clear_cache()
    assert outform.parse('{"a": 1,}', {"type": "object"}).value == {"a": 1}


def test_a_reload_reaches_the_stream_parser_too(project: Path) -> None:
    schema = {"type": "object"}
    assert StreamParser(schema).pipeline.options.level == "minimal"
    write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    outform.config.reload()
    assert StreamParser(schema).pipeline.options.level == "full"


def test_configured_stages_switch_stages_off(project: Path) -> None:
    write(project / "outform.toml", '[parse]\nstages = ["decode"]\n')
    outform.config.reload()
    with pytest.raises(outform.OutputError):
        outform.parse('Here: {"a": 1}', {"type": "object"})


# -- errors name the file, the key and what is allowed --------------------------------------


def test_an_unknown_section_names_the_file_and_the_sections(project: Path) -> None:
    config = write(project / "outform.toml", '[parsing]\nlevel = "full"\n')
    error = error_from(config)
    assert error.what == "unknown section [parsing]"
    assert error.where == str(config)
    assert error.fix == "use one of: [parse], [gateway], [batch], [trace], [defaults], [profiles]"


def test_an_unknown_key_names_the_file_the_key_and_the_keys(project: Path) -> None:
    config = write(project / "outform.toml", '[parse]\nlevle = "full"\n')
    error = error_from(config)
    assert error.what == "unknown key 'levle' in [parse]"
    assert error.where == str(config)
    assert error.fix is not None
    assert "level" in error.fix
    assert "max_depth" in error.fix


def test_a_bad_value_names_the_file_the_key_and_the_allowed_values(project: Path) -> None:
    config = write(project / "outform.toml", '[parse]\nlevel = "max"\n')
    error = error_from(config)
    assert error.what == "bad value 'max' for parse.level"
    assert error.where == str(config)
    assert error.fix == "allowed: one of 'off', 'minimal', 'full'"


@pytest.mark.parametrize(
    ("line", "allowed"),
    [
        ("tolerance = 5", "an integer from 0 to 2"),
        ("tolerance = true", "an integer from 0 to 2"),
        ("max_depth = 0", "an integer from 1 to 250"),
        ("max_depth = 251", "an integer from 1 to 250"),
        ("unescape_depth = -1", "an integer ≥ 0"),
        ('lenient = "yes"', "true or false"),
        ("time_limit = -1", "a number ≥ 0"),
        ('stages = ["extract", "validate"]', "a list drawn from"),
    ],
)
def test_each_key_says_what_it_allows(project: Path, line: str, allowed: str) -> None:
    error = error_from(write(project / "outform.toml", f"[parse]\n{line}\n"))
    assert error.fix is not None
    assert allowed in error.fix


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("unescape_depth", 50),
        ("unescape_depth", -1),
        ("max_depth", 250),
        ("max_depth", 251),
        ("max_chars", 0),
        ("time_limit", 0),
        ("time_limit", -0.5),
        ("max_repair_chars", 0),
        ("max_repair_string", 0),
        ("max_repair_string", -1),
    ],
)
def test_the_file_and_the_pipeline_take_the_same_values(
    project: Path, name: str, value: int | float
) -> None:
    """One bound per option: a value outform.toml accepts is one `parse()` accepts, and a value
    one refuses the other refuses, with the same words."""
    write(project / "outform.toml", f"[parse]\n{name} = {value}\n")
    try:
        from_file = outform.config.reload().parse.overrides[name]
    except ConfigError as error:
        assert error.fix is not None
        with pytest.raises(ConfigError) as caught:
            Options.for_level("minimal", **{name: value})
        assert error.fix.removeprefix("allowed: ") in caught.value.what
    else:
        assert from_file == value
        assert getattr(Options.for_level("minimal", **{name: value}), name) == value


def test_errors_in_pyproject_name_the_full_key(project: Path) -> None:
    pyproject = write(project / "pyproject.toml", "[tool.outform.parse]\ntolerance = 5\n")
    error = error_from(pyproject, "tool.outform")
    assert error.what == "bad value 5 for tool.outform.parse.tolerance"
    assert error.where == str(pyproject)


def test_an_unknown_key_in_pyproject_names_its_table(project: Path) -> None:
    pyproject = write(project / "pyproject.toml", "[tool.outform.parse]\nspeed = 1\n")
    error = error_from(pyproject, "tool.outform")
    assert error.what == "unknown key 'speed' in [tool.outform.parse]"


def test_a_section_that_is_not_a_table_is_an_error(project: Path) -> None:
    config = write(project / "outform.toml", 'parse = "full"\n')
    assert error_from(config).what == "[parse] must be a table"


def test_invalid_toml_is_an_error_naming_the_file(project: Path) -> None:
    config = write(project / "outform.toml", "[parse\n")
    error = error_from(config)
    assert error.what.startswith("the config file is not valid TOML")
    assert error.where == str(config)


def test_a_broken_discovered_config_fails_the_next_parse_loudly(project: Path) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "max"\n')
    with pytest.raises(ConfigError):
        outform.config.reload()
    clear_cache()
    with pytest.raises(ConfigError, match=r"parse\.level"):
        outform.parse("{}", {"type": "object"})


# -- values are shown as the file writes them (TOML), never as Python -----------------------


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("[defaults]\nlevel = true\n", "bad value true for defaults.level"),
        ('[defaults]\ntags = ["a", ""]\n', "bad value ['a', ''] for defaults.tags"),
        ('[defaults]\nmode = "it\'s"\n', 'bad value "it\'s" for defaults.mode'),
        ("[parse]\nlevel = { a = 1 }\n", "bad value { a = 1 } for parse.level"),
        ("[parse]\ntime_limit = -inf\n", "bad value -inf for parse.time_limit"),
        ("[parse]\nlenient = 1.5\n", "bad value 1.5 for parse.lenient"),
        ("[parse]\nlevel = 1979-05-27\n", "bad value 1979-05-27 for parse.level"),
    ],
)
def test_a_bad_value_is_repeated_as_toml(project: Path, text: str, what: str) -> None:
    error = error_from(write(project / "outform.toml", text))
    assert error.what == what
    assert "True" not in str(error) and "None" not in str(error)


@pytest.mark.parametrize(
    "value",
    [True, False, 0, -7, 2.5, "full", "it's", 'say "hi"', "tab\there", "line\nbreak", "\x7f",
     ["a", 1, True], [], {"a": 1, "b c": ["x"]}, {}],
)  # fmt: skip
def test_a_value_written_as_toml_reads_back_as_the_same_value(value: object) -> None:
    """What an error repeats can be pasted back into the file."""
    import tomllib

    from outform.config import toml_value

    assert tomllib.loads(f"x = {toml_value(value)}")["x"] == value


def test_config_show_prints_json_values(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from outform.cli import main

    write(project / "outform.toml", '[defaults]\nenabled = true\n[parse]\nstages = ["extract"]\n')
    outform.config.reload()
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "true" in out and "null" in out and '["extract"]' in out
    assert "True" not in out and "None" not in out and "'extract'" not in out


# -- stages = [] is a choice: no optional stage, only validation ------------------------------


def test_no_stages_is_not_the_default(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`stages = []` switches every optional stage off, at any level (an empty list is not
    "unset"): the reply must be one strict JSON value, and is only validated."""
    write(project / "outform.toml", '[parse]\nlevel = "full"\nstages = []\n')
    outform.config.reload()
    assert outform.Pipeline({}).options.stages == frozenset()
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert outform.parse('{"a": 1}', schema).value == {"a": 1}
    for reply in ('Here: {"a": 1}', '{"a": "1"}', '{"a": 1,}', "{'a': 1}", '"{\\"a\\": 1}"'):
        with pytest.raises(outform.OutputError):
            outform.parse(reply, schema)
    from outform.cli import main

    assert main(["config", "show", "--json"]) == 0
    import orjson

    shown = orjson.loads(capsys.readouterr().out)
    assert shown["settings"]["parse.stages"] == []
    assert shown["sources"]["parse.stages"] == "[parse]"


def test_without_a_stages_key_the_level_decides(project: Path) -> None:
    write(project / "outform.toml", '[parse]\nlevel = "full"\n')
    outform.config.reload()
    assert outform.Pipeline({}).options.stages == {"extract", "unescape", "decode", "coerce"}
    assert outform.parse("{'a': 1,}", {"type": "object"}).value == {"a": 1}
