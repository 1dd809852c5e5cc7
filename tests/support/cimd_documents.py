"""Client ID metadata documents served on loopback for the hosted-client flows.

A hosted client names itself by the https URL of its document (``https://claude.ai/...``); a
test cannot serve that host, and DOT's fetcher refuses loopback addresses (SSRF). The
``LocalDocuments`` fetcher keeps everything else of the real path (the package's policy on the
document, DOT's size, type and JSON checks on a real HTTP response) and fetches the same path
from ``MCP_TEST_CIMD_BASE`` (``http://127.0.0.1:<port>``), where ``DocumentServer`` serves it.
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import urllib3

from mcp_tools.oauth.registration import PolicedMetadataFetcher


class LocalDocuments(PolicedMetadataFetcher):
    def fetch_document(self, client_id: str) -> tuple[dict[str, Any], int]:
        parts = urlsplit(client_id)
        base = os.environ["MCP_TEST_CIMD_BASE"]
        with urllib3.PoolManager(timeout=5, retries=False) as pool:
            response = pool.request("GET", f"{base}{parts.path}", preload_content=False, redirect=False)
            try:
                found: tuple[dict[str, Any], int] = self._read_document(response)
                return found
            finally:
                response.release_conn()


class DocumentServer:
    """A loopback HTTP server answering GET <path> with the JSON document stored for it."""

    def __init__(self) -> None:
        self.documents: dict[str, dict[str, Any]] = {}
        self.fetched: list[str] = []
        documents, fetched = self.documents, self.fetched

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fetched.append(self.path)
                document = documents.get(self.path)
                body = json.dumps(document).encode() if document is not None else b"{}"
                self.send_response(200 if document is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> DocumentServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
