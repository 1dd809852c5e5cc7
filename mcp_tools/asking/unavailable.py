"""Where nobody can answer: every question ends the call with an ``isError`` result saying why."""

from __future__ import annotations

from typing import Any

from ..exceptions import InputUnavailable

__all__ = ["NoAsker"]


class NoAsker:
    """The asker of a call that cannot ask (e.g. a handler run outside any request or task):
    ``can`` is always False."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def can(self, method: str) -> bool:
        return False

    def ask(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        raise InputUnavailable(self.reason)
