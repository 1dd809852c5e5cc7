"""JWTBackend: tokens of an external AS validated with its JWKS, issuer, audience, scopes (A-6)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import User

from mcp_tools.models import AuditEvent
from tests.integration.test_oauth import auth_params
from tests.support.mcp_client import Mcp, modern_meta

ISSUER = "https://idp.example/realms/demo"
RESOURCE = "http://testserver/mcp"


@pytest.fixture(scope="module")
def keys() -> tuple[Any, Any]:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048), rsa.generate_private_key(
        public_exponent=65537, key_size=2048
    )


# What the JWKS endpoint serves; a test may rotate it.
JWKS: dict[str, list[dict[str, Any]]] = {"keys": []}


def jwk_of(key: Any, kid: str) -> dict[str, Any]:
    return {
        **json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())),
        "kid": kid,
        "use": "sig",
        "alg": "RS256",
    }


@pytest.fixture(scope="module")
def jwks_url(keys: tuple[Any, Any]) -> Iterator[str]:
    """A real HTTP JWKS endpoint on 127.0.0.1 serving the first key only."""
    JWKS["keys"] = [jwk_of(keys[0], "k1")]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(JWKS).encode())

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/certs"
    server.shutdown()
    server.server_close()


@pytest.fixture
def jwt_auth(settings: Any, jwks_url: str, demo_tools: None) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTH_BACKEND": "mcp_tools.auth.JWTBackend",
        "JWT": {"issuer": ISSUER, "jwks_uri": jwks_url, "user_field": "username"},
    }


def sign(key: Any, kid: str = "k1", **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "iat": now, "exp": now + 300, "azp": "kc-client"}
    payload.update(claims)
    payload = {k: v for k, v in payload.items() if v is not None}
    return jwt.encode(payload, key, algorithm="RS256", headers={"kid": kid})


def call(client: Any, token: str) -> tuple[Any, Any]:
    mcp = Mcp(client).modern()
    mcp.default_headers["Authorization"] = f"Bearer {token}"
    response, messages = mcp.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": modern_meta()},
        },
        headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"},
        validate=False,
    )
    return response, messages


def test_valid_jwt_scopes_filter_the_list(client: Any, jwt_auth: None, keys: Any) -> None:
    alice = User.objects.create_user("alice")
    response, messages = call(client, sign(keys[0], scope="notes:write"))
    assert response.status_code == 200, response.content
    names = [t["name"] for t in messages[0]["result"]["tools"]]
    assert "build_report" in names
    assert "get_weather" in names
    assert "test_error_handling" not in names
    # scp as a list (Entra/Okta style), aud as a list
    response, messages = call(client, sign(keys[0], scope=None, scp=["notes:read"], aud=["x", RESOURCE]))
    names = [t["name"] for t in messages[0]["result"]["tools"]]
    assert "get_weather" in names
    assert "build_report" not in names
    mcp = Mcp(client).modern()
    mcp.default_headers["Authorization"] = f"Bearer {sign(keys[0], scope='notes:read')}"
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    event = AuditEvent.objects.get()
    assert (event.principal_key, event.client_id) == (f"user:{alice.pk}", "kc-client")


@pytest.mark.parametrize(
    "case", ["wrong_issuer", "wrong_audience", "no_audience", "expired", "wrong_key", "unknown_user", "garbage"]
)
def test_refused_jwts(client: Any, jwt_auth: None, keys: Any, case: str) -> None:
    User.objects.create_user("alice")
    token = {
        "wrong_issuer": lambda: sign(keys[0], iss="https://evil.example"),
        "wrong_audience": lambda: sign(keys[0], aud="https://other.example/mcp"),
        "no_audience": lambda: sign(keys[0], aud=None),
        "expired": lambda: sign(keys[0], exp=int(time.time()) - 3600),
        "wrong_key": lambda: sign(keys[1]),
        "unknown_user": lambda: sign(keys[0], sub="mallory"),
        "garbage": lambda: "a.b.c",
    }[case]()
    response, _ = call(client, token)
    assert response.status_code == 401
    params = auth_params(response["WWW-Authenticate"])
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == "http://testserver/.well-known/oauth-protected-resource/mcp"


def test_a_key_removed_from_the_jwks_is_refused_after_the_cache_lifespan(
    client: Any, settings: Any, jwks_url: str, demo_tools: None, keys: Any
) -> None:
    """Key rotation: once the identity provider drops a key, tokens signed with it stop working."""
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("alice")
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTH_BACKEND": "mcp_tools.auth.JWTBackend",
        "JWT": {"issuer": ISSUER, "jwks_uri": jwks_url, "user_field": "username", "jwks_cache_seconds": 1},
    }
    try:
        old = sign(keys[0], kid="k1", scope="notes:read")
        assert call(client, old)[0].status_code == 200
        JWKS["keys"] = [jwk_of(keys[1], "k2")]
        time.sleep(1.2)
        assert call(client, old)[0].status_code == 401
        assert call(client, sign(keys[1], kid="k2", scope="notes:read"))[0].status_code == 200
    finally:
        JWKS["keys"] = [jwk_of(keys[0], "k1")]
