"""The admin: the tool editor (``tools``, with ``forms``, ``config_fields``, ``schema_forms`` and
Try it, ``trial``), call approvals (``approvals``), handles (``handles``), the audit trail's
usage page (``usage``), scopes, sessions, tasks, audit events and stream stats; ``lookups``
keeps changelist filters to an allowlist."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from ..models import AuditEvent, McpSession, McpTask, Scope, StreamStats, TaskStatus, Tool
from . import approvals, handles  # noqa: F401  (register McpApprovalAdmin, McpHandleAdmin)
from .lookups import AllowedLookups
from .tools import RevisionsByUser, ToolAdmin
from .usage import PERIODS, usage

__all__: list[str] = []

admin.site.register(Tool, ToolAdmin)


@admin.register(McpSession)
class McpSessionAdmin(AllowedLookups):
    list_display = ("id", "protocol_version", "principal_key", "initialized", "last_seen_at", "expires_at")
    list_filter = ("protocol_version", "initialized")
    readonly_fields = [f.name for f in McpSession._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(StreamStats)
class StreamStatsAdmin(AllowedLookups):
    """Open notification streams and list_changed sent, per serving process (read-only)."""

    list_display = ("process", "notifier", "listeners", "events_sent", "heartbeat_at", "live")
    ordering = ("-heartbeat_at",)

    @admin.display(boolean=True, description="live")
    def live(self, obj: StreamStats) -> bool:
        return obj.is_live

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Scope)
class ScopeAdmin(RevisionsByUser):
    list_display = ("name", "description", "advertised", "active")
    list_filter = ("advertised", "active")
    search_fields = ("name", "description")
    filter_horizontal = ("implies", "groups")


@admin.register(AuditEvent)
class AuditEventAdmin(AllowedLookups):
    # What people scan for first on the left (at 1366 px the long principal keys pushed the
    # outcome off the screen); the principal shortened, in full on the row's page and in search.
    list_display = ("created_at", "tool_name", "outcome", "duration_ms", "tool_version", "caller", "client_id")
    list_filter = ("outcome", "tool_name", "protocol_version", "created_at")
    search_fields = ("principal_key", "client_id", "tool_name", "request_id")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
    change_list_template = "mcp_tools/admin/audit_change_list.html"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        # The usage page's links filter by the caller's username.
        from django.contrib.auth import get_user_model

        by_username = f"user__{get_user_model().USERNAME_FIELD}"
        return lookup == by_username or super().lookup_allowed(lookup, value, request)

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        usage = path("usage/", self.admin_site.admin_view(self.usage_view), name=f"{name}_usage")
        return [usage, *super().get_urls()]

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        """Calls, errors, durations, callers and tasks over the last hour, day or week.

        What else the page shows follows what the viewer may see elsewhere: the tool list to
        pick from to those who may view tools, the tasks chart to those who may view tasks.
        """
        if not self.has_view_permission(request):
            raise PermissionDenied
        period = request.GET.get("period", "day")
        if period not in PERIODS:
            period = "day"
        tool = request.GET.get("tool", "").strip()[:128]
        caller = request.GET.get("user", "").strip()[:255]
        changelist = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        tasks = McpTask._meta
        see_tasks = self._may_view(request, McpTask)
        task_changelist = reverse(f"admin:{tasks.app_label}_{tasks.model_name}_changelist") if see_tasks else ""
        see_tools = self._may_view(request, Tool)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Usage",
            "usage": usage(period, tool, caller, changelist, task_changelist, tasks=see_tasks),
            "periods": [(key, label) for key, (_, _, _, label) in PERIODS.items()],
            "period": period,
            "tool": tool,
            "username": caller,
            "see_tasks": see_tasks,
            "tool_names": Tool.objects.order_by("name").values_list("name", flat=True) if see_tools else None,
        }
        return TemplateResponse(request, "mcp_tools/admin/audit_usage.html", context)

    def _may_view(self, request: HttpRequest, model: Any) -> bool:
        site = self.admin_site
        return site.is_registered(model) and site.get_model_admin(model).has_view_permission(request)

    @admin.display(description="principal", ordering="principal_key")
    def caller(self, obj: AuditEvent) -> str:
        key = obj.principal_key
        return key if len(key) <= 32 else key[:31] + "…"


@admin.register(McpTask)
class McpTaskAdmin(AllowedLookups):
    """Tasks are read-only here; staff who may change tasks can cancel unfinished ones."""

    list_display = ("short_id", "tool_name", "status", "status_note", "principal_key", "created_at", "updated_at")
    list_filter = ("status", "tool_name", "protocol_version")
    search_fields = ("id", "tool_name", "principal_key")
    date_hierarchy = "created_at"
    actions = ("cancel_tasks",)
    readonly_fields = [f.name for f in McpTask._meta.fields]

    @admin.display(description="task id")
    def short_id(self, obj: McpTask) -> str:
        return f"{obj.pk[:10]}…"

    @admin.display(description="status message")
    def status_note(self, obj: McpTask) -> str:
        """The task's status message; for a task no worker has started in TASK_LOST_AFTER_SECONDS,
        what to look at (a client is told less: ``recovery.note_unclaimed``)."""
        from django.utils import timezone

        from ..conf import mcp_settings
        from ..tasking import AWAITING_APPROVAL
        from ..tasking.recovery import queue_name

        waited = (timezone.now() - obj.updated_at).total_seconds()
        if (
            obj.status == TaskStatus.WORKING
            and not obj.attempts
            and not obj.status_message.startswith(AWAITING_APPROVAL)
            and waited >= mcp_settings.TASK_LOST_AFTER_SECONDS
        ):
            return (
                f"No worker has started it in {waited:.0f} s: is a Celery worker running, consuming "
                f"{queue_name()}? (celery -A <your project> worker)"
            )
        return obj.status_message

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Cancel selected tasks", permissions=["change"])
    def cancel_tasks(self, request: HttpRequest, queryset: Any) -> None:
        from ..tasking.service import cancel

        done = sum(1 for task in queryset if cancel(task))
        skipped = queryset.count() - done
        self.message_user(
            request,
            f"Cancelled {done} task(s); {skipped} already finished.",
            messages.SUCCESS if done else messages.INFO,
        )
