"""The site's MCP code: one tool kind and one model toolset (autodiscovered, like admin.py)."""

from mcp_tools import ToolContext, ToolError, handler
from mcp_tools.contrib.drf import ModelToolset, register

from .models import Note


@handler("notes.count", label="Count notes", description="How many notes mention a word.")
def count_notes(ctx: ToolContext) -> dict:
    word = ctx.arguments["word"].strip()
    if not word:
        raise ToolError("Give a word to look for")  # the client sees an isError result
    return {"word": word, "count": Note.objects.filter(title__icontains=word).count()}


@register
class NoteTools(ModelToolset):
    model = Note
    fields = ["id", "title", "body", "created"]
    operations = ["list", "get"]
    filter_fields = {"title": ["icontains"]}
    ordering_fields = ["created"]
    ordering = ["-created"]
    required_scopes = ["notes:read"]
