"""Changelist filters from the URL as an allowlist: comparisons, never a pattern the URL chose.

Django's admin lets a changelist's query string filter a model's own fields with any lookup:
``?request_id__regex=...`` runs a regular expression someone typed over values clients chose
(request ids, principal keys, tool names), and SQLite runs it in Python, where a crafted
pattern takes time exponential in the value's length. The changelists of this app take only
the lookups its filters, date hierarchy and links produce (``SAFE_LOOKUPS``), on any field.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest

__all__ = ["SAFE_LOOKUPS", "AllowedLookups", "lookups_allowed"]

# Equality, ranges, emptiness and the date parts of the date hierarchy: each a comparison the
# database answers from an index or in one pass, whatever the value.
SAFE_LOOKUPS = frozenset(
    {"exact", "iexact", "in", "isnull", "gt", "gte", "lt", "lte", "range", "date", "year", "month", "day"}
)


def lookups_allowed(model: Any, lookup: str) -> bool:
    """Whether ``lookup`` (``field__relation__field__lookup``) uses only ``SAFE_LOOKUPS`` once
    its fields end; a first part that is no field (a list filter's own parameter) is left to
    the admin, which refuses what no filter takes."""
    parts = lookup.split(LOOKUP_SEP)
    opts = model._meta
    for index, part in enumerate(parts):
        name = opts.pk.name if part == "pk" else part
        try:
            field = opts.get_field(name)
        except FieldDoesNotExist:
            return index == 0 or all(rest in SAFE_LOOKUPS for rest in parts[index:])
        path = getattr(field, "path_infos", None)
        if not path:  # not a relation: what follows are transforms and lookups
            return all(rest in SAFE_LOOKUPS for rest in parts[index + 1 :])
        opts = path[-1].to_opts
    return True


class AllowedLookups(admin.ModelAdmin):  # type: ignore[type-arg]
    """A ModelAdmin whose changelist filters only with ``SAFE_LOOKUPS`` (and what Django allows)."""

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        return lookups_allowed(self.model, lookup) and super().lookup_allowed(lookup, value, request)
