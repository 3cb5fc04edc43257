"""The registry: one base-URL convention for every provider.

A base URL is the API's root, with or without its version segment; the provider's own segment
is appended when the URL does not end with one. tests/test_generate_providers.py checks the
same end to end, over HTTP, for the providers with a fake.
"""

from __future__ import annotations

import pytest

from outform.providers.registry import PROVIDERS, ProviderSpec, resolve

ENV = {"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}


class NoTokens:
    """A token source that names no project and gives no headers."""

    project = None

    def headers(self) -> dict[str, str]:
        return {}

    def cached(self) -> dict[str, str] | None:
        return None


def base_url(spec: ProviderSpec, given: str | None) -> str:
    resolved = resolve(
        f"{spec.name}:some-model",
        base_url=given,
        api_key=None if spec.auth == "google" else "k",
        credentials=NoTokens(),
        env={**ENV, "AWS_REGION": "eu-west-1"},
    )
    return resolved.endpoint.base_url


@pytest.mark.parametrize("spec", PROVIDERS.values(), ids=list(PROVIDERS))
def test_a_base_url_works_with_or_without_the_version_segment(spec: ProviderSpec) -> None:
    root = "http://models.internal:8080/prefix"
    forms = {root, root + "/"}
    if spec.version:
        forms |= {f"{root}/{spec.version}", f"{root}/{spec.version}/"}
    urls = {base_url(spec, form) for form in forms}
    assert len(urls) == 1, urls
    (url,) = urls
    expected = f"{root}/{spec.version}" if spec.version else root
    assert url.startswith(expected)


@pytest.mark.parametrize("spec", PROVIDERS.values(), ids=list(PROVIDERS))
def test_the_default_url_carries_the_version_segment(spec: ProviderSpec) -> None:
    url = base_url(spec, None)
    assert "{" not in url
    if spec.version:
        assert f"/{spec.version}" in url


def test_another_version_than_the_default_is_kept() -> None:
    gemini = PROVIDERS["gemini"]
    assert base_url(gemini, "https://generativelanguage.googleapis.com/v1") == (
        "https://generativelanguage.googleapis.com/v1"
    )
    assert base_url(gemini, "https://generativelanguage.googleapis.com") == (
        "https://generativelanguage.googleapis.com/v1beta"
    )


def test_the_defaults_are_the_providers_documented_urls() -> None:
    assert base_url(PROVIDERS["openai"], None) == "https://api.openai.com/v1"
    assert base_url(PROVIDERS["anthropic"], None) == "https://api.anthropic.com/v1"
    assert base_url(PROVIDERS["groq"], None) == "https://api.groq.com/openai/v1"
    assert base_url(PROVIDERS["fireworks"], None) == "https://api.fireworks.ai/inference/v1"
    assert base_url(PROVIDERS["ollama"], None) == "http://127.0.0.1:11434/api"
    assert base_url(PROVIDERS["bedrock"], None) == "https://bedrock-runtime.eu-west-1.amazonaws.com"
