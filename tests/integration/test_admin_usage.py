"""The audit usage page: inline SVG charts from a bounded number of queries, linked to the changelist."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from mcp_tools.models import AuditEvent, McpTask

pytestmark = pytest.mark.django_db

URL = "/admin/mcp_tools/auditevent/usage/"
TOOLS = ("echo", "search", "build_report", "add", "slow", "spare")
OUTCOMES = ("ok", "ok", "ok", "tool_error", "invalid", "rate_limited")


def seed(count: int) -> None:
    now = timezone.now()
    AuditEvent.objects.bulk_create(
        AuditEvent(
            created_at=now - timedelta(minutes=(i * 7) % (60 * 23)),
            tool_name=TOOLS[i % len(TOOLS)],
            outcome=OUTCOMES[i % len(OUTCOMES)],
            principal_key=f"user:{i % 4}|client:demo",
            duration_ms=float(i % 97),
        )
        for i in range(count)
    )


def test_page_renders_svg_charts_linked_to_the_filtered_changelist(admin_client: Any) -> None:
    seed(60)
    McpTask.objects.create(
        principal_key="user:1", protocol_version="2025-11-25", tool_name="build_report", tool_version=1
    )
    response = admin_client.get(URL, {"period": "day"})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('class="mcp-chart"') == 5
    # No chart library and nothing from a CDN: only the admin's own scripts.
    assert all(src.startswith("/static/admin/") for src in re.findall(r'<script[^>]* src="([^"]+)"', html))
    assert "60 calls" in html
    # Each chart's links go to the audit changelist, filtered by the period (and tool, caller).
    links = re.findall(r'href="(/admin/mcp_tools/auditevent/\?[^"]+)"', html)
    assert any("tool_name__exact=echo" in link and "created_at__gte=" in link for link in links)
    assert any("principal_key=user%3A1%7Cclient%3Ademo" in link for link in links)  # no user: its key
    assert any("outcome__in=" in link for link in links)
    for link in {link.replace("&amp;", "&") for link in links}:
        assert admin_client.get(link).status_code == 200, link
    assert ">working<" in html  # tasks by status, linked to the task changelist
    [tasks] = re.findall(r'href="(/admin/mcp_tools/mcptask/\?[^"]+)"', html)
    assert "status__exact=working" in tasks
    found = admin_client.get(tasks.replace("&amp;", "&"))
    assert found.status_code == 200
    assert found.context["cl"].result_count == 1


def test_filters_and_bad_input(admin_client: Any, admin_user: Any) -> None:
    seed(30)
    response = admin_client.get(URL, {"period": "hour", "tool": "echo", "user": admin_user.username})
    assert response.status_code == 200
    assert "Nothing in this period." in response.content.decode()  # no row is the admin's
    assert admin_client.get(URL, {"period": "year", "tool": "x" * 5000}).status_code == 200
    link = admin_client.get(f"/admin/mcp_tools/auditevent/?user__username={admin_user.username}")
    assert link.status_code == 200


def test_callers_are_named_as_the_caller_filter_takes_them(admin_client: Any, admin_user: Any) -> None:
    """Issue 34 (10): the top callers said ``user:1`` while the filter took a username. A caller
    that is a user is named by its username (its bar links to the audit events of that user),
    one that is not by its key; the filter takes either and finds the same rows."""
    now = timezone.now()
    AuditEvent.objects.bulk_create(
        [
            *(
                AuditEvent(created_at=now, tool_name="echo", outcome="ok", principal_key=f"user:{admin_user.pk}",
                           user_id=admin_user.pk)
                for _ in range(3)
            ),
            AuditEvent(created_at=now, tool_name="echo", outcome="ok", principal_key="client:robot"),
        ]
    )  # fmt: skip
    html = admin_client.get(URL, {"period": "hour"}).content.decode()
    callers = html.split("Top callers")[1].split("</section>")[0]
    assert f">{admin_user.username}<" in callers
    assert ">client:robot<" in callers
    assert f"user:{admin_user.pk}<" not in callers
    links = {
        link.replace("&amp;", "&") for link in re.findall(r'href="(/admin/mcp_tools/auditevent/\?[^"]+)"', callers)
    }
    counts = sorted(admin_client.get(link).context["cl"].result_count for link in links)
    assert counts == [1, 3]
    for caller, calls in ((admin_user.username, 3), ("client:robot", 1)):
        page = admin_client.get(URL, {"period": "hour", "user": caller}).content.decode()
        assert f"{calls} calls" in page, caller


def test_links_from_the_app_index_and_the_changelist(admin_client: Any) -> None:
    assert URL in admin_client.get("/admin/mcp_tools/").content.decode()
    assert URL in admin_client.get("/admin/mcp_tools/auditevent/").content.decode()


def test_staff_without_audit_permission_cannot_see_it(client: Any, django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(user)
    assert client.get(URL).status_code == 403


def test_query_count_does_not_grow_with_the_rows(admin_client: Any, django_assert_num_queries: Any) -> None:
    seed(10)
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get(URL).status_code == 200
    AuditEvent.objects.all().delete()
    seed(1000)
    with django_assert_num_queries(len(few.captured_queries)):
        assert admin_client.get(URL).status_code == 200


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans")
def test_no_query_of_the_page_reads_the_whole_audit_table(admin_client: Any) -> None:
    """Each period's queries walk only the period's entries of a covering index: SQLite, with no
    statistics, preferred to scan the tool_name or principal_key index over every row (0.97 s for
    the week at 100,000 rows; bench/usage.py)."""
    seed(50)
    for period in ("hour", "day", "week"):
        with CaptureQueriesContext(connection) as page:
            assert admin_client.get(URL, {"period": period}).status_code == 200
        audit = [q["sql"] for q in page.captured_queries if '"mcp_tools_auditevent"' in q["sql"]]
        assert len(audit) >= 3
        for sql in audit:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN QUERY PLAN " + sql)
                plan = [row[-1] for row in cursor.fetchall()]
            assert any("USING COVERING INDEX mcp_audit_usage_" in step for step in plan), (sql, plan)
            assert not any(step.startswith("SCAN mcp_tools_auditevent") for step in plan), (sql, plan)
