"""The tool editor's domain, shared by the admin and the management commands.

``transfer`` (export and validated, all-or-nothing import), ``history`` (compare and restore
revisions), ``preview`` (the exact ``tools/list`` entry of a tool per protocol revision) and
``problems`` (what the database system checks say now, for the tool list and the log).
Every change made here goes through ``models.revisions.revision`` and ``CatalogVersion.batch``.
"""

__all__: list[str] = []
