"""Demo data: authors, tags and books (10,000 by default), written with bulk_create.

Idempotent: rows are numbered, so a second run adds only what is missing. Books belong to the
demo users ``alice`` and ``bob`` (who get Django's model permissions on books and authors); the
scopes ``library:read`` and ``library:write`` (which implies read) are created for OAuth.
"""

from __future__ import annotations

import datetime
import random
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction

from mcp_tools.models import Scope

from .models import Author, Book, Tag

FIRST = ["Ada", "Ben", "Chloe", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi", "Luca"]
LAST = ["Moreau", "Okafor", "Novak", "Silva", "Tanaka", "Weiss", "Yilmaz", "Costa", "Berg", "Haddad"]
WORDS = [
    "river",
    "night",
    "garden",
    "silent",
    "empire",
    "atlas",
    "glass",
    "winter",
    "orchard",
    "signal",
    "harbor",
    "paper",
    "forest",
    "machine",
    "letter",
    "shadow",
    "summer",
    "island",
    "engine",
    "voyage",
    "archive",
    "lantern",
    "meadow",
    "comet",
]
TAGS = ["classic", "award", "translated", "illustrated", "series", "debut", "bestseller", "short", "essay", "kids"]
USERS = ("alice", "bob")


def _users() -> list[Any]:
    model = get_user_model()
    permissions = list(
        Permission.objects.filter(content_type__app_label="library", codename__in=[
            "view_book", "add_book", "change_book", "delete_book", "view_author",
        ])
    )  # fmt: skip
    users = []
    for name in USERS:
        user, created = model.objects.get_or_create(username=name)
        if created:
            user.set_unusable_password()  # tokens come from manage.py mcp_token --user NAME
            user.save()
        user.user_permissions.add(*permissions)
        users.append(user)
    return users


def _scopes() -> None:
    read, _ = Scope.objects.get_or_create(name="library:read", defaults={"description": "Read the demo library"})
    write, _ = Scope.objects.get_or_create(name="library:write", defaults={"description": "Change the demo library"})
    if not write.implies.filter(pk=read.pk).exists():
        write.implies.add(read)


def seed(books: int = 10_000, *, seed_value: int = 12) -> int:
    """Add what is missing up to ``books`` books; returns the number of books created."""
    rng = random.Random(seed_value)  # noqa: S311 - demo data, not secrets
    with transaction.atomic():
        _scopes()
        owners = _users()
        names = [f"{first} {last}" for last in LAST for first in FIRST][:60]
        have = set(Author.objects.values_list("name", flat=True))
        Author.objects.bulk_create(
            [
                Author(name=name, born=datetime.date(1900 + i % 90, 1 + i % 12, 1 + i % 28))
                for i, name in enumerate(names)
                if name not in have
            ]
        )
        have = set(Tag.objects.values_list("name", flat=True))
        Tag.objects.bulk_create([Tag(name=name) for name in TAGS if name not in have])
        authors = list(Author.objects.order_by("pk").values_list("pk", flat=True))
        tags = list(Tag.objects.order_by("pk").values_list("pk", flat=True))
        start = Book.objects.count()
        if start >= books:
            return 0
        genres = list(Book.Genre.values)
        new = []
        for i in range(start, books):
            rng.seed(seed_value * 1_000_003 + i)
            new.append(
                Book(
                    title=f"The {rng.choice(WORDS)} {rng.choice(WORDS)} {i}".title(),
                    isbn=f"978{i:010d}",
                    author_id=rng.choice(authors),
                    genre=genres[i % len(genres)],
                    published=None
                    if i % 17 == 0
                    else datetime.date(1950, 1, 1) + datetime.timedelta(days=rng.randrange(27_000)),
                    price=Decimal(rng.randrange(199, 9_999)) / 100,
                    pages=rng.randrange(40, 1_200),
                    in_stock=i % 5 != 0,
                    owner=owners[0] if i % 10 < 7 else owners[1],
                )
            )
        created = Book.objects.bulk_create(new, batch_size=2_000)
        links = Book.tags.through
        rows = []
        for book in created:
            rng.seed(book.pk)
            rows += [links(book_id=book.pk, tag_id=tag) for tag in rng.sample(tags, rng.randrange(0, 4))]
        links.objects.bulk_create(rows, batch_size=5_000)
    return len(created)
