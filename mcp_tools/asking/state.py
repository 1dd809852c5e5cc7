"""The 2026-07-28 ``requestState``: signed, expiring, bound to the principal, tool and arguments.

T-D2: the state is attacker-controlled input, so it is signed (``django.core.signing``, HMAC
with ``SECRET_KEY``) and carries, inside the signature, a digest of the principal's key, the
tool's name, a digest of the arguments, and its creation time (it expires after
``REQUEST_STATE_TTL_SECONDS``). It holds the answers the client gave in earlier rounds (each
with the digest of the question it answers) and the questions of the last round, and a random
nonce: an accepted confirmation (``ctx.elicit(..., once=True)``) is used by the retry that
carries a given state once (``redeem``), never by a replay of it.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson
from django.core import signing
from django.db import DatabaseError, router, transaction
from django.utils import timezone

from ..conf import mcp_settings
from ..types import Principal

__all__ = [
    "RequestState",
    "StateRefused",
    "open_state",
    "redeem",
    "seal_state",
]

SALT = "mcp_tools.asking.request_state"
VERSION = 1


class StateRefused(Exception):
    """The requestState cannot be used; ``message`` says why (sent to the client)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(slots=True)
class RequestState:
    # key -> {"d": question digest, "r": the client's answer}
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    # key -> {"m": method, "d": question digest}: what the last round asked
    pending: dict[str, dict[str, str]] = field(default_factory=dict)
    # The nonce of the state this one was opened from ("" for a fresh call).
    nonce: str = ""


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def seal_state(principal: Principal, tool_name: str, arguments: dict[str, Any], state: RequestState) -> str:
    payload = {
        "v": VERSION,
        "p": _digest(principal.key),
        "t": tool_name,
        "a": _digest(arguments),
        "r": state.answers,
        "k": state.pending,
        "n": secrets.token_urlsafe(18),
    }
    return signing.dumps(payload, salt=SALT, compress=True)


def open_state(token: Any, principal: Principal, tool_name: str, arguments: dict[str, Any]) -> RequestState:
    """The state of an earlier round of this very call, or StateRefused."""
    if not isinstance(token, str):
        raise StateRefused("requestState must be the string this server returned")
    try:
        payload = signing.loads(token, salt=SALT, max_age=int(mcp_settings.REQUEST_STATE_TTL_SECONDS))
    except signing.SignatureExpired as exc:
        raise StateRefused(
            "requestState has expired; call the tool again without requestState and inputResponses"
        ) from exc
    except signing.BadSignature as exc:
        raise StateRefused("requestState is invalid: it was altered or not issued by this server") from exc
    if not isinstance(payload, dict) or payload.get("v") != VERSION:
        raise StateRefused("requestState is invalid: it was altered or not issued by this server")
    if payload.get("p") != _digest(principal.key):
        raise StateRefused("requestState was issued to another caller")
    if payload.get("t") != tool_name or payload.get("a") != _digest(arguments):
        raise StateRefused("requestState belongs to another call: send the tool name and arguments of the first try")
    nonce = payload.get("n")
    return RequestState(
        answers=dict(payload.get("r") or {}),
        pending=dict(payload.get("k") or {}),
        nonce=nonce if isinstance(nonce, str) else "",
    )


def redeem(nonce: str) -> bool:
    """Use the state ``nonce`` names for an accepted confirmation: True the first time only.

    One INSERT on the primary key, so two processes racing with the same state cannot both
    win (on any database); a failure to insert is a refusal, never a second use.
    """
    from ..models import McpRedemption

    if not nonce:
        return False
    expires = timezone.now() + timedelta(seconds=int(mcp_settings.REQUEST_STATE_TTL_SECONDS) + 60)
    try:
        with transaction.atomic(using=router.db_for_write(McpRedemption)):
            McpRedemption.objects.create(nonce=nonce[:64], expires_at=expires)
    except DatabaseError:  # taken already (IntegrityError), or the insert failed: never a second use
        return False
    return True
