"""Tool kinds of the demo site: registered here, bound to tools by rows in the database."""

from __future__ import annotations

import time
from typing import Any

from mcp_tools import ToolContext, ToolError, ToolResult, audio, handler, image, text

from . import asking, baskets  # noqa: F401  (the basket tools and the tools that ask register here)
from .media import png, wav


@handler(
    "demo.echo",
    label="Echo",
    inline=True,
    config_schema={"type": "object", "properties": {"prefix": {"type": "string"}}, "additionalProperties": False},
)
def echo(ctx: ToolContext) -> str:
    """Returns the text argument, after an optional configured prefix."""
    return str(ctx.config.get("prefix", "")) + str(ctx.arguments.get("text", ""))


@handler("demo.add", label="Add two numbers", inline=True)
def add(ctx: ToolContext) -> dict[str, Any]:
    """Adds a and b; the result is structured content."""
    return {"sum": ctx.arguments["a"] + ctx.arguments["b"]}


_FORECASTS = {
    "paris": ("cloudy", 14.5),
    "tokyo": ("sunny", 21.0),
    "lima": ("fog", 17.2),
}


@handler("demo.weather", label="Weather (structured)")
def weather(ctx: ToolContext) -> dict[str, Any]:
    """Looks up a canned forecast; unknown cities are a tool error the model can correct."""
    city = ctx.arguments["city"]
    found = _FORECASTS.get(city.lower())
    if found is None:
        raise ToolError(f"No forecast for {city!r}. Known cities: {', '.join(sorted(_FORECASTS))}.")
    conditions, temperature = found
    return {"city": city, "conditions": conditions, "temperature": temperature}


_COLORS = {"red": (220, 40, 40), "green": (40, 180, 80), "blue": (40, 90, 220)}


@handler("demo.swatch", label="Colour swatch (image)")
def swatch(ctx: ToolContext) -> list[dict[str, Any]]:
    """Returns a PNG of one colour."""
    color = ctx.arguments.get("color", "red")
    size = int(ctx.arguments.get("size", 16))
    return [text(f"A {size}x{size} {color} swatch"), image(png(size, size, _COLORS[color]), "image/png")]


@handler(
    "demo.report",
    label="Slow report with progress",
    config_schema={
        "type": "object",
        "properties": {"step_seconds": {"type": "number", "minimum": 0, "maximum": 10}},
    },
)
def report(ctx: ToolContext) -> ToolResult:
    """Builds a report over several steps, reporting progress and honouring cancellation."""
    steps = int(ctx.arguments.get("steps", 5))
    delay = float(ctx.config.get("step_seconds", 0.2))
    for step in range(1, steps + 1):
        ctx.check_cancelled()
        time.sleep(delay)
        ctx.report_progress(step, steps, f"Step {step} of {steps}")
    return ToolResult(content=[text(f"Report ready after {steps} steps.")], structured_content={"steps": steps})


@handler(
    "demo.static",
    label="Static content from config",
    config_schema={
        "type": "object",
        "required": ["content"],
        "properties": {"content": {"type": "array", "items": {"type": "object", "required": ["type"]}}},
    },
)
def static(ctx: ToolContext) -> list[dict[str, Any]]:
    """Returns the content blocks stored in the tool's config (text, image, audio, resources)."""
    blocks = ctx.config["content"]
    out = []
    for block in blocks:
        kind = block["type"]
        if kind == "demo_png":
            out.append(image(png(), "image/png"))
        elif kind == "demo_wav":
            out.append(audio(wav(), "audio/wav"))
        else:
            out.append(dict(block))
    return out


@handler(
    "demo.fail",
    label="Always fails (tool error)",
    config_schema={"type": "object", "properties": {"message": {"type": "string"}}},
)
def fail(ctx: ToolContext) -> None:
    """Raises a ToolError with the configured message."""
    raise ToolError(ctx.config.get("message", "This tool always fails."))


@handler("demo.crash", label="Raises an unexpected exception")
def crash(ctx: ToolContext) -> None:
    """Raises an exception whose details must never reach the client."""
    raise RuntimeError("secret internal detail: db password is hunter2")


@handler(
    "demo.progress",
    label="Progress notifications",
    config_schema={"type": "object", "properties": {"steps": {"type": "integer"}, "delay": {"type": "number"}}},
)
def progress(ctx: ToolContext) -> str:
    """Reports progress 0..100 in configured steps."""
    steps = int(ctx.config.get("steps", 3))
    delay = float(ctx.config.get("delay", 0.05))
    for i in range(steps):
        ctx.report_progress(round(100 * i / max(steps - 1, 1)), 100, f"Progress {i + 1}/{steps}")
        time.sleep(delay)
    return f"Completed {steps} progress steps."


@handler("demo.logging", label="Log notifications")
def logging_tool(ctx: ToolContext) -> str:
    """Sends three log messages while it runs."""
    for message in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        ctx.log("info", message, logger="demo")
        time.sleep(0.05)
    return "Logged three messages."


@handler("demo.echo_arguments", label="Echo all arguments")
def echo_arguments(ctx: ToolContext) -> dict[str, Any]:
    """Returns the arguments it received as structured content."""
    return dict(ctx.arguments)


@handler("demo.noop", label="No-op")
def noop(ctx: ToolContext) -> str:
    """Returns "ok" at once."""
    return "ok"
