"""Requests for input on the wire (elicitation, sampling): who may get them, their shape per
revision, and what a well-formed answer looks like. No Django; ``mcp_tools.asking`` drives it.

2025-06-18 and 2025-11-25 send them as server-to-client requests on the call's SSE stream;
2026-07-28 returns them in an ``InputRequiredResult`` and reads the answers from the retry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from . import versions as v
from .errors import MISSING_REQUIRED_CLIENT_CAPABILITY, McpError

__all__ = [
    "CAPABILITIES",
    "ELICIT",
    "METHODS",
    "NAMES",
    "answer_problems",
    "client_can",
    "form_fits",
    "form_schema_problems",
    "missing_capability",
    "request_digest",
    "shape_params",
]

ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
METHODS = (ELICIT, SAMPLE)

# What each method is called in messages people read, and the capability it needs.
NAMES = {ELICIT: "a question to the user (elicitation)", SAMPLE: "a question to the client's model (sampling)"}
CAPABILITIES: dict[str, dict[str, Any]] = {ELICIT: {"elicitation": {"form": {}}}, SAMPLE: {"sampling": {}}}

# Elicitation entered the protocol in 2025-06-18; "mode" exists from 2025-11-25 on.
_ELICITATION_VERSIONS = frozenset({v.V2025_06_18, v.V2025_11_25, v.V2026_07_28})
_MODE_VERSIONS = frozenset({v.V2025_11_25, v.V2026_07_28})
_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_ACTIONS = frozenset({"accept", "decline", "cancel"})


def client_can(method: str, capabilities: Mapping[str, Any], version: str) -> bool:
    """L-6, LD-7: only what the client declared; ``elicitation: {}`` means form mode."""
    if method == ELICIT:
        declared = capabilities.get("elicitation")
        return (
            version in _ELICITATION_VERSIONS
            and isinstance(declared, dict)
            and ("form" in declared or "url" not in declared)
        )
    if method == SAMPLE:
        return isinstance(capabilities.get("sampling"), dict)
    return False


def missing_capability(methods: list[str]) -> McpError:
    """LD-7: HTTP 400 + -32021 naming what the request needed and did not declare."""
    required: dict[str, Any] = {}
    for method in methods:
        required.update(CAPABILITIES[method])
    names = " and ".join(sorted(required))
    return McpError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"This tool needs to ask the client for input: declare {names} in clientCapabilities",
        data={"requiredCapabilities": required},
        http_status=400,
    )


def shape_params(method: str, params: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The request's params for ``version``: form elicitations name their mode where it exists."""
    shaped = dict(params)
    if method == ELICIT and version in _MODE_VERSIONS:
        shaped = {"mode": "form", **shaped}
    return shaped


def request_digest(method: str, params: Mapping[str, Any]) -> str:
    """Identifies one question, so an answer is only ever used for the question it answers."""
    return hashlib.sha256(orjson.dumps({"m": method, "p": params}, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def form_schema_problems(schema: Any) -> list[str]:
    """Elicitation forms are flat: an object of string, number, integer, boolean or enum-array fields.

    Multi-select (enum-array) fields exist from 2025-11-25 on: see ``form_fits``.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return ['a form schema is an object schema ("type": "object")']
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return ["a form schema needs its fields in properties"]
    problems = []
    for name, field in properties.items():
        kind = field.get("type") if isinstance(field, dict) else None
        if kind in _PRIMITIVES:
            continue
        items = field.get("items") if isinstance(field, dict) else None
        if kind == "array" and isinstance(items, dict) and ("enum" in items or "anyOf" in items):
            continue
        problems.append(f"field {name!r} must be a string, number, integer, boolean or multi-select enum")
    return problems


def form_fits(schema: dict[str, Any], version: str) -> bool:
    """Whether ``version`` can carry the form: 2025-06-18 has no multi-select fields."""
    if version != v.V2025_06_18:
        return True
    return all(isinstance(f, dict) and f.get("type") != "array" for f in schema["properties"].values())


def answer_problems(method: str, answer: Any) -> list[str]:
    """Whether an answer has the shape of the method's result (ElicitResult, CreateMessageResult)."""
    if not isinstance(answer, dict):
        return ["the answer is not an object"]
    if method == ELICIT:
        problems = []
        if answer.get("action") not in _ACTIONS:
            problems.append('"action" must be "accept", "decline" or "cancel"')
        if "content" in answer and not isinstance(answer["content"], dict):
            problems.append('"content" must be an object')
        return problems
    if method == SAMPLE:
        problems = [f'"{name}" must be a string' for name in ("role", "model") if not isinstance(answer.get(name), str)]
        if not isinstance(answer.get("content"), dict | list):
            problems.append('"content" must be a content block or a list of them')
        return problems
    return [f"unknown method {method!r}"]
