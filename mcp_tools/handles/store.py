"""``ctx.handles``: create, read, update and close the calling principal's handles.

Every lookup filters on the owner and on expiry, so another principal's handle, an expired one
and one that never existed all end the call with the same ``isError`` result (only the owner
of an expired, not yet purged handle hears that it expired). Updates are read-modify-write
under a row lock (``select_for_update``; SQLite serialises writers) and compare the row's
revision, so concurrent updates of one handle never lose each other's changes.
"""

from __future__ import annotations

import copy
import logging
import secrets
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ..conf import mcp_settings
from ..exceptions import ToolError
from ..models import McpHandle, McpPendingInput, McpRedemption
from ..storable import lookable
from ..types import Handle, HandleType, Principal
from .kinds import kinds

__all__ = ["HandleStore", "purge_expired"]

logger = logging.getLogger("mcp_tools")

# A handle id carries 192 random bits after its prefix (T-D5: opaque, from a secure RNG).
ID_BYTES = 24
# Concurrent writers each retry at most this often before giving up (never reached with a lock).
MAX_UPDATE_ATTEMPTS = 50


def new_handle_id(kind: HandleType) -> str:
    return f"{kind.prefix}_{secrets.token_urlsafe(ID_BYTES)}"


class HandleStore:
    """The handles of one principal (``ctx.handles``); works in any process, DB only."""

    __slots__ = ("principal",)

    def __init__(self, principal: Principal) -> None:
        self.principal = principal

    def create(self, kind: HandleType, state: Mapping[str, Any] | None = None) -> Handle:
        _registered(kind)
        data = _checked_state(kind, dict(state or {}))
        now = timezone.now()
        row = McpHandle.objects.create(
            id=new_handle_id(kind),
            kind=kind.prefix,
            principal_key=self.principal.key,
            state=data,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=kind.ttl_seconds),
        )
        return _handle(kind, row)

    def get(self, kind: HandleType, handle_id: Any) -> Handle:
        """The handle, its expiry moved on if the kind slides; ToolError if unknown or expired."""
        _registered(kind)
        row = self._owned(kind, handle_id).first()
        if row is None:
            raise self._not_found(kind, handle_id)
        if kind.sliding:
            now = timezone.now()
            expires = now + timedelta(seconds=kind.ttl_seconds)
            # Write the new expiry only when it moved noticeably (not on every read).
            if expires - row.expires_at >= timedelta(seconds=min(60.0, kind.ttl_seconds / 100)):
                McpHandle.objects.filter(pk=row.pk).update(expires_at=expires, updated_at=now)
                row.expires_at, row.updated_at = expires, now
        return _handle(kind, row)

    def update(self, kind: HandleType, handle_id: Any, change: Callable[[dict[str, Any]], Any]) -> Handle:
        """Apply ``change`` to a copy of the state under the row's lock and store the result.

        ``change`` may edit the dict in place (and return None) or return a new dict; keep it
        short and free of I/O, it runs inside the transaction that holds the lock.
        """
        _registered(kind)
        for _attempt in range(MAX_UPDATE_ATTEMPTS):
            with transaction.atomic(using=McpHandle.objects.db):
                row = self._owned(kind, handle_id).select_for_update().first()
                if row is None:
                    raise self._not_found(kind, handle_id)
                state = copy.deepcopy(row.state)
                returned = change(state)
                data = _checked_state(kind, state if returned is None else returned)
                now = timezone.now()
                fields: dict[str, Any] = {"state": data, "revision": F("revision") + 1, "updated_at": now}
                if kind.sliding:
                    fields["expires_at"] = now + timedelta(seconds=kind.ttl_seconds)
                # The revision check makes the write conditional: with a lock it always holds;
                # without one (a database that ignores FOR UPDATE) a lost race retries.
                if McpHandle.objects.filter(pk=row.pk, revision=row.revision).update(**fields):
                    row.state, row.updated_at = data, now
                    row.expires_at = fields.get("expires_at", row.expires_at)
                    return _handle(kind, row)
        logger.error("Handle %s: %s concurrent updates lost the race; giving up", kind.prefix, MAX_UPDATE_ATTEMPTS)
        raise ToolError(f"The {kind.label} is busy right now; try again.")

    def close(self, kind: HandleType, handle_id: Any) -> Handle:
        """Delete the handle and return its last state; a second close finds nothing."""
        _registered(kind)
        with transaction.atomic(using=McpHandle.objects.db):
            row = self._owned(kind, handle_id).select_for_update().first()
            if row is None:
                raise self._not_found(kind, handle_id)
            handle = _handle(kind, row)
            McpHandle.objects.filter(pk=row.pk).delete()
        return handle

    def _owned(self, kind: HandleType, handle_id: Any) -> Any:
        if not isinstance(handle_id, str) or not handle_id.startswith(kind.prefix + "_") or not lookable(handle_id):
            return McpHandle.objects.none()
        return McpHandle.objects.owned_by(self.principal.key).filter(pk=handle_id, kind=kind.prefix)

    def _not_found(self, kind: HandleType, handle_id: Any) -> ToolError:
        recover = kind.recover or f"Create a new {kind.label}."
        expired = (
            isinstance(handle_id, str)
            and lookable(handle_id)
            and McpHandle.objects.filter(pk=handle_id, kind=kind.prefix, principal_key=self.principal.key).exists()
        )
        if expired:
            return ToolError(f"The {kind.label} {handle_id!r} has expired. {kind.retention} {recover}")
        return ToolError(
            f"Unknown {kind.label} {handle_id!r}: it does not exist or it has expired. {kind.retention} {recover}"
        )


def _registered(kind: HandleType) -> None:
    if kinds.get(kind.prefix) != kind:
        raise LookupError(f"Handle kind {kind.prefix!r} is not registered (mcp_tools.handles.handle_type)")


def _checked_state(kind: HandleType, state: Any) -> dict[str, Any]:
    if not isinstance(state, dict):
        raise TypeError(f"The state of a {kind.label} handle must be a dict, not {type(state).__name__}")
    size = len(orjson.dumps(state))  # also refuses what JSON cannot hold
    limit = int(mcp_settings.HANDLE_STATE_MAX_BYTES)
    if size > limit:
        raise ToolError(f"The {kind.label} is too large ({size} bytes; the limit is {limit}).")
    return state


def _handle(kind: HandleType, row: McpHandle) -> Handle:
    created: datetime = row.created_at
    return Handle(id=row.pk, kind=kind, state=row.state, created_at=created, expires_at=row.expires_at)


def purge_expired(batch_size: int | None = None) -> tuple[int, int]:
    """Delete expired handles, abandoned input requests and the used confirmations of expired
    ``requestState`` tokens in batches: (handles, requests and confirmations)."""
    size = batch_size or int(mcp_settings.HANDLE_PURGE_BATCH)
    requests = McpPendingInput.objects.delete_expired(size) + McpRedemption.objects.delete_expired(size)
    return McpHandle.objects.delete_expired(size), requests
