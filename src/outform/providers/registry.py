"""Which adapter, URL, key and profile serve a model string such as "anthropic:claude-sonnet-4-5".

The part before the first colon names the provider; the rest is the model as the provider
spells it. Keys come from an explicit argument or from the provider's usual environment
variable; base URLs from an argument, the provider's environment variable, or the default.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any

from outform.errors import AuthenticationError, UsageError
from outform.providers.base import Adapter, Auth
from outform.transport import Endpoint, Secret


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    adapter: str
    """`module:Class` of the adapter, imported on first use (provider SDKs stay optional)."""
    base_url: str
    auth: Auth = "bearer"
    key_env: tuple[str, ...] = ()
    url_env: str | None = None
    profile: str | None = None
    """Entry of `outform.providers.profiles` (defaults to `name`)."""
    adapter_options: dict[str, Any] = field(default_factory=dict)
    key_required: bool = True
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def profile_name(self) -> str:
        return self.profile or self.name


def _openai_compatible(name: str, url: str, key_env: str | None, **extra: Any) -> ProviderSpec:
    return ProviderSpec(
        name,
        "outform.providers.openai_chat:OpenAIChat",
        url,
        key_env=(key_env,) if key_env else (),
        url_env=f"{name.upper().replace('-', '_')}_BASE_URL",
        adapter_options={"flavor": name},
        key_required=key_env is not None,
        **extra,
    )


PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            "openai",
            "outform.providers.openai_chat:OpenAIChat",
            "https://api.openai.com/v1",
            key_env=("OPENAI_API_KEY",),
            url_env="OPENAI_BASE_URL",
            adapter_options={"flavor": "openai"},
        ),
        ProviderSpec(
            "openai-responses",
            "outform.providers.openai_responses:OpenAIResponses",
            "https://api.openai.com/v1",
            key_env=("OPENAI_API_KEY",),
            url_env="OPENAI_BASE_URL",
            profile="openai",
        ),
        ProviderSpec(
            "anthropic",
            "outform.providers.anthropic:AnthropicMessages",
            "https://api.anthropic.com",
            auth="x-api-key",
            key_env=("ANTHROPIC_API_KEY",),
            url_env="ANTHROPIC_BASE_URL",
            headers={"anthropic-version": "2023-06-01"},
        ),
        ProviderSpec(
            "gemini",
            "outform.providers.gemini:Gemini",
            "https://generativelanguage.googleapis.com/v1beta",
            auth="x-goog-api-key",
            key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            url_env="GEMINI_BASE_URL",
        ),
        ProviderSpec(
            "bedrock",
            "outform.providers.bedrock:BedrockConverse",
            "https://bedrock-runtime.{region}.amazonaws.com",
            auth="sigv4",
            url_env="BEDROCK_BASE_URL",
            key_required=False,
        ),
        ProviderSpec(
            "ollama",
            "outform.providers.ollama:OllamaChat",
            "http://127.0.0.1:11434",
            auth="none",
            url_env="OLLAMA_HOST",
            key_required=False,
        ),
        _openai_compatible("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
        _openai_compatible("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        _openai_compatible("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        _openai_compatible("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
        _openai_compatible(
            "fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"
        ),
        _openai_compatible("xai", "https://api.x.ai/v1", "XAI_API_KEY"),
        _openai_compatible("vllm", "http://127.0.0.1:8000/v1", None),
        _openai_compatible("llamacpp", "http://127.0.0.1:8080/v1", None, profile="llama_cpp"),
        # SGLang serves OpenAI's json_schema through xgrammar, as vLLM does (SGLang's docs).
        _openai_compatible("sglang", "http://127.0.0.1:30000/v1", None, profile="vllm"),
    )
}


@dataclass(frozen=True)
class Resolved:
    spec: ProviderSpec
    model: str
    adapter: Adapter
    endpoint: Endpoint


def split_model(model: str) -> tuple[ProviderSpec, str]:
    provider, sep, name = model.partition(":")
    spec = PROVIDERS.get(provider) if sep else None
    if spec is None or not name:
        raise UsageError(
            f"unknown provider in model {model!r}",
            where="model",
            fix="write the model as provider:name, with provider one of: " + ", ".join(PROVIDERS),
        )
    return spec, name


def resolve(
    model: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    aws_region: str | None = None,
    env: Any = os.environ,
) -> Resolved:
    """The adapter and endpoint for a model string; credentials from arguments or env."""
    spec, name = split_model(model)
    url = base_url or (env.get(spec.url_env) if spec.url_env else None) or spec.base_url
    if spec.name == "ollama" and "://" not in url:
        url = f"http://{url}"  # OLLAMA_HOST is often host:port
    region = aws_region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    url = url.replace("{region}", region)
    key = api_key or next((env[v] for v in spec.key_env if env.get(v)), None)
    if key is None and spec.key_required and not base_url:
        names = " or ".join(spec.key_env)
        raise AuthenticationError(
            f"no API key for {spec.name}",
            provider=spec.name,
            fix=f"set {names}, or pass api_key=",
        )
    endpoint = Endpoint(
        spec.name,
        url,
        auth=spec.auth,
        api_key=Secret(key) if key else None,
        headers=dict(spec.headers),
        aws_region=region if spec.auth == "sigv4" else None,
    )
    return Resolved(spec, name, load_adapter(spec), endpoint)


def load_adapter(spec: ProviderSpec) -> Adapter:
    module_name, _, class_name = spec.adapter.partition(":")
    module = importlib.import_module(module_name)
    adapter: Adapter = getattr(module, class_name)(**spec.adapter_options)
    return adapter
