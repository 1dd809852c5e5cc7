"""Demo models: a book has an author (FK), tags (M2M), a genre (choices), a date and a price."""

from __future__ import annotations

import datetime
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class Author(models.Model):
    name = models.CharField(max_length=120, unique=True)
    born = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Tag(models.Model):
    name = models.SlugField(max_length=40, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Book(models.Model):
    class Genre(models.TextChoices):
        FICTION = "fiction", "Fiction"
        SCIENCE = "science", "Science"
        HISTORY = "history", "History"
        POETRY = "poetry", "Poetry"
        CHILDREN = "children", "Children"

    title = models.CharField(max_length=200)
    isbn = models.CharField("ISBN", max_length=13, unique=True, help_text="13 digits.")
    author = models.ForeignKey(Author, on_delete=models.PROTECT, related_name="books")
    tags = models.ManyToManyField(Tag, blank=True, related_name="books")
    genre = models.CharField(max_length=16, choices=Genre.choices)
    published = models.DateField(null=True, blank=True)
    price = models.DecimalField(max_digits=8, decimal_places=2, validators=[MinValueValidator(Decimal("0"))])
    pages = models.PositiveIntegerField(validators=[MinValueValidator(1), MaxValueValidator(10000)])
    in_stock = models.BooleanField(default=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["title"]
        indexes = [
            models.Index(fields=["owner", "published"]),
            models.Index(fields=["owner", "title"]),
            models.Index(fields=["owner", "price"]),
        ]

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        # Model validation the serializer alone would not run: the tools call full_clean().
        if self.published is not None and self.published > datetime.date.today():
            raise ValidationError({"published": "A book cannot be published in the future."})
        if self.isbn and not self.isbn.isdigit():
            raise ValidationError({"isbn": "An ISBN is 13 digits."})
