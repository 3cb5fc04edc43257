"""Providers: what each one supports for structured output (adapters come later)."""

from outform.providers.profiles import (
    PROFILES,
    Capabilities,
    ModeChoice,
    ProviderProfile,
    capabilities,
    choose_mode,
    profile,
)

__all__ = [
    "PROFILES",
    "Capabilities",
    "ModeChoice",
    "ProviderProfile",
    "capabilities",
    "choose_mode",
    "profile",
]
