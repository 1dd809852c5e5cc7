"""The bare comparison endpoint as a synchronous view: parse the request, return fixed bytes.

BENCH_BARE_BODY is the exact response body (latin-1 text) our endpoint answered.
"""

from __future__ import annotations

import os

import orjson
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

BODY = os.environ.get("BENCH_BARE_BODY", "{}").encode("latin-1")


@csrf_exempt
def bare(request: HttpRequest) -> HttpResponse:
    orjson.loads(request.body)
    return HttpResponse(BODY, content_type="application/json")


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(b"ok", content_type="text/plain")


urlpatterns = [path("", home), path("mcp", bare)]
