"""Test models: ``Specimen`` has one field of every standard type Django ships (models.*).

ImageField is left out: it needs Pillow (a FileField to the serializer, tested as one).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower


def project_dir() -> str:
    """FilePathField's path as a callable, so the migration names no machine's directory."""
    return str(settings.BASE_DIR)


class Kind(models.Model):
    """The target of Specimen's foreign key and many-to-many field."""

    name = models.CharField(max_length=40, unique=True)

    def __str__(self) -> str:
        return self.name


class Code(models.Model):
    """A model whose primary key is a UUID (the type of a relation follows the related pk)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    label = models.CharField(max_length=20)


class Specimen(models.Model):
    class Colour(models.TextChoices):
        RED = "red", "Red"
        GREEN = "green", "Green"

    class Size(models.IntegerChoices):
        SMALL = 1, "Small"
        LARGE = 2, "Large"

    # (the BigAutoField primary key is the app's default_auto_field)
    char = models.CharField(max_length=30)
    char_blank = models.CharField(max_length=10, blank=True, default="")
    text = models.TextField(blank=True, default="")
    colour = models.CharField(max_length=5, choices=Colour.choices, default=Colour.RED)
    size = models.IntegerField(choices=Size.choices, null=True, blank=True)
    slug = models.SlugField(max_length=20, blank=True, default="")
    email = models.EmailField(blank=True, default="")
    url = models.URLField(blank=True, default="")
    ip = models.GenericIPAddressField(null=True, blank=True)
    ipv4 = models.GenericIPAddressField(protocol="IPv4", null=True, blank=True)
    uuid = models.UUIDField(default=uuid.uuid4)
    boolean = models.BooleanField(default=False)
    maybe = models.BooleanField(null=True, blank=True)
    integer = models.IntegerField(default=0, validators=[MinValueValidator(-100), MaxValueValidator(100)])
    small = models.SmallIntegerField(default=0)
    big = models.BigIntegerField(default=0)
    positive = models.PositiveIntegerField(default=0)
    positive_small = models.PositiveSmallIntegerField(default=0)
    positive_big = models.PositiveBigIntegerField(default=0)
    floating = models.FloatField(null=True, blank=True)
    decimal = models.DecimalField(max_digits=7, decimal_places=2, default=0)
    date = models.DateField(null=True, blank=True)
    datetime = models.DateTimeField(null=True, blank=True)
    time = models.TimeField(null=True, blank=True)
    duration = models.DurationField(null=True, blank=True)
    data = models.JSONField(default=dict, blank=True)
    binary = models.BinaryField(null=True, blank=True)
    file = models.FileField(upload_to="specimens/", blank=True)
    path = models.FilePathField(path=project_dir, blank=True, default="")
    kind = models.ForeignKey(Kind, null=True, blank=True, on_delete=models.SET_NULL, related_name="specimens")
    code = models.OneToOneField(Code, null=True, blank=True, on_delete=models.SET_NULL)
    kinds = models.ManyToManyField(Kind, blank=True, related_name="+")
    doubled = models.GeneratedField(
        expression=models.F("integer") * 2, output_field=models.IntegerField(), db_persist=True
    )
    lower = models.GeneratedField(
        expression=Lower("char"), output_field=models.CharField(max_length=30), db_persist=True
    )
    created = models.DateTimeField(auto_now_add=True)
    api_token = models.CharField(max_length=40, blank=True, default="")
    password = models.CharField(max_length=128, blank=True, default="")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    class Meta:
        ordering = ["char"]

    def __str__(self) -> str:
        return self.char

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        if self.char == "forbidden":
            raise ValidationError({"char": "This name is reserved."})
