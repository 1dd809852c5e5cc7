"""Issue 34, the first hour: what a newcomer is told where they look (the admin, the server's log)."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command

from mcp_tools import catalog
from mcp_tools.contrib.drf import ModelToolset, register, unregister
from mcp_tools.models import McpTask
from mcp_tools.tasking import WAITING_FOR_WORKER
from tests.drfapp.models import Kind
from tests.support.mcp_client import Mcp

pytestmark = [pytest.mark.django_db]

W001 = "mcp_tools_drf.W001: Model tool list_kind_reader (no tool row yet). (Run manage.py mcp_sync_toolsets"


@pytest.fixture
def unsynced(synced: None) -> Iterator[None]:
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


# --------------------------------------------------------------------------- tasks no worker runs


def _database_checks() -> list[Any]:
    from django.core.checks import Tags, run_checks

    return [m for m in run_checks(tags=[Tags.database], databases=["default"]) if m.id.startswith("mcp_tools")]


@pytest.mark.usefixtures("queued")
def test_a_task_no_worker_starts_says_so_to_its_client_the_log_the_admin_and_the_checks(
    mcp: Mcp, admin_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from mcp_tools.tasking.worker import execute

    mcp.initialize("2025-11-25")
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {}})
    task_id = str(created["task"]["taskId"])
    assert mcp.call("tasks/get", {"taskId": task_id}).get("statusMessage") is None  # just queued
    assert not [m for m in _database_checks() if m.id == "mcp_tools.W027"]

    # Queued longer than TASK_LOST_AFTER_SECONDS (30 s) ago, and no worker has started it.
    McpTask.objects.filter(pk=task_id).update(updated_at=timezone.now() - timedelta(seconds=45))
    with caplog.at_level(logging.WARNING, logger="mcp_tools.tasks"):
        first = mcp.call("tasks/get", {"taskId": task_id})
        again = mcp.call("tasks/get", {"taskId": task_id})
    assert (first["status"], first["statusMessage"]) == ("working", WAITING_FOR_WORKER)
    assert again["statusMessage"] == WAITING_FOR_WORKER
    warnings = [r.getMessage() for r in caplog.records if "no worker has started it" in r.getMessage()]
    assert len(warnings) == 1, warnings  # once per task, not per poll
    # 45 s ago when set; a loaded machine may take a second or more to get here.
    assert re.search(rf"Task {task_id} \(tool 'build_report'\) has waited (4[5-9]|5[0-9]) s", warnings[0])
    assert "is a Celery worker running, consuming Celery's default queue?" in warnings[0]

    (w013,) = [m for m in _database_checks() if m.id == "mcp_tools.W027"]
    assert w013.msg.startswith("1 task(s) wait for a worker: none has started them (the oldest, of tool 'build_report'")
    page = admin_client.get("/admin/mcp_tools/mcptask/").content.decode()
    waited = r"No worker has started it in (4[5-9]|5[0-9]) s: is a Celery worker running, consuming Celery&#x27;s"
    assert re.search(waited, page)

    # A worker comes and runs it: the note is gone, the task completes.
    assert execute(task_id) == "completed"
    done = mcp.call("tasks/get", {"taskId": task_id})
    assert done["status"] == "completed"
    assert done.get("statusMessage") != WAITING_FOR_WORKER
    assert not [m for m in _database_checks() if m.id == "mcp_tools.W027"]


@pytest.mark.usefixtures("queued", "demo_tools")
def test_task_tools_without_a_broker_are_named_by_a_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery import current_app

    app = current_app._get_current_object()
    monkeypatch.setattr(app.conf, "broker_url", None)
    (w012,) = [m for m in _database_checks() if m.id == "mcp_tools.W026"]
    assert "can run as tasks (" in w012.msg
    assert "build_report" in w012.msg
    assert "has no broker (CELERY_BROKER_URL unset" in w012.msg


def test_the_tool_form_says_which_task_support_every_client_can_call(admin_client: Any) -> None:
    page = admin_client.get("/admin/mcp_tools/tool/add/").content.decode()
    assert "the safe choice for a long tool" in page
    assert "the official Python SDK among them" in page
