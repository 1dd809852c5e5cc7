"""Admin for toolsets defined with no code; saving one writes (or rewrites) its tool rows."""

from __future__ import annotations

from django.contrib import admin

from .models import ToolsetDefinition

__all__: list[str] = []


@admin.register(ToolsetDefinition)
class ToolsetDefinitionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("name", "model", "operations", "enabled", "revision", "updated_at")
    list_filter = ("enabled", "model")
    search_fields = ("name",)
    readonly_fields = ("revision", "updated_at")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "model",
                    "enabled",
                    "operations",
                    "actions",
                    "destructive_actions",
                    "required_scopes",
                    "confirm_destructive",
                )
            },
        ),
        ("Fields", {"fields": ("fields", "read_only_fields", "lookup_field", "owner_field")}),
        (
            "Queries",
            {
                "fields": (
                    "filter_fields",
                    "search_fields",
                    "ordering_fields",
                    "ordering",
                    "aggregate_fields",
                    "group_by_fields",
                    "page_size",
                    "max_page_size",
                )
            },
        ),
        ("History", {"fields": ("revision", "updated_at")}),
    )
