"""JSON-RPC and MCP error codes, and the one exception type that carries them to the wire."""

from __future__ import annotations

from typing import Any

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "McpError",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "header_mismatch",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "method_not_found",
    "parse_error",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# 2026-07-28 (renumbered in June 2026, REQUIREMENTS note 2).
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022


class McpError(Exception):
    """A protocol-level failure: becomes a JSON-RPC error response with an HTTP status.

    ``http_status`` is the status used when the error ends the whole HTTP exchange (a single
    request); inside a batch only the JSON-RPC object is used.
    """

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: Any = None,
        http_status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status
        self.headers = headers or {}

    def to_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def parse_error(message: str = "Parse error: the body is not valid JSON") -> McpError:
    return McpError(PARSE_ERROR, message, http_status=400)


def invalid_request(message: str, *, http_status: int = 400) -> McpError:
    return McpError(INVALID_REQUEST, message, http_status=http_status)


def method_not_found(method: str, *, http_status: int = 200) -> McpError:
    return McpError(METHOD_NOT_FOUND, f"Method not found: {method}", http_status=http_status)


def invalid_params(message: str, *, http_status: int = 200, data: Any = None) -> McpError:
    return McpError(INVALID_PARAMS, message, http_status=http_status, data=data)


def internal_error(message: str = "Internal error") -> McpError:
    return McpError(INTERNAL_ERROR, message)


def header_mismatch(message: str) -> McpError:
    return McpError(HEADER_MISMATCH, message, http_status=400)
