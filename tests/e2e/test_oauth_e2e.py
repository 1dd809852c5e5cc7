"""OAuth against real uvicorn servers: the Python SDK's OAuth client provider through the
whole flow, and rate limits that hold across two processes sharing Redis."""

from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests import services
from tests.servers import ROOT, LiveServer, free_port, run_server

pytestmark = [pytest.mark.e2e]

REDIS_URL = "redis://127.0.0.1:6379/3"


def _oauth_env(resource: str, **extra: str) -> dict[str, str]:
    return {"MCP_AUTH": "oauth", "MCP_RESOURCE_URL": resource, **extra}


def _token(server: LiveServer, scopes: str = "all") -> str:
    server.manage("demo_superuser")
    return server.manage("mcp_token", "--user", "admin", "--scopes", scopes).strip().splitlines()[-1]


def _call(url: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    response = httpx.post(
        url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": meta},
        },
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        },
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return dict(response.json()["result"])


# --------------------------------------------------------------------------- rate limits across processes


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    services.require("redis")
    prefix = f"mcp-oauth-e2e-{uuid.uuid4().hex[:12]}"
    yield prefix
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}:*", count=500))
    if keys:
        client.delete(*keys)


def test_rate_limit_holds_across_two_processes(tmp_path: Path, redis_prefix: str) -> None:
    """Two uvicorn processes, one SQLite file and Redis DB 3: 7/h means 7 calls in total."""
    env = _oauth_env(
        "http://127.0.0.1/mcp",  # the audience is the setting, whatever port serves it
        REDIS_URL=REDIS_URL,
        MCP_CACHE_PREFIX=redis_prefix,
        MCP_RATE_LIMIT="7/h",
    )
    with run_server(tmp_path, extra_env=env) as first, run_server(tmp_path, extra_env=env, prepare=False) as second:
        token = _token(first)
        urls = [first.url, second.url] * 12
        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(lambda u: _call(u, token, "echo", {"text": "x"}), urls))
        accepted = [r for r in results if not r.get("isError")]
        limited = [r for r in results if r.get("isError")]
        assert len(accepted) == 7, [r["content"][0]["text"] for r in results]
        assert len(limited) == 17
        assert all("retry after" in r["content"][0]["text"] for r in limited)
        # Another tool has its own counter; every call left exactly one audit row.
        assert not _call(second.url, token, "add", {"a": 1, "b": 2}).get("isError")
        counts = first.manage(
            "shell",
            "--no-imports",
            "-c",
            "from mcp_tools.models import AuditEvent as A;"
            "print(A.objects.filter(tool_name='echo', outcome='ok').count(),"
            "A.objects.filter(tool_name='echo', outcome='rate_limited').count(), A.objects.count())",
        )
        assert counts.split() == ["7", "17", "25"]


# --------------------------------------------------------------------------- the SDK's OAuth client


class _Consent:
    """Plays the user: signs in with a session cookie and posts the consent form."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
        login = self.http.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert csrf is not None
        signed_in = self.http.post(
            "/accounts/login/",
            data={"username": "admin", "password": "admin", "csrfmiddlewaretoken": csrf.group(1), "next": "/"},
        )
        assert signed_in.status_code == 302, signed_in.text
        self.result: dict[str, str] = {}
        self.pages: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        page = self.http.get(authorization_url)
        assert page.status_code == 200, page.text
        self.pages.append(page.text)
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
        fields = {k: v.replace("&amp;", "&").replace("&quot;", '"') for k, v in fields.items()}
        fields["allow"] = "Allow"
        consent = self.http.post(urlsplit(authorization_url).path, data=fields)
        assert consent.status_code == 302, consent.text
        query = parse_qs(urlsplit(consent.headers["location"]).query)
        self.result = {k: v[0] for k, v in query.items()}

    async def callback(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        return AuthorizationCodeResult(
            code=self.result["code"], state=self.result.get("state"), iss=self.result.get("iss")
        )


class _Memory:
    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


@pytest.mark.anyio
async def test_python_sdk_oauth_client_full_flow(tmp_path: Path) -> None:
    """401 discovery, PRM, AS metadata, DCR, authorize with PKCE and consent, token with
    resource, then MCP calls: the official SDK's OAuthClientProvider against uvicorn."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with run_server(tmp_path, extra_env=_oauth_env(f"{base}/mcp"), port=port) as server:
        server.manage("demo_superuser")
        consent = _Consent(base)
        try:
            storage, names, echo_text = await _sdk_session(server.url, consent)
        finally:
            consent.http.close()
        assert echo_text == "through oauth"
        assert "build_report" in names
        assert "echo" in names
        assert storage.client is not None
        assert "SDK e2e client" in consent.pages[0]
        assert 'id="redirect-host">127.0.0.1<' in consent.pages[0]
        assert consent.result["iss"] == base
        # The token the SDK got is bound to our resource and carries the challenged scopes.
        out = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "shell",
                "--no-imports",
                "-c",
                "from oauth2_provider.models import AccessToken as T;"
                f"t=T.objects.get(token={json.dumps(storage.tokens.access_token)}); print(t.resource, t.scope)",
            ],
            cwd=ROOT,
            env=server.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert f"['{base}/mcp']" in out
        assert "notes:read" in out


async def _sdk_session(url: str, consent: _Consent) -> tuple[_Memory, list[str], str]:
    import httpx2
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientMetadata

    storage = _Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="SDK e2e client",
            redirect_uris=["http://127.0.0.1:33418/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=consent.redirect,
        callback_handler=consent.callback,
    )
    async with (
        httpx2.AsyncClient(auth=provider, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names: list[str] = []
        cursor = None
        while True:
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            names += [t.name for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        echo = await session.call_tool("echo", {"text": "through oauth"})
    assert isinstance(echo.content[0], types.TextContent)
    return storage, names, echo.content[0].text


# --------------------------------------------------------------------------- revocation across processes


def _list_status(url: str, token: str) -> int:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    response = httpx.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
        },
        timeout=30,
    )
    return response.status_code


def test_a_revoked_or_expired_token_is_refused_by_every_process_at_once(tmp_path: Path) -> None:
    """Token validation caches nothing: the next request after a revocation, on any process,
    is 401 (issue 14: one indexed query per request)."""
    env = _oauth_env("http://127.0.0.1/mcp")
    with run_server(tmp_path, extra_env=env) as first, run_server(tmp_path, extra_env=env, prepare=False) as second:
        revoked, expiring = _token(first), _token(first)
        for url in (first.url, second.url, first.url, second.url):
            assert _list_status(url, revoked) == 200
            assert _list_status(url, expiring) == 200
        first.manage(
            "shell",
            "-c",
            f"from oauth2_provider.models import AccessToken; AccessToken.objects.get(token={revoked!r}).revoke()",
        )
        code = (
            "from datetime import timedelta; from django.utils import timezone; "
            "from oauth2_provider.models import AccessToken; "
            f"AccessToken.objects.filter(token={expiring!r}).update(expires=timezone.now() - timedelta(seconds=1))"
        )
        first.manage("shell", "-c", code)
        for url in (second.url, first.url):
            assert _list_status(url, revoked) == 401
            assert _list_status(url, expiring) == 401
