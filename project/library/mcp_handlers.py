"""The demo's model toolsets: ``manage.py mcp_sync_toolsets`` turns them into tool rows."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from mcp_tools.contrib.drf import ModelToolset, register
from mcp_tools.types import Principal

from .models import Author, Book


@register
class BookTools(ModelToolset):
    """Books, read and written by their owner (a superuser reaches every book)."""

    model = Book
    fields = ["id", "isbn", "title", "author", "tags", "genre", "published", "price", "pages", "in_stock", "created_at"]
    operations = ["list", "get", "create", "update", "delete", "aggregate"]
    filter_fields = {
        "title": ["exact", "icontains", "startswith"],
        "genre": ["exact", "in"],
        "published": ["exact", "gte", "lte", "range", "isnull"],
        "price": ["gte", "lte", "range"],
        "pages": ["gte", "lte"],
        "author": ["exact", "in"],
        "tags": ["exact", "in"],
        "in_stock": ["exact"],
    }
    search_fields = ["title", "isbn", "author__name"]
    ordering_fields = ["title", "published", "price", "pages", "created_at"]
    ordering = ["-published"]
    aggregate_fields = ["price", "pages", "published"]
    group_by_fields = ["genre", "author", "in_stock"]
    actions = ["mark_out_of_stock", "clear_tags"]  # of BookAdmin (library/admin.py)
    destructive_actions = ["clear_tags"]
    ui = True  # MCP Apps: the generated table, detail and form views
    required_scopes = {
        "list": ["library:read"],
        "get": ["library:read"],
        "aggregate": ["library:read"],
        "create": ["library:write"],
        "update": ["library:write"],
        "delete": ["library:write"],
    }

    def get_queryset(self, principal: Principal) -> QuerySet[Book]:
        books = super().get_queryset(principal)
        user = principal.user
        return books if user is not None and user.is_superuser else books.filter(owner=user)

    def perform_create(self, serializer: Any, principal: Principal) -> Book:
        return serializer.save(owner=principal.user)  # type: ignore[no-any-return]


@register
class AuthorTools(ModelToolset):
    """Authors: read-only, looked up by name."""

    model = Author
    fields = ["id", "name", "born"]
    lookup_field = "name"
    filter_fields = ["name", "born"]
    search_fields = ["name"]
    ordering_fields = ["name", "born"]
    ordering = ["name"]
    required_scopes = ["library:read"]
