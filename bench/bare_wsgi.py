"""WSGI entry of the bare sites (bench/peers.py): project/wsgi.py without the MCP front and
without importing ``project`` (whose ``__init__`` loads the demo's Celery app)."""

import gc
import os
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.bare_settings")
application: Any = get_wsgi_application()
gc.freeze()
