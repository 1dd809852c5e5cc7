"""Progressive discovery without a database (issue 36): how a request and a tool become words,
which words must match, how candidates are ranked, and what a search result says of a tool."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.catalog import Catalog, compile_tool
from mcp_tools.discovery import documents
from mcp_tools.discovery import searching as search_module
from mcp_tools.discovery.tools import hit, signature, summary


def _tool(pk: int, name: str, description: str = "", **extra: Any) -> Any:
    row: dict[str, Any] = {
        "pk": pk,
        "version": 1,
        "name": name,
        "title": extra.pop("title", ""),
        "description": description,
        "input_schema": extra.pop("input_schema", {"type": "object"}),
        "output_schema": None,
        "annotation_title": "",
        "read_only_hint": extra.pop("read_only_hint", None),
        "destructive_hint": extra.pop("destructive_hint", None),
        "idempotent_hint": None,
        "open_world_hint": None,
        "icons": [],
        "task_support": "forbidden",
        "handler_key": "demo.echo",
        "handler_config": {},
        **extra,
    }
    return compile_tool(row)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("invoices", "invoice"),
        ("categories", "category"),
        ("addresses", "address"),
        ("boxes", "box"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("class", "class"),
        ("bus", "bus"),
        ("books", "book"),
        ("booking", "booking"),  # no stemming beyond plurals: "booking" is not "book"
    ],
)
def test_singular(word: str, expected: str) -> None:
    assert documents.singular(word) == expected


def test_terms_split_names_and_normalise() -> None:
    assert documents.terms("list_book getInvoice admin.tools.list") == [
        "list", "book", "get", "invoice", "admin", "tool", "list",
    ]  # fmt: skip
    assert documents.terms("Déjà vu, HTTP-Requests!") == ["déjà", "vu", "http", "request"]


def test_parse_drops_stop_words_and_keeps_identifiers_as_names() -> None:
    query = search_module.parse("Please show me all the unpaid invoices of ACME in list_invoice")
    assert query.words == ("show", "unpaid", "invoice", "acme", "list")
    assert query.names == ("list_invoice",)  # a word of a sentence is no tool's name
    assert search_module.parse("add").names == ("add",)  # the whole request may be one
    assert search_module.parse("add a book").names == ()
    assert search_module.parse("the of and").empty


def test_parse_is_bounded() -> None:
    query = search_module.parse(" ".join(f"word{i} tool_{i}" for i in range(400)))
    assert len(query.words) == search_module.MAX_WORDS
    assert len(query.names) == search_module.MAX_NAMES


def test_a_document_holds_each_label_word_once() -> None:
    tool = _tool(1, "list_book", "List the books you may see.", title="List books", tags=["library", "Books"])
    doc = documents.build(tool)
    assert doc.names_words == ("list", "book", "library")
    assert doc.body_words == ("list", "the", "book", "you", "may", "see")
    assert doc.access == "|"
    assert documents.build(tool).digest == doc.digest
    renamed = _tool(1, "list_books_2", "List the books you may see.", title="List books", tags=["library"])
    assert documents.build(renamed).digest != doc.digest


def test_access_keys_say_what_a_grant_needs() -> None:
    key = documents.access_key(frozenset({"b", "a"}), frozenset({"app.view_x"}))
    assert key == "a b|app.view_x"
    assert documents.split_access(key) == (frozenset({"a", "b"}), frozenset({"app.view_x"}))


def test_common_words_rank_but_rarer_ones_must_match() -> None:
    """In a catalog where "list" is in most tools, a request for "list invoices" requires
    "invoice" to match; a request of common words only matches any of them."""
    tools = [_tool(i, f"list_thing_{i}", "List things.") for i in range(120)]
    tools.append(_tool(500, "list_invoice", "List invoices."))
    catalog = Catalog(1, tools)
    query = search_module._selective(catalog, search_module.parse("list invoices"))
    assert query.selective == ("invoice",)
    assert search_module._selective(catalog, search_module.parse("list things")).selective == ()
    assert search_module._selective(catalog, search_module.parse("invoices")).selective == ()


def test_rank_puts_exact_names_first_then_score_then_the_safer_tool() -> None:
    tools = [
        _tool(1, "delete_shipment", "Delete one shipment.", destructive_hint=True),
        _tool(2, "get_shipment", "Fetch one shipment.", read_only_hint=True),
        _tool(3, "track_shipment", "Where a shipment is now, from the carrier's tracking."),
        _tool(4, "echo", "Repeat the given text back."),
    ]
    catalog = Catalog(1, tools)
    query = search_module.parse("shipment")
    ranked = search_module.rank(catalog, query, [(t.name, False) for t in tools])
    assert ranked[:2] == ["get_shipment", "delete_shipment"] or ranked[0] == "get_shipment"
    assert ranked.index("get_shipment") < ranked.index("delete_shipment")  # equal words: read-only first
    assert search_module.rank(catalog, query, [("echo", True), ("get_shipment", False)])[0] == "echo"
    tracked = search_module.rank(catalog, search_module.parse("track my shipment"), [(t.name, False) for t in tools])
    assert tracked[0] == "track_shipment"


def test_a_hit_says_what_a_model_chooses_and_calls_by() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"enum": ["metric", "imperial"]},
            "days": {"type": ["integer", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filter": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        },
        "required": ["city"],
    }
    tool = _tool(
        1, "get_weather", "Current conditions. " * 40, title="Weather", input_schema=schema, read_only_hint=True
    )
    found = hit(tool)
    assert found["arguments"] == (
        'city: string, units?: "metric" | "imperial", days?: integer | null, tags?: array of string, '
        "filter?: object | null"
    )
    assert found["readOnly"] is True
    assert "destructive" not in found
    assert len(found["description"]) <= 300
    assert found["description"].endswith("conditions.")
    assert signature({"type": "object"}) == "none"
    many = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(15)}}
    assert signature(many).endswith("... (3 more: describe_tools)")
    assert summary("x" * 500).endswith("...")
