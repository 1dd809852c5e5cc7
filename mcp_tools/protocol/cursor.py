"""Opaque, tamper-evident pagination cursors (PA-1): a signed keyset position."""

from __future__ import annotations

import base64
import hashlib
import hmac

from .errors import invalid_params

__all__ = ["decode_cursor", "encode_cursor"]

_SIG_BYTES = 12


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(position: str, key: bytes, *, scope: str = "") -> str:
    """``position`` is the last key served; ``scope`` ties the cursor to one kind of listing."""
    payload = position.encode("utf-8")
    sig = hmac.new(key, scope.encode() + b"\0" + payload, hashlib.sha256).digest()[:_SIG_BYTES]
    return _b64(sig + payload)


def decode_cursor(cursor: object, key: bytes, *, scope: str = "") -> str:
    """The position inside a cursor, or -32602 for anything not minted here (PA-1)."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > 1024:
        raise invalid_params("Invalid cursor")
    try:
        raw = _unb64(cursor)
    except ValueError as exc:
        raise invalid_params("Invalid cursor") from exc
    sig, payload = raw[:_SIG_BYTES], raw[_SIG_BYTES:]
    expected = hmac.new(key, scope.encode() + b"\0" + payload, hashlib.sha256).digest()[:_SIG_BYTES]
    if len(sig) != _SIG_BYTES or not hmac.compare_digest(sig, expected):
        raise invalid_params("Invalid cursor")
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid_params("Invalid cursor") from exc
