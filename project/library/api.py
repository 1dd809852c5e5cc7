"""A small REST API over the demo library (Django REST framework), also callable as tools.

``/api/books/`` (``book-list``, ``book-detail``) and ``/api/stats/`` (``library-stats``); the
``drf.view`` tool kind of ``mcp_tools.contrib.drf`` binds tools to these routes, and the
views' own permission classes judge the calling user.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from rest_framework import pagination, permissions, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter
from rest_framework.views import APIView

from .models import Book


class BookSerializer(serializers.ModelSerializer):  # type: ignore[misc]
    author = serializers.StringRelatedField()

    class Meta:
        model = Book
        fields = ["id", "title", "isbn", "author", "genre", "published", "price", "pages", "in_stock"]
        read_only_fields = ["id", "isbn", "author"]


class BookPages(pagination.PageNumberPagination):  # type: ignore[misc]
    page_size = 20


class BookViewSet(viewsets.ModelViewSet):  # type: ignore[misc]
    """Books: reading needs a signed-in user, writing Django's model permissions on books."""

    queryset = Book.objects.select_related("author").order_by("id")
    serializer_class = BookSerializer
    permission_classes = [permissions.DjangoModelPermissions]
    pagination_class = BookPages
    http_method_names = ["get", "patch", "head", "options"]


class LibraryStats(APIView):  # type: ignore[misc]
    """How many books of each genre the library has; any signed-in user."""

    permission_classes = [permissions.IsAuthenticated]

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        genres = Book.objects.values("genre").annotate(books=Count("id")).order_by("genre")
        return Response({"genres": {row["genre"]: row["books"] for row in genres}, "books": Book.objects.count()})


router = SimpleRouter()
router.register("books", BookViewSet, basename="book")
