"""The demo library in the admin; two of the books' actions are also tools (BookTools.actions)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from .models import Author, Book, Tag


@admin.register(Book)
class BookAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("title", "author", "genre", "published", "price", "in_stock", "owner")
    list_filter = ("genre", "in_stock")
    search_fields = ("title", "isbn")
    actions = ["mark_out_of_stock", "clear_tags"]

    @admin.action(description="Mark selected %(verbose_name_plural)s as out of stock", permissions=["change"])
    def mark_out_of_stock(self, request: HttpRequest, queryset: Any) -> None:
        count = queryset.update(in_stock=False)
        self.message_user(request, f"{count} book(s) marked out of stock.", messages.SUCCESS)

    @admin.action(description="Remove every tag of selected %(verbose_name_plural)s", permissions=["change"])
    def clear_tags(self, request: HttpRequest, queryset: Any) -> None:
        books = list(queryset)
        for book in books:
            book.tags.clear()
        self.message_user(request, f"Removed the tags of {len(books)} book(s).", messages.SUCCESS)


admin.site.register(Author)
admin.site.register(Tag)
