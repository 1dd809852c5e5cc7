"""Handles (``ctx.handles``): expiring state bound to its owner, and the demo's basket tools on them.

T-D5 (Stateful Tools): a creation tool returns an opaque handle that later calls pass back; the
handle is bound to the principal, has a bounded lifetime stated in the creation tool's
description, and an unknown or expired handle is an ``isError`` result that says how to recover.
"""

from __future__ import annotations

import io
import re
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from mcp_tools import ToolError
from mcp_tools.handles import handle_type, kinds
from mcp_tools.handles.store import HandleStore
from mcp_tools.models import McpHandle, Tool
from mcp_tools.types import Principal
from project.demo.baskets import BASKET
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db

ALICE = Principal(key="user:alice")
BOB = Principal(key="user:bob")


@pytest.fixture
def note_kind() -> Any:
    kind = handle_type("note", label="note", ttl_seconds=3600, sliding=False, recover="Call new_note.")
    yield kind
    kinds.unregister("note")


# --------------------------------------------------------------------------- the store


def test_ids_are_opaque_prefixed_and_carry_192_random_bits() -> None:
    store = HandleStore(ALICE)
    ids = {store.create(BASKET, {"items": {}}).id for _ in range(50)}
    assert len(ids) == 50
    for handle_id in ids:
        prefix, token = handle_id.split("_", 1)
        assert prefix == "bsk"
        assert re.fullmatch(r"[A-Za-z0-9_-]{32}", token)  # 24 bytes of secrets.token_urlsafe: 192 bits
    row = McpHandle.objects.get(pk=next(iter(ids)))
    assert row.principal_key == "user:alice"
    assert row.state == {"items": {}}


def test_create_get_update_close(note_kind: Any) -> None:
    store = HandleStore(ALICE)
    note = store.create(note_kind, {"text": "a"})
    assert store.get(note_kind, note.id).state == {"text": "a"}

    def append(state: dict[str, Any]) -> None:
        state["text"] += "b"

    assert store.update(note_kind, note.id, append).state == {"text": "ab"}
    assert store.update(note_kind, note.id, lambda state: {"text": "new"}).state == {"text": "new"}
    closed = store.close(note_kind, note.id)
    assert closed.state == {"text": "new"}
    with pytest.raises(ToolError, match="Unknown note"):
        store.get(note_kind, note.id)
    with pytest.raises(ToolError, match="Unknown note"):
        store.close(note_kind, note.id)


def test_another_principals_handle_answers_exactly_like_an_unknown_one() -> None:
    """T-D5: a handle is a name, not a capability; another principal's is unknown, no data leaks."""
    basket = HandleStore(ALICE).create(BASKET, {"items": {"apple": 2}})
    never = "bsk_" + "A" * 32
    bob = HandleStore(BOB)
    for operation in (
        lambda handle_id: bob.get(BASKET, handle_id),
        lambda handle_id: bob.update(BASKET, handle_id, lambda state: {"items": {}}),
        lambda handle_id: bob.close(BASKET, handle_id),
    ):
        with pytest.raises(ToolError) as foreign:
            operation(basket.id)
        with pytest.raises(ToolError) as unknown:
            operation(never)
        assert foreign.value.message == unknown.value.message.replace(never, basket.id)
        assert "Call create_basket" in foreign.value.message
    assert HandleStore(ALICE).get(BASKET, basket.id).state == {"items": {"apple": 2}}


@pytest.mark.parametrize("handle_id", [None, 42, "", "bsk", "ord_abc", "BSK_" + "A" * 32])
def test_malformed_ids_are_unknown(handle_id: Any) -> None:
    with pytest.raises(ToolError, match="Unknown basket"):
        HandleStore(ALICE).get(BASKET, handle_id)


def test_an_expired_handle_says_so_to_its_owner_and_how_to_recover() -> None:
    basket = HandleStore(ALICE).create(BASKET, {"items": {}})
    McpHandle.objects.filter(pk=basket.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(ToolError) as info:
        HandleStore(ALICE).get(BASKET, basket.id)
    assert info.value.message == (
        f"The basket {basket.id!r} has expired. A basket expires after 24 hours of inactivity. "
        "Call create_basket to start a new basket."
    )
    with pytest.raises(ToolError, match="Unknown basket"):
        HandleStore(BOB).get(BASKET, basket.id)  # another principal learns nothing


def test_sliding_expiry_moves_on_use_and_fixed_expiry_does_not(note_kind: Any) -> None:
    store = HandleStore(ALICE)
    basket = store.create(BASKET, {"items": {}})
    note = store.create(note_kind, {})
    early = timezone.now() + timedelta(minutes=5)
    McpHandle.objects.filter(pk__in=[basket.id, note.id]).update(expires_at=early)
    assert store.get(BASKET, basket.id).expires_at > timezone.now() + timedelta(hours=23)
    assert McpHandle.objects.get(pk=basket.id).expires_at > timezone.now() + timedelta(hours=23)
    McpHandle.objects.filter(pk=basket.id).update(expires_at=early)
    store.update(BASKET, basket.id, lambda state: None)
    assert McpHandle.objects.get(pk=basket.id).expires_at > timezone.now() + timedelta(hours=23)
    store.get(note_kind, note.id)
    store.update(note_kind, note.id, lambda state: None)
    assert McpHandle.objects.get(pk=note.id).expires_at == early


def test_an_update_that_loses_a_race_is_retried_on_the_new_state() -> None:
    """Where FOR UPDATE locks nothing, the revision check still keeps every change."""
    store = HandleStore(ALICE)
    basket = store.create(BASKET, {"items": {}})
    raced = []

    def add(sku: str) -> Any:
        def change(state: dict[str, Any]) -> None:
            if not raced:  # another writer commits between this read and this write
                raced.append(1)
                McpHandle.objects.filter(pk=basket.id).update(state={"items": {"tea": 1}}, revision=99)
            state["items"][sku] = state["items"].get(sku, 0) + 1

        return change

    updated = store.update(BASKET, basket.id, add("apple"))
    assert updated.state == {"items": {"tea": 1, "apple": 1}}
    assert McpHandle.objects.get(pk=basket.id).state == {"items": {"tea": 1, "apple": 1}}


def test_state_must_be_a_json_object_within_the_limit(settings: Any) -> None:
    store = HandleStore(ALICE)
    with pytest.raises(TypeError):
        store.create(BASKET, {"when": object()})  # type: ignore[dict-item]
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "HANDLE_STATE_MAX_BYTES": 64}
    with pytest.raises(ToolError, match="too large"):
        store.create(BASKET, {"items": {"x" * 100: 1}})


def test_kinds_are_registered_in_code() -> None:
    with pytest.raises(ValueError, match="Invalid handle prefix"):
        handle_type("Bad-Prefix", label="x", ttl_seconds=1)
    with pytest.raises(ValueError, match="already registered"):
        handle_type("bsk", label="other", ttl_seconds=1)
    unregistered = handle_type("tmp", label="tmp", ttl_seconds=60)
    kinds.unregister("tmp")
    with pytest.raises(LookupError):
        HandleStore(ALICE).create(unregistered)
    assert BASKET.retention == "A basket expires after 24 hours of inactivity."


def test_purge_deletes_expired_handles_in_batches() -> None:
    from mcp_tools.tasks import purge_expired_handles

    store = HandleStore(ALICE)
    keep = store.create(BASKET).id
    gone = [store.create(BASKET).id for _ in range(3)]
    McpHandle.objects.filter(pk__in=gone).update(expires_at=timezone.now() - timedelta(seconds=1))
    out = io.StringIO()
    call_command("mcp_purge_handles", "--batch-size", "2", stdout=out)
    assert "Deleted 3 expired handle(s)" in out.getvalue()
    assert list(McpHandle.objects.values_list("pk", flat=True)) == [keep]
    McpHandle.objects.filter(pk=keep).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert purge_expired_handles.delay().get() == 1
    assert not McpHandle.objects.exists()


def test_the_demo_beat_schedule_purges_handles(settings: Any) -> None:
    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "mcp_tools.purge_expired_handles" in schedule


def test_admin_lists_live_handles_per_kind_and_owner_and_expires_them(client: Any) -> None:
    from django.contrib.auth import get_user_model

    alice = HandleStore(ALICE).create(BASKET, {"items": {}})
    bob = HandleStore(BOB).create(BASKET, {"items": {}})
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    page = client.get("/admin/mcp_tools/mcphandle/?live=yes&kind=bsk")
    assert page.status_code == 200
    assert b"basket (bsk)" in page.content
    assert b"user:alice" in page.content
    assert b"user:bob" in page.content
    assert client.get("/admin/mcp_tools/mcphandle/add/").status_code == 403
    response = client.post("/admin/mcp_tools/mcphandle/", {"action": "expire_handles", "_selected_action": [alice.id]})
    assert response.status_code == 302
    with pytest.raises(ToolError, match="has expired"):
        HandleStore(ALICE).get(BASKET, alice.id)
    assert HandleStore(BOB).get(BASKET, bob.id).id == bob.id
    live = client.get("/admin/mcp_tools/mcphandle/?live=yes")
    assert b"user:bob" in live.content
    assert b"user:alice" not in live.content


# --------------------------------------------------------------------------- the basket tools


def _call(mcp: Mcp, name: str, arguments: dict[str, Any], user: str = "alice") -> dict[str, Any]:
    return mcp.call("tools/call", {"name": name, "arguments": arguments}, headers={"X-Test-User": user})


def test_the_creation_tool_states_the_retention(mcp: Mcp) -> None:
    """T-D5: the retention policy is in the creating tool's description, where the model reads it."""
    assert BASKET.retention in Tool.objects.get(name="create_basket").description
    listed = {tool["name"]: tool for tool in mcp.modern().call("tools/list")["tools"]}
    assert "expires after 24 hours of inactivity" in listed["create_basket"]["description"]


def test_basket_flow_and_two_principals(mcp: Mcp, header_auth: None) -> None:
    """The seed's flow: create_basket -> add_item -> view_basket -> checkout; bob never sees alice's basket."""
    mcp.modern()
    created = _call(mcp, "create_basket", {})
    basket_id = created["structuredContent"]["basket_id"]
    assert basket_id.startswith("bsk_")
    _call(mcp, "add_item", {"basket_id": basket_id, "sku": "apple", "quantity": 2})
    added = _call(mcp, "add_item", {"basket_id": basket_id, "sku": "tea"})
    assert added["structuredContent"]["item_count"] == 3
    viewed = _call(mcp, "view_basket", {"basket_id": basket_id})
    assert [(i["sku"], i["quantity"]) for i in viewed["structuredContent"]["items"]] == [("apple", 2), ("tea", 1)]
    assert viewed["structuredContent"]["total"] == "4.40 EUR"

    never = "bsk_" + "Q" * 32
    for name, arguments in (
        ("view_basket", {"basket_id": basket_id}),
        ("add_item", {"basket_id": basket_id, "sku": "milk"}),
        ("checkout", {"basket_id": basket_id}),
    ):
        foreign = _call(mcp, name, arguments, user="bob")
        unknown = _call(mcp, name, {**arguments, "basket_id": never}, user="bob")
        assert foreign["isError"] is True
        assert foreign["content"][0]["text"] == unknown["content"][0]["text"].replace(never, basket_id)
        assert "apple" not in str(foreign)
    # Without elicitation the order is placed at once; the basket is then gone.
    order = _call(mcp, "checkout", {"basket_id": basket_id})
    assert order["structuredContent"]["ordered"] is True
    assert order["structuredContent"]["item_count"] == 3
    gone = _call(mcp, "view_basket", {"basket_id": basket_id})
    assert gone["isError"] is True
    assert "Call create_basket" in gone["content"][0]["text"]


def test_an_expired_basket_is_a_recoverable_tool_error(mcp: Mcp) -> None:
    """T-D5: expired -> isError saying so and how to recover (legacy session this time)."""
    mcp.initialize("2025-06-18")
    basket_id = mcp.call("tools/call", {"name": "create_basket", "arguments": {}})["structuredContent"]["basket_id"]
    McpHandle.objects.filter(pk=basket_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    result = mcp.call("tools/call", {"name": "add_item", "arguments": {"basket_id": basket_id, "sku": "milk"}})
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "has expired" in text
    assert "24 hours of inactivity" in text
    assert "Call create_basket" in text


def test_unknown_products_and_empty_baskets_are_tool_errors(mcp: Mcp) -> None:
    mcp.modern()
    basket_id = mcp.call("tools/call", {"name": "create_basket", "arguments": {}})["structuredContent"]["basket_id"]
    empty = mcp.call("tools/call", {"name": "checkout", "arguments": {"basket_id": basket_id}})
    assert empty["isError"] is True
    assert "empty" in empty["content"][0]["text"]
    assert HandleStore(Principal(key="anonymous")).get(BASKET, basket_id).id == basket_id  # still there


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_updates_of_one_handle_lose_nothing_on_postgresql() -> None:
    """FOR UPDATE serialises the read-modify-writes: 20 threads, 20 increments, none lost.

    Runs in the PostgreSQL pass (MCP_TEST_DB=postgres); the end-to-end test does the same through
    a real server on both databases.
    """
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; run with MCP_TEST_DB=postgres")
    basket = HandleStore(ALICE).create(BASKET, {"items": {}})
    barrier = Barrier(20)

    def add(_: int) -> None:
        try:
            barrier.wait()

            def change(state: dict[str, Any]) -> None:
                state["items"]["apple"] = state["items"].get("apple", 0) + 1

            HandleStore(ALICE).update(BASKET, basket.id, change)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(20) as pool:
        list(pool.map(add, range(20)))
    row = McpHandle.objects.get(pk=basket.id)
    assert row.state == {"items": {"apple": 20}}
    assert row.revision == 20
