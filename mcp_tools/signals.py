"""Signals the app sends; receivers are wired by the layer that owns them (no imports here)."""

from __future__ import annotations

from django.dispatch import Signal

catalog_changed = Signal()
"""Sent by ``CatalogVersion.bump()`` inside the changing transaction, with ``using`` (the
database alias). The notify package publishes list_changed after that transaction commits."""
