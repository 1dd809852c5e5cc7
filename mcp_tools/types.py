"""The handler API: what a handler receives (ToolContext) and what it may return."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, TypedDict

from .exceptions import InputUnavailable, ToolCancelled

__all__ = [
    "ANONYMOUS",
    "Annotations",
    "Asker",
    "ContentBlock",
    "Elicited",
    "Handle",
    "HandleType",
    "Handles",
    "LogLevel",
    "Principal",
    "Sampled",
    "ToolContext",
    "ToolInfo",
    "ToolResult",
    "admin_grant_key",
    "audio",
    "embedded_resource",
    "grant_key",
    "image",
    "resource_link",
    "text",
]

logger = logging.getLogger("mcp_tools")

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class Annotations(TypedDict, total=False):
    audience: list[Literal["user", "assistant"]]
    priority: float
    lastModified: str


ContentBlock = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: ``key`` names the grant, ``subject`` the user (or client) behind it.

    ``key`` binds everything a later request can reach by id (legacy sessions, tasks and their
    results, pending requests for input, approvals, handles, ``requestState``) to the grant
    that made it: the user *and* the OAuth client (``grant_key``), so another application's
    token of the same user reaches none of it. ``subject`` is the user-level key (the key
    without the client): what stays per user, such as rate limits and stream slots, so a user
    cannot multiply them with several applications. Empty: the same as ``key``.

    ``scopes`` is ``None`` when the backend does not restrict by scope. OAuth backends set
    only ``granted``; ``Catalog.scoped`` expands it into ``scopes`` with the implications of
    the catalog version the request uses. ``permissions`` is filled the same way, by
    ``Catalog.with_permissions``, for tools whose tool kind requires user permissions.
    """

    key: str
    user: Any = None
    client_id: str | None = None
    scopes: frozenset[str] | None = None
    # The scopes as granted, before implied ones were added (OAuth backends; for step-up).
    granted: frozenset[str] | None = None
    # The Django permissions ("app_label.codename") the user holds among those the catalog's
    # tools require; None until ``Catalog.with_permissions`` loads them (tools needing any are hidden).
    permissions: frozenset[str] | None = None
    # The user's primary key when the backend knows it without loading the user (``user`` may
    # be lazy): the audit trail records it without a query.
    user_id: Any = None
    # The user-level key (``user:<pk>``, ``sub:<subject>``, ``client:<id>``); "": ``key``.
    subject: str = ""

    @property
    def owner(self) -> str:
        """The user-level key: rate limits and stream slots count per user, not per grant."""
        return self.subject or self.key

    @property
    def scope_key(self) -> str:
        """A stable name for the scope set, used to key cached catalog pages."""
        return "*" if self.scopes is None else " ".join(sorted(self.scopes))


ANONYMOUS = Principal(key="anonymous")

# Stored keys are at most 255 characters; a longer grant key is stored as its digest.
_KEY_LIMIT = 200


def grant_key(subject: str, client_id: str | None) -> str:
    """The key of a grant: ``<subject>/client:<client_id>`` (just ``subject`` without a client).

    A key longer than the columns allow is replaced by its SHA-256 (never truncated: two
    grants must not share a key)."""
    import hashlib

    key = subject if not client_id or subject == f"client:{client_id}" else f"{subject}/client:{client_id}"
    if len(key) > _KEY_LIMIT:
        key = "grant:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    return key


def admin_grant_key(subject: str) -> str:
    """The grant key of the admin's own calls (Try it): ``<subject>/admin``.

    ``grant_key`` never makes such a key: with a client it writes ``/client:`` after the
    subject, and a digest starts with ``grant:``. So no OAuth application, whatever client id
    it registers or an admin gives it, shares the admin's tasks, handles or sessions."""
    return f"{subject}/admin"


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
    # Expiring state addressed by handle ids (mcp_tools.handles), bound to ``principal``.
    handles: Handles = field(default_factory=lambda: _NO_HANDLES, repr=False)
    # Who asks the client for input during this call (mcp_tools.asking); None: nobody can.
    _asker: Asker | None = field(default=None, repr=False)

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

    @property
    def can_elicit(self) -> bool:
        """Whether the client can answer ``elicit`` (it declared form elicitation)."""
        return self._asker is not None and self._asker.can(ELICIT)

    @property
    def can_sample(self) -> bool:
        """Whether the client can answer ``sample`` (it declared sampling)."""
        return self._asker is not None and self._asker.can(SAMPLE)

    def elicit(
        self, message: str, schema: Mapping[str, Any], *, key: str | None = None, once: bool = False
    ) -> Elicited:
        """Ask the user to fill in a form (``schema``: a flat object of primitive properties).

        On 2026-07-28 the handler runs again from the start once the answer is in (see the docs'
        asking how-to): do side effects after the questions. Never ask for secrets in a form.
        ``once``: an accepted answer authorizes work that must not run twice (a destructive
        confirmation, asked last, just before the work): on 2026-07-28 a replay of the retry
        that carried it is asked again instead of being answered from its ``requestState``
        (on a stream or in a task, every answer is single-use already).
        """
        answer = self._ask(ELICIT, {"message": message, "requestedSchema": dict(schema)}, key)
        if once and answer.get("action") == "accept":
            redeem = getattr(self._asker, "redeem", None)
            if redeem is not None:
                redeem()
        content = answer.get("content")
        return Elicited(action=answer["action"], content=dict(content) if isinstance(content, dict) else None)

    def sample(
        self,
        messages: Sequence[str | Mapping[str, Any]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Sampled:
        """Ask the client's model for a message; a ``str`` in ``messages`` is a user text message."""
        params: dict[str, Any] = {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": m}} if isinstance(m, str) else dict(m)
                for m in messages
            ],
            "maxTokens": max_tokens,
        }
        for name, value in (
            ("systemPrompt", system_prompt),
            ("temperature", temperature),
            ("stopSequences", None if stop_sequences is None else list(stop_sequences)),
            ("modelPreferences", None if model_preferences is None else dict(model_preferences)),
            ("metadata", None if metadata is None else dict(metadata)),
        ):
            if value is not None:
                params[name] = value
        answer = self._ask(SAMPLE, params, key)
        return Sampled(
            role=answer["role"], content=answer["content"], model=answer["model"], stop_reason=answer.get("stopReason")
        )

    def _ask(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        if self._asker is None:
            raise InputUnavailable(f"Tool {self.tool_name!r} cannot ask the client for input here.")
        return self._asker.ask(method, params, key)


ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"


class Asker(Protocol):
    """Asks the client for input on behalf of a handler (``mcp_tools.asking`` has the two kinds)."""

    def can(self, method: str) -> bool: ...

    def ask(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        """The client's checked answer, or raise (InputNeeded, InputUnavailable, ToolCancelled)."""
        ...


@dataclass(frozen=True, slots=True)
class Elicited:
    """The user's answer to ``ctx.elicit``: ``accept`` (with ``content``), ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


@dataclass(frozen=True, slots=True)
class Sampled:
    """The client model's message for ``ctx.sample``."""

    role: str
    content: Any  # one content block, or a list of them
    model: str
    stop_reason: str | None = None

    @property
    def text(self) -> str:
        """The text of its text blocks, joined."""
        blocks = self.content if isinstance(self.content, list) else [self.content]
        return "".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")


@dataclass(frozen=True, slots=True)
class HandleType:
    """A type of handle, registered in code with ``mcp_tools.handles.handle_type``.

    Ids read ``<prefix>_<random>``. A handle lives ``ttl_seconds`` after its last use when
    ``sliding`` (every ``get``/``update`` extends it), or after its creation otherwise.
    ``recover`` tells the model how to get a new one when a handle is unknown or expired.
    """

    prefix: str
    label: str
    ttl_seconds: int
    sliding: bool = True
    recover: str = ""

    @property
    def retention(self) -> str:
        """The retention policy in words, for the creating tool's description."""
        if self.sliding:
            return f"A {self.label} expires after {_duration(self.ttl_seconds)} of inactivity."
        return f"A {self.label} expires {_duration(self.ttl_seconds)} after it is created."


@dataclass(slots=True)
class Handle:
    """One live handle: its id (give it to the model), kind, JSON state and expiry."""

    id: str
    kind: HandleType
    state: dict[str, Any]
    created_at: datetime
    expires_at: datetime


class ToolInfo(Protocol):
    """What an extension point is told about a tool (an auth backend's ``can_see`` and
    ``step_up``): read-only, the tool as compiled for the current catalog version.

    The catalog's own tool objects satisfy it as they are (nothing is copied per request); a
    backend must not rely on more than these attributes, nor keep the object past the call.
    """

    @property
    def name(self) -> str:
        """The tool's name, as listed."""
        ...

    @property
    def handler_key(self) -> str:
        """Its tool kind's key (``ToolKind.key``)."""
        ...

    @property
    def required_scopes(self) -> frozenset[str]:
        """The OAuth scopes a caller needs to see and call it (none: any caller)."""
        ...

    @property
    def required_permissions(self) -> frozenset[str]:
        """The Django permissions its kind requires (``ToolKind.permissions``)."""
        ...

    @property
    def requires_approval(self) -> bool:
        """Whether a call waits for a person's decision first."""
        ...

    @property
    def tags(self) -> tuple[str, ...]:
        """The groups progressive discovery finds it by."""
        ...


class Handles(Protocol):
    """``ctx.handles``: handles of the calling principal (another principal's are unknown)."""

    def create(self, kind: HandleType, state: Mapping[str, Any] | None = None) -> Handle: ...

    def get(self, kind: HandleType, handle_id: Any) -> Handle: ...

    def update(self, kind: HandleType, handle_id: Any, change: Callable[[dict[str, Any]], Any]) -> Handle: ...

    def close(self, kind: HandleType, handle_id: Any) -> Handle: ...


class _NoHandles:
    """``ctx.handles`` of a context built without a store (e.g. in a unit test)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("This ToolContext has no handle store; the runner provides one.")


_NO_HANDLES: Any = _NoHandles()


def _duration(seconds: int) -> str:
    """24 hours, 2 days, 30 minutes: the largest unit that divides it (days from two on)."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        count, rest = divmod(seconds, size)
        if count >= (2 if unit == "day" else 1) and rest == 0:
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"


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
