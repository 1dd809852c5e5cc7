"""Handle types registered in code: the id prefix, the label, the lifetime, how to recover."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..types import HandleType

__all__ = ["HandleTypes", "handle_type", "kinds"]

_PREFIX = re.compile(r"^[a-z][a-z0-9]{0,15}$")


class HandleTypes:
    def __init__(self) -> None:
        self._kinds: dict[str, HandleType] = {}

    def register(self, kind: HandleType) -> HandleType:
        if not _PREFIX.match(kind.prefix):
            raise ValueError(f"Invalid handle prefix {kind.prefix!r}: use 1-16 of a-z 0-9, starting with a letter")
        if kind.ttl_seconds < 1:
            raise ValueError(f"Handle kind {kind.prefix!r}: ttl_seconds must be at least 1")
        existing = self._kinds.get(kind.prefix)
        if existing is not None and existing != kind:
            raise ValueError(f"Handle prefix {kind.prefix!r} is already registered as {existing!r}")
        self._kinds[kind.prefix] = kind
        return kind

    def unregister(self, prefix: str) -> None:
        self._kinds.pop(prefix, None)

    def get(self, prefix: str) -> HandleType | None:
        return self._kinds.get(prefix)

    def __iter__(self) -> Iterator[HandleType]:
        return iter(sorted(self._kinds.values(), key=lambda k: k.prefix))


kinds = HandleTypes()


def handle_type(prefix: str, *, label: str, ttl_seconds: int, sliding: bool = True, recover: str = "") -> HandleType:
    """Register a type of handle; put it next to the handlers that use it.

    ``ttl_seconds``: how long a handle lives after its last use (``sliding``) or after its
    creation. Put ``kind.retention`` in the creating tool's description, so the model knows.
    ``recover``: how to get a new one, e.g. ``"Call create_basket to start a new basket."``.
    """
    return kinds.register(HandleType(prefix, label, int(ttl_seconds), sliding, recover))
