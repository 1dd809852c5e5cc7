"""The benchmark catalog on django-mcpz, as its README sets a server up: MCPServer + @server.tool."""

from __future__ import annotations

from typing import Annotated

import msgspec
from catalog import ECHO, extra_tools
from django.http import HttpRequest
from django_mcpz.server import MCPServer, public

server = MCPServer(name="bench", version="1.0.0", auth=public)


class TextParams(msgspec.Struct):
    text: Annotated[str, msgspec.Meta(description="Text to repeat")]


def _echo(request: HttpRequest, params: TextParams) -> str:
    return params.text


for spec in [ECHO, *extra_tools()]:
    server.tool(
        name=spec["name"],
        title=spec["title"],
        description=spec["description"],
        read_only=True,
    )(_echo)
