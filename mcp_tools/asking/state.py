"""The 2026-07-28 ``requestState``: signed, expiring, bound to the principal, tool and arguments.

T-D2: the state is attacker-controlled input, so it is signed (``django.core.signing``, HMAC
with ``SECRET_KEY``) and carries, inside the signature, a digest of the principal's key, the
tool's name, a digest of the arguments, and its creation time (it expires after
``REQUEST_STATE_TTL_SECONDS``). It holds the answers the client gave in earlier rounds (each
with the digest of the question it answers) and the questions of the last round.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.core import signing

from ..conf import mcp_settings
from ..types import Principal

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
    return RequestState(answers=dict(payload.get("r") or {}), pending=dict(payload.get("k") or {}))
