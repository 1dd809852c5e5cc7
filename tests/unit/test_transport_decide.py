"""``transport.decide``: each kind of request and the one decision it gets, without a server,
a database or a driver (the drivers in ``transport.views`` carry the decision out)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.http import HttpRequest
from django.test import RequestFactory

from mcp_tools.conf import mcp_settings
from mcp_tools.protocol.jsonrpc import Notification, Request
from mcp_tools.transport.batch import Oversized
from mcp_tools.transport.decide import Decision, Kind, decide
from mcp_tools.transport.views import answer_sync

MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def _post(body: Any, *, content_type: str = "application/json", **headers: str) -> HttpRequest:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return RequestFactory().post("/mcp", data, content_type=content_type, **headers)


def _call(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params or {}}


# (name, request, kind, needs_loop, status of a ready answer or None)
CASES: list[tuple[str, Any, Kind, bool, int | None]] = [
    ("preflight", lambda: RequestFactory().options("/mcp"), Kind.PREFLIGHT, False, None),
    ("GET stream", lambda: RequestFactory().get("/mcp"), Kind.LISTEN, True, None),
    ("DELETE", lambda: RequestFactory().delete("/mcp"), Kind.DELETE, True, None),
    ("other method", lambda: RequestFactory().put("/mcp"), Kind.REFUSE, False, 405),
    ("Host refused", lambda: _post(_call("ping"), HTTP_HOST="evil.example"), Kind.REFUSE, False, 403),
    ("foreign Origin", lambda: _post(_call("ping"), HTTP_ORIGIN="https://evil.example"), Kind.REFUSE, False, 403),
    ("not JSON", lambda: _post(b"x", content_type="text/plain"), Kind.REFUSE, False, 415),
    ("not acceptable", lambda: _post(_call("ping"), HTTP_ACCEPT="text/html"), Kind.REFUSE, False, 406),
    (
        "declared too large",
        lambda: _post(_call("ping"), CONTENT_LENGTH=str(mcp_settings.MAX_BODY_BYTES + 1)),
        Kind.REFUSE,
        False,
        413,
    ),
    ("unparsable JSON", lambda: _post(b"{"), Kind.REFUSE, False, 400),
    ("not a message", lambda: _post({"jsonrpc": "2.0", "id": 3}), Kind.REFUSE, False, 400),
    ("batch", lambda: _post([_call("ping")]), Kind.BATCH, False, None),
    ("notification", lambda: _post({"jsonrpc": "2.0", "method": "notifications/initialized"}), Kind.JSON, False, None),
    ("initialize", lambda: _post(_call("initialize")), Kind.JSON, False, None),
    ("tools/list", lambda: _post(_call("tools/list")), Kind.JSON, False, None),
    ("tools/call", lambda: _post(_call("tools/call", {"name": "echo"})), Kind.STREAM, False, None),
    (
        "tools/call asking for progress",
        lambda: _post(_call("tools/call", {"name": "echo", "_meta": {"progressToken": 1}})),
        Kind.STREAM,
        True,
        None,
    ),
    ("tasks/result", lambda: _post(_call("tasks/result", {"taskId": "t"})), Kind.WAIT, True, None),
    ("subscriptions/listen", lambda: _post(_call("subscriptions/listen", {"_meta": MODERN})), Kind.JSON, True, None),
]


@pytest.mark.parametrize(("make", "kind", "needs_loop", "status"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_kind_of_request_gets_its_decision(make: Any, kind: Kind, needs_loop: bool, status: int | None) -> None:
    decision = decide(make())
    assert decision.kind is kind
    assert decision.needs_loop is needs_loop
    if status is None:
        assert decision.reply is None
    else:
        assert decision.reply is not None
        assert decision.reply.status == status


def test_a_message_is_parsed_once_and_carried() -> None:
    decision = decide(_post(_call("tools/call", {"name": "echo"})))
    assert isinstance(decision.message, Request)
    assert (decision.message.id, decision.message.method) == (7, "tools/call")
    notified = decide(_post({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert isinstance(notified.message, Notification)


def test_an_unreadable_message_keeps_its_id_in_the_refusal() -> None:
    decision = decide(_post({"jsonrpc": "2.0", "id": 3}))
    assert decision.reply is not None
    assert json.loads(decision.reply.body)["id"] == 3


def test_405_names_the_methods_the_endpoint_serves() -> None:
    decision = decide(RequestFactory().put("/mcp"))
    assert decision.reply is not None
    assert decision.reply.headers["Allow"] == "GET, POST, DELETE, OPTIONS"


def test_a_batch_over_the_bound_keeps_only_its_size() -> None:
    count = mcp_settings.MAX_BATCH_ITEMS + 1
    decision = decide(_post([_call("ping")] * count + [_call("initialize")]))
    assert decision.batch == Oversized(count + 1, has_initialize=True)
    small = decide(_post([_call("ping")]))
    assert small.batch == [_call("ping")]


@pytest.mark.parametrize(
    "decision",
    [
        Decision(Kind.LISTEN, needs_loop=True),
        Decision(Kind.DELETE, needs_loop=True),
        Decision(Kind.WAIT, needs_loop=True),
        Decision(Kind.STREAM, needs_loop=True),
    ],
    ids=lambda d: d.kind.value,
)
def test_the_sync_driver_hands_on_what_needs_a_loop(decision: Decision) -> None:
    assert answer_sync(decision, RequestFactory().get("/mcp")) is None


def test_the_sync_driver_sends_a_refusal_as_decided() -> None:
    refused = decide(RequestFactory().put("/mcp", HTTP_ORIGIN="http://testserver"))
    reply = answer_sync(refused, RequestFactory().put("/mcp", HTTP_ORIGIN="http://testserver"))
    assert reply is refused.reply
    assert reply is not None
    assert reply.status == 405
    assert reply.headers["Access-Control-Allow-Origin"] == "http://testserver"
