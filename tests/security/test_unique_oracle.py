"""No existence oracle through uniqueness errors: a create_/update_ of a model toolset whose value
is held by a row outside the caller's queryset (another owner's book) is refused without saying
that the value exists; a duplicate among the caller's own rows keeps the precise message."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from project.library.models import Author, Book
from tests.drfapp.testing import Caller, make_user, perms

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("synced")]

UNUSABLE = "This value cannot be used."
TAKEN = "9780000000001"  # bob's
MINE = "9780000000002"  # sam's


@pytest.fixture
def books() -> dict[str, Any]:
    author = Author.objects.create(name="A. Writer")
    sam = make_user("sam", *perms("book", app="library"))
    bob = make_user("bob", *perms("book", app="library"))
    common = {"author": author, "genre": "fiction", "price": Decimal("1.00"), "pages": 10}
    return {
        "author": author,
        "bobs": Book.objects.create(title="Bob's", isbn=TAKEN, owner=bob, **common),
        "sams": Book.objects.create(title="Sam's", isbn=MINE, owner=sam, **common),
    }


def _new(author: Author, isbn: str) -> dict[str, Any]:
    return {"title": "New", "isbn": isbn, "author": author.pk, "genre": "fiction", "price": "2.00", "pages": 5}


def test_a_value_held_by_another_owner_is_not_revealed_on_create(client: Any, books: dict[str, Any]) -> None:
    sam = Caller(client, "sam")
    result = sam.call("create_book", _new(books["author"], TAKEN))
    assert result["isError"] is True
    assert result["structuredContent"]["errors"] == {"isbn": [UNUSABLE]}
    text = result["content"][0]["text"]
    assert "exists" not in text
    assert UNUSABLE in text
    assert Book.objects.filter(isbn=TAKEN).count() == 1


def test_a_value_held_by_another_owner_is_not_revealed_on_update(client: Any, books: dict[str, Any]) -> None:
    sam = Caller(client, "sam")
    result = sam.call("update_book", {"id": books["sams"].pk, "data": {"isbn": TAKEN}})
    assert result["isError"] is True
    assert result["structuredContent"]["errors"] == {"isbn": [UNUSABLE]}
    assert "exists" not in result["content"][0]["text"]


def test_a_duplicate_of_the_callers_own_row_keeps_the_precise_message(client: Any, books: dict[str, Any]) -> None:
    sam = Caller(client, "sam")
    result = sam.call("create_book", _new(books["author"], MINE))
    assert result["isError"] is True
    assert result["structuredContent"]["errors"]["isbn"] != [UNUSABLE]
    assert "already exists" in result["content"][0]["text"]
