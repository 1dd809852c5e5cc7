"""The bare comparison endpoint: parse the JSON-RPC request, return a precomputed response.

BENCH_BARE_RESPONSES names a JSON file mapping "<shape> <method>" to the exact bytes (latin-1
text) our endpoint answered for the same request, so both servers send the same body size.
The view is async under uvicorn (bench/run.py), sync under gunicorn (BENCH_BARE_SYNC=1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

_path = os.environ.get("BENCH_BARE_RESPONSES")
RESPONSES: dict[str, bytes] = (
    {key: value.encode("latin-1") for key, value in json.loads(Path(_path).read_text()).items()} if _path else {}
)
NOT_FOUND = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}'


def _answer(request: HttpRequest) -> HttpResponse:
    message = orjson.loads(request.body)
    params = message.get("params") or {}
    meta = params.get("_meta")
    shape = "modern" if isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta else "legacy"
    body = RESPONSES.get(f"{shape} {message.get('method')}", NOT_FOUND)
    return HttpResponse(body, content_type="application/json")


@csrf_exempt
async def bare(request: HttpRequest) -> HttpResponse:
    return _answer(request)


@csrf_exempt
def bare_sync(request: HttpRequest) -> HttpResponse:
    """The same under a WSGI server (gunicorn sync workers: bench/peers.py)."""
    return _answer(request)


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok", content_type="text/plain")


# BENCH_BARE_SYNC=1: a plain function view, so a WSGI server runs it without an event loop.
urlpatterns = [path("", home), path("mcp", bare_sync if os.environ.get("BENCH_BARE_SYNC") == "1" else bare)]
