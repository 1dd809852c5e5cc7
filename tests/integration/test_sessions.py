"""Legacy sessions at rest: mcp_purge_sessions deletes the expired ones, in batches."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from mcp_tools.models import McpSession

pytestmark = pytest.mark.django_db


def test_mcp_purge_sessions_deletes_only_expired_sessions() -> None:
    now = timezone.now()
    for _ in range(3):
        McpSession.objects.create(protocol_version="2025-11-25", principal_key="anon", expires_at=now - timedelta(1))
    live = McpSession.objects.create(protocol_version="2025-11-25", principal_key="anon", expires_at=now + timedelta(1))
    out = io.StringIO()
    call_command("mcp_purge_sessions", "--batch-size", "2", stdout=out)
    assert out.getvalue().strip() == "Deleted 3 expired session(s)."
    assert list(McpSession.objects.values_list("pk", flat=True)) == [live.pk]
