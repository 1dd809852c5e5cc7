"""JSON-RPC 2.0 framing: bytes in, typed messages out; typed replies in, bytes out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .errors import INVALID_REQUEST, McpError, invalid_request, parse_error
from .versions import META_PROTOCOL_VERSION, MODERN_VERSIONS

RequestId = str | int


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every request
# (it was never hashable: ``params`` is a dict); nothing changes a parsed message.
@dataclass(slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Response:
    """A client's answer to a server-sent request (result or error)."""

    id: RequestId | None
    result: Any = None
    error: Any = None


Message = Request | Notification | Response


def _valid_id(value: Any) -> bool:
    # "Request IDs MUST be a string or integer" and "MUST NOT be null" (basic/index).
    return (isinstance(value, (str, int))) and not isinstance(value, bool)


# Arrays and objects nested deeper than this are refused (-32600): deeper input only makes
# recursive code (schema validation, JSON columns, repr) run out of stack, and no tool needs it.
MAX_DEPTH = 64


class TooDeep(McpError):
    """A message nested deeper than ``MAX_DEPTH``; ``request_id`` is its id where readable.

    ``modern`` says the message is otherwise a well-formed request or notification that names a
    2026-07-28 revision in ``params._meta`` (V-2): its error follows that revision, whatever the
    headers say, as it would had it been served.
    """

    def __init__(self, request_id: RequestId | None, *, modern: bool = False) -> None:
        super().__init__(
            INVALID_REQUEST, f"Invalid Request: JSON nested deeper than {MAX_DEPTH} levels", http_status=400
        )
        self.request_id = request_id
        self.modern = modern


def load_json(body: bytes) -> Any:
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise parse_error() from exc
    # A body with fewer containers than the limit cannot nest deeper: the walk runs only for
    # bodies with many of them.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and depth_over(decoded, MAX_DEPTH):
        raise TooDeep(readable_id(decoded), modern=_names_modern_revision(decoded))
    return decoded


def _names_modern_revision(obj: Any) -> bool:
    try:
        message = parse_message(obj)
    except McpError:
        return False
    if isinstance(message, Response):
        return False
    meta = message.params.get("_meta")
    return isinstance(meta, dict) and meta.get(META_PROTOCOL_VERSION) in MODERN_VERSIONS


def depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` levels deep (no recursion).

    Level by level: what it holds meanwhile is one list of references to the containers of a
    level, a few MB for a megabyte of ``[{},{},...]`` rather than a tuple per container.
    """
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for item in level:
            if not item:
                continue
            below.extend(c for c in (item.values() if isinstance(item, dict) else item) if isinstance(c, dict | list))
        level = below
    return False


def readable_id(obj: Any) -> RequestId | None:
    """The id of a malformed message when it can still be read, for the error reply."""
    if isinstance(obj, dict) and _valid_id(obj.get("id")):
        rid: RequestId = obj["id"]
        return rid
    return None


def parse_message(obj: Any) -> Message:
    """Turn one decoded JSON value into a message, or raise -32600 (Invalid Request)."""
    if not isinstance(obj, dict):
        raise invalid_request("Invalid Request: a JSON-RPC message must be a JSON object")
    if obj.get("jsonrpc") != "2.0":
        raise invalid_request('Invalid Request: "jsonrpc" must be "2.0"')
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            raise invalid_request('Invalid Request: "method" must be a non-empty string')
        params = obj.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise invalid_request('Invalid Request: "params" must be an object')
        if "id" in obj:
            if not _valid_id(obj["id"]):
                raise invalid_request('Invalid Request: "id" must be a string or an integer')
            return Request(obj["id"], method, params)
        return Notification(method, params)
    if "result" in obj or "error" in obj:
        if "result" in obj and "error" in obj:
            raise invalid_request("Invalid Request: a response has either result or error")
        rid = obj.get("id")
        if rid is not None and not _valid_id(rid):
            raise invalid_request('Invalid Request: "id" must be a string or an integer')
        return Response(rid, obj.get("result"), obj.get("error"))
    raise invalid_request("Invalid Request: not a JSON-RPC request, notification or response")


def encode_result(request_id: RequestId, result: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_raw_result(request_id: RequestId, result_json: bytes) -> bytes:
    """Frame a pre-serialised result object without decoding it again (hot path)."""
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":' + result_json + b"}"


def encode_error(request_id: RequestId | None, error: McpError, *, null_id: bool = False) -> bytes:
    """An error response; ``request_id`` None means the id could not be read.

    2025-11-25 and later omit it then (basic/index, L-9); with ``null_id`` it is ``null``, as
    JSON-RPC 2.0 (section 5) and the 2025-03-26 and 2025-06-18 schemas, which require the
    member, have it (see ``versions.unreadable_id_is_null``).
    """
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None or null_id:
        message["id"] = request_id
    message["error"] = error.to_error()
    return orjson.dumps(message)


def encode_notification(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return orjson.dumps(message)


__all__ = [
    "McpError",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "TooDeep",
    "depth_over",
    "encode_error",
    "encode_notification",
    "encode_raw_result",
    "encode_result",
    "load_json",
    "parse_message",
    "readable_id",
]
