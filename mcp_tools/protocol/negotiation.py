"""Which revision a request speaks, and the per-request checks of each era (V-2, LD-1..3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import versions as v
from .errors import (
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    header_mismatch,
)
from .headers import check_routing_headers

__all__ = [
    "LOG_LEVELS",
    "ModernRequestMeta",
    "check_legacy_version_header",
    "is_modern",
    "level_allows",
    "negotiate_legacy",
    "read_modern_meta",
]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every request
# (it was never hashable: it holds dicts); nothing changes it once made.
@dataclass(slots=True)
class ModernRequestMeta:
    """What a 2026-07-28 request says about itself: nothing is carried between requests (LD-2)."""

    revision: v.Revision
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: str | None


def is_modern(params: Mapping[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and v.META_PROTOCOL_VERSION in meta


def unsupported_version(requested: object) -> McpError:
    return McpError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version: {requested!r}",
        data={"supported": list(v.SUPPORTED_VERSIONS), "requested": requested},
        http_status=400,
    )


def read_modern_meta(headers: Mapping[str, str], method: str, params: Mapping[str, Any]) -> ModernRequestMeta:
    """Validate the per-request protocol fields and routing headers of a modern request."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise McpError(INVALID_PARAMS, "Missing params._meta", http_status=400)
    version = meta.get(v.META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise McpError(INVALID_PARAMS, f"params._meta[{v.META_PROTOCOL_VERSION!r}] must be a string", http_status=400)
    # H-D4 before LD-3: a header that disagrees with the body is a mismatch whatever it names.
    header = headers.get("mcp-protocol-version")
    if header is None:
        raise header_mismatch("Missing required header MCP-Protocol-Version")
    if header.strip() != version:
        raise header_mismatch("Header MCP-Protocol-Version does not match params._meta protocol version")
    if version not in v.MODERN_VERSIONS:
        raise unsupported_version(version)
    capabilities = meta.get(v.META_CLIENT_CAPABILITIES)
    if not isinstance(capabilities, dict):
        raise McpError(
            INVALID_PARAMS, f"params._meta[{v.META_CLIENT_CAPABILITIES!r}] must be an object", http_status=400
        )
    check_routing_headers(headers, method, params)
    level = meta.get(v.META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise McpError(INVALID_PARAMS, f"Unknown log level: {level!r}", http_status=400)
    info = meta.get(v.META_CLIENT_INFO)
    return ModernRequestMeta(v.get_revision(version), capabilities, info if isinstance(info, dict) else None, level)


def negotiate_legacy(requested: object) -> str:
    """L-3/L-4: echo a supported version, otherwise answer with our newest legacy version."""
    if isinstance(requested, str) and requested in v.LEGACY_VERSIONS:
        return requested
    return v.LATEST_LEGACY


def check_legacy_version_header(headers: Mapping[str, str], session_version: str) -> None:
    """L-13: after initialisation a present MCP-Protocol-Version must name a supported version.

    The session keeps the version it negotiated (L-6); a header naming another supported
    legacy version is tolerated, since the spec only rejects invalid or unsupported values.
    """
    header = headers.get("mcp-protocol-version")
    if header is None or header.strip() in v.LEGACY_VERSIONS:
        return
    raise McpError(
        -32600,
        f"Bad Request: unsupported MCP-Protocol-Version {header!r} (session uses {session_version!r})",
        http_status=400,
    )


def level_allows(threshold: str | None, level: str) -> bool:
    if threshold is None:
        return False
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)
