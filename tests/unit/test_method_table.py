"""The method table: which revisions serve each method and the traits the transport reads.

The transport carries messages by their traits (``services.traits``) and names no MCP method:
a new method is a function in services/ and a line in ``services/dispatch.METHODS``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.test import override_settings

from mcp_tools import services
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.jsonrpc import Notification, Request
from mcp_tools.services.dispatch import METHODS

ROOT = Path(__file__).resolve().parents[2]

# Method names of MCP (client and server requests and notifications) the transport must not spell.
MCP_METHODS = set(METHODS) | {
    "elicitation/create",
    "sampling/createMessage",
    "roots/list",
    "resources/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
}


def _served(version: str) -> set[str]:
    rev = v.get_revision(version)
    return {name for name, entry in METHODS.items() if entry.serve is not None and entry.served(rev)}


# MCP Apps: every revision serves them, to clients that declared the extension (services.resources).
RESOURCES = {"resources/read", "resources/list", "resources/templates/list"}


def test_each_revision_serves_its_methods() -> None:
    with override_settings(MCP_TOOLS={"TASKS_ENABLED": True}):
        assert _served(v.V2025_06_18) == {"ping", "tools/list", "tools/call", "logging/setLevel"} | RESOURCES
        assert _served(v.V2025_11_25) == {
            "ping", "tools/list", "tools/call", "logging/setLevel",
            "tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
        } | RESOURCES  # fmt: skip
        assert _served(v.V2026_07_28) == {
            "server/discover", "tools/list", "tools/call", "tasks/get", "tasks/update", "tasks/cancel",
        } | RESOURCES  # fmt: skip
    with override_settings(MCP_TOOLS={"TASKS_ENABLED": False}):
        assert _served(v.V2025_11_25) == {"ping", "tools/list", "tools/call", "logging/setLevel"} | RESOURCES
        assert _served(v.V2026_07_28) == {"server/discover", "tools/list", "tools/call"} | RESOURCES


def test_the_traits_the_transport_reads() -> None:
    call = Request(1, "tools/call", {"name": "x"})
    assert services.traits(call).streams
    assert not services.traits(call).needs_loop(call.params)
    assert services.traits(call).needs_loop({"_meta": {"progressToken": 1}})
    assert services.traits(Request(1, "tasks/result", {})).waits
    assert services.traits(Request(1, "subscriptions/listen", {})).subscribes
    assert services.traits("initialize").opens_session
    assert services.traits(Notification("notifications/cancelled", {})).notification
    assert services.traits("no/such") == services.PLAIN
    assert services.traits(None) == services.PLAIN
    plain = services.traits(Request(1, "tasks/get", {}))
    assert plain == services.PLAIN
    # What may be served on the event loop's thread where every store is in the process.
    assert services.traits("tools/list").fits_loop is not None
    assert services.traits("ping").fits_loop is None  # legacy only: a session's request
    assert services.traits(call).fits_loop is not None
    assert services.traits("tasks/get").fits_loop is None
    assert services.traits("initialize").fits_loop is None


def _strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that are not docstrings, with their lines."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize("path", sorted((ROOT / "mcp_tools" / "transport").glob("*.py")), ids=lambda p: p.name)
def test_the_transport_names_no_mcp_method(path: Path) -> None:
    named = [
        f"{path.name}:{line}: {value!r}"
        for line, value in _strings(path)
        if value in MCP_METHODS or value.startswith("notifications/")
    ]
    assert named == [], "the transport reads services.traits(message) instead: " + ", ".join(named)
