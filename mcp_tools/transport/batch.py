"""JSON-RPC batches (L-8): 2025-03-26 sessions accept arrays of messages; later revisions refuse them.

A batch holds at most ``MAX_BATCH_ITEMS`` messages (over it: one -32600, nothing run), and its
answers together stay within ``MAX_RESPONSE_BYTES``: each tool call gets what is left of the
bound as its own (a larger result is an isError result), and once an answer would pass it, that
answer and every request after it get a short error instead (one response per request, as
JSON-RPC batches have it), the later ones not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

from .. import services
from ..auth import AuthFailure
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Message, Notification, Request, encode_error, parse_message, readable_id
from ..services import Exchange
from ..types import Principal
from .replies import Reply, auth_reply, authenticate, error_reply, legacy_session, plain_error, request_headers

__all__ = ["Oversized", "batch_of", "serve_batch"]


@dataclass(frozen=True, slots=True)
class Oversized:
    """What is kept of a batch over ``MAX_BATCH_ITEMS``: decoding a megabyte of small items takes
    tens of MB, so the items are let go at once; the batch is refused once the session is read."""

    count: int
    has_initialize: bool


def batch_of(items: list[Any]) -> list[Any] | Oversized:
    """The batch as served: its items, or what is kept of one over ``MAX_BATCH_ITEMS``."""
    if len(items) <= mcp_settings.MAX_BATCH_ITEMS:
        return items
    return Oversized(len(items), _has_initialize(items))


def _has_initialize(items: list[Any]) -> bool:
    return any(isinstance(item, dict) and services.traits(item.get("method")).opens_session for item in items)


@dataclass(slots=True)
class _Batch:
    """A batch that may run: its caller, session and messages (an unreadable item is its error)."""

    principal: Principal
    headers: Mapping[str, str]
    session: services.Session
    rev: v.Revision
    parsed: list[Message | bytes]
    asgi: bool


def serve_batch(request: HttpRequest, items: list[Any] | Oversized) -> Reply:
    """The answer to a batch (runs in a worker thread: a batch may call tools)."""
    opened = _open(request, items)
    if isinstance(opened, Reply):
        return opened
    return _run(opened)


def _open(request: HttpRequest, items: list[Any] | Oversized) -> Reply | _Batch:
    """The batch's caller, session and messages, or the refusal of the whole batch."""
    if not items:
        return plain_error(400, e.INVALID_REQUEST, "Invalid Request: empty batch")
    try:
        principal = authenticate(request)
    except AuthFailure as exc:
        return auth_reply(exc)
    headers = request_headers(request)
    if items.has_initialize if isinstance(items, Oversized) else _has_initialize(items):
        return plain_error(400, e.INVALID_REQUEST, "Invalid Request: initialize must not be part of a batch")
    try:
        session = legacy_session(headers, principal)
    except McpError as exc:
        return error_reply(exc)
    rev = v.get_revision(session.protocol_version)
    # From here the session's revision, not the header (a tolerated other legacy version, L-13),
    # decides how an unreadable id is written.
    null_id = rev.error_id_required
    if isinstance(items, Oversized) or not rev.batching:
        return Reply(400, encode_error(None, _refusal(rev, items), null_id=null_id))
    parsed = _parse(items, null_id)
    # A batch is authorized whole before any item runs: a step-up (403) refuses it before it
    # has side effects, never after earlier calls ran and their results would be lost.
    try:
        services.authorize_batch([m for m in parsed if isinstance(m, Request)], principal)
    except AuthFailure as exc:
        return auth_reply(exc, message=True)
    return _Batch(principal, headers, session, rev, parsed, isinstance(request, ASGIRequest))


def _parse(items: list[Any], null_id: bool) -> list[Message | bytes]:
    """Each item as a message, or as its error response when it is not one."""
    parsed: list[Message | bytes] = []
    for item in items:
        try:
            parsed.append(parse_message(item))
        except McpError as exc:
            parsed.append(encode_error(readable_id(item), exc, null_id=null_id))
    return parsed


def _refusal(rev: v.Revision, items: list[Any] | Oversized) -> McpError:
    if not rev.batching:
        return e.invalid_request(f"Invalid Request: JSON-RPC batches are not part of {rev.version}")
    count = items.count if isinstance(items, Oversized) else len(items)
    return e.invalid_request(
        f"Invalid Request: a batch may hold at most {mcp_settings.MAX_BATCH_ITEMS} messages (MAX_BATCH_ITEMS); "
        f"this one has {count}. Nothing was run; send fewer at a time."
    )


def _run(batch: _Batch) -> Reply:
    """Each message in turn; the answers in one array, within ``MAX_RESPONSE_BYTES``."""
    limit = mcp_settings.MAX_RESPONSE_BYTES
    responses: list[bytes] = []
    size = 2  # the brackets
    full = False
    for message in batch.parsed:
        answer: bytes | None = None
        if isinstance(message, bytes):
            answer = message
        elif isinstance(message, Request) and full:
            answer = encode_error(message.id, _not_run(limit))
        elif isinstance(message, Request):
            # What is left of the bound, less room for a short error per later item.
            room = limit - size - _ERROR_ROOM * len(batch.parsed)
            answer = _call(batch, message, room)
            if answer is not None and len(answer) > room:
                answer = encode_error(message.id, _too_large(len(answer), limit))
                full = True
        elif isinstance(message, Notification):
            services.accept_notification(message, batch.session)
        else:
            services.accept_answer(message, batch.session, batch.principal)
        if answer is not None:
            responses.append(answer)
            size += len(answer) + 1
    if not responses:
        return Reply(202)
    return Reply(200, b"[" + b",".join(responses) + b"]")


def _call(batch: _Batch, message: Request, room: int) -> bytes | None:
    """One request of the batch, its answer bounded by ``room`` bytes."""
    ex = Exchange(
        batch.rev, batch.principal, batch.headers, session=batch.session, asgi=batch.asgi, max_bytes=max(room, 1)
    )
    try:
        outcome = services.handle_request(message, ex)
    except AuthFailure as exc:  # the catalog changed since the batch was authorized
        outcome = (200, encode_error(message.id, e.invalid_params(exc.description)))
    return None if outcome is None else outcome[1]


# Bytes kept free per item of a batch for the short error it may get instead of its answer.
_ERROR_ROOM = 256


def _too_large(size: int, limit: int) -> McpError:
    return e.internal_error(
        f"Response too large: this answer ({size} bytes) would take the batch's answers past "
        f"{limit} bytes (MAX_RESPONSE_BYTES); it was not sent. Send the request on its own."
    )


def _not_run(limit: int) -> McpError:
    return e.invalid_request(
        f"Invalid Request: not run: the batch's answers reached {limit} bytes (MAX_RESPONSE_BYTES). "
        "Send the request again, in a smaller batch."
    )
