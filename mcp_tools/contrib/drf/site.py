"""The registered toolsets: ``register`` checks a declaration (and builds its serializer once)
at startup, so a wrong field name fails there rather than on a call."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from .serializers import check_serializer
from .toolsets import ModelToolset

_toolsets: dict[str, ModelToolset] = {}

T = TypeVar("T", bound=type[ModelToolset])


def register(cls: T) -> T:
    """Register a toolset class (use it as a decorator in ``<app>/mcp_handlers.py``).

    The declaration is checked now; ``manage.py mcp_sync_toolsets`` writes its tool rows.
    """
    if not (isinstance(cls, type) and issubclass(cls, ModelToolset)):
        raise TypeError(f"register() takes a ModelToolset subclass, not {cls!r}")
    toolset = cls()
    toolset.check()
    check_serializer(toolset)
    existing = _toolsets.get(toolset.key)
    if existing is not None and existing.__class__.__qualname__ != cls.__qualname__:
        raise ImproperlyConfigured(f"Toolset key {toolset.key!r} is already registered by {existing.__class__!r}")
    _toolsets[toolset.key] = toolset
    return cls


def unregister(key: str) -> None:
    _toolsets.pop(key, None)


def get_toolset(key: Any) -> ModelToolset:
    """The registered toolset named ``key``; ValueError names the registered ones otherwise."""
    toolset = _toolsets.get(key) if isinstance(key, str) else None
    if toolset is None:
        known = ", ".join(sorted(_toolsets)) or "none"
        raise ValueError(f"No model toolset is registered as {key!r} (registered: {known}).")
    return toolset


def all_toolsets() -> list[ModelToolset]:
    return [_toolsets[key] for key in sorted(_toolsets)]
