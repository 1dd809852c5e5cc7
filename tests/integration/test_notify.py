"""Publishing catalog changes: after commit only, once per transaction; per-listener fingerprints."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from mcp_tools.auth import BaseAuthBackend
from mcp_tools.catalog import get_catalog
from mcp_tools.models import CatalogVersion, Tool
from mcp_tools.notify import backends
from mcp_tools.notify.hub import acquire_stream_slot, release_stream_slot
from mcp_tools.types import Principal


class RecordingNotifier(backends.BaseNotifier):
    """A real notifier that keeps what it published in memory (one process, for tests)."""

    name = "recording"
    published: list[str] = []
    versions: list[int] = []  # the catalog version a listener would read when it hears

    def publish(self) -> None:
        from mcp_tools.models import CatalogVersion

        self.published.append("catalog")
        self.versions.append(CatalogVersion.current())


@pytest.fixture
def recording(settings: Any) -> Iterator[list[str]]:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "NOTIFIER": "tests.integration.test_notify.RecordingNotifier"}
    backends.reset()
    RecordingNotifier.published = []
    RecordingNotifier.versions = []
    yield RecordingNotifier.published
    backends.reset()


pytestmark = pytest.mark.django_db(transaction=True)


def test_save_outside_a_transaction_publishes_once(demo_tools: None, recording: list[str]) -> None:
    tool = Tool.objects.get(name="echo")
    tool.description = "changed"
    tool.save()
    assert recording == ["catalog"]


def test_a_change_outside_a_transaction_publishes_the_new_version(demo_tools: None, recording: list[str]) -> None:
    """The admin's enable/disable actions (a queryset update, which bumps) run with no
    transaction around them: the publication must come after the bump, or listeners re-read the
    old version."""
    before = CatalogVersion.current()
    Tool.objects.filter(name="echo").update(enabled=False)
    assert recording == ["catalog"]
    assert RecordingNotifier.versions == [before + 1]


def test_rolled_back_change_publishes_nothing(demo_tools: None, recording: list[str]) -> None:
    with transaction.atomic():
        tool = Tool.objects.get(name="echo")
        tool.enabled = False
        tool.save()
        Tool.objects.filter(name="add").delete()
        transaction.set_rollback(True)
    assert recording == []
    assert Tool.objects.get(name="echo").enabled


def test_rolled_back_savepoint_keeps_the_outer_change(demo_tools: None, recording: list[str]) -> None:
    with transaction.atomic():
        try:
            with transaction.atomic():
                Tool.objects.filter(name="echo").update(enabled=False)
                raise RuntimeError("undo the inner block")
        except RuntimeError:
            pass
        Tool.objects.filter(name="add").update(enabled=False)
    assert recording == ["catalog"]


def test_500_changes_in_one_transaction_publish_once(demo_tools: None, recording: list[str]) -> None:
    with transaction.atomic():
        for i in range(500):
            Tool.objects.create(name=f"bulk_{i:03d}", handler_key="demo.echo", input_schema={"type": "object"})
    assert recording == ["catalog"]
    Tool.objects.filter(name__startswith="bulk_").delete()  # post_delete bumps 500 times, one transaction
    assert recording == ["catalog", "catalog"]


class NamedScopes(BaseAuthBackend):
    def can_see(self, tool: Any, principal: Principal) -> bool:
        return tool.name in (principal.scopes or ())


def test_fingerprint_moves_only_for_principals_who_see_the_change(demo_tools: None) -> None:
    backend = NamedScopes()
    alice = Principal("user:alice", scopes=frozenset({"echo", "add"}))
    carol = Principal("user:carol", scopes=frozenset({"get_weather"}))
    before = get_catalog()
    tool = Tool.objects.get(name="echo")
    tool.description = "new words"
    tool.save()
    after = get_catalog()
    assert after.version > before.version
    assert before.fingerprint(alice, backend.can_see) != after.fingerprint(alice, backend.can_see)
    assert before.fingerprint(carol, backend.can_see) == after.fingerprint(carol, backend.can_see)


def test_open_streams_are_bounded_per_principal(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_STREAMS_PER_PRINCIPAL": 2}
    alice = Principal("user:alice")
    assert acquire_stream_slot(alice)
    assert acquire_stream_slot(alice)
    assert not acquire_stream_slot(alice)
    assert acquire_stream_slot(Principal("user:bob"))  # the bound is per principal
    release_stream_slot(alice)
    assert acquire_stream_slot(alice)


def test_a_rebuild_reuses_unchanged_tools_and_their_validators(demo_tools: None) -> None:
    """Validators are compiled once per tool version: a catalog change recompiles only what changed."""
    before = get_catalog()
    echo_validator = before.by_name["echo"].input_validator
    tool = Tool.objects.get(name="add")
    tool.description = "adds"
    tool.save()
    after = get_catalog()
    assert after.version > before.version
    assert after.by_name["echo"] is before.by_name["echo"]
    assert after.by_name["echo"].input_validator is echo_validator
    assert after.by_name["add"] is not before.by_name["add"]


def test_a_changed_scope_implication_reaches_an_open_listener(demo_tools: None) -> None:
    """Issue 4: a scope's implications changed -> the listeners whose visible tools changed hear
    it, although their token (its granted scopes) stays the same."""
    from mcp_tools.models import Scope
    from mcp_tools.notify.hub import Listener

    backend = BaseAuthBackend()  # visibility by required scopes
    write = Scope.objects.create(name="reports:write")
    read = Scope.objects.create(name="reports:read")
    Tool.objects.get(name="echo").required_scopes.set([read])
    catalog = get_catalog()
    granted = frozenset({"reports:write"})
    principal = Principal("user:ann", scopes=catalog.scopes.expand(granted), granted=granted)
    assert "echo" not in {t.name for t in catalog.tools if backend.can_see(t, principal)}
    listener = Listener(principal, catalog.fingerprint(principal, backend.can_see), catalog.version)
    other = Principal("user:bo", scopes=frozenset({"unrelated"}), granted=frozenset({"unrelated"}))
    bystander = Listener(other, catalog.fingerprint(other, backend.can_see), catalog.version)

    write.implies.add(read)  # the admin's change: reports:write now implies reports:read

    changed = get_catalog()
    assert changed.version > catalog.version
    listener.offer(changed, backend.can_see)
    bystander.offer(changed, backend.can_see)
    assert listener.pending
    assert not bystander.pending
    assert "reports:read" in (listener.principal.scopes or ())


def test_a_stream_slot_is_released_once(settings: Any) -> None:
    """give_back() may run from the stream's end and from the response's close: one slot back."""
    import time

    from mcp_tools.notify.hub import take_stream_slot

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_STREAMS_PER_PRINCIPAL": 2}
    ann = Principal("user:ann-release")
    slot = take_stream_slot(ann)
    assert slot is not None
    assert acquire_stream_slot(ann)
    slot.give_back()
    slot.give_back()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and acquire_stream_slot(ann) is False:
        time.sleep(0.05)  # the slot is freed on the pool
    assert not acquire_stream_slot(ann)  # one slot came back (now taken again), not two
