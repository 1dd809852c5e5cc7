"""URLs of bench/drf_settings.py: the demo's, plus ``api/books`` (a DRF ListAPIView with the
same serializer, query plan, ordering and page size as the ``list_book`` tool)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import path
from rest_framework.generics import ListAPIView
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer

from mcp_tools.auth import BaseAuthBackend
from mcp_tools.contrib.drf.compiled import compiled_for
from mcp_tools.types import Principal
from project.urls import urlpatterns as demo

_user: Any = None


class SuperuserBackend(BaseAuthBackend):
    """Every caller is the demo superuser, loaded once per process (benchmark only)."""

    def authenticate(self, request: HttpRequest) -> Principal:
        global _user
        if _user is None:
            from django.contrib.auth import get_user_model

            _user = get_user_model().objects.get(username="admin")
        return Principal(key="user:admin", user=_user)


class Pages(CursorPagination):
    page_size = 50
    ordering = ("price", "pk")


def _view() -> Any:
    compiled = compiled_for("library.BookTools")

    class BookList(ListAPIView):  # type: ignore[misc]
        authentication_classes = ()
        permission_classes = (AllowAny,)
        renderer_classes = (JSONRenderer,)
        pagination_class = Pages
        serializer_class = compiled.serializer_class

        def get_queryset(self) -> Any:
            books = compiled.toolset.model._default_manager.all()
            return books.select_related(*compiled.select_related).prefetch_related(*compiled.prefetch_related)

    return BookList.as_view()


class _Lazy:
    """Builds the view on first request (the toolset registry is ready by then)."""

    view: Any = None

    def __call__(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if self.view is None:
            self.view = _view()
        return self.view(request, *args, **kwargs)


urlpatterns = [path("api/books", _Lazy()), *demo]
