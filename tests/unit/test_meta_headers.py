"""``transport.replies.request_headers``: headers read from META by name, as Django's
``request.headers`` has them (the endpoint's hot path reads a handful per request)."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from mcp_tools.transport.replies import MetaHeaders, request_headers


def _request() -> object:
    return RequestFactory().post(
        "/mcp",
        b"{}",
        content_type="application/json; charset=utf-8",
        HTTP_MCP_PROTOCOL_VERSION="2026-07-28",
        HTTP_MCP_PARAM_REGION="eu-west",
        HTTP_X_FORWARDED_PROTO="https",
    )


def test_every_header_reads_as_django_reads_it() -> None:
    request = _request()
    headers = request_headers(request)  # type: ignore[arg-type]
    expected = {name.lower(): value for name, value in request.headers.items()}  # type: ignore[attr-defined]
    assert dict(headers) == expected
    assert len(headers) == len(expected)
    for name, value in expected.items():
        assert headers[name] == value
        assert headers.get(name) == value
        assert headers.get(name.upper()) == value  # any case, as HTTP names are
        assert name in headers


def test_missing_headers_are_missing() -> None:
    headers = request_headers(_request())  # type: ignore[arg-type]
    assert headers.get("mcp-session-id") is None
    assert headers.get("mcp-session-id", "") == ""
    assert "authorization" not in headers
    assert 42 not in headers
    with pytest.raises(KeyError):
        headers["origin"]


def test_content_headers_have_no_http_prefix_in_meta() -> None:
    headers = MetaHeaders({"CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "2", "HTTP_HOST": "h"})
    assert headers.get("content-type") == "application/json"
    assert headers.get("Content-Length") == "2"
    assert sorted(headers) == ["content-length", "content-type", "host"]


def test_made_once_per_request() -> None:
    request = _request()
    assert request_headers(request) is request_headers(request)  # type: ignore[arg-type]
