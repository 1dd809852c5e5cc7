"""Call approvals in the admin: pending calls of approval-gated tools, approved or rejected here.

The change page of a pending call has Approve and Reject (with a reason) as plain POST forms;
the list has bulk actions. Only users with ``mcp_tools.approve_call`` (and superusers) decide.
Each decision goes through ``approvals.decide`` (one audit row) and writes an admin LogEntry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from .. import approvals
from ..models import ApprovalState, McpApproval
from .lookups import AllowedLookups

__all__: list[str] = []

BULK_REJECT_REASON = "Rejected from the list of pending calls."


class StateFilter(admin.SimpleListFilter):
    """Pending calls first: the list opens on them."""

    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("all", "All"), *((str(value), str(label)) for value, label in ApprovalState.choices)]

    def choices(self, changelist: Any) -> Any:
        value = self.value() or ApprovalState.PENDING
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[McpApproval]) -> QuerySet[McpApproval]:
        value = self.value() or ApprovalState.PENDING
        return queryset if value == "all" else queryset.filter(state=value)


@admin.register(McpApproval)
class McpApprovalAdmin(AllowedLookups):
    list_display = ("call", "tool_name", "caller", "state", "requested_at", "expires_at", "decided_by")
    list_filter = (StateFilter, "tool_name")
    search_fields = ("tool_name", "principal_key", "client_id")
    list_select_related = ("user", "decided_by")
    ordering = ("-requested_at", "-id")
    actions = ("approve_selected", "reject_selected")
    change_form_template = "mcp_tools/admin/approval_change_form.html"
    fields = (
        "tool_name",
        "tool_version",
        "caller",
        "pretty_arguments",
        "state",
        "reason",
        "requested_at",
        "expires_at",
        "decided_by",
        "decided_at",
        "task_id",
        "started_at",
    )
    readonly_fields = fields

    @admin.display(description="call", ordering="id")
    def call(self, obj: McpApproval) -> str:
        return f"#{obj.pk}"

    @admin.display(description="caller")
    def caller(self, obj: McpApproval) -> str:
        who = obj.user.get_username() if obj.user is not None else obj.principal_key
        return f"{who} (client {obj.client_id})" if obj.client_id else str(who)

    @admin.display(description="arguments")
    def pretty_arguments(self, obj: McpApproval) -> str:
        text = json.dumps(obj.arguments, indent=2, ensure_ascii=False, sort_keys=True)
        return format_html('<pre class="mcp-arguments" style="margin: 0">{}</pre>', text)

    # ------------------------------------------------------------------ permissions

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # rows change only by a decision

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) or self.has_approve_permission(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) or self.has_approve_permission(request)

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return approvals.may_decide(request.user)

    # ------------------------------------------------------------------ deciding

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"

        def view(func: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
            return self.admin_site.admin_view(func)

        return [
            path("<int:pk>/decide/", view(self.decide_view), name=f"{name}_decide"),
            *super().get_urls(),
        ]

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        row = McpApproval.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        extra = dict(extra_context or {})
        if row is not None:
            extra.update(
                approval=row,
                can_decide=row.pending and row.expires_at > timezone.now() and self.has_approve_permission(request),
                decide_url=reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_decide", args=[row.pk]),
            )
        return super().change_view(request, object_id, form_url, extra)

    def decide_view(self, request: HttpRequest, pk: int) -> HttpResponseBase:
        """POST ``decision`` (approve/reject) and, to reject, a ``reason``; back to the call."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_approve_permission(request):
            raise PermissionDenied
        back = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[pk])
        decision = request.POST.get("decision")
        reason = request.POST.get("reason", "").strip()
        if decision not in ("approve", "reject"):
            self.message_user(request, "Choose Approve or Reject.", messages.ERROR)
            return HttpResponseRedirect(back)
        if decision == "reject" and not reason:
            self.message_user(request, "Give a reason to reject the call; the caller is told it.", messages.ERROR)
            return HttpResponseRedirect(back)
        self._decide(request, pk, approve=decision == "approve", reason=reason)
        return HttpResponseRedirect(back)

    def _decide(self, request: HttpRequest, pk: int, *, approve: bool, reason: str) -> None:
        try:
            done = approvals.decide(pk, approve=approve, user=request.user, reason=reason)
        except approvals.DecisionRefused as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        self.log_change(request, done.row, done.message)
        self.message_user(request, done.message, messages.SUCCESS)

    def _decide_all(self, request: HttpRequest, queryset: QuerySet[McpApproval], *, approve: bool) -> None:
        """Decide each selected call; one message says which were decided and why others were not."""
        decided: list[int] = []
        refused: list[str] = []
        for pk in queryset.order_by("pk").values_list("pk", flat=True):
            try:
                done = approvals.decide(
                    pk, approve=approve, user=request.user, reason="" if approve else BULK_REJECT_REASON
                )
            except approvals.DecisionRefused as exc:
                refused.append(exc.message)
                continue
            self.log_change(request, done.row, done.message)
            decided.append(done.row.pk)
        verb = "Approved" if approve else "Rejected"
        message = f"{verb} {len(decided)} call(s)" + (": " + ", ".join(f"#{pk}" for pk in decided) if decided else "")
        if refused:
            message += f"; {len(refused)} not: " + " ".join(refused)
        self.message_user(
            request, message if refused else message + ".", messages.WARNING if refused else messages.SUCCESS
        )

    @admin.action(description="Approve selected calls", permissions=["approve"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[McpApproval]) -> None:
        self._decide_all(request, queryset, approve=True)

    @admin.action(description="Reject selected calls", permissions=["approve"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[McpApproval]) -> None:
        self._decide_all(request, queryset, approve=False)
