"""The benchmark catalog every peer serves: an ``echo`` tool plus 100 small tools.

The same names, titles, descriptions and schemas as ours (bench/seed.py with ``--only-echo``):
each peer app imports this file (bench/peers is on its PYTHONPATH) and registers the tools its
own way. Plain Python, no dependency: it runs in every peer's venv.
"""

from __future__ import annotations

from typing import Any

EXTRA_TOOLS = 100

ECHO = {
    "name": "echo",
    "title": "Echo",
    "description": "Repeat the given text back.",
}
TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "Text to repeat"}},
    "required": ["text"],
    "additionalProperties": False,
}


def extra_tools() -> list[dict[str, str]]:
    """Name, title and description of the 100 small tools (each repeats its text, like echo)."""
    return [
        {
            "name": f"bench_tool_{i:05d}",
            "title": f"Bench tool {i}",
            "description": f"Benchmark tool number {i}: repeats the given text back, like echo.",
        }
        for i in range(EXTRA_TOOLS)
    ]


def all_tools() -> list[dict[str, str]]:
    return [ECHO, *extra_tools()]
