"""The test app's admin: Specimen's ModelAdmin and its actions, which model toolsets may serve
as tools (tests/integration/test_drf_actions.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse

from .models import Specimen


@admin.register(Specimen)
class SpecimenAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("char", "boolean", "integer")
    actions = ["mark_true", "clear_text", "export_csv", "publish"]

    @admin.action(description="Mark selected %(verbose_name_plural)s as true", permissions=["change"])
    def mark_true(self, request: HttpRequest, queryset: Any) -> None:
        count = queryset.update(boolean=True)
        self.message_user(request, f"{count} specimens marked true.", messages.SUCCESS)

    @admin.action(description="Clear the text of selected specimens", permissions=["change"])
    def clear_text(self, request: HttpRequest, queryset: Any) -> None:
        count = queryset.update(text="")
        self.message_user(request, f"Cleared the text of {count} specimens.")
        self.message_user(request, "This cannot be undone.", messages.WARNING)

    @admin.action(description="Export as CSV")
    def export_csv(self, request: HttpRequest, queryset: Any) -> HttpResponse:
        queryset.update(integer=99)  # a change that must not survive the refusal
        return HttpResponse("char\n", content_type="text/csv")

    @admin.action(description="Publish", permissions=["publish"])
    def publish(self, request: HttpRequest, queryset: Any) -> None:
        queryset.update(integer=1)

    def has_publish_permission(self, request: HttpRequest) -> bool:
        return bool(getattr(request.user, "is_superuser", False))
