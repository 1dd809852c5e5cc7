"""Issue 32 finding 3 and its neighbours: only the OAuth endpoints the app means to serve are
mounted, each under its policy. Every attack below went through on the previous code; each
has a control showing that the legitimate use of the same door still works."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from mcp_tools.admin.trial import try_tool
from mcp_tools.auth.oauth import token_principal
from mcp_tools.models import ClientEntitlement, Scope
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db

RESOURCE = "http://testserver/mcp"
FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def machines(settings: Any, oauth: None) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "ALLOW_CLIENT_CREDENTIALS": True}


def _register(client: Client, body: dict[str, Any]) -> Any:
    return client.post("/o/register/", json.dumps(body), content_type="application/json")


def _manage(client: Client, method: str, registered: dict[str, Any], body: dict[str, Any] | None = None) -> Any:
    call = getattr(client, method)
    path = urlsplit(registered["registration_client_uri"]).path
    auth = {"HTTP_AUTHORIZATION": f"Bearer {registered['registration_access_token']}"}
    if body is None:
        return call(path, **auth)
    return call(path, json.dumps(body), content_type="application/json", **auth)


def _names(mcp: Mcp) -> set[str]:
    out: set[str] = set()
    cursor = None
    while True:
        result = mcp.call("tools/list", {"cursor": cursor} if cursor else {})
        out |= {t["name"] for t in result["tools"]}
        cursor = result.get("nextCursor")
        if not cursor:
            return out


def _as(client: Client, token: str) -> Mcp:
    mcp = Mcp(client).modern()
    mcp.default_headers["Authorization"] = f"Bearer {token}"
    return mcp


# --------------------------------------------------------------------------- RFC 7592 under the policy


def test_rfc7592_put_cannot_store_what_registration_refuses(client: Client, oauth: None) -> None:
    """The finding: with a fresh registration's token, PUT stored http://evil.example/cb and the
    client-credentials grant. Now PUT passes the registration policy."""
    registered = _register(
        client,
        {"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none", "client_name": "cli"},
    ).json()
    app = Application.objects.get(client_id=registered["client_id"])

    evil = _manage(
        client,
        "put",
        registered,
        {"redirect_uris": ["http://evil.example/cb"], "grant_types": ["client_credentials"]},
    )
    assert evil.status_code == 400
    assert evil.json()["error"] == "invalid_redirect_uri"
    for grant in ("client_credentials", "password", "implicit", "urn:ietf:params:oauth:grant-type:device_code"):
        answer = _manage(
            client,
            "put",
            registered,
            {"redirect_uris": ["https://app.example/cb"], "grant_types": [grant], "token_endpoint_auth_method": "none"},
        )
        assert answer.status_code == 200, answer.content
        assert answer.json()["grant_types"] == ["authorization_code", "refresh_token"]
        registered["registration_access_token"] = answer.json()["registration_access_token"]
    app.refresh_from_db()
    assert app.authorization_grant_type == Application.GRANT_AUTHORIZATION_CODE
    assert app.redirect_uris == "https://app.example/cb"
    # Control: the client reads and deletes its own registration.
    assert _manage(client, "get", registered).json()["client_id"] == app.client_id
    assert _manage(client, "delete", registered).status_code == 204
    assert not Application.objects.filter(pk=app.pk).exists()


def test_registration_drops_callbacks_outside_the_policy_and_keeps_the_rest(client: Client, oauth: None) -> None:
    """Cursor registers cursor://, https and loopback callbacks in one request: the https and
    loopback ones are registered, the answer says which (RFC 7591 section 3.2.1)."""
    answer = _register(
        client,
        {
            "redirect_uris": [
                "cursor://anysphere.cursor-mcp/oauth/callback",
                "https://www.cursor.com/agents/mcp/oauth/callback",
                "http://localhost:8787/callback",
                "http://evil.example/cb",
            ],
            "token_endpoint_auth_method": "none",
        },
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["redirect_uris"] == [
        "https://www.cursor.com/agents/mcp/oauth/callback",
        "http://localhost:8787/callback",
    ]
    assert _register(client, {"redirect_uris": ["http://evil.example/cb"]}).status_code == 400


def test_registration_answers_the_auth_method_asked_and_keeps_refresh_token(client: Client, oauth: None) -> None:
    """A confidential client that registers client_secret_post is told so (DOT said
    client_secret_basic, which the Python SDK's client model refuses); grant_types keeps
    refresh_token, as the metadata advertises it (ChatGPT refuses an answer without it)."""
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert "refresh_token" in metadata["grant_types_supported"]
    answer = _register(
        client,
        {
            "redirect_uris": ["https://chatgpt.com/connector_platform_oauth_redirect"],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "client_secret_post",
        },
    ).json()
    assert answer["token_endpoint_auth_method"] == "client_secret_post"
    assert answer["grant_types"] == ["authorization_code", "refresh_token"]
    assert answer["client_secret"]
    refused = _register(
        client, {"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}
    )
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_client_metadata"


# --------------------------------------------------------------------------- client credentials


def _machine(scopes: list[str] | None) -> tuple[Application, str]:
    secret = "machine-secret-" + "x" * 20
    app = Application.objects.create(
        name="nightly job",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        client_secret=secret,
    )
    if scopes is not None:
        ClientEntitlement.objects.create(client_id=app.client_id).scopes.set(Scope.objects.filter(name__in=scopes))
    return app, secret


def _client_token(client: Client, app: Application, secret: str, scope: str | None) -> Any:
    basic = base64.b64encode(f"{app.client_id}:{secret}".encode()).decode()
    body = "grant_type=client_credentials" + (f"&scope={scope.replace(' ', '+')}" if scope else "")
    return client.post("/o/token/", body, content_type=FORM, HTTP_AUTHORIZATION=f"Basic {basic}")


def test_a_client_credentials_token_gets_only_what_the_admin_entitled(client: Client, machines: None) -> None:
    """The finding: a client-credentials token carried any scope, the group-restricted
    admin:tools included, and /mcp ran its tools. Now the token endpoint issues only the
    application's entitlement, and the endpoint holds tokens to it."""
    Scope.objects.get(name="admin:tools").groups.create(name="admins")
    app, secret = _machine(["notes:read"])
    asked = _client_token(client, app, secret, "admin:tools notes:read")
    assert asked.status_code == 200, asked.content
    assert asked.json()["scope"] == "notes:read"
    only_admin = _client_token(client, app, secret, "admin:tools")
    assert only_admin.status_code == 400
    assert only_admin.json()["error"] == "invalid_scope"
    # Control: the entitled token works, and sees only what notes:read covers.
    token = _client_token(client, app, secret, None).json()
    assert token["scope"] == "notes:read"
    listed = _names(_as(client, token["access_token"]))
    assert "get_weather" in listed
    assert "build_report" not in listed  # admin:tools
    # A token stored with more (issued before the entitlement, or by another path) is held to it.
    wide = secrets.token_urlsafe(24)
    AccessToken.objects.create(
        user=None,
        application=app,
        token=wide,
        scope="admin:tools notes:write notes:read",
        expires=timezone.now() + timedelta(hours=1),
        resource=[RESOURCE],
    )
    assert "build_report" not in _names(_as(client, wide))
    _, refused, _ = _as(client, wide).request("tools/call", {"name": "build_report", "arguments": {"steps": 1}})
    assert refused["error"]["code"] == -32602


def test_an_application_entitled_to_nothing_gets_no_token(client: Client, machines: None) -> None:
    app, secret = _machine(None)
    answer = _client_token(client, app, secret, "notes:read")
    assert answer.status_code in (400, 401)
    assert answer.json()["error"] == "unauthorized_client"
    stored = secrets.token_urlsafe(24)
    AccessToken.objects.create(
        user=None,
        application=app,
        token=stored,
        scope="notes:read",
        expires=timezone.now() + timedelta(hours=1),
        resource=[RESOURCE],
    )
    response, _ = _as(client, stored).post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, validate=False
    )
    assert response.status_code == 401


def test_client_credentials_are_off_unless_allowed(client: Client, oauth: None) -> None:
    """Without ALLOW_CLIENT_CREDENTIALS the metadata does not offer the grant and the token
    endpoint refuses it, entitlement or not (the endpoint would refuse the token anyway)."""
    app, secret = _machine(["notes:read"])
    assert (
        "client_credentials"
        not in client.get("/.well-known/oauth-authorization-server").json()["grant_types_supported"]
    )
    answer = _client_token(client, app, secret, None)
    assert answer.status_code == 400
    assert answer.json()["error"] == "unsupported_grant_type"


# --------------------------------------------------------------------------- doors that are not mounted


@pytest.mark.parametrize(
    "path",
    [
        "/o/applications/",
        "/o/applications/register/",
        "/o/authorized_tokens/",
        "/o/device-authorization/",
        "/o/device/",
        "/o/introspect/",
        "/o/userinfo/",
        "/o/.well-known/openid-configuration",
    ],
)
def test_doors_the_app_does_not_serve_are_not_mounted(client: Client, oauth: None, alice: User, path: str) -> None:
    client.force_login(alice)
    assert client.get(path).status_code == 404
    assert client.post(path, "client_id=x", content_type=FORM).status_code == 404


def test_a_signed_in_user_cannot_choose_a_client_id(client: Client, oauth: None, alice: User) -> None:
    """The finding: DOT's applications/register/ let any signed-in user create an application
    with a client_id of their choice. It is not mounted; DCR ignores a client_id in the body."""
    client.force_login(alice)
    chosen = client.post(
        "/o/applications/register/",
        {
            "name": "mine",
            "client_id": "django-admin",
            "client_type": "public",
            "authorization_grant_type": "authorization-code",
            "redirect_uris": "http://127.0.0.1/cb",
        },
    )
    assert chosen.status_code == 404
    body = {"redirect_uris": ["http://127.0.0.1/cb"], "client_id": "django-admin", "token_endpoint_auth_method": "none"}
    registered = _register(client, body)
    assert registered.status_code == 201
    assert registered.json()["client_id"] != "django-admin"
    assert not Application.objects.filter(client_id="django-admin").exists()


def test_the_device_flow_is_off_at_its_cause(client: Client, oauth: None) -> None:
    """DOT's device-authorization endpoint answered 500 for a device application; the flow is
    not mounted, and the token endpoint refuses its grant whatever an application row says."""
    app = Application.objects.create(
        name="tv", client_type=Application.CLIENT_PUBLIC, authorization_grant_type=Application.GRANT_DEVICE_CODE
    )
    assert client.post("/o/device-authorization/", f"client_id={app.client_id}", content_type=FORM).status_code == 404
    for extra in ("&device_code=x", ""):  # without device_code, DOT's own branch raised (500)
        answer = client.post(
            "/o/token/",
            f"grant_type=urn:ietf:params:oauth:grant-type:device_code&client_id={app.client_id}{extra}",
            content_type=FORM,
        )
        assert answer.status_code == 400
        assert answer.json()["error"] == "unsupported_grant_type"


def test_password_and_implicit_grants_are_refused_even_for_an_application_that_has_them(
    client: Client, oauth: None, alice: User
) -> None:
    pw = Application.objects.create(
        name="pw", client_type=Application.CLIENT_PUBLIC, authorization_grant_type=Application.GRANT_PASSWORD
    )
    answer = client.post(
        "/o/token/", f"grant_type=password&username=alice&password=pw-alice&client_id={pw.client_id}", content_type=FORM
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == "unsupported_grant_type"
    implicit = Application.objects.create(
        name="imp",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_IMPLICIT,
        redirect_uris="http://127.0.0.1/cb",
    )
    client.force_login(alice)
    page = client.get(
        "/o/authorize/",
        {"response_type": "token", "client_id": implicit.client_id, "redirect_uri": "http://127.0.0.1/cb"},
    )
    assert page.status_code == 302
    assert "access_token" not in page["Location"]
    assert "error=" in page["Location"]
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["response_types_supported"] == ["code"]
    assert set(metadata["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert "introspection_endpoint" not in metadata


# --------------------------------------------------------------------------- the admin's own grant key


def test_try_its_grant_key_is_no_client_ids(client: Client, oauth: None, admin_user: User) -> None:
    """Finding 5: Try it's grant key was user:<pk>/client:django-admin, which an application
    registered as "django-admin" shared: what Try it created (a basket handle), that
    application's token of the same user reached. The admin key is one no client id makes."""
    tried = try_tool("create_basket", {}, admin_user, "2026-07-28")
    basket = tried.result["structuredContent"]["basket_id"]
    try_tool("add_item", {"basket_id": basket, "sku": "apple"}, admin_user, "2026-07-28")
    twin = Application.objects.create(
        name="twin",
        client_id="django-admin",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    raw = secrets.token_urlsafe(24)
    AccessToken.objects.create(
        user=admin_user,
        application=twin,
        token=raw,
        scope="notes:write",
        expires=timezone.now() + timedelta(hours=1),
        resource=[RESOURCE],
    )
    viewed = _as(client, raw).call("tools/call", {"name": "view_basket", "arguments": {"basket_id": basket}})
    assert viewed["isError"] is True
    assert "apple" not in json.dumps(viewed)
    # Control: Try it reaches its own basket.
    own = try_tool("view_basket", {"basket_id": basket}, admin_user, "2026-07-28")
    assert own.result["structuredContent"]["item_count"] == 1
    assert token_principal(f"user:{admin_user.pk}", "django-admin", set()).key != f"user:{admin_user.pk}/admin"


# --------------------------------------------------------------------------- authorize errors are pages


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def _authorize_query(client_id: str, redirect_uri: str) -> dict[str, str]:
    _, challenge = _pkce()
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "notes:read",
        "state": "s",
    }


def test_a_redirect_mismatch_is_a_page_naming_the_host_not_a_500(client: Client, oauth: None, alice: User) -> None:
    app = Application.objects.create(
        name="c",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://app.example/cb",
    )
    client.force_login(alice)
    page = client.get("/o/authorize/", _authorize_query(app.client_id, "https://other.example/cb"))
    assert page.status_code == 400
    html = page.content.decode()
    assert "did not register" in html
    assert "other.example" in html
    assert 'id="error-code">invalid_request<' in html


class RefusingFetcher:
    """The CIMD document cannot be had (a fault)."""

    def fetch(self, client_id: str) -> Any:
        from oauth2_provider.cimd import CIMDError

        raise CIMDError("not reachable")


def test_a_cimd_refusal_is_a_page_not_a_500(client: Client, oauth: None, alice: User, settings: Any) -> None:
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "CIMD_METADATA_FETCHER": "tests.security.test_oauth_doors.RefusingFetcher",
    }
    client.force_login(alice)
    page = client.get(
        "/o/authorize/", _authorize_query("https://client.example/oauth/metadata.json", "http://127.0.0.1/cb")
    )
    assert page.status_code in (400, 401)
    assert "does not know the application" in page.content.decode()


def test_a_tampered_consent_post_is_a_page_not_a_500(client: Client, oauth: None, alice: User) -> None:
    client.force_login(alice)
    query = _authorize_query("no-such-client", "http://127.0.0.1/cb")
    answer = client.post("/o/authorize/", {**query, "allow": "Allow"})
    assert answer.status_code == 400
    assert "does not know the application" in answer.content.decode()
    incomplete = client.post("/o/authorize/", {"allow": "Allow"})
    assert incomplete.status_code == 400


# --------------------------------------------------------------------------- held: PKCE, resource, audience


def test_held_pkce_resource_and_audience_checks(client: Client, oauth: None, alice: User) -> None:
    app = Application.objects.create(
        name="c",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    client.force_login(alice)
    query = _authorize_query(app.client_id, "http://127.0.0.1/cb")
    no_pkce = {k: v for k, v in query.items() if not k.startswith("code_challenge")}
    refused = client.post("/o/authorize/", {**no_pkce, "allow": "Allow"})
    assert "error=invalid_request" in refused["Location"]
    assert "code=" not in refused["Location"]
    foreign = client.post("/o/authorize/", {**query, "allow": "Allow", "resource": "https://evil.example/mcp"})
    assert "error=invalid_target" in foreign["Location"]
    other_audience = secrets.token_urlsafe(24)
    AccessToken.objects.create(
        user=alice,
        application=app,
        token=other_audience,
        scope="notes:read",
        expires=timezone.now() + timedelta(hours=1),
        resource=["https://elsewhere.example/mcp"],
    )
    response, _ = _as(client, other_audience).post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, validate=False
    )
    assert response.status_code == 401
    # Control: a code with PKCE and our resource becomes a token for this endpoint.
    verifier, challenge = _pkce()
    ok = client.post("/o/authorize/", {**query, "code_challenge": challenge, "allow": "Allow", "resource": RESOURCE})
    code = parse_qs(urlsplit(ok["Location"]).query)["code"][0]
    token = client.post(
        "/o/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1/cb",
            "client_id": app.client_id,
            "code_verifier": verifier,
            "resource": RESOURCE,
        },
    ).json()
    assert "get_weather" in _names(_as(client, token["access_token"]))
