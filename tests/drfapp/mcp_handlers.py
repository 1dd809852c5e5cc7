"""The test app's toolsets (autodiscovered like every app's mcp_handlers module)."""

from __future__ import annotations

from typing import Any

from mcp_tools.contrib.drf import ModelToolset, register
from mcp_tools.types import Principal

from .models import Kind, Specimen

EVERY_FIELD = [f.name for f in Specimen._meta.get_fields() if f.concrete or f.many_to_many]
EVERY_FIELD = [name for name in EVERY_FIELD if name not in ("password", "api_token", "owner")]


@register
class SpecimenTools(ModelToolset):
    """Every field type, every operation."""

    model = Specimen
    fields = EVERY_FIELD
    operations = ["list", "get", "create", "update", "delete", "aggregate"]
    filter_fields = {
        "char": ["exact", "in", "icontains", "startswith"],
        "colour": ["exact", "in"],
        "size": ["exact", "isnull"],
        "integer": ["exact", "lt", "lte", "gt", "gte", "range", "in"],
        "decimal": ["gte", "lte"],
        "date": ["exact", "range", "isnull", "gte"],
        "datetime": ["gte", "lt"],
        "boolean": ["exact"],
        "kind": ["exact", "in", "isnull"],
        "kinds": ["exact", "in"],
        "uuid": ["exact"],
    }
    search_fields = ["char", "text", "kind__name"]
    ordering_fields = ["char", "integer", "decimal", "date", "datetime", "floating", "kind", "size", "time"]
    ordering = ["char"]
    aggregate_fields = ["integer", "decimal", "floating", "date", "datetime", "big", "doubled"]
    group_by_fields = ["colour", "kind", "boolean", "date", "size"]
    page_size = 10
    max_page_size = 50
    required_scopes = {"list": ["specimens:read"], "create": ["specimens:write"]}


@register
class KindTools(ModelToolset):
    """A toolset with a declared lookup field, without model permissions (public data)."""

    model = Kind
    fields = "__all__"
    operations = ["list", "get"]
    lookup_field = "name"
    filter_fields = ["name"]
    ordering_fields = ["name"]

    def get_required_permissions(self, operation: str) -> list[str]:
        return []


@register
class OwnSpecimenTools(ModelToolset):
    """Row-level rules: each user reaches only their own rows; secrets listed explicitly."""

    model = Specimen
    name = "own_specimen"
    fields = ["id", "char", "integer", "api_token"]
    read_only_fields = ["api_token"]
    operations = ["list", "get", "create", "update", "delete"]
    ordering_fields = ["integer"]

    def get_queryset(self, principal: Principal) -> Any:
        return super().get_queryset(principal).filter(owner=principal.user)

    def perform_create(self, serializer: Any, principal: Principal) -> Any:
        return serializer.save(owner=principal.user)
