"""Which adapter, URL, key and profile serve a model string such as "anthropic:claude-sonnet-4-5".

The part before the first colon names the provider; the rest is the model as the provider
spells it. Keys come from an explicit argument or from the provider's usual environment
variable; base URLs from an argument, the provider's environment variable, or the default.

Base URLs follow one convention for every provider: the API's root, with or without its
version segment. `https://api.anthropic.com` and `https://api.anthropic.com/v1` both work, as
do `http://localhost:8000` and `http://localhost:8000/v1` for vLLM: when the URL does not end
with a version segment (`/v1`, `/v1beta`, `/v1beta1`, ...; Ollama's `/api`), the provider's own
is appended, and the adapters' paths (`/messages`, `/chat/completions`) sit under it. Bedrock's
paths have no version segment.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from outform import baseurl
from outform.errors import AuthenticationError, UsageError
from outform.providers.base import Adapter, Auth
from outform.providers.credentials import TokenSource, application_default
from outform.trace.redact import register_secret
from outform.transport import Endpoint, Secret

_VERSION = re.compile(r"v\d+(?:(?:alpha|beta)\d*)?")
"""A path segment that names an API version."""


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    adapter: str
    """`module:Class` of the adapter, imported on first use (provider SDKs stay optional)."""
    base_url: str
    """The API's root, without the version segment."""
    version: str = ""
    """The version segment the adapter's paths sit under ("" when they have none)."""
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

    def api_url(self, url: str) -> str:
        """`url` with this API's version segment, unless it already ends with one."""
        url = url.rstrip("/")
        if not self.version:
            return url
        last = urlsplit(url).path.rpartition("/")[2]
        versioned = _VERSION.fullmatch(self.version) is not None
        if last == self.version or (versioned and _VERSION.fullmatch(last)):
            return url
        return f"{url}/{self.version}"


def _openai_compatible(name: str, url: str, key_env: str | None, **extra: Any) -> ProviderSpec:
    return ProviderSpec(
        name,
        "outform.providers.openai_chat:OpenAIChat",
        url,
        "v1",
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
            "https://api.openai.com",
            "v1",
            key_env=("OPENAI_API_KEY",),
            url_env="OPENAI_BASE_URL",
            adapter_options={"flavor": "openai"},
        ),
        ProviderSpec(
            "openai-responses",
            "outform.providers.openai_responses:OpenAIResponses",
            "https://api.openai.com",
            "v1",
            key_env=("OPENAI_API_KEY",),
            url_env="OPENAI_BASE_URL",
            profile="openai",
        ),
        ProviderSpec(
            "anthropic",
            "outform.providers.anthropic:AnthropicMessages",
            "https://api.anthropic.com",
            "v1",
            auth="x-api-key",
            key_env=("ANTHROPIC_API_KEY",),
            url_env="ANTHROPIC_BASE_URL",
            headers={"anthropic-version": "2023-06-01"},
        ),
        ProviderSpec(
            "gemini",
            "outform.providers.gemini:Gemini",
            "https://generativelanguage.googleapis.com",
            "v1beta",
            auth="x-goog-api-key",
            key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
            url_env="GEMINI_BASE_URL",
        ),
        # Vertex AI serves the same generateContent body under a project and a location; the
        # registry puts those in the base URL, so the Gemini adapter is shared as it is.
        ProviderSpec(
            "vertex",
            "outform.providers.gemini:Gemini",
            "https://{location}aiplatform.googleapis.com",
            "v1beta1",
            auth="google",
            url_env="VERTEX_BASE_URL",
            profile="gemini",
            key_required=False,
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
            "api",
            auth="none",
            url_env="OLLAMA_HOST",
            key_required=False,
        ),
        _openai_compatible("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
        _openai_compatible("mistral", "https://api.mistral.ai", "MISTRAL_API_KEY"),
        _openai_compatible("groq", "https://api.groq.com/openai", "GROQ_API_KEY"),
        _openai_compatible("together", "https://api.together.xyz", "TOGETHER_API_KEY"),
        _openai_compatible("fireworks", "https://api.fireworks.ai/inference", "FIREWORKS_API_KEY"),
        _openai_compatible("xai", "https://api.x.ai", "XAI_API_KEY"),
        _openai_compatible("vllm", "http://127.0.0.1:8000", None),
        _openai_compatible("llamacpp", "http://127.0.0.1:8080", None, profile="llama_cpp"),
        # SGLang serves OpenAI's json_schema through xgrammar, as vLLM does (SGLang's docs).
        _openai_compatible("sglang", "http://127.0.0.1:30000", None, profile="vllm"),
    )
}


@dataclass(frozen=True)
class Resolved:
    spec: ProviderSpec
    model: str
    adapter: Adapter
    endpoint: Endpoint


def split_model(model: str) -> tuple[ProviderSpec, str]:
    provider, _, name = model.partition(":")
    spec = PROVIDERS.get(provider)
    if spec is not None and not name:
        raise UsageError(
            f"no model name after the provider in {model!r}",
            where="model",
            fix=f"write the model as {provider}:NAME, NAME the model as the provider calls it",
        )
    if spec is None:
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
    credentials: TokenSource | None = None,
    env: Mapping[str, str] = os.environ,
) -> Resolved:
    """The adapter and endpoint for a model string; credentials from arguments or env.
    `credentials`: the token source of a provider that authenticates with OAuth tokens
    (Vertex AI; default: Google's application-default credentials, one per process)."""
    spec, name = split_model(model)
    url = base_url or (env.get(spec.url_env) if spec.url_env else None) or spec.base_url
    if spec.name == "ollama" and "://" not in url:
        url = f"http://{url}"  # OLLAMA_HOST is often host:port
    region = aws_region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    url = url.replace("{region}", region)
    _check_url(url, "base_url" if base_url else (spec.url_env or "base_url"))
    tokens: TokenSource | None = None
    if spec.auth == "google":
        tokens = credentials or application_default()
        url = _vertex_url(spec, url, tokens, env)
    else:
        url = spec.api_url(url)
    key = api_key or next((env[v] for v in spec.key_env if env.get(v)), None)
    if key is None and spec.key_required and not base_url:
        names = " or ".join(spec.key_env)
        raise AuthenticationError(
            f"no API key for {spec.name}",
            provider=spec.name,
            where="api_key",
            fix=f"set {names}, or pass api_key=",
        )
    if key is not None and spec.auth == "google":
        raise UsageError(
            f"{spec.name} authenticates with Google credentials, not an API key",
            where="api_key",
            fix="leave api_key out: application-default credentials are used (or pass "
            "credentials=); for a Gemini API key use the gemini: provider",
        )
    register_secret(key)  # never in a trace sink, whatever echoes it
    endpoint = Endpoint(
        spec.name,
        url,
        auth=spec.auth,
        api_key=Secret(key) if key else None,
        headers=dict(spec.headers),
        aws_region=region if spec.auth == "sigv4" else None,
        tokens=tokens,
    )
    return Resolved(spec, name, load_adapter(spec), endpoint)


def _check_url(url: str, where: str) -> None:
    """A base URL is one `baseurl.problem` accepts: anything else is a usage error before any
    call (httpx would fail later with a connection error that reads like a network fault, or
    send the credentials written into it)."""
    why = baseurl.problem(url)
    if why is not None:
        raise UsageError(
            f"base URL {baseurl.shown(url)!r} refused: {why}", where=where, fix=baseurl.FIX
        )


def _vertex_url(spec: ProviderSpec, url: str, tokens: TokenSource, env: Mapping[str, str]) -> str:
    """Vertex AI's base URL: the regional host (`{location}-aiplatform...`, or the global one),
    the version, and the path of the project's publisher models. A URL that already names a
    project is taken as it is."""
    location = env.get("GOOGLE_CLOUD_LOCATION") or "global"
    url = url.replace("{location}", "" if location == "global" else f"{location}-")
    if "/projects/" in urlsplit(url).path:
        return url.rstrip("/")
    url = spec.api_url(url)
    project = env.get("GOOGLE_CLOUD_PROJECT") or getattr(tokens, "project", None)
    if not project:
        raise UsageError(
            "Vertex AI needs a Google Cloud project",
            where="GOOGLE_CLOUD_PROJECT",
            fix="set GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION, default global)",
        )
    return f"{url}/projects/{project}/locations/{location}/publishers/google"


def load_adapter(spec: ProviderSpec) -> Adapter:
    module_name, _, class_name = spec.adapter.partition(":")
    module = importlib.import_module(module_name)
    adapter: Adapter = getattr(module, class_name)(**spec.adapter_options)
    return adapter
