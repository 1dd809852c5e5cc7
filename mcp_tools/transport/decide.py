"""The endpoint's one decision: what a request gets, made before any of it is served.

:func:`decide` reads the request (method, headers, body) and returns a :class:`Decision`: a
refusal ready to send, or what to serve (a preflight, one message, a batch, a GET stream, a
DELETE). It runs no tool, touches no row and sends nothing; the drivers in ``views`` carry the
decision out, the async one on an event loop (ASGI), the sync one in the calling thread (WSGI).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from .. import services
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Message, Request, TooDeep, load_json, parse_message, readable_id
from .batch import Oversized, batch_of
from .replies import (
    ALLOW,
    Reply,
    accepts,
    check_host_and_origin,
    error_reply,
    plain_error,
    read_id_rule,
    request_headers,
)

__all__ = ["Decision", "Kind", "decide"]


class Kind(enum.Enum):
    """What a request gets."""

    REFUSE = "refuse"  # the answer is made already: an HTTP or JSON-RPC error, 405
    PREFLIGHT = "preflight"  # OPTIONS: the CORS preflight
    JSON = "json"  # one message, answered with JSON (a listen request answers with its stream)
    STREAM = "stream"  # one request whose method may emit notifications first: JSON or SSE
    WAIT = "wait"  # one request that waits for work done elsewhere (tasks/result): JSON or SSE
    BATCH = "batch"  # a JSON array of messages (2025-03-26)
    LISTEN = "listen"  # GET: the session's notification stream
    DELETE = "delete"  # DELETE: end the session


@dataclass(slots=True)
class Decision:
    """What to answer. ``needs_loop``: only an event loop can serve it (a wait or a stream);
    the sync driver hands it on. Not frozen (a frozen dataclass sets each field through
    ``object.__setattr__``: one decision per request); drivers only read it."""

    kind: Kind
    reply: Reply | None = None  # REFUSE
    message: Message | None = None  # JSON, STREAM, WAIT (a Request for the last two)
    batch: list[Any] | Oversized | None = None  # BATCH
    needs_loop: bool = False


_PREFLIGHT = Decision(Kind.PREFLIGHT)
_LISTEN = Decision(Kind.LISTEN, needs_loop=True)
_DELETE = Decision(Kind.DELETE, needs_loop=True)


def decide(request: HttpRequest) -> Decision:
    """The decision for ``request``; it also fixes how its unreadable ids are written."""
    read_id_rule(request)
    refused = check_host_and_origin(request)
    if refused is not None:
        return Decision(Kind.REFUSE, refused)
    method = request.method
    if method == "POST":
        refused, decoded = _read_post(request)
        if refused is not None:
            return Decision(Kind.REFUSE, refused)
        if isinstance(decoded, list):
            return Decision(Kind.BATCH, batch=batch_of(decoded))  # an oversized batch is let go here
        try:
            message = parse_message(decoded)
        except McpError as exc:
            return Decision(Kind.REFUSE, error_reply(exc, readable_id(decoded)))
        return decide_message(message)
    if method == "OPTIONS":
        return _PREFLIGHT
    if method == "GET":
        return _LISTEN
    if method == "DELETE":
        return _DELETE
    return Decision(Kind.REFUSE, Reply(405, headers={"Allow": ALLOW}))


def decide_message(message: Message) -> Decision:
    """How one parsed message is served, from its method's traits."""
    if not isinstance(message, Request):
        return Decision(Kind.JSON, message=message)
    traits = services.traits(message)
    if traits.waits:
        kind = Kind.WAIT
    elif traits.streams:
        kind = Kind.STREAM
    else:
        kind = Kind.JSON
    return Decision(kind, message=message, needs_loop=traits.needs_loop(message.params))


def _read_post(request: HttpRequest) -> tuple[Reply | None, Any]:
    """A POST's media types, size and JSON checked: (a refusal, None) or (None, the JSON)."""
    content_type = request_headers(request).get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json":
        return plain_error(415, e.INVALID_REQUEST, "Unsupported Media Type: POST bodies must be application/json"), None
    if not (accepts(request, "application/json") or accepts(request, "text/event-stream")):
        return plain_error(406, e.INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream"), None
    limit = mcp_settings.MAX_BODY_BYTES
    try:
        declared = int(request_headers(request).get("content-length") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return plain_error(413, e.INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes"), None
    try:
        body = request.body
    except RequestDataTooBig:  # DATA_UPLOAD_MAX_MEMORY_SIZE is below MAX_BODY_BYTES
        return plain_error(413, e.INVALID_REQUEST, "Payload Too Large"), None
    if len(body) > limit:
        return plain_error(413, e.INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes"), None
    try:
        return None, load_json(body)
    except TooDeep as exc:  # it knows the id, and whether the message named a modern revision
        return error_reply(exc, exc.request_id, modern=exc.modern), None
    except McpError as exc:
        return error_reply(exc), None
