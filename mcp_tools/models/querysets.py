"""Querysets: what is enabled, what has expired, and bulk edits that keep versions honest."""

from __future__ import annotations

from typing import Any, Self, TypeVar

from django.db import models
from django.utils import timezone

from .revisions import revision

__all__ = [
    "ExpiringQuerySet",
    "SessionQuerySet",
    "ToolQuerySet",
    "delete_in_batches",
]


class ToolQuerySet(models.QuerySet["Tool"]):  # type: ignore[name-defined]
    def enabled(self) -> ToolQuerySet:
        return self.filter(enabled=True)

    def update(self, **kwargs: Any) -> int:
        """Bulk edits bump each row's version and the catalog version, like ``save()`` does..."""
        kwargs.setdefault("version", models.F("version") + 1)
        # ...and store a revision of each row, in the same transaction (models.revisions).
        with revision(using=self.db) as frame:
            pks = list(self.values_list("pk", flat=True))
            count = super().update(**kwargs)
            if count:
                # The model's own manager class knows the version row (models.tools), so this
                # module imports no model.
                self.model.bump_catalog()
                frame.touch(pks)
        return count


_M = TypeVar("_M", bound=models.Model)


def delete_in_batches(rows: models.QuerySet[Any], batch_size: int) -> int:
    """Delete ``rows`` ``batch_size`` at a time so a large backlog never holds one long lock;
    returns the number of rows deleted."""
    total = 0
    while True:
        pks = list(rows.values_list("pk", flat=True)[:batch_size])
        if not pks:
            return total
        total += rows.model._default_manager.filter(pk__in=pks).delete()[0]


class ExpiringQuerySet(models.QuerySet[_M]):
    """Rows with an ``expires_at``: what has expired, deleted in batches."""

    def expired(self) -> Self:
        return self.filter(expires_at__lte=timezone.now())

    def delete_expired(self, batch_size: int = 1000) -> int:
        """Delete expired rows in batches so a large backlog never holds one long lock."""
        return delete_in_batches(self.expired(), batch_size)


class SessionQuerySet(ExpiringQuerySet["McpSession"]):  # type: ignore[name-defined]
    pass
