"""The demo site's settings with the middleware stack picked by BENCH_MIDDLEWARE."""

from __future__ import annotations

import os

from bench.stacks import middleware_for
from project.settings import *  # noqa: F403

MIDDLEWARE = middleware_for(os.environ.get("BENCH_MIDDLEWARE", "default"))
