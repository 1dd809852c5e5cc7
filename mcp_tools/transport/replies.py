"""What every answer of the endpoint is made of: the ``Reply``, HTTP checks and shared helpers."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import orjson
from django.core.exceptions import DisallowedHost
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest

from .. import services
from ..auth import AuthFailure, get_auth_backend
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import encode_error
from ..protocol.negotiation import check_legacy_version_header
from ..services import SessionNotFound
from ..types import Principal

__all__ = [
    "ALLOW",
    "Emit",
    "Reply",
    "accepts",
    "auth_reply",
    "authenticate",
    "check_host_and_origin",
    "cors_headers",
    "error_reply",
    "legacy_session",
    "plain_error",
    "preflight",
    "read_id_rule",
    "request_headers",
]

ALLOW = "GET, POST, DELETE, OPTIONS"


BASE_ALLOWED_HEADERS = (
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
)


EXPOSED_HEADERS = "Mcp-Session-Id, WWW-Authenticate"


Emit = Callable[[bytes], None]


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stream: Callable[[], AsyncGenerator[bytes, None]] | None = None
    # Called once the reply is done with, sent or not (a stream that never started still
    # holds its slot); whoever sends the reply calls it.
    on_close: Callable[[], None] | None = None


# Whether this request's errors carry "id": null when its id could not be read; set once per
# request by ``views.respond`` from its MCP-Protocol-Version header (the context reaches the
# worker threads too).
_NULL_IDS: ContextVar[bool] = ContextVar("mcp_tools_null_ids", default=True)


def read_id_rule(request: HttpRequest) -> None:
    """Fix, for this request, how an unreadable id is written (``versions.unreadable_id_is_null``)."""
    _NULL_IDS.set(v.unreadable_id_is_null(request_headers(request).get("mcp-protocol-version")))


def error_body(exc: McpError, request_id: Any = None, *, modern: bool = False) -> bytes:
    """An error response; a ``None`` id (unreadable) is ``null`` or absent per the revision
    (absent for a message that names a 2026-07-28 revision itself, whatever the headers say)."""
    return encode_error(request_id, exc, null_id=not modern and _NULL_IDS.get())


def error_reply(exc: McpError, request_id: Any = None, *, modern: bool = False) -> Reply:
    return Reply(exc.http_status, error_body(exc, request_id, modern=modern), dict(exc.headers))


def plain_error(status: int, code: int, message: str) -> Reply:
    return error_reply(McpError(code, message, http_status=status))


def check_host_and_origin(request: HttpRequest) -> Reply | None:
    """H-2: DNS-rebinding defence. A bad Host or a foreign Origin gets 403."""
    host = _checked_host(request)
    if host is None:
        return plain_error(403, e.INVALID_REQUEST, "Forbidden: Host not allowed")
    origin = request_headers(request).get("origin")
    if origin is None or _origin_allowed(origin, host, request.scheme or "http"):
        return None
    return plain_error(403, e.INVALID_REQUEST, "Forbidden: Origin not allowed")


# Django's get_host() validates against ALLOWED_HOSTS on every call; its answer depends only on
# the META keys of _checked_host's key and on settings, so it is kept per key. A client picks
# those values: at most _MAX_HOSTS keys are kept, and only keys of at most _MAX_KEPT_CHARACTERS
# characters (a longer one is checked every time), so the memory they hold is bounded too.
_hosts: dict[tuple[Any, ...], str | None] = {}
_MAX_HOSTS = 256
_MAX_KEPT_CHARACTERS = 512


def _checked_host(request: HttpRequest) -> str | None:
    """``request.get_host()``, or None for a host ALLOWED_HOSTS refuses."""
    meta = request.META
    # Spelled out rather than a generator over the names: this runs on every request.
    key = (
        meta.get("HTTP_HOST"),
        meta.get("HTTP_X_FORWARDED_HOST"),
        meta.get("HTTP_X_FORWARDED_PORT"),
        meta.get("SERVER_NAME"),
        meta.get("SERVER_PORT"),
    )
    try:
        return _hosts[key]
    except KeyError:
        pass
    try:
        host: str | None = request.get_host()
    except DisallowedHost:
        host = None
    if sum(len(part) for part in key if isinstance(part, str)) <= _MAX_KEPT_CHARACTERS:
        if len(_hosts) >= _MAX_HOSTS:
            _hosts.clear()
        _hosts[key] = host
    return host


@receiver(setting_changed)
def _forget_hosts(*, setting: str, **kwargs: Any) -> None:
    if setting in ("ALLOWED_HOSTS", "DEBUG", "USE_X_FORWARDED_HOST", "USE_X_FORWARDED_PORT"):
        _hosts.clear()


def _origin_allowed(origin: str, host: str, scheme: str) -> bool:
    allowed = mcp_settings.ALLOWED_ORIGINS
    if "*" in allowed or origin in allowed:
        return True
    parts = urlsplit(origin)
    return parts.netloc == host and parts.scheme == scheme


def accepts(request: HttpRequest, media_type: str) -> bool:
    accept = request_headers(request).get("accept")
    if not accept:
        return True
    kinds = _kept_media_types(accept) if len(accept) <= _MAX_KEPT_CHARACTERS else _media_types(accept)
    return not kinds.isdisjoint(_accepting(media_type))


def _media_types(accept: str) -> frozenset[str]:
    """The media types an Accept header names, parameters dropped."""
    return frozenset(item.split(";", 1)[0].strip().lower() for item in accept.split(","))


# Kept per header: clients send the same few again and again. A client picks the header: 256 of
# them at most, each of at most _MAX_KEPT_CHARACTERS characters (longer ones are parsed each time).
_kept_media_types = lru_cache(maxsize=256)(_media_types)


@lru_cache(maxsize=16)
def _accepting(media_type: str) -> frozenset[str]:
    """What in an Accept header takes ``media_type``: itself, its major type's wildcard, ``*/*``."""
    return frozenset((media_type, media_type.split("/", 1)[0] + "/*", "*/*"))


def cors_headers(request: HttpRequest) -> dict[str, str]:
    origin = request_headers(request).get("origin")
    if not origin:
        return {}
    return {"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": EXPOSED_HEADERS, "Vary": "Origin"}


def preflight(request: HttpRequest) -> Reply:
    asked = request_headers(request).get("access-control-request-headers", "")
    names = [h.strip().lower() for h in asked.split(",") if h.strip()]
    allowed = [h for h in names if h in BASE_ALLOWED_HEADERS or h.startswith("mcp-param-")]
    return Reply(
        204,
        headers={
            "Access-Control-Allow-Methods": ALLOW,
            "Access-Control-Allow-Headers": ", ".join(allowed or BASE_ALLOWED_HEADERS),
            "Access-Control-Max-Age": str(mcp_settings.CORS_MAX_AGE),
        },
    )


class MetaHeaders(Mapping[str, str]):
    """A request's headers by lower-case name, as ``request.headers`` has them, read from META
    one name at a time (Django's ``HttpHeaders`` copies every header first; the endpoint reads a
    handful of them per request)."""

    __slots__ = ("_meta",)

    def __init__(self, meta: Mapping[str, Any]) -> None:
        self._meta = meta

    def __getitem__(self, name: str) -> str:
        value: str = self._meta[_meta_key(name)]
        return value

    def get(self, name: str, default: Any = None) -> Any:
        return self._meta.get(_meta_key(name), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and _meta_key(name) in self._meta

    def __iter__(self) -> Iterator[str]:
        for key in self._meta:
            if key.startswith("HTTP_"):
                yield key[5:].replace("_", "-").lower()
            elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                yield key.replace("_", "-").lower()

    def __len__(self) -> int:
        return sum(1 for _ in self)


@lru_cache(maxsize=1024)
def _meta_key(name: str) -> str:
    """The META key of header ``name`` (any case); names come from code and tool definitions."""
    key = name.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key


def request_headers(request: HttpRequest) -> MetaHeaders:
    """The request's headers (``MetaHeaders``), made once per request and kept on it."""
    found: MetaHeaders | None = getattr(request, "_mcp_headers", None)
    if found is None:
        found = request._mcp_headers = MetaHeaders(request.META)  # type: ignore[attr-defined]
    return found


def authenticate(request: HttpRequest) -> Principal:
    return get_auth_backend().authenticate(request)


def auth_reply(exc: AuthFailure, request_id: Any = None, *, message: bool = False) -> Reply:
    """The HTTP answer to a refused request. A 403 for a JSON-RPC ``message`` (a step-up: the
    token lacks a scope the user may be granted) also says what is missing in a JSON-RPC error
    of the request's id, which clients show (the official Python SDK showed a bare -32603);
    the challenge in ``WWW-Authenticate`` is the same either way (A-5)."""
    headers = {"Cache-Control": "no-store", **exc.headers}
    if message and exc.status == 403:
        asked = " ".join(exc.scopes)
        text = f"Forbidden: {exc.description}. Authorize again asking for the scopes: {asked}"
        data = {"error": exc.error, "scope": asked}
        return Reply(403, error_body(McpError(e.INVALID_REQUEST, text, data=data), request_id), headers)
    body = orjson.dumps({"error": exc.error, "error_description": exc.description})
    return Reply(exc.status, body, headers)


def legacy_session(headers: Mapping[str, str], principal: Principal) -> services.Session:
    session_id = headers.get("mcp-session-id")
    if not session_id:
        if headers.get("mcp-protocol-version") in v.MODERN_VERSIONS:
            raise e.invalid_params("Missing params._meta protocol fields", http_status=400)
        raise e.invalid_request("Bad Request: missing Mcp-Session-Id header; send initialize first")
    try:
        session = services.load_session(session_id, principal)
    except SessionNotFound as exc:
        raise McpError(
            e.INVALID_REQUEST, "Session not found; start a new one with initialize", http_status=404
        ) from exc
    check_legacy_version_header(headers, session.protocol_version)
    return session
