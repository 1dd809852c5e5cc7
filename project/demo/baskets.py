"""The basket tools of the spec's "Stateful Tools" example, on ctx.handles.

``create_basket`` hands out a handle (``bsk_...``); ``add_item``, ``view_basket`` and
``checkout`` take it back as an argument. Baskets belong to the principal that created them
and expire after 24 hours without use. ``checkout`` asks the user to confirm when the client
can answer an elicitation; its side effect (closing the basket) comes after the question, so
on 2026-07-28, where the handler runs again once the answer is in, the order is placed once.
"""

from __future__ import annotations

import secrets
from typing import Any

from mcp_tools import ToolContext, ToolError, ToolResult, handle_type, handler, text

BASKET = handle_type(
    "bsk",
    label="basket",
    ttl_seconds=24 * 3600,
    recover="Call create_basket to start a new basket.",
)

# Demo products: SKU -> (name, price in cents).
PRODUCTS: dict[str, tuple[str, int]] = {
    "apple": ("Apple", 45),
    "bread": ("Sourdough bread", 420),
    "cheese": ("Comte, 200 g", 690),
    "coffee": ("Coffee beans, 250 g", 899),
    "milk": ("Milk, 1 l", 129),
    "tea": ("Green tea, 20 bags", 350),
}


def _money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d} EUR"


def _summary(basket_id: str, items: dict[str, int]) -> dict[str, Any]:
    lines = []
    total = 0
    for sku, quantity in sorted(items.items()):
        name, price = PRODUCTS[sku]
        lines.append({"sku": sku, "name": name, "quantity": quantity, "line_total": _money(price * quantity)})
        total += price * quantity
    return {
        "basket_id": basket_id,
        "items": lines,
        "item_count": sum(items.values()),
        "total": _money(total),
    }


@handler("demo.create_basket", label="Create a basket (handle)")
def create_basket(ctx: ToolContext) -> ToolResult:
    """Creates an empty basket owned by the caller and returns its id."""
    basket = ctx.handles.create(BASKET, {"items": {}})
    return ToolResult(
        content=[text(f"Created basket {basket.id}. {BASKET.retention}")],
        structured_content={"basket_id": basket.id},
    )


@handler("demo.add_item", label="Add an item to a basket")
def add_item(ctx: ToolContext) -> dict[str, Any]:
    """Adds a quantity of a product; concurrent calls on one basket all count."""
    sku = ctx.arguments["sku"]
    if sku not in PRODUCTS:
        raise ToolError(f"Unknown product {sku!r}. Products: {', '.join(sorted(PRODUCTS))}.")
    quantity = int(ctx.arguments.get("quantity", 1))

    def add(state: dict[str, Any]) -> None:
        items = state.setdefault("items", {})
        items[sku] = items.get(sku, 0) + quantity

    basket = ctx.handles.update(BASKET, ctx.arguments["basket_id"], add)
    return _summary(basket.id, basket.state["items"])


@handler("demo.view_basket", label="Show a basket")
def view_basket(ctx: ToolContext) -> dict[str, Any]:
    """Lists the items and the total of a basket."""
    basket = ctx.handles.get(BASKET, ctx.arguments["basket_id"])
    return {**_summary(basket.id, basket.state["items"]), "expires_at": basket.expires_at.isoformat()}


CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "title": "Place the order", "default": True}},
    "required": ["confirm"],
}


@handler("demo.checkout", label="Check a basket out")
def checkout(ctx: ToolContext) -> ToolResult:
    """Places the order for a basket (after the user confirms, when the client can ask) and closes it."""
    basket_id = ctx.arguments["basket_id"]
    basket = ctx.handles.get(BASKET, basket_id)
    summary = _summary(basket.id, basket.state["items"])
    if not summary["item_count"]:
        raise ToolError(f"Basket {basket.id!r} is empty; add items with add_item first.")
    if ctx.can_elicit:
        answer = ctx.elicit(
            f"Place the order for {summary['item_count']} item(s), total {summary['total']}?", CONFIRM_SCHEMA
        )
        if not (answer.accepted and (answer.content or {}).get("confirm")):
            return ToolResult(
                content=[text(f"Checkout cancelled by the user; basket {basket.id} is kept.")],
                structured_content={"basket_id": basket.id, "ordered": False},
            )
    # The side effect comes after every question: close() is the order.
    closed = ctx.handles.close(BASKET, basket_id)
    order = {**_summary(closed.id, closed.state["items"]), "ordered": True, "order_id": f"ord_{secrets.token_hex(8)}"}
    return ToolResult(
        content=[text(f"Order {order['order_id']} placed: {order['item_count']} item(s), total {order['total']}.")],
        structured_content=order,
    )
