"""Run a Celery task of the site by name as a tool: the ``celery.task`` tool kind.

Add ``"mcp_tools.contrib.celery"`` to ``INSTALLED_APPS`` (``pip install "django-mcp-tools[celery]"``);
a Tool row bound to ``celery.task`` names the task in its config. The core never imports this.
"""

__all__: list[str] = []
