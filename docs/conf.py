"""Sphinx configuration of the django-mcp-tools documentation (``make docs``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "docs" / "_ext")]
# Autodoc and the generated reference import the app: Django must be set up first.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from mcp_tools import __version__ as _version  # noqa: E402

project = "django-mcp-tools"
author = "The django-mcp-tools authors"
copyright = "2026, the django-mcp-tools authors"
release = _version
version = _version

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.intersphinx",
    "mcp_reference",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "tutorial/site/**/README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"django-mcp-tools {release}"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
intersphinx_mapping = {}  # offline builds: no inventories fetched

# -n (nitpicky): names in type hints that are not documented here (the standard library,
# Django, typing internals) are not broken references of these pages.
nitpick_ignore_regex = [
    ("py:class", r"(typing|collections\.abc|datetime|enum|django|rest_framework|_?mcp_tools\.[a-z_.]*\._)\..*"),
    ("py:class", r"(Any|Callable|Mapping|Sequence|Iterable|Awaitable|Coroutine|Literal|Self|T|R|P)(\[.*\])?"),
    ("py:class", r"(str|int|float|bool|bytes|dict|list|tuple|set|frozenset|object|None|type|Exception|BaseException)"),
    ("py:class", r"(ContentBlock|JSON|Json|JsonValue|ElicitationSchema)"),
    ("py:class", r"(models|serializers)\..*"),  # Django's and DRF's, as the annotations name them
    ("py:class", r"(App|ASGIApp|WSGIApp|EndpointFront)(\[.*\])?"),  # the fronts' generic base and app types
    ("py:class", r"HttpRequest"),  # Django's, as the auth backends' annotations name it
]
suppress_warnings = ["myst.header"]
