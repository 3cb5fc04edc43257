"""`[gateway]` in outform.toml, checked key by key, and `outform serve` flags over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import outform.config
import outform.gateway.server
from outform.cli import main
from outform.config import load
from outform.errors import ConfigError
from outform.gateway.app import create_app
from outform.gateway.settings import GatewaySettings, parse_model_map

CONFIG = """
[gateway]
backend = "http://vllm:8000/v1"
model_map = { "gpt-4o" = "Qwen/Qwen2.5-7B-Instruct" }
api_keys = ["GATEWAY_KEY"]
backend_api_key_env = "VLLM_KEY"
store = "sqlite:data/responses.sqlite"
max_body_bytes = 1048576
max_request_depth = 32
backend_timeout = 30
enforce = true
port = 9000
"""


def test_the_gateway_section_is_read_and_validated(project: Path) -> None:
    path = project / "outform.toml"
    path.write_text(CONFIG)
    loaded = load(path)
    settings = GatewaySettings.from_config(loaded.gateway, source=path)
    assert settings.backend == "http://vllm:8000/v1"
    assert settings.model_map == {"gpt-4o": "Qwen/Qwen2.5-7B-Instruct"}
    assert settings.api_keys == ("GATEWAY_KEY",)
    assert (settings.backend_timeout, settings.max_body_bytes, settings.port) == (
        30.0,
        1048576,
        9000,
    )
    assert settings.max_request_depth == 32
    assert settings.enforce is True and settings.native is False
    assert settings.store_base_dir == str(project)


@pytest.mark.parametrize(
    ("line", "allowed"),
    [
        ('backend = "ftp://x"', "http:// or https:// URL"),
        ('backend = "nope"', "provider name"),
        ('api_keys = ["sk-literal-secret!"]', "environment variable names"),
        ("max_body_bytes = 10", "an integer from 1024"),
        ("max_request_depth = 300", "an integer from 8 to 128"),
        ('enforce_level = "maximal"', "'off', 'minimal', 'full'"),
        ("model_map = { a = 1 }", "table of model names"),
    ],
)
def test_bad_values_name_the_key_and_what_is_allowed(
    project: Path, line: str, allowed: str
) -> None:
    path = project / "outform.toml"
    path.write_text(f"[gateway]\n{line}\n")
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert allowed in caught.value.render()
    assert "sk-literal-secret!" not in caught.value.what


def test_a_provider_name_is_a_native_backend(project: Path) -> None:
    path = project / "outform.toml"
    path.write_text('[gateway]\nbackend = "anthropic"\nunknown_key = 1\n')
    with pytest.raises(ConfigError, match="unknown key 'unknown_key'"):
        load(path)
    path.write_text('[gateway]\nbackend = "anthropic"\n')
    assert GatewaySettings.from_config(load(path).gateway).native


def test_keys_come_from_the_environment_and_must_be_set() -> None:
    settings = GatewaySettings(api_keys=("A", "B"), backend_api_key_env="C")
    assert settings.client_keys({"A": "ka", "B": "kb"}) == ("ka", "kb")
    with pytest.raises(ConfigError, match="B is not set"):
        create_app(settings, env={"A": "ka"})
    assert settings.backend_key({"C": "kc"}) == "kc"
    assert (
        GatewaySettings(store="postgres:$DSN").store_spec({"DSN": "host=db"}) == "postgres:host=db"
    )


def test_model_map_flags() -> None:
    assert parse_model_map(["a=b", "c = d, e=f:g"]) == {"a": "b", "c": "d", "e": "f:g"}
    with pytest.raises(ConfigError):
        parse_model_map(["nothing"])


def test_serve_flags_override_the_file(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "outform.toml").write_text(CONFIG)
    outform.config.reload()
    served: list[GatewaySettings] = []
    monkeypatch.setattr(outform.gateway.server, "serve", lambda s, **_: served.append(s))
    code = main(
        [
            "serve",
            "--backend",
            "http://127.0.0.1:8080/v1",
            "--model-map",
            "small=tiny-model",
            "--store",
            "memory",
            "--no-enforce",
            "--port",
            "9100",
        ]
    )
    assert code == 0
    (settings,) = served
    assert settings.backend == "http://127.0.0.1:8080/v1"
    assert settings.model_map == {"gpt-4o": "Qwen/Qwen2.5-7B-Instruct", "small": "tiny-model"}
    assert (settings.store, settings.enforce, settings.port) == ("memory", False, 9100)
    assert settings.api_keys == ("GATEWAY_KEY",)  # from the file


def test_serve_refuses_a_backend_that_is_neither_url_nor_provider(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(outform.gateway.server, "serve", lambda s, **_: served.append(s))
    assert main(["serve", "--backend", "localhost:8000"]) == 2
    assert "--backend must be an http(s) URL or a provider name" in capsys.readouterr().err
    assert served == []
