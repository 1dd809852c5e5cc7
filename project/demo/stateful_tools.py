"""Demo rows of the tools that keep state (the basket) and of the tools that ask the client."""

from __future__ import annotations

from typing import Any

from .baskets import BASKET, PRODUCTS

_BASKET_ID = {"type": "string", "description": "The basket_id create_basket returned"}

BASKET_TOOLS: list[dict[str, Any]] = [
    {
        "name": "create_basket",
        "title": "Create a basket",
        "description": (
            "Create an empty shopping basket and return its basket_id; pass it to add_item, view_basket "
            f"and checkout. Only you can use your basket. {BASKET.retention}"
        ),
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "output_schema": {"type": "object", "properties": {"basket_id": {"type": "string"}}, "required": ["basket_id"]},
        "handler_key": "demo.create_basket",
        "read_only_hint": False,
        "destructive_hint": False,
        "idempotent_hint": False,
        "open_world_hint": False,
    },
    {
        "name": "add_item",
        "title": "Add an item to a basket",
        "description": "Add a quantity of a product to a basket; returns the basket's items and total.",
        "input_schema": {
            "type": "object",
            "properties": {
                "basket_id": _BASKET_ID,
                "sku": {"type": "string", "enum": sorted(PRODUCTS), "description": "The product"},
                "quantity": {"type": "integer", "minimum": 1, "maximum": 99, "default": 1},
            },
            "required": ["basket_id", "sku"],
            "additionalProperties": False,
        },
        "handler_key": "demo.add_item",
        "read_only_hint": False,
        "destructive_hint": False,
        "idempotent_hint": False,
        "open_world_hint": False,
    },
    {
        "name": "view_basket",
        "title": "Show a basket",
        "description": "List the items and the total of a basket.",
        "input_schema": {
            "type": "object",
            "properties": {"basket_id": _BASKET_ID},
            "required": ["basket_id"],
            "additionalProperties": False,
        },
        "handler_key": "demo.view_basket",
        "read_only_hint": True,
        "open_world_hint": False,
    },
    {
        "name": "checkout",
        "title": "Check out",
        "description": (
            "Place the order for a basket and close it (the user is asked to confirm when the client supports "
            "elicitation). The basket_id is no longer valid afterwards."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"basket_id": _BASKET_ID},
            "required": ["basket_id"],
            "additionalProperties": False,
        },
        "handler_key": "demo.checkout",
        "read_only_hint": False,
        "destructive_hint": True,
        "idempotent_hint": False,
        "open_world_hint": False,
    },
]

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}

# Fixture tools of the official conformance suite that ask the client (elicitation, sampling).
ASKING_TOOLS: list[dict[str, Any]] = [
    {
        "name": "test_elicitation",
        "description": "Asks the user for a username and an email address (elicitation).",
        "input_schema": {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"],
        },
        "handler_key": "demo.form",
        "handler_config": {
            "reply": "User response:",
            "schema": {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            },
        },
    },
    {
        "name": "test_elicitation_sep1034_defaults",
        "description": "Asks for a form whose fields all have defaults (SEP-1034).",
        "input_schema": _EMPTY,
        "handler_key": "demo.form",
        "handler_config": {
            "message": "Please review and update the form fields with defaults",
            "reply": "Elicitation completed:",
            "schema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "User name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "User age", "default": 30},
                    "score": {"type": "number", "description": "User score", "default": 95.5},
                    "status": {
                        "type": "string",
                        "description": "User status",
                        "enum": ["active", "inactive", "pending"],
                        "default": "active",
                    },
                    "verified": {"type": "boolean", "description": "Verification status", "default": True},
                },
            },
        },
    },
    {
        "name": "test_elicitation_sep1330_enums",
        "description": "Asks for a form with every enum variant (SEP-1330).",
        "input_schema": _EMPTY,
        "handler_key": "demo.form",
        "handler_config": {
            "message": "Please select options from the enum fields",
            "reply": "Elicitation completed:",
            "schema": {
                "type": "object",
                "properties": {
                    "untitledSingle": {
                        "type": "string",
                        "description": "Select one option",
                        "enum": ["option1", "option2", "option3"],
                    },
                    "titledSingle": {
                        "type": "string",
                        "description": "Select one option with titles",
                        "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"},
                        ],
                    },
                    "legacyEnum": {
                        "type": "string",
                        "description": "Select one option (legacy)",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"],
                    },
                    "untitledMulti": {
                        "type": "array",
                        "description": "Select multiple options",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    },
                    "titledMulti": {
                        "type": "array",
                        "description": "Select multiple options with titles",
                        "minItems": 1,
                        "maxItems": 3,
                        "items": {
                            "anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"},
                            ]
                        },
                    },
                },
                "required": [],
            },
        },
    },
    {
        "name": "test_sampling",
        "description": "Sends a prompt to the client's model (sampling) and returns its answer.",
        "input_schema": {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            "required": ["prompt"],
        },
        "handler_key": "demo.sample",
        "handler_config": {"max_tokens": 100},
    },
]
