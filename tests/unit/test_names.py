"""Names that say what they are, and the old names kept working."""

from __future__ import annotations

from mcp_tools import registry
from mcp_tools.transport import front


def test_a_tool_kind_is_named_so() -> None:
    assert registry.ToolKind.__name__ == "ToolKind"


def test_the_asgi_front_exchange_is_not_the_services_exchange() -> None:
    assert hasattr(front, "_AsgiExchange")
    assert not hasattr(front, "_Exchange")


def test_the_asgi_types_do_not_take_the_names_of_the_model_and_the_message() -> None:
    assert hasattr(front, "AsgiScope")
    assert hasattr(front, "AsgiMessage")
    assert not hasattr(front, "Scope")
    assert not hasattr(front, "Message")
