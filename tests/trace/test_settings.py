"""The [trace] section, store specs and caller labels: validated like every other section,
profiles and blocks merged key by key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import outform.config
from outform.config import load
from outform.errors import ConfigError
from outform.trace import Labels, labels
from outform.trace.caller import current, resolve
from outform.trace.runtime import open_store
from outform.trace.settings import TraceSettings, default_store_path
from outform.trace.sqlite_store import SqliteTraceStore

CONFIG = """
[trace]
store = "sqlite:traces/t.sqlite"
retention_days = 7
otel = false
step = "default-step"
tags = ["prod"]

[trace.profiles.triage]
step = "triage"
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


def test_the_section_is_read_with_its_profiles(configured: Path) -> None:
    trace = outform.config.settings().trace
    assert trace.retention_days == 7.0 and trace.store_base_dir == str(configured.parent)
    assert trace.defaults == Labels(step="default-step", tags=("prod",))
    assert trace.profiles == {"triage": Labels(step="triage", agent="router", tags=("fast",))}
    store = open_store("sqlite:traces/t.sqlite", base_dir=trace.store_base_dir)
    assert isinstance(store, SqliteTraceStore)
    assert store.path == configured.parent / "traces" / "t.sqlite"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[trace]\ncolour = 1\n", "unknown key 'colour' in [trace]"),
        ("[trace]\nflush_interval = 0\n", "bad value 0 for trace.flush_interval"),
        ('[trace]\ntags = "prod"\n', "bad value 'prod' for trace.tags"),
        ("[trace.profiles.x]\nstep = 3\n", "for trace.profiles"),
        ("[trace]\nstore = 42\n", "(not shown: it may be a secret)"),
    ],
)
def test_bad_keys_and_values_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "outform.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert message in caught.value.what and caught.value.where == str(path)


def test_labels_merge_call_block_profile_and_defaults(configured: Path) -> None:
    assert resolve() == Labels(step="default-step", tags=("prod",))
    with labels(profile="triage", tags=["eu"]):
        assert current() == Labels(tags=("eu",), profile="triage")
        with labels(step="inner"):
            assert resolve({"tags": ["call"]}) == Labels(
                step="inner", agent="router", tags=("prod", "fast", "eu", "call"),
                profile="triage",
            )  # fmt: skip
    assert current() == Labels()


def test_an_unknown_profile_or_label_is_an_error(configured: Path) -> None:
    with pytest.raises(ConfigError, match="unknown trace profile 'nope'") as caught:
        resolve({"profile": "nope"})
    assert "triage" in (caught.value.fix or "")
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
