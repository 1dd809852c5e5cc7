"""Handles in the admin: live handles per kind and owner, read-only; staff can expire them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from ..handles import kinds
from ..models import McpHandle
from .lookups import AllowedLookups

__all__: list[str] = []


class LiveFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "live"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Live"), ("no", "Expired (not purged yet)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[McpHandle]) -> QuerySet[McpHandle]:
        if self.value() == "yes":
            return queryset.filter(expires_at__gt=timezone.now())
        if self.value() == "no":
            return queryset.filter(expires_at__lte=timezone.now())
        return queryset


@admin.register(McpHandle)
class McpHandleAdmin(AllowedLookups):
    list_display = ("short_id", "kind_label", "principal_key", "updated_at", "expires_at", "is_live")
    list_filter = (LiveFilter, "kind")
    search_fields = ("id", "principal_key")
    ordering = ("kind", "principal_key", "-updated_at")
    readonly_fields = [f.name for f in McpHandle._meta.fields]
    actions = ("expire_handles",)

    @admin.display(description="handle")
    def short_id(self, obj: McpHandle) -> str:
        return str(obj)

    @admin.display(description="kind", ordering="kind")
    def kind_label(self, obj: McpHandle) -> str:
        kind = kinds.get(obj.kind)
        return f"{kind.label} ({obj.kind})" if kind is not None else obj.kind

    @admin.display(boolean=True, description="live")
    def is_live(self, obj: McpHandle) -> bool:
        return obj.live

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Expire selected handles", permissions=["change"])
    def expire_handles(self, request: HttpRequest, queryset: QuerySet[McpHandle]) -> None:
        # Expired rows answer like unknown ones at once; the purge deletes them later.
        selected = queryset.count()
        count = queryset.filter(expires_at__gt=timezone.now()).update(expires_at=timezone.now())
        self.message_user(
            request,
            f"Expired {count} handle(s); {selected - count} already expired.",
            messages.SUCCESS if count else messages.INFO,
        )
