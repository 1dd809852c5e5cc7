"""The benchmark catalog on the official MCP Python SDK: MCPServer, stateless JSON responses.

Run under uvicorn: ``uvicorn server:app`` (cwd bench/peers/sdk, bench/peers on PYTHONPATH).
"""

from __future__ import annotations

from typing import Annotated

from catalog import ECHO, extra_tools
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field
from starlette.responses import PlainTextResponse
from starlette.routing import Route

mcp = MCPServer(name="bench", version="1.0.0", log_level="WARNING")


def echo(text: Annotated[str, Field(description="Text to repeat")]) -> str:
    return text


for spec in [ECHO, *extra_tools()]:
    mcp.add_tool(
        echo,
        name=spec["name"],
        title=spec["title"],
        description=spec["description"],
        annotations=ToolAnnotations(readOnlyHint=True),
        structured_output=False,
    )

app = mcp.streamable_http_app(json_response=True, stateless_http=True)
app.router.routes.append(Route("/", lambda request: PlainTextResponse("ok")))
