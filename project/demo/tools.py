"""The demo catalog: rows the `load_demo_tools` command writes (idempotently)."""

from __future__ import annotations

from typing import Any

EMPTY: dict[str, Any] = {"type": "object", "properties": {}}

DEMO_TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "title": "Echo",
        "description": "Repeat the given text back.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "Text to repeat"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        "handler_key": "demo.echo",
        "read_only_hint": True,
        "idempotent_hint": True,
        "open_world_hint": False,
    },
    {
        "name": "add",
        "title": "Add",
        "description": "Add two numbers and return their sum as structured content.",
        "input_schema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "output_schema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
        "handler_key": "demo.add",
        "read_only_hint": True,
    },
    {
        "name": "get_weather",
        "title": "Weather",
        "description": "Current conditions for a city (demo data: Paris, Tokyo, Lima).",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string", "minLength": 1, "x-mcp-header": "City"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "output_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "conditions": {"type": "string"},
                "temperature": {"type": "number", "description": "Celsius"},
            },
            "required": ["city", "conditions", "temperature"],
        },
        "handler_key": "demo.weather",
        "read_only_hint": True,
        "open_world_hint": False,
    },
    {
        "name": "color_swatch",
        "title": "Colour swatch",
        "description": "Return a PNG image of a colour.",
        "input_schema": {
            "type": "object",
            "properties": {
                "color": {"type": "string", "enum": ["red", "green", "blue"]},
                "size": {"type": "integer", "minimum": 1, "maximum": 64},
            },
            "additionalProperties": False,
        },
        "handler_key": "demo.swatch",
        "read_only_hint": True,
        "icons": [{"src": "https://example.com/swatch.png", "mimeType": "image/png", "sizes": ["48x48"]}],
    },
    {
        "name": "build_report",
        "title": "Build a report",
        "description": "A slow tool: builds a report in steps and reports progress as it goes.",
        "input_schema": {
            "type": "object",
            "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 50}},
            "additionalProperties": False,
        },
        "handler_key": "demo.report",
        "handler_config": {"step_seconds": 0.3},
        "task_support": "optional",
        "read_only_hint": True,
    },
    {
        "name": "export_archive",
        "title": "Export an archive",
        "description": "A long job that only runs as a task: poll it with tasks/get, fetch it with tasks/result.",
        "input_schema": {
            "type": "object",
            "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 50}},
            "additionalProperties": False,
        },
        "handler_key": "demo.report",
        "handler_config": {"step_seconds": 0.5},
        "task_support": "required",
        "read_only_hint": True,
    },
    {
        "name": "noop",
        "title": "No-op",
        "description": "Does nothing and returns at once (task support optional; used by the task benchmark).",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "handler_key": "demo.noop",
        "task_support": "optional",
        "read_only_hint": True,
        "idempotent_hint": True,
        "open_world_hint": False,
    },
    # Fixture tools of the official conformance suite (@modelcontextprotocol/conformance).
    {
        "name": "test_simple_text",
        "description": "Returns a simple text response.",
        "input_schema": EMPTY,
        "handler_key": "demo.static",
        "handler_config": {"content": [{"type": "text", "text": "This is a simple text response for testing."}]},
    },
    {
        "name": "test_image_content",
        "description": "Returns image content.",
        "input_schema": EMPTY,
        "handler_key": "demo.static",
        "handler_config": {"content": [{"type": "demo_png"}]},
    },
    {
        "name": "test_audio_content",
        "description": "Returns audio content.",
        "input_schema": EMPTY,
        "handler_key": "demo.static",
        "handler_config": {"content": [{"type": "demo_wav"}]},
    },
    {
        "name": "test_embedded_resource",
        "description": "Returns an embedded resource.",
        "input_schema": EMPTY,
        "handler_key": "demo.static",
        "handler_config": {
            "content": [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        },
    },
    {
        "name": "test_multiple_content_types",
        "description": "Returns text, image and resource content together.",
        "input_schema": EMPTY,
        "handler_key": "demo.static",
        "handler_config": {
            "content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "demo_png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": '{"test":"data","value":123}',
                    },
                },
            ]
        },
    },
    {
        "name": "test_error_handling",
        "description": "Always fails with a tool error.",
        "input_schema": EMPTY,
        "handler_key": "demo.fail",
        "handler_config": {"message": "This tool intentionally returns an error for testing"},
    },
    {
        "name": "test_tool_with_progress",
        "description": "Reports progress three times.",
        "input_schema": EMPTY,
        "handler_key": "demo.progress",
        "handler_config": {"steps": 3, "delay": 0.05},
    },
    {
        "name": "test_tool_with_logging",
        "description": "Sends log messages while running.",
        "input_schema": EMPTY,
        "handler_key": "demo.logging",
    },
    {
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features",
        "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
        "handler_key": "demo.echo_arguments",
    },
]


# OAuth scopes of the demo (see README "OAuth"): (name, description, advertised, implies).
DEMO_SCOPES: list[tuple[str, str, bool, list[str]]] = [
    ("notes:read", "Read notes and use the read-only demo tools", True, []),
    ("notes:write", "Create and change notes (includes notes:read)", True, ["notes:read"]),
    ("admin:tools", "Administrative tools", False, []),
]

# Which scopes each demo tool requires; tools not listed need none.
# Built-in tool kinds, bound with no code: a Celery task of the site (project/demo/tasks.py)
# and a DRF view of the site (project/library/api.py), called as the caller's user.
DEMO_TOOLS += [
    {
        "name": "word_stats",
        "title": "Word statistics (Celery task)",
        "description": "Count the words of a text and name the most frequent, in the site's Celery worker.",
        "input_schema": {
            "type": "object",
            "properties": {
                "text": {"type": "string", "maxLength": 100000},
                "top": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
            },
            "required": ["text"],
            "additionalProperties": False,
        },
        "handler_key": "celery.task",
        "handler_config": {"task": "demo.word_stats", "timeout": 30},
        # Always a task: a plain call would wait for a worker, and the servers of the e2e tests
        # (the fuzzer's included) run none.
        "task_support": "required",
        "read_only_hint": True,
    },
    {
        "name": "library_stats",
        "title": "Library statistics (REST API)",
        "description": "How many books of each genre the demo library has (GET /api/stats/, signed-in users).",
        "handler_key": "drf.view",
        "handler_config": {"route": "library-stats", "method": "GET"},
        "read_only_hint": True,
    },
]

DEMO_TOOL_SCOPES: dict[str, list[str]] = {
    "get_weather": ["notes:read"],
    "color_swatch": ["notes:read"],
    "build_report": ["notes:write"],
    "test_error_handling": ["admin:tools"],
    # The built-in kinds reach into the site (its Celery tasks, its REST API): under OAuth an
    # enabled one with no scope is callable by every token (check mcp_tools.W005).
    "word_stats": ["notes:read"],
    "library_stats": ["notes:read"],
}

# The basket tools (handles) and the conformance tools that ask the client: their own module.
from .stateful_tools import ASKING_TOOLS, BASKET_TOOLS  # noqa: E402

DEMO_TOOLS += BASKET_TOOLS + ASKING_TOOLS
