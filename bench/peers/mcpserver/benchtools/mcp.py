"""The benchmark catalog as an MCPToolset: one method per tool, its docstring the description.

django-mcp-server names a tool after its method and takes the description from the docstring;
it has no per-tool title, so the titles of the other servers are not sent here.
"""

from __future__ import annotations

from typing import Any

from catalog import ECHO, extra_tools
from mcp_server import MCPToolset


def _method(name: str, description: str) -> Any:
    def tool(self: Any, text: str) -> str:
        return text

    # The tool is named after the function, as a method written in the class body would be.
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = description
    return tool


BenchTools = type(
    "BenchTools",
    (MCPToolset,),
    {spec["name"]: _method(spec["name"], spec["description"]) for spec in [ECHO, *extra_tools()]},
)
