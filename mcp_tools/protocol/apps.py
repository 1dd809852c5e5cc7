"""MCP Apps (the extension ``io.modelcontextprotocol/ui``): negotiation, ``ui://`` URIs and ``_meta.ui``.

Django-free: what a tool's UI link and a UI resource look like on the wire, and whether a client
declared the extension. Rendering the HTML is the domain's (``mcp_tools.ui``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import INVALID_PARAMS, McpError
from .versions import Revision

__all__ = [
    "CSP_KEYS",
    "EXTENSION",
    "MIME_TYPE",
    "PERMISSIONS",
    "UI_URI_PREFIX",
    "VISIBILITY_VALUES",
    "UiLink",
    "UiResourceMeta",
    "client_declared",
    "domain_problem",
    "host_allow",
    "host_csp",
    "origin_problem",
    "parse_ui_uri",
    "resource_contents",
    "resource_not_found",
    "server_capability",
    "ui_uri",
]

# "This extension is identified as: `io.modelcontextprotocol/ui`" (SEP-1865, 2026-01-26).
EXTENSION = "io.modelcontextprotocol/ui"
# "`mimeType` MUST be `text/html;profile=mcp-app`".
MIME_TYPE = "text/html;profile=mcp-app"
# "URI MUST start with `ui://` scheme"; ours name the tool: ui://tools/<tool name>.
UI_URI_PREFIX = "ui://tools/"
VISIBILITY_VALUES = ("model", "app")
# McpUiResourceCsp: each maps to CSP directives the host builds.
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
# McpUiResourcePermissions: each is an empty object when requested.
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")

# An origin a host may put in a CSP source list: scheme://host[:port], the host may start with
# "*." (wildcard subdomains are supported). No path, no quotes, no spaces or semicolons, which
# would let a value add its own CSP directives.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_ORIGIN = re.compile(rf"^(https|wss|http|ws)://(\*\.)?{_LABEL}(?:\.{_LABEL})*(?::[0-9]{{1,5}})?$")
_LOCAL_HOSTS = ("localhost", "127.0.0.1")
_DOMAIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


def client_declared(capabilities: Mapping[str, Any]) -> bool:
    """Whether a client's capabilities declare MCP Apps with the HTML profile.

    "`mimeTypes`: Array of supported content types (REQUIRED)": a declaration without
    ``text/html;profile=mcp-app`` among them is no declaration this server can serve.
    """
    extensions = capabilities.get("extensions")
    if not isinstance(extensions, dict):
        return False
    settings = extensions.get(EXTENSION)
    if not isinstance(settings, dict):
        return False
    mime_types = settings.get("mimeTypes")
    return isinstance(mime_types, list) and MIME_TYPE in mime_types


def server_capability() -> dict[str, Any]:
    """Our settings object under ``capabilities.extensions`` (SEP-1724: an object per extension)."""
    return {"mimeTypes": [MIME_TYPE]}


def ui_uri(tool_name: str) -> str:
    return UI_URI_PREFIX + tool_name


def parse_ui_uri(uri: Any) -> str | None:
    """The tool name a ``ui://tools/<name>`` URI names, or None for any other URI."""
    if not isinstance(uri, str) or not uri.startswith(UI_URI_PREFIX):
        return None
    name = uri[len(UI_URI_PREFIX) :]
    return name or None


def resource_not_found(uri: Any, rev: Revision) -> McpError:
    """An unknown, hidden or UI-less ``ui://`` resource: -32002 up to 2025-11-25; 2026-07-28
    "Change resource not found error code from `-32002` to `-32602`"."""
    shown = uri[:200] if isinstance(uri, str) else uri
    return McpError(INVALID_PARAMS if rev.modern else -32002, "Resource not found", data={"uri": shown})


def origin_problem(value: Any) -> str | None:
    """Why ``value`` is not an origin a CSP source list may hold, or None.

    https/wss origins anywhere; http/ws only for localhost (a development server).
    """
    if not isinstance(value, str) or not _ORIGIN.match(value):
        return f"{value!r} is not an origin like https://api.example.com or https://*.example.com."
    scheme, _, rest = value.partition("://")
    host = rest.rsplit(":", 1)[0] if rest.count(":") else rest
    if scheme in ("http", "ws") and host not in _LOCAL_HOSTS:
        return f"{value!r}: plain {scheme}:// only for localhost; use https:// or wss://."
    return None


def domain_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not _DOMAIN.match(value):
        return f"{value!r} is not a host name."
    return None


@dataclass(frozen=True, slots=True)
class UiLink:
    """A tool's link to its UI: ``_meta.ui`` of its tools/list entry (McpUiToolMeta)."""

    resource_uri: str
    visibility: tuple[str, ...] = VISIBILITY_VALUES

    @property
    def model_visible(self) -> bool:
        return "model" in self.visibility

    def meta(self) -> dict[str, Any]:
        ui: dict[str, Any] = {"resourceUri": self.resource_uri}
        if self.visibility != VISIBILITY_VALUES:
            ui["visibility"] = list(self.visibility)
        return {"ui": ui}


@dataclass(frozen=True, slots=True)
class UiResourceMeta:
    """The security and rendering metadata of a UI resource: ``_meta.ui`` (McpUiResourceMeta)."""

    csp: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (CSP key, origins), non-empty lists only
    permissions: tuple[str, ...] = ()
    domain: str = ""
    prefers_border: bool | None = None

    @classmethod
    def build(
        cls,
        csp: Mapping[str, Sequence[str]],
        permissions: Sequence[str] = (),
        domain: str = "",
        prefers_border: bool | None = None,
    ) -> UiResourceMeta:
        return cls(
            csp=tuple((key, tuple(csp[key])) for key in CSP_KEYS if csp.get(key)),
            permissions=tuple(p for p in PERMISSIONS if p in permissions),
            domain=domain,
            prefers_border=prefers_border,
        )

    def meta(self) -> dict[str, Any] | None:
        ui: dict[str, Any] = {}
        if self.csp:
            ui["csp"] = {key: list(origins) for key, origins in self.csp}
        if self.permissions:
            ui["permissions"] = {name: {} for name in self.permissions}
        if self.domain:
            ui["domain"] = self.domain
        if self.prefers_border is not None:
            ui["prefersBorder"] = self.prefers_border
        return {"ui": ui} if ui else None


def host_csp(meta: UiResourceMeta | None) -> str:
    """The Content-Security-Policy a host gives a view with ``meta``, as the extension's
    "CSP Construction from Metadata" builds it (used by the admin's preview, which is a host)."""
    csp = dict(meta.csp) if meta is not None else {}

    def extra(key: str) -> str:
        origins = csp.get(key, ())
        return (" " + " ".join(origins)) if origins else ""

    resources = extra("resourceDomains")
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src 'self' 'unsafe-inline'{resources}",
            f"style-src 'self' 'unsafe-inline'{resources}",
            f"connect-src 'self'{extra('connectDomains')}",
            f"img-src 'self' data:{resources}",
            f"font-src 'self'{resources}",
            f"media-src 'self' data:{resources}",
            f"frame-src {' '.join(csp.get('frameDomains', ())) or chr(39) + 'none' + chr(39)}",
            "object-src 'none'",
            f"base-uri {' '.join(csp.get('baseUriDomains', ())) or chr(39) + 'self' + chr(39)}",
        )
    )


def host_allow(meta: UiResourceMeta | None) -> str:
    """The iframe ``allow`` attribute for the permissions a view asks for (Permission Policy names)."""
    names = {"camera": "camera", "microphone": "microphone", "geolocation": "geolocation"}
    names["clipboardWrite"] = "clipboard-write"
    return "; ".join(names[p] for p in (meta.permissions if meta is not None else ()))


def resource_contents(uri: str, html: str, meta: UiResourceMeta) -> dict[str, Any]:
    """One ``contents`` item of a resources/read result: the HTML as text, with its ``_meta.ui``."""
    item: dict[str, Any] = {"uri": uri, "mimeType": MIME_TYPE, "text": html}
    shaped = meta.meta()
    if shaped is not None:
        item["_meta"] = shaped
    return item
