"""Tools that ask the client: a form (elicitation) and a question to its model (sampling).

The conformance suite's ``test_elicitation*`` and ``test_sampling`` tools are rows bound to
these kinds; the form each row shows lives in its handler config.
"""

from __future__ import annotations

import json

from mcp_tools import ToolContext, handler


@handler(
    "demo.form",
    label="Ask the user to fill in a form (elicitation)",
    config_schema={
        "type": "object",
        "required": ["schema"],
        "properties": {
            "schema": {"type": "object"},
            "message": {"type": "string"},
            "reply": {"type": "string"},
        },
    },
)
def form(ctx: ToolContext) -> str:
    """Shows the configured form (message from the `message` argument or the config) and reports the answer."""
    message = str(ctx.arguments.get("message") or ctx.config.get("message") or "Please fill in this form.")
    answer = ctx.elicit(message, ctx.config["schema"])
    content = json.dumps(answer.content or {}, sort_keys=True)
    return f"{ctx.config.get('reply', 'User response:')} action={answer.action}, content={content}"


@handler(
    "demo.sample",
    label="Ask the client's model (sampling)",
    config_schema={"type": "object", "properties": {"max_tokens": {"type": "integer", "minimum": 1}}},
)
def sample(ctx: ToolContext) -> str:
    """Sends the `prompt` argument to the client's model and returns its answer."""
    answer = ctx.sample([str(ctx.arguments["prompt"])], max_tokens=int(ctx.config.get("max_tokens", 100)))
    return f"LLM response: {answer.text}"
