"""The registered toolsets: ``register`` checks a declaration (and builds its serializer once)
at startup, so a wrong field name fails there rather than on a call."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from .serializers import check_serializer
from .toolsets import ModelToolset

__all__ = [
    "all_toolsets",
    "forget",
    "get_toolset",
    "register",
    "remember",
    "unregister",
]

_toolsets: dict[str, ModelToolset] = {}  # registered in code
_defined: dict[str, ModelToolset] = {}  # defined in the admin, as this process last built them
ADMIN_PREFIX = "admin."

T = TypeVar("T", bound=type[ModelToolset])


def register(cls: T) -> T:
    """Register a toolset class (use it as a decorator in ``<app>/mcp_handlers.py``).

    The declaration is checked now; ``manage.py mcp_sync_toolsets`` writes its tool rows.
    """
    if not (isinstance(cls, type) and issubclass(cls, ModelToolset)):
        raise TypeError(f"register() takes a ModelToolset subclass, not {cls!r}")
    toolset = cls()
    if toolset.key.startswith(ADMIN_PREFIX):
        raise ImproperlyConfigured(
            f"Toolset keys starting with {ADMIN_PREFIX!r} belong to toolsets defined in the admin"
        )
    toolset.check()
    check_serializer(toolset)
    existing = _toolsets.get(toolset.key)
    if existing is not None and existing.__class__.__qualname__ != cls.__qualname__:
        raise ImproperlyConfigured(f"Toolset key {toolset.key!r} is already registered by {existing.__class__!r}")
    _toolsets[toolset.key] = toolset
    return cls


def unregister(key: str) -> None:
    _toolsets.pop(key, None)


def get_toolset(key: Any, revision: Any = None) -> ModelToolset:
    """The registered toolset named ``key``; ValueError names the registered ones otherwise.

    A toolset defined in the admin (``admin.<name>``) is built from its row, again whenever a
    tool asks for another ``revision`` than the one this process holds (one query then).
    """
    if isinstance(key, str) and key.startswith(ADMIN_PREFIX):
        found = _defined.get(key)
        if found is None or (revision is not None and found.revision != revision):
            found = _load(key)
        return found
    toolset = _toolsets.get(key) if isinstance(key, str) else None
    if toolset is None:
        known = ", ".join(sorted(_toolsets)) or "none"
        raise ValueError(f"No model toolset is registered as {key!r} (registered: {known}).")
    return toolset


def _load(key: str) -> ModelToolset:
    from .models import ToolsetDefinition

    definition = ToolsetDefinition.objects.filter(name=key[len(ADMIN_PREFIX) :], enabled=True).first()
    if definition is None:
        raise ValueError(f"No enabled model toolset is defined in the admin as {key!r}.")
    try:
        toolset = definition.as_toolset()
    except ImproperlyConfigured as exc:
        raise ValueError(f"The model toolset {key!r} defined in the admin is invalid: {exc}") from exc
    return remember(toolset)


def remember(toolset: ModelToolset) -> ModelToolset:
    """Keep a toolset defined in the admin (built from its row) for this process."""
    _defined[toolset.key] = toolset
    return toolset


def forget(key: str) -> None:
    _defined.pop(key, None)


def all_toolsets() -> list[ModelToolset]:
    return [_toolsets[key] for key in sorted(_toolsets)]
