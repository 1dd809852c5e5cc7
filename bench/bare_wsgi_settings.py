"""The bare comparison site with a synchronous view, for WSGI servers (bench/callcost.py)."""

from __future__ import annotations

from bench.bare_settings import *  # noqa: F403

ROOT_URLCONF = "bench.bare_wsgi_urls"
