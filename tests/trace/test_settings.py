"""The [trace] section, store specs and caller labels: validated like every other section;
labels of the call, the block, the profile ([profiles.NAME]) and [defaults] merged key by
key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import outform.config
from outform.config import load
from outform.errors import ConfigError
from outform.profile import active, active_profile, step
from outform.trace import Labels, labels
from outform.trace.caller import current, resolve
from outform.trace.runtime import open_store
from outform.trace.settings import TraceSettings, default_store_path
from outform.trace.sqlite_store import SqliteTraceStore

CONFIG = """
[trace]
store = "sqlite:traces/t.sqlite"
retention_days = 7
max_change_events = 50
otel = false

[defaults]
step = "default-step"
tags = ["prod"]

[profiles.triage]
agent = "router"
tags = ["fast"]
"""


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "outform.toml"
    path.write_text(CONFIG, encoding="utf-8")
    monkeypatch.setenv("OUTFORM_CONFIG", str(path))
    outform.config.reload()
    yield path
    monkeypatch.undo()
    outform.config.reload()


def test_the_section_is_read_and_the_labels_of_each_profile(configured: Path) -> None:
    trace = outform.config.settings().trace
    assert trace.retention_days == 7.0 and trace.store_base_dir == str(configured.parent)
    assert trace.max_change_events == 50
    assert step(None).labels == Labels(step="default-step", tags=("prod",))
    assert step("triage").labels == Labels(step="triage", agent="router", tags=("prod", "fast"))
    assert step("triage").sources["agent"] == "[profiles.triage]"
    store = open_store("sqlite:traces/t.sqlite", base_dir=trace.store_base_dir)
    assert isinstance(store, SqliteTraceStore)
    assert store.path == configured.parent / "traces" / "t.sqlite"


@pytest.mark.parametrize(
    ("text", "message", "fix"),
    [
        ("[trace]\ncolour = 1\n", "unknown key 'colour' in [trace]", "flush_interval"),
        ("[trace]\nflush_interval = 0\n", "bad value 0 for trace.flush_interval", "0.01"),
        ("[trace]\nmax_change_events = -1\n", "bad value -1 for trace.max_change_events", "0"),
        ('[defaults]\ntags = "prod"\n', "bad value 'prod' for defaults.tags", "a list"),
        ("[profiles.x]\nagent = 3\n", "bad value 3 for profiles.x.agent", "a non-empty"),
        ('[profiles.x]\nstep = "y"\n', "unknown key 'step' in [profiles.x]", "its step label"),
        ('[trace]\nstep = "x"\n', "unknown key 'step' in [trace]", "[defaults] step"),
        ('[trace.profiles.x]\nagent = "a"\n', "unknown key 'profiles' in [trace]", "[profiles."),
        ("[trace]\nstore = 42\n", "(not shown: it may be a secret)", "sqlite"),
    ],
)
def test_bad_keys_and_values_name_the_file_the_key_and_the_fix(
    tmp_path: Path, text: str, message: str, fix: str
) -> None:
    path = tmp_path / "outform.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert message in caught.value.what and caught.value.where == str(path)
    assert fix in (caught.value.fix or "")


def test_labels_merge_call_block_profile_and_defaults(configured: Path) -> None:
    assert resolve() == Labels(step="default-step", tags=("prod",))
    with active("triage"), labels(tags=["eu"]):
        assert current() == Labels(tags=("eu",)) and active_profile() == "triage"
        assert resolve() == Labels(step="triage", agent="router", tags=("prod", "fast", "eu"))
        with labels(step="inner"):
            assert resolve({"tags": ["call"]}) == Labels(
                step="inner", agent="router", tags=("prod", "fast", "eu", "call")
            )
            assert resolve({"tags": ["call"]}, profile=None) == Labels(
                step="inner", tags=("prod", "eu", "call")
            )
    assert current() == Labels() and active_profile() is None


def test_an_unknown_profile_or_label_is_an_error(configured: Path) -> None:
    with pytest.raises(ConfigError, match="unknown profile 'nope'") as caught:
        resolve(profile="nope")
    assert "triage" in (caught.value.fix or "")
    with pytest.raises(ConfigError, match="unknown label") as caught:
        resolve({"profile": "triage"})
    assert "profile=" in (caught.value.fix or "")
    with pytest.raises(ConfigError, match="unknown label"):
        resolve({"stage": "x"})
    with pytest.raises(ConfigError, match="tags must be a list"), labels(tags="prod"):
        pass


def test_store_specs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    settings = TraceSettings()
    assert settings.store_spec({"OUTFORM_TRACE": "off"}) is None
    assert settings.store_spec({}) == "sqlite"
    assert TraceSettings(enabled=False).store_spec({}) is None
    assert TraceSettings(enabled=False).store_spec({"OUTFORM_TRACE": "x.db"}) == "x.db"
    dsn = TraceSettings(store="postgres:$TRACE_DSN")
    assert dsn.store_spec({"TRACE_DSN": "host=db"}) == "postgres:host=db"
    with pytest.raises(ConfigError, match="TRACE_DSN is not set"):
        dsn.store_spec({})
    assert open_store("off") is None
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # not the user's own
    default = open_store("sqlite")
    assert isinstance(default, SqliteTraceStore) and default.path == default_store_path()
    assert default_store_path() == tmp_path / "data" / "outform" / "trace.sqlite"
    with pytest.raises(ConfigError, match="unknown trace store 'mysql://u:\\*\\*\\*@h/db'"):
        open_store("mysql://u:secret@h/db")
