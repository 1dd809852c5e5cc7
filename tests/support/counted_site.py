"""The demo site with its PostgreSQL and Redis round trips counted (``tests/support/roundtrips.py``).

``asgi`` (uvicorn, the ASGI front) and ``wsgi`` (gunicorn, the WSGI front) serve the demo as
``project.asgi`` and ``project.wsgi`` do, plus ``GET /__roundtrips__``: the counts of this
process so far as JSON (``?reset=1`` starts them again). Only for tests: nothing of it is in
the app.
"""

from __future__ import annotations

import json
from typing import Any

from tests.support import roundtrips

roundtrips.install()  # before the site opens a connection

PATH = "/__roundtrips__"


def _answer(query: str) -> bytes:
    return json.dumps(roundtrips.snapshot(reset="reset=1" in query)).encode()


def _asgi() -> Any:
    from project.asgi import application as site

    async def application(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == PATH:
            body = _answer(scope.get("query_string", b"").decode())
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await site(scope, receive, send)

    return application


def _wsgi() -> Any:
    from project.wsgi import application as site

    def application(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("PATH_INFO") == PATH:
            body = _answer(environ.get("QUERY_STRING", ""))
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        return site(environ, start_response)

    return application


def __getattr__(name: str) -> Any:
    # Import the site only for the front asked for: each imports Django's handler of its kind.
    if name == "asgi":
        return _asgi()
    if name == "wsgi":
        return _wsgi()
    raise AttributeError(name)
