"""Test helpers: validate every server message against the official schema of its revision,
and talk MCP to the view through Django's test client."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from asgiref.sync import async_to_sync
from django.test import Client
from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.protocols import Validator

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec"
MODERN = "2026-07-28"
LEGACY = ("2025-03-26", "2025-06-18", "2025-11-25")

RESULT_DEFS = {
    "initialize": "InitializeResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    # MCP Apps: the tools' ui:// views.
    "resources/read": "ReadResourceResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "server/discover": "DiscoverResult",
    "subscriptions/listen": "SubscriptionsListenResult",
    # 2025-11-25 core tasks.
    "tasks/get": "GetTaskResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
    "tasks/result": "CallToolResult",
}
# Revisions whose schema requires ``id`` on error responses: an unreadable id is null there.
NULL_ID_REVISIONS = frozenset({"2025-03-26", "2025-06-18"})
# 2026-07-28 tasks extension: its own schema file (spec/ext-tasks).
EXT_TASKS = "ext-tasks"
EXT_RESULT_DEFS = {"tasks/get": "GetTaskResult", "tasks/cancel": "CancelTaskResult", "tasks/update": "UpdateTaskResult"}


def result_def(version: str, method: str | None, result: Any) -> tuple[str, str] | None:
    """(schema file, definition) of a result: task-creating tools/call results included."""
    if method == "tools/call" and isinstance(result, dict):
        if version == MODERN and result.get("resultType") == "task":
            return EXT_TASKS, "CreateTaskResult"
        if version == MODERN and result.get("resultType") == "input_required":
            return version, "InputRequiredResult"
        if version != MODERN and "task" in result:
            return version, "CreateTaskResult"
    if version == MODERN and method in EXT_RESULT_DEFS:
        return EXT_TASKS, EXT_RESULT_DEFS[method]
    if method in RESULT_DEFS:
        return version, RESULT_DEFS[method]
    return None


@cache
def _schema(version: str) -> dict[str, Any]:
    return json.loads((SPEC_DIR / f"{version}.schema.json").read_text())


@cache
def _validator(version: str, name: str) -> Validator:
    schema = _schema(version)
    if "$defs" in schema:
        return Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
    return Draft7Validator({**schema, "$ref": f"#/definitions/{name}"})


def has_def(version: str, name: str) -> bool:
    schema = _schema(version)
    return name in schema.get("$defs", schema.get("definitions", {}))


def check(version: str, name: str, instance: Any) -> None:
    errors = sorted(_validator(version, name).iter_errors(instance), key=lambda e: list(e.path))
    if errors:
        details = "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5])
        raise AssertionError(f"{version} {name} schema violation: {details}\n{json.dumps(instance)[:2000]}")


def check_message(version: str, message: Any, method: str | None = None) -> None:
    """Validate one server-sent JSON-RPC message (response, notification, or request to the client)."""
    assert isinstance(message, dict), message
    if "method" in message and "id" in message:
        assert version != MODERN, f"2026-07-28 servers send no requests (LD-8): {message}"
        check(version, "JSONRPCRequest", message)
        check(version, "ServerRequest", message)
    elif "error" in message:
        if message.get("id", ...) is None:
            # An unreadable request id: "id": null, as JSON-RPC 2.0 (section 5) has it, only where
            # the revision's schema requires the member (its RequestId type cannot say null);
            # the rest of the envelope is checked as usual. Later revisions omit the id (L-9).
            assert version in NULL_ID_REVISIONS, f"{version} omits an unreadable id; null is not a RequestId"
            message = {**message, "id": "(unreadable)"}
        check(version, "JSONRPCErrorResponse" if has_def(version, "JSONRPCErrorResponse") else "JSONRPCError", message)
    elif "result" in message:
        envelope = "JSONRPCResultResponse" if has_def(version, "JSONRPCResultResponse") else "JSONRPCResponse"
        check(version, envelope, message)
        found = result_def(version, method, message["result"])
        if found is not None:
            check(*found, message["result"])
    else:
        check(version, "ServerNotification", message)


def sse_messages(body: bytes) -> list[dict[str, Any]]:
    messages = []
    for block in body.decode().split("\n\n"):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data and "".join(data).strip():
            messages.append(json.loads("\n".join(data)))
    return messages


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        **extra,
    }


class Mcp:
    """An MCP client over the Django test client that checks every message it receives."""

    def __init__(self, client: Client, path: str = "/mcp") -> None:
        self.client = client
        self.path = path
        self.version: str | None = None
        self.session_id: str | None = None
        self.default_headers: dict[str, str] = {}  # e.g. Authorization, sent with every POST
        self._next_id = 0

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def post(
        self, body: Any, *, headers: dict[str, str] | None = None, method: str | None = None, validate: bool = True
    ) -> tuple[Any, list[dict[str, Any]]]:
        """POST ``body``; returns (response, server messages) with each message validated."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        extra = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session_id:
            extra["Mcp-Session-Id"] = self.session_id
        if self.version and self.version != "2025-03-26" and self.version != MODERN:
            extra["MCP-Protocol-Version"] = self.version
        extra.update(self.default_headers)
        extra.update(headers or {})
        content_type = extra.pop("Content-Type")
        response = self.client.post(self.path, raw, content_type=content_type, headers=extra)
        if response.streaming:
            content = _read_stream(response)
            messages = sse_messages(content)
        elif response.content:
            decoded = json.loads(response.content)
            messages = decoded if isinstance(decoded, list) else [decoded]
        else:
            messages = []
        if validate:
            # Before initialize: the header's revision, else 2025-03-26 as a server assumes.
            version = self.version or (MODERN if _is_modern(body) else extra.get("MCP-Protocol-Version", "2025-03-26"))
            for message in messages:
                check_message(version, message, method or (body.get("method") if isinstance(body, dict) else None))
        return response, messages

    def initialize(self, version: str = "2025-11-25", **params: Any) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": self.next_id(),
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
                **params,
            },
        }
        self.session_id = None
        self.version = None
        response, messages = self.post(body, validate=False)
        assert response.status_code == 200, response.content
        result = messages[0]["result"]
        self.version = result["protocolVersion"]
        check_message(self.version, messages[0], "initialize")
        self.session_id = response.headers["Mcp-Session-Id"]
        self.notify("notifications/initialized")
        return dict(result)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> Any:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        response, _ = self.post(body)
        return response

    def request(
        self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None
    ) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
        """Send a request; returns (http response, final response message, notifications before it)."""
        params = dict(params or {})
        hdrs = dict(headers or {})
        if self.version == MODERN:
            params.setdefault("_meta", modern_meta())
            hdrs.setdefault("MCP-Protocol-Version", MODERN)
            hdrs.setdefault("Mcp-Method", method)
            if method == "tools/call" and "name" in params:
                hdrs.setdefault("Mcp-Name", params["name"])
            if method == "resources/read" and isinstance(params.get("uri"), str):
                hdrs.setdefault("Mcp-Name", params["uri"])
            if method in ("tasks/get", "tasks/update", "tasks/cancel") and isinstance(params.get("taskId"), str):
                hdrs.setdefault("Mcp-Name", params["taskId"])
        body = {"jsonrpc": "2.0", "id": self.next_id(), "method": method, "params": params}
        response, messages = self.post(body, headers=hdrs, method=method)
        final = [m for m in messages if "id" in m and ("result" in m or "error" in m)]
        notes = [m for m in messages if "method" in m]
        return response, (final[-1] if final else {}), notes

    def call(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        response, message, _ = self.request(method, params, **kw)
        assert response.status_code == 200, (response.status_code, message)
        assert "result" in message, message
        return dict(message["result"])

    def modern(self) -> Mcp:
        self.version = MODERN
        self.session_id = None
        return self


def _read_stream(response: Any) -> bytes:
    """The whole body of a streamed response; the endpoint's streams are async generators."""
    if not response.is_async:
        return b"".join(response.streaming_content)

    async def read() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    return bytes(async_to_sync(read)())


def _is_modern(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and isinstance(body.get("params"), dict)
        and "io.modelcontextprotocol/protocolVersion" in (body["params"].get("_meta") or {})
    )


# MCP Apps (io.modelcontextprotocol/ui): the client capability, and the extension's own types.
APPS_EXTENSION = "io.modelcontextprotocol/ui"
APPS_MIME = "text/html;profile=mcp-app"
APPS_CAPABILITIES = {"extensions": {APPS_EXTENSION: {"mimeTypes": [APPS_MIME]}}}


def apps_meta(**extra: Any) -> dict[str, Any]:
    """A 2026-07-28 request's ``_meta`` declaring MCP Apps."""
    return modern_meta(**{"io.modelcontextprotocol/clientCapabilities": APPS_CAPABILITIES, **extra})


def check_apps(name: str, instance: Any) -> None:
    """Validate against a type of the MCP Apps extension (``spec/ext-apps.schema.json``)."""
    check("ext-apps", name, instance)
