"""Issue 34, the first hour: what a newcomer is told where they look (the admin, the server's log)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command

from mcp_tools import catalog
from mcp_tools.contrib.drf import ModelToolset, register, unregister
from tests.drfapp.models import Kind
from tests.drfapp.testing import synced  # noqa: F401

pytestmark = [pytest.mark.django_db]

W001 = "mcp_tools_drf.W001: Model tool list_kind_reader (no tool row yet). (Run manage.py mcp_sync_toolsets"


@pytest.fixture
def unsynced(synced: None) -> Iterator[None]:  # noqa: F811
    """A toolset registered (its handlers module imported) whose rows were never written."""
    register(
        type(
            "KindReaderTools",
            (ModelToolset,),
            {"__module__": __name__, "model": Kind, "name": "kind_reader", "fields": ["id"], "operations": ["list"]},
        )
    )
    yield
    unregister("drfapp.KindReaderTools")


@pytest.mark.usefixtures("unsynced")
def test_a_forgotten_sync_is_on_the_admins_tool_list_until_it_is_run(admin_client: Any) -> None:
    page = admin_client.get("/admin/mcp_tools/tool/")
    assert page.status_code == 200
    assert W001 in page.content.decode()
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    page = admin_client.get("/admin/mcp_tools/tool/")
    assert "mcp_tools_drf.W001" not in page.content.decode()


@pytest.mark.usefixtures("unsynced")
def test_a_forgotten_sync_is_logged_once_by_a_development_server_reading_its_first_catalog(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.DEBUG = True  # runserver's (production workers stay lean: test_lean_imports)
    monkeypatch.setattr(catalog, "_announced", False)  # as in a process just started
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        catalog.get_catalog()
        catalog.reset()
        catalog.get_catalog()  # a later build (a new catalog version) says nothing more
    logged = [r.getMessage() for r in caplog.records if "_drf.W001" in r.getMessage()]
    assert logged == [f"System check {W001} (after migrate, on every deploy).)"], logged
