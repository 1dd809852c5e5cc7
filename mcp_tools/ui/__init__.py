"""MCP Apps views of tools: the sandboxed template engine and the rendered ``ui://`` documents."""

from .render import UiSource, render_document, template_problems

__all__ = ["UiSource", "render_document", "template_problems"]
