"""Signals the app sends; receivers are wired by the layer that owns them (no imports here)."""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["catalog_changed", "first_catalog"]

catalog_changed = Signal()
"""Sent by ``CatalogVersion.bump()`` inside the changing transaction, with ``using`` (the
database alias). The notify package publishes list_changed after that transaction commits."""

first_catalog = Signal()
"""Sent once per process, after ``catalog.get_catalog`` built its first catalog (at start-up
with ``warm()``, else on the first request), with ``version``. The app logs what its database
system checks say then (``editing.problems``): a newcomer reads the server's log, not
``manage.py check --database default``."""
