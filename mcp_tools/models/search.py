"""The search index of progressive discovery: one row per enabled tool, what it is found by.

``mcp_tools.discovery`` writes the rows from the compiled catalog (so a kind's own search terms
and required permissions are those the catalog computed) once per catalog version, and searches
them. A row carries, beside its text, what the grant filter of a search needs: the tool's name,
its access key (required scopes and permissions) and whether a model may call it. The search
reads these rows alone (no join), and the database keeps what makes them fast to search, on
every write of a row: on PostgreSQL a stored ``tsvector`` column (``vector``, weighted: names A,
description B) with a GIN index; on SQLite an FTS5 table (``mcp_tools_searchentry_fts``) kept in
step by triggers. The text is stored normalised (``discovery.documents.terms``). Both are created
by migration ``0020``; another database (or a SQLite built without FTS5) searches the two text
columns with ``LIKE``. A later migration that remakes this table on SQLite must create the
triggers again.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .tools import Tool

__all__ = ["FTS_TABLE", "PG_CONFIG", "SearchEntry"]


class SearchEntry(models.Model):
    """What discovery finds one enabled tool by, as of one version of the tool."""

    tool = models.OneToOneField(
        Tool, verbose_name=_("tool"), primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    version = models.PositiveIntegerField(_("tool version"))
    digest = models.CharField(_("digest"), max_length=32, help_text=_("Of every other column."))
    name = models.CharField(_("name"), max_length=128, db_index=True)
    names = models.TextField(_("names"), help_text=_("Name words, title, tags and the kind's terms (weighted most)."))
    body = models.TextField(_("description"), blank=True)
    access = models.TextField(
        _("access key"), blank=True, help_text=_("Required scopes, then the permissions its kind requires, sorted.")
    )
    model_visible = models.BooleanField(_("for models"), default=True, help_text=_("False: app-only."))
    safety = models.PositiveSmallIntegerField(
        _("safety"), default=0, help_text=_("2 read-only, 1 not destructive, 0 otherwise: orders equal matches.")
    )

    class Meta:
        verbose_name = _("search entry")
        verbose_name_plural = _("search entries")

    def __str__(self) -> str:
        return f"search entry of {self.name}"


FTS_TABLE = "mcp_tools_searchentry_fts"
# The text search configuration of PostgreSQL's vector and of the queries against it: no
# stemming, no stop words (discovery normalises the words itself, the same for every database).
PG_CONFIG = "simple"
