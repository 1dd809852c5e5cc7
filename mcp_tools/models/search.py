"""The search index of progressive discovery: one row per enabled tool, the text it is found by.

``mcp_tools.discovery`` writes the rows (from the compiled catalog, so a kind's own search terms
and required permissions are those the catalog computed) and searches them. The database keeps
what makes them searchable fast, maintained by the database itself on every write of a row:
on PostgreSQL a stored ``tsvector`` column (``vector``, weighted: names A, description B) with a
GIN index; on SQLite an FTS5 table (``mcp_tools_searchentry_fts``, Porter stemming) kept in step
by triggers. Both are created by migration ``0018``; another database (or a SQLite built without
FTS5) searches the two text columns with ``LIKE``. A later migration that remakes this table on
SQLite must create the triggers again.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .tools import Tool


class SearchEntry(models.Model):
    """What discovery finds one enabled tool by, as of one version of the tool."""

    tool = models.OneToOneField(
        Tool, verbose_name=_("tool"), primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    version = models.PositiveIntegerField(_("tool version"))
    digest = models.CharField(_("digest"), max_length=32, help_text=_("Of the text and permissions below."))
    names = models.TextField(_("names"), help_text=_("Name words, title, tags and the kind's terms (weighted most)."))
    body = models.TextField(_("description"), blank=True)
    permissions = models.TextField(
        _("required permissions"), blank=True, help_text=_("The Django permissions the tool's kind requires, sorted.")
    )

    class Meta:
        verbose_name = _("search entry")
        verbose_name_plural = _("search entries")

    def __str__(self) -> str:
        return f"search entry of tool {self.pk}"


FTS_TABLE = "mcp_tools_searchentry_fts"
# The text search configuration of PostgreSQL's vector (and of the queries against it).
PG_CONFIG = "english"
