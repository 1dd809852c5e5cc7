"""The ``drf.view`` tool kind (mcp_tools.contrib.drf.routes) through the view.

Tools bound to the demo's REST API (project/library/api.py) run as the calling user: the
viewset's own permission classes allow one user and refuse another.
"""

from __future__ import annotations

import datetime
import io
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from mcp_tools.admin.forms import ToolForm
from mcp_tools.models import Tool
from mcp_tools.registry import registry
from project.library.models import Author, Book
from tests.drfapp.testing import Caller, make_user, perms
from tests.support.mcp_client import Mcp

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("synced")]


def _tool(name: str, route: str, method: str) -> Tool:
    tool = Tool(name=name, handler_key="drf.view", handler_config={"route": route, "method": method})
    tool.full_clean()
    tool.save()
    return tool


@pytest.fixture
def book(db: None) -> Book:
    owner = make_user("owner")
    author = Author.objects.create(name="Ann Author", born=datetime.date(1950, 1, 1))
    return Book.objects.create(
        title="Harbor Lights", isbn="9780000000001", author=author, genre="poetry", price=Decimal("12.50"),
        pages=120, owner=owner,
    )  # fmt: skip


def test_the_kind_offers_the_sites_drf_routes() -> None:
    kind = registry.get("drf.view")
    assert kind is not None
    assert kind.label
    assert kind.description
    schema = kind.get_config_schema()
    assert schema is not None
    assert {"book-list", "book-detail", "library-stats"} <= set(schema["properties"]["route"]["enum"])
    # Non-DRF routes (the admin, the MCP endpoint) are not offered.
    assert not [r for r in schema["properties"]["route"]["enum"] if r.startswith(("admin:", "mcp_tools:"))]
    assert "book-detail" in str(ToolForm().fields["handler_config"].help_text)


def test_config_is_validated_on_save_and_the_input_schema_derived() -> None:
    tool = _tool("api_patch_book", "book-detail", "PATCH")
    assert tool.input_schema["required"] == ["pk"]
    with pytest.raises(ValidationError) as caught:
        _tool("no_route", "nowhere", "GET")
    assert "is not one of" in " ".join(caught.value.message_dict["handler_config"])
    with pytest.raises(ValidationError) as caught:
        _tool("refused_method", "book-detail", "DELETE")  # the viewset answers GET and PATCH only
    assert "does not answer DELETE" in " ".join(caught.value.message_dict["handler_config"])


def test_the_view_runs_as_the_caller_and_its_permissions_decide(client: Any, book: Book) -> None:
    make_user("editor", *perms("book", app="library"))
    make_user("guest")
    _tool("api_patch_book", "book-detail", "PATCH")
    _tool("api_get_book", "book-detail", "GET")
    _tool("api_books", "book-list", "GET")
    _tool("api_stats", "library-stats", "GET")

    editor = Caller(client, "editor")
    changed = editor.ok("api_patch_book", {"pk": book.pk, "price": "9.99", "title": "Harbor Lights II"})
    assert changed["price"] == "9.99"
    assert changed["title"] == "Harbor Lights II"
    book.refresh_from_db()
    assert book.price == Decimal("9.99")
    assert editor.ok("api_get_book", {"pk": book.pk})["author"] == "Ann Author"
    page = editor.ok("api_books", {"page": 1})
    assert page["count"] == 1
    assert page["results"][0]["id"] == book.pk
    assert editor.ok("api_stats") == {"genres": {"poetry": 1}, "books": 1}

    guest = Caller(client, "guest")  # signed in, without the change_book permission
    message = guest.refused("api_patch_book", {"pk": book.pk, "price": "0.01"})
    assert message.startswith("The caller is not allowed to do this (403)")
    assert "permission" in message
    book.refresh_from_db()
    assert book.price == Decimal("9.99")
    assert guest.ok("api_stats")["books"] == 1  # any signed-in user may read the stats


def test_view_errors_are_error_results(client: Any, book: Book) -> None:
    make_user("editor", *perms("book", app="library"))
    _tool("api_patch_book", "book-detail", "PATCH")
    _tool("api_get_book", "book-detail", "GET")
    _tool("api_books", "book-list", "GET")
    editor = Caller(client, "editor")
    # Other arguments of a GET are query parameters: page 2 of one book does not exist.
    assert "Invalid page" in editor.refused("api_books", {"page": 2})
    assert editor.refused("api_get_book", {"pk": 999999}).startswith("The view refused the call (404)")
    invalid = editor.refused("api_patch_book", {"pk": book.pk, "price": "-1"})
    assert invalid.startswith("The view refused the call (400)")
    assert "price" in invalid
    assert "do not fit route 'book-detail'" in editor.refused("api_get_book", {"pk": "not/a/pk"})
    # A missing URL argument is refused by the derived input schema.
    assert "'pk' is a required property" in editor.refused("api_get_book", {})


def test_on_an_open_server_the_view_sees_no_user_and_refuses(client: Any, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.AllowAnyBackend"}
    call_command("load_demo_tools", stdout=io.StringIO())  # the demo's library_stats (drf.view)
    mcp = Mcp(client)
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "library_stats", "arguments": {}})
    assert result.get("isError") is True
    assert result["content"][0]["text"].startswith("The caller is not allowed to do this (403)")


def test_syncing_model_toolsets_leaves_drf_view_rows_alone() -> None:
    """drf.view rows share the "drf." prefix with the model toolsets' kinds but belong to no
    toolset: mcp_sync_toolsets (even --prune) neither disables nor deletes them, and the system
    check does not report them."""
    from mcp_tools.contrib.drf.sync import stale_rows

    _tool("api_list_books", "book-list", "GET")
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    call_command("mcp_sync_toolsets", "--prune", stdout=io.StringIO())
    assert Tool.objects.get(name="api_list_books").enabled is True
    assert not [problem for problem in stale_rows() if "api_list_books" in problem]
