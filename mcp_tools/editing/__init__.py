"""The tool editor's domain, shared by the admin and the management commands.

``transfer`` (export and validated, all-or-nothing import), ``history`` (compare and restore
revisions) and ``preview`` (the exact ``tools/list`` entry of a tool per protocol revision).
Every change made here goes through ``models.revisions.revision`` and ``CatalogVersion.batch``.
"""
