"""Which provider a request reaches when the backend is a native one: the operator's choice,
never the client's.

With `backend = "anthropic"`, a model is the backend's (`claude-sonnet-4-5` is
`anthropic:claude-sonnet-4-5`, and so is `anthropic:claude-sonnet-4-5` itself). A model
written `provider:name` for another provider of outform's registry reaches that provider only
when the operator allowed it (`allowed_providers` in `[gateway]`, `--allow-provider`), since
the gateway would call it with the operator's credentials for it (`OPENAI_API_KEY`...); any
other is a 403 `provider_not_allowed` naming the setting. A prefix that names no provider is
part of the backend's model name (`ollama` serves `qwen2.5:7b`); a backend model whose name
begins with a provider's (Ollama's `mistral:7b`) is written with the backend's prefix
(`ollama:mistral:7b`). A URL backend has no routing: every model goes to its URL.
"""

from __future__ import annotations

from collections.abc import Collection

from outform.gateway.replies import GatewayError


def provider_model(model: str, backend: str, allowed: Collection[str]) -> str:
    """The registry model (`provider:name`) that `model` reaches behind the native backend
    `backend`, or a 403 when it names a provider the operator did not allow."""
    from outform.providers.registry import PROVIDERS

    prefix, sep, _ = model.partition(":")
    if not sep or prefix not in PROVIDERS:
        return f"{backend}:{model}"
    if prefix == backend or prefix in allowed:
        return model
    others = f" and {', '.join(sorted(allowed))}" if allowed else ""
    raise GatewayError(
        403,
        f"The model '{model}' names the provider {prefix}, which this gateway does not call: "
        f"it serves {backend}{others}. The operator allows another provider with "
        f"allowed_providers in [gateway] (or --allow-provider {prefix}); a model of {backend} "
        f"whose name begins with '{prefix}:' is written '{backend}:{model}'.",
        param="model",
        code="provider_not_allowed",
    )


def disallowed_provider(model: str, backend: str, allowed: Collection[str]) -> str | None:
    """The provider `model` names that `backend` may not reach (None: it may)."""
    try:
        provider_model(model, backend, allowed)
    except GatewayError:
        return model.partition(":")[0]
    return None


__all__ = ["disallowed_provider", "provider_model"]
