"""Warnings where an admin opens a door: an enabled ``drf.view`` or ``celery.task`` tool with no
required scope while an OAuth backend is on (any token may call it): system check
mcp_tools.W005 and a warning in the admin when such a tool is saved or enabled."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.checks import run_checks
from django.test import Client

from mcp_tools.models import Scope, Tool
from tests.integration.test_admin_models import VALID

pytestmark = pytest.mark.django_db

LIST = "/admin/mcp_tools/tool/"
CELERY = {"task": "demo.word_stats", "timeout": 30}


def _doors() -> list[Any]:
    return [m for m in run_checks(databases=["default"]) if m.id == "mcp_tools.W005"]


def _flagged() -> dict[str, str]:
    return {str(m.obj): m.id for m in _doors()}


def test_the_demo_gives_its_site_kinds_a_scope(demo_tools: None, oauth_backend: None) -> None:
    """Secure by default: the demo's celery.task and drf.view tools require notes:read."""
    assert _flagged() == {}
    for name in ("word_stats", "library_stats"):
        assert {s.name for s in Tool.objects.get(name=name).required_scopes.all()} == {"notes:read"}


def _open_the_doors() -> None:
    for name in ("word_stats", "library_stats"):
        Tool.objects.get(name=name).required_scopes.clear()


def test_the_check_flags_unscoped_site_kinds_under_oauth(demo_tools: None, oauth_backend: None) -> None:
    _open_the_doors()
    flagged = _flagged()
    assert flagged == {"word_stats": "mcp_tools.W005", "library_stats": "mcp_tools.W005"}
    message = next(m for m in _doors() if m.obj == "library_stats")
    assert "drf.view" in message.msg
    assert "every OAuth token" in message.msg
    # A required scope, or a disabled tool, closes the door.
    Tool.objects.get(name="word_stats").required_scopes.add(Scope.objects.get(name="notes:read"))
    Tool.objects.filter(name="library_stats").update(enabled=False)
    assert _flagged() == {}


def test_the_check_is_silent_without_oauth(demo_tools: None) -> None:
    assert _flagged() == {}


def test_the_admin_warns_when_such_a_tool_is_saved(admin_client: Client, oauth_backend: None) -> None:
    data = {**VALID, "name": "stats", "handler_key": "celery.task", "handler_config": json.dumps(CELERY)}
    response = admin_client.post(f"{LIST}add/", data, follow=True)
    assert response.status_code == 200
    assert Tool.objects.filter(name="stats").exists(), response.content[:3000]
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    assert len(warnings) == 1, warnings
    assert "'stats' (celery.task) is enabled with no required scope" in warnings[0]


def test_the_admin_warns_when_such_a_tool_is_enabled(
    admin_client: Client, demo_tools: None, oauth_backend: None
) -> None:
    _open_the_doors()
    tool = Tool.objects.get(name="library_stats")
    Tool.objects.filter(pk=tool.pk).update(enabled=False)
    response = admin_client.post(LIST, {"action": "enable_tools", "_selected_action": [tool.pk]}, follow=True)
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    assert len(warnings) == 1, [str(m) for m in response.context["messages"]]
    assert "library_stats" in warnings[0]
