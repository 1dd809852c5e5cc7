"""``demo.echo`` for bench/lean_settings.py (the demo's handler, without importing ``project``)."""

from __future__ import annotations

from mcp_tools import ToolContext, handler


@handler("demo.echo", label="Echo")
def echo(ctx: ToolContext) -> str:
    return str(ctx.config.get("prefix", "")) + str(ctx.arguments.get("text", ""))
