"""Demo rows of the tools that keep state (the basket)."""

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
