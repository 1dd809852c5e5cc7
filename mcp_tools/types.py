"""The handler API: what a handler receives (ToolContext) and what it may return."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from .exceptions import ToolCancelled

logger = logging.getLogger("mcp_tools")

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class Annotations(TypedDict, total=False):
    audience: list[Literal["user", "assistant"]]
    priority: float
    lastModified: str


ContentBlock = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key binds sessions, tasks and handles to their owner.

    ``scopes`` is ``None`` when the backend does not restrict by scope. OAuth backends set
    only ``granted``; ``Catalog.scoped`` expands it into ``scopes`` with the implications of
    the catalog version the request uses. ``permissions`` is filled the same way, by
    ``Catalog.entitled``, for tools whose handler kind requires user permissions.
    """

    key: str
    user: Any = None
    client_id: str | None = None
    scopes: frozenset[str] | None = None
    # The scopes as granted, before implied ones were added (OAuth backends; for step-up).
    granted: frozenset[str] | None = None
    # The Django permissions ("app_label.codename") the user holds among those the catalog's
    # tools require; None until ``Catalog.entitled`` loads them (tools needing any are hidden).
    permissions: frozenset[str] | None = None

    @property
    def scope_key(self) -> str:
        """A stable name for the scope set, used to key cached catalog pages."""
        return "*" if self.scopes is None else " ".join(sorted(self.scopes))


ANONYMOUS = Principal(key="anonymous")


_MISSING: Any = object()


@dataclass(slots=True)
class ToolResult:
    """A full tool result; handlers may also return a str, a list of blocks or any JSON value."""

    content: list[ContentBlock] = field(default_factory=list)
    structured_content: Any = _MISSING
    is_error: bool = False
    meta: dict[str, Any] | None = None

    @property
    def has_structured(self) -> bool:
        return self.structured_content is not _MISSING


@dataclass(slots=True)
class ToolContext:
    """Everything a handler gets for one call."""

    arguments: dict[str, Any]
    config: dict[str, Any]
    principal: Principal
    tool_name: str
    tool_version: int
    _progress: Callable[[float, float | None, str | None], None] = field(repr=False)
    _log: Callable[[str, Any, str | None], None] = field(repr=False)
    _cancelled: Callable[[], bool] = field(repr=False)
    _last_progress: float | None = field(default=None, init=False, repr=False)

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the caller asked for it; values must increase.

        A value not above the previous one is dropped, with a warning (P-1).
        """
        if self._last_progress is not None and progress <= self._last_progress:
            logger.warning("Tool %r reported non-increasing progress %s; dropped", self.tool_name, progress)
            return
        self._last_progress = progress
        self._progress(progress, total, message)

    def log(self, level: LogLevel, data: Any, *, logger: str | None = None) -> None:
        """Send ``notifications/message`` to the caller (if its log level lets it through).

        Never put credentials, personal data or internals in ``data`` (LG-1).
        """
        self._log(level, data, logger)

    @property
    def cancelled(self) -> bool:
        return self._cancelled()

    def check_cancelled(self) -> None:
        """Raise ToolCancelled if the client cancelled this call; call it between steps."""
        if self._cancelled():
            raise ToolCancelled()


def text(value: str, *, annotations: Annotations | None = None) -> ContentBlock:
    return _block({"type": "text", "text": value}, annotations)


def image(data: bytes | str, mime_type: str, *, annotations: Annotations | None = None) -> ContentBlock:
    return _block({"type": "image", "data": _b64(data), "mimeType": mime_type}, annotations)


def audio(data: bytes | str, mime_type: str, *, annotations: Annotations | None = None) -> ContentBlock:
    return _block({"type": "audio", "data": _b64(data), "mimeType": mime_type}, annotations)


def resource_link(
    uri: str,
    name: str,
    *,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    annotations: Annotations | None = None,
) -> ContentBlock:
    block: ContentBlock = {"type": "resource_link", "uri": uri, "name": name}
    for key, value in (("title", title), ("description", description), ("mimeType", mime_type), ("size", size)):
        if value is not None:
            block[key] = value
    return _block(block, annotations)


def embedded_resource(
    uri: str,
    *,
    text: str | None = None,
    blob: bytes | None = None,
    mime_type: str | None = None,
    annotations: Annotations | None = None,
) -> ContentBlock:
    if (text is None) == (blob is None):
        raise ValueError("embedded_resource needs exactly one of text= or blob=")
    resource: dict[str, Any] = {"uri": uri}
    if mime_type:
        resource["mimeType"] = mime_type
    if text is not None:
        resource["text"] = text
    else:
        assert blob is not None
        resource["blob"] = _b64(blob)
    return _block({"type": "resource", "resource": resource}, annotations)


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


def _block(block: ContentBlock, annotations: Mapping[str, Any] | None) -> ContentBlock:
    if annotations:
        block["annotations"] = dict(annotations)
    return block
