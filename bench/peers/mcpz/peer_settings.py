"""django-mcpz peer: the shared peer settings and this app's URLs."""

from __future__ import annotations

from django_settings import *  # noqa: F403

ROOT_URLCONF = "peer_urls"
