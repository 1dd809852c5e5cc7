"""The tool change form's POST data, as the admin's page sends it for a tool of the demo's
``echo`` kind; a test names only the fields its case is about."""

from __future__ import annotations

__all__ = ["tool_form"]

_TOOL_FORM = {
    "name": "",
    "title": "",
    "description": "",
    "enabled": "on",
    "handler_key": "demo.echo",
    "handler_config": "{}",
    "input_schema": '{"type": "object", "properties": {"text": {"type": "string"}}}',
    "output_schema": "",
    "annotation_title": "",
    "read_only_hint": "unknown",
    "destructive_hint": "unknown",
    "idempotent_hint": "unknown",
    "open_world_hint": "unknown",
    "icons": "",
    "task_support": "forbidden",
    "rate_limit": "",
    "sensitive_arguments": "",
}


def tool_form(**fields: str) -> dict[str, str]:
    """The whole form, with ``fields`` set over the defaults above."""
    return {**_TOOL_FORM, **fields}
