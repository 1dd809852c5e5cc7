"""ORM models as MCP tools, through Django REST framework serializers.

Add ``"mcp_tools.contrib.drf"`` to ``INSTALLED_APPS`` (``pip install "django-mcp-tools[drf]"``),
declare a ``ModelToolset`` per model in an app's ``mcp_handlers.py`` and decorate it with
``register``, then run ``manage.py mcp_sync_toolsets``: each declared operation becomes an
ordinary ``Tool`` row bound to one of the tool kinds this app registers (``drf.list`` ...).

The names below are imported lazily, so Django can load this app's config before DRF.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .serializers import ToolModelSerializer
    from .site import get_toolset, register, unregister
    from .toolsets import ModelToolset

__all__ = ["ModelToolset", "ToolModelSerializer", "get_toolset", "register", "unregister"]


def __getattr__(name: str) -> Any:
    if name == "ToolModelSerializer":
        from . import serializers

        return serializers.ToolModelSerializer
    if name == "ModelToolset":
        from . import toolsets

        return toolsets.ModelToolset
    if name in __all__:
        from . import site

        return getattr(site, name)
    raise AttributeError(name)
