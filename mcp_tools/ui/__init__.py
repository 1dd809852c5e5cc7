"""MCP Apps views of tools: the ``ui://`` documents (stored views served as written, templates
shipped in code rendered) and what keeps a view from being served."""

from .render import UiSource, render_document, template_problems

__all__ = ["UiSource", "render_document", "template_problems"]
