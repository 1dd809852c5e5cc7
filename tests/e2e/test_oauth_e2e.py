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

from tests.support import external_services
from tests.support.servers import ROOT, LiveServer, free_port, run_server

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
    external_services.require("redis")
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
    """Plays the user: signs in on the package's sign-in page (the demo has no sign-in view of
    its own) and posts the consent form."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
        _sign_in(self.http, "/o/login/?next=/")
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


# --------------------------------------------------------------------------- hosted clients
#
# Each flow plays one hosted client's documented registration and authorization against a real
# server (issue 34): the 401 challenge, the metadata documents, registration (CIMD or DCR),
# the browser's sign-in and consent with PKCE and the resource, the code exchange, a refresh,
# and MCP calls with the token. The person is a cookie-holding HTTP client reading the pages.

CLAUDE_DOCUMENT = "/oauth/claude-client-metadata.json"
CLAUDE_CALLBACK = "https://claude.ai/api/mcp/auth_callback"
CHATGPT_CALLBACK = "https://chatgpt.com/connector_platform_oauth_redirect"
VSCODE_CALLBACKS = [
    "https://insiders.vscode.dev/redirect",
    "https://vscode.dev/redirect",
    "http://127.0.0.1/",
    "http://127.0.0.1:33418/",
]
CURSOR_CALLBACKS = [
    "cursor://anysphere.cursor-mcp/oauth/callback",
    "https://www.cursor.com/agents/mcp/oauth/callback",
    "http://localhost:8787/callback",
]


def _sign_in(http: httpx.Client, url: str, username: str = "admin", password: str = "admin") -> httpx.Response:  # noqa: S107 - the demo superuser
    """Fill the sign-in form at ``url`` (the package's page) as a person would."""
    page = http.get(url)
    assert page.status_code == 200, page.text
    assert 'id="sign-in"' in page.text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    nxt = re.search(r'name="next" value="([^"]*)"', page.text)
    assert csrf is not None
    assert nxt is not None
    signed_in = http.post(
        urlsplit(url).path,
        data={
            "username": username,
            "password": password,
            "csrfmiddlewaretoken": csrf.group(1),
            "next": nxt.group(1).replace("&amp;", "&"),
        },
    )
    assert signed_in.status_code == 302, signed_in.text
    return signed_in


def _hidden_fields(html: str) -> dict[str, str]:
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
    return {k: v.replace("&amp;", "&").replace("&quot;", '"').replace("&#x27;", "'") for k, v in fields.items()}


class _Person:
    """A browser: follows the authorize redirect to the sign-in page, signs in once, reads the
    consent page and allows; returns the callback's query."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, follow_redirects=False, timeout=30)
        self.signed_in = False
        self.pages: list[str] = []

    def authorize(self, url: str) -> dict[str, str]:
        page = self.http.get(url)
        if page.status_code == 302 and not self.signed_in:
            login = page.headers["location"]
            assert urlsplit(login).path == "/o/login/", login  # the package's page: no 404 dead end
            back = _sign_in(self.http, login)
            self.signed_in = True
            page = self.http.get(back.headers["location"])
        assert page.status_code == 200, page.text  # consent is asked on every connection
        self.pages.append(page.text)
        fields = _hidden_fields(page.text)
        fields["allow"] = "Allow"
        decided = self.http.post(urlsplit(url).path, data=fields)
        assert decided.status_code == 302, decided.text
        location = decided.headers["location"]
        self.last_location = location
        return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}

    def close(self) -> None:
        self.http.close()


def _pkce() -> tuple[str, str]:
    import base64
    import hashlib
    import secrets

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _discover(server: LiveServer) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What every client does first: the 401's challenge, then the two metadata documents."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    unauthorized = httpx.post(
        server.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
        headers={
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/list",
        },
        timeout=30,
    )
    assert unauthorized.status_code == 401
    challenge = unauthorized.headers["www-authenticate"]
    prm_url = re.search(r'resource_metadata="([^"]+)"', challenge)
    scope = re.search(r'scope="([^"]+)"', challenge)
    assert prm_url is not None
    assert scope is not None
    prm = httpx.get(prm_url.group(1), timeout=30).json()
    assert prm["resource"] == server.url
    asm = httpx.get(prm["authorization_servers"][0] + "/.well-known/oauth-authorization-server", timeout=30).json()
    assert asm["issuer"] == prm["authorization_servers"][0]
    assert "S256" in asm["code_challenge_methods_supported"]
    return prm, asm, scope.group(1).split()


def _authorize_url(asm: dict[str, Any], client_id: str, redirect: str, scopes: list[str], challenge: str) -> str:
    from urllib.parse import urlencode

    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect,
        "scope": " ".join(scopes),
        "state": uuid.uuid4().hex,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": asm["issuer"] + "/mcp",
    }
    return f"{urlsplit(asm['authorization_endpoint']).path}?{urlencode(query)}"


def _exchange(asm: dict[str, Any], data: dict[str, str], auth: tuple[str, str] | None = None) -> dict[str, Any]:
    response = httpx.post(asm["token_endpoint"], data=data, auth=auth, timeout=30)
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.fixture(scope="module")
def hosted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Any]]:
    from tests.support.cimd_documents import DocumentServer

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with DocumentServer() as documents:
        env = _oauth_env(
            f"{base}/mcp", DJANGO_SETTINGS_MODULE="tests.e2e.hosted_settings", MCP_TEST_CIMD_BASE=documents.base
        )
        with run_server(tmp_path_factory.mktemp("hosted"), extra_env=env, port=port) as server:
            server.manage("demo_superuser")
            yield server, documents


def test_claude_registers_by_cimd_with_none_and_is_asked_on_every_connection(hosted: tuple[LiveServer, Any]) -> None:
    """Claude: CIMD only when the metadata offers it with ``none`` (else DCR); a public client
    named by its document's URL; PKCE, the resource, consent on every connection."""
    server, documents = hosted
    prm, asm, scopes = _discover(server)
    assert asm["client_id_metadata_document_supported"] is True
    assert "none" in asm["token_endpoint_auth_methods_supported"]
    client_id = f"https://claude.ai{CLAUDE_DOCUMENT}"
    documents.documents[CLAUDE_DOCUMENT] = {
        "client_id": client_id,
        "client_name": "Claude",
        "redirect_uris": [CLAUDE_CALLBACK],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    person = _Person(server.base_url)
    try:
        verifier, challenge = _pkce()
        answer = person.authorize(_authorize_url(asm, client_id, CLAUDE_CALLBACK, scopes, challenge))
        page = person.pages[-1]
        assert 'id="client-name">Claude<' in page
        assert 'id="client-id-host">claude.ai<' in page
        assert 'id="redirect-host">claude.ai<' in page
        assert person.last_location.startswith(CLAUDE_CALLBACK + "?")
        assert answer["iss"] == asm["issuer"]
        tokens = _exchange(
            asm,
            {
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": CLAUDE_CALLBACK,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": prm["resource"],
            },
        )
        assert documents.fetched == [CLAUDE_DOCUMENT]
        assert _list_status(server.url, tokens["access_token"]) == 200
        assert not _call(server.url, tokens["access_token"], "echo", {"text": "claude"}).get("isError")
        # The next connection asks again (no silent grant), and its code works too.
        verifier, challenge = _pkce()
        again = person.authorize(_authorize_url(asm, client_id, CLAUDE_CALLBACK, scopes, challenge))
        assert len(person.pages) == 2
        assert again["code"] != answer["code"]
    finally:
        person.close()


def test_chatgpt_registers_by_dcr_and_keeps_refresh_token(hosted: tuple[LiveServer, Any]) -> None:
    """ChatGPT: DCR with authorization_code + refresh_token (it refuses an answer without
    refresh_token while the metadata advertises it), its stable callback (needs ``iss``), the
    resource echoed on authorize, token and refresh."""
    server, _ = hosted
    prm, asm, scopes = _discover(server)
    assert "refresh_token" in asm["grant_types_supported"]
    assert asm["authorization_response_iss_parameter_supported"] is True
    registered = httpx.post(
        asm["registration_endpoint"],
        json={
            "client_name": "ChatGPT",
            "redirect_uris": [CHATGPT_CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_post",
        },
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    client = registered.json()
    assert client["grant_types"] == ["authorization_code", "refresh_token"]
    assert client["token_endpoint_auth_method"] == "client_secret_post"
    person = _Person(server.base_url)
    try:
        verifier, challenge = _pkce()
        answer = person.authorize(_authorize_url(asm, client["client_id"], CHATGPT_CALLBACK, scopes, challenge))
        assert 'id="redirect-host">chatgpt.com<' in person.pages[-1]
        assert answer["iss"] == asm["issuer"]
        secret = {"client_id": client["client_id"], "client_secret": client["client_secret"]}
        tokens = _exchange(
            asm,
            {
                "grant_type": "authorization_code",
                "code": answer["code"],
                "redirect_uri": CHATGPT_CALLBACK,
                "code_verifier": verifier,
                "resource": prm["resource"],
                **secret,
            },
        )
        assert tokens["refresh_token"]
        refreshed = _exchange(
            asm,
            {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "resource": prm["resource"],
                **secret,
            },
        )
        assert refreshed["refresh_token"] != tokens["refresh_token"]  # rotated
        assert not _call(server.url, refreshed["access_token"], "echo", {"text": "chatgpt"}).get("isError")
    finally:
        person.close()


def test_vscode_and_cursor_register_by_dcr_with_their_callbacks(hosted: tuple[LiveServer, Any]) -> None:
    """VS Code registers its web and loopback callbacks and may come back on another loopback
    port; Cursor's cursor:// callback is dropped by default (registered: its https and loopback
    callbacks), and a flow through its https callback works."""
    server, _ = hosted
    prm, asm, scopes = _discover(server)
    person = _Person(server.base_url)
    try:
        for name, callbacks, used in (
            ("Visual Studio Code", VSCODE_CALLBACKS, "http://127.0.0.1:50123/"),
            ("Cursor", CURSOR_CALLBACKS, "https://www.cursor.com/agents/mcp/oauth/callback"),
        ):
            registered = httpx.post(
                asm["registration_endpoint"],
                json={
                    "client_name": name,
                    "redirect_uris": callbacks,
                    "grant_types": ["authorization_code", "refresh_token"],
                    "token_endpoint_auth_method": "none",
                },
                timeout=30,
            )
            assert registered.status_code == 201, registered.text
            client = registered.json()
            assert client["redirect_uris"] == [c for c in callbacks if not c.startswith("cursor://")]
            verifier, challenge = _pkce()
            answer = person.authorize(_authorize_url(asm, client["client_id"], used, scopes, challenge))
            assert person.last_location.startswith(used)
            tokens = _exchange(
                asm,
                {
                    "grant_type": "authorization_code",
                    "code": answer["code"],
                    "redirect_uri": used,
                    "client_id": client["client_id"],
                    "code_verifier": verifier,
                    "resource": prm["resource"],
                },
            )
            assert _list_status(server.url, tokens["access_token"]) == 200
        assert "this application sends you back to your own" in person.pages[0]  # VS Code's loopback
    finally:
        person.close()
