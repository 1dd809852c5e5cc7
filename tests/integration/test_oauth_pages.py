"""The authorization server's pages and what hosted clients read (issue 34 item 2 and its hosted
client parts): sign-in without a view of the site's own, the package's consent page, the AS
metadata as served, the entitlement of client-credentials applications in the admin, and the
checks W023-W025."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from mcp_tools.models import ClientEntitlement, Scope

pytestmark = pytest.mark.django_db

RESOURCE = "http://testserver/mcp"


def _app(redirect: str = "http://127.0.0.1/cb", **extra: Any) -> Application:
    return Application.objects.create(
        name=extra.pop("name", "Notes helper"),
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=redirect,
        **extra,
    )


def _query(app: Application, redirect: str = "http://127.0.0.1/cb", **extra: str) -> dict[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": redirect,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "scope": "notes:read notes:write",
        "state": "st",
        "resource": RESOURCE,
        **extra,
    }


# --------------------------------------------------------------------------- sign-in


def test_a_site_without_a_sign_in_view_sends_people_to_the_packages_page(
    client: Client, oauth: None, alice: User
) -> None:
    """Issue 34: the authorize redirect dead-ended at /accounts/login/ (404). With no view at
    LOGIN_URL, the consent page sends people to the package's sign-in page, and back."""
    app = _app()
    query = _query(app)
    first = client.get("/o/authorize/", query)
    assert first.status_code == 302
    login = urlsplit(first["Location"])
    assert login.path == "/o/login/"
    page = client.get(first["Location"])
    assert page.status_code == 200
    assert 'id="sign-in"' in page.content.decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert csrf is not None
    nxt = parse_qs(login.query)["next"][0]
    hidden = re.search(r'<input type="hidden" name="next" value="([^"]*)"', page.content.decode())
    assert hidden is not None
    assert hidden.group(1).replace("&amp;", "&") == nxt
    signed_in = client.post(
        "/o/login/",
        {"username": "alice", "password": "pw-alice", "next": hidden.group(1).replace("&amp;", "&"),
         "csrfmiddlewaretoken": csrf.group(1)},
    )  # fmt: skip
    assert signed_in.status_code == 302
    assert signed_in["Location"] == nxt
    consent = client.get(nxt)
    assert consent.status_code == 200
    assert 'id="client-name">Notes helper<' in consent.content.decode()


def test_a_site_with_its_own_sign_in_keeps_it(client: Client, oauth: None, settings: Any) -> None:
    settings.LOGIN_URL = "/admin/login/"
    first = client.get("/o/authorize/", _query(_app()))
    assert urlsplit(first["Location"]).path == "/admin/login/"
    settings.LOGIN_URL = "https://sso.example/login"  # another host: not ours to check
    assert client.get("/o/authorize/", _query(_app(name="b")))["Location"].startswith("https://sso.example/login?")


def test_w020_names_the_missing_sign_in_view(settings: Any) -> None:
    from mcp_tools.checks import check_authorization_server

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.DOTBackend"}
    assert [m.id for m in check_authorization_server()] == []
    settings.ROOT_URLCONF = "tests.urls_oauth_without_sign_in"
    messages = check_authorization_server()
    assert [m.id for m in messages] == ["mcp_tools.W023"]
    assert "/accounts/login/" in messages[0].msg
    settings.LOGIN_URL = "/admin/login/"
    assert check_authorization_server() == []


def test_w021_and_w022(settings: Any) -> None:
    from mcp_tools.checks import check_authorization_server

    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTH_BACKEND": "mcp_tools.auth.DOTBackend",
        "PRIVATE_REDIRECT_SCHEMES": ["cursor"],
        "ALLOW_CLIENT_CREDENTIALS": True,
    }
    assert [m.id for m in check_authorization_server()] == ["mcp_tools.W024"]
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "cursor"],
        "APPLICATION_ADMIN_CLASS": "oauth2_provider.admin.ApplicationAdmin",
    }
    assert [m.id for m in check_authorization_server()] == ["mcp_tools.W025"]


# --------------------------------------------------------------------------- consent


def test_the_consent_page_names_client_source_redirect_host_and_scopes(
    client: Client, oauth: None, alice: User
) -> None:
    Scope.objects.filter(name="notes:read").update(description="Read your notes")
    app = _app("https://notes.example/oauth/cb")
    client.force_login(alice)
    page = client.get("/o/authorize/", _query(app, "https://notes.example/oauth/cb"))
    html = page.content.decode()
    assert page.status_code == 200
    assert page.templates[0].name == "mcp_tools/oauth/authorize.html"
    assert 'id="client-name">Notes helper<' in html
    assert 'id="redirect-host">notes.example<' in html
    assert "Registered by this site&#x27;s administrators" in html
    assert "Read your notes" in html
    assert 'id="loopback-warning"' not in html
    loopback = client.get("/o/authorize/", _query(_app(name="cli")))
    assert 'id="loopback-warning"' in loopback.content.decode()


def test_a_cimd_client_is_named_by_its_documents_host(client: Client, oauth: None, alice: User) -> None:
    app = _app(
        "https://claude.ai/api/mcp/auth_callback",
        name="Claude",
        client_id="https://claude.ai/oauth/mcp-oauth-client-metadata",
        registration_source="cimd",
    )
    client.force_login(alice)
    html = client.get("/o/authorize/", _query(app, "https://claude.ai/api/mcp/auth_callback")).content.decode()
    assert 'id="client-id-host">claude.ai<' in html
    assert "Identified by a document it publishes" in html


def test_a_client_cannot_skip_the_consent_page(client: Client, oauth: None, alice: User) -> None:
    """Consent on every connection: ``approval_prompt=auto`` from the client does not turn an
    earlier grant (a live token of the same application and scopes) into a silent one."""
    app = _app()
    AccessToken.objects.create(
        user=alice,
        application=app,
        token=secrets.token_urlsafe(24),
        scope="notes:read notes:write",
        expires=timezone.now() + timedelta(hours=1),
        resource=[RESOURCE],
    )
    client.force_login(alice)
    again = client.get("/o/authorize/", {**_query(app), "approval_prompt": "auto"})
    assert again.status_code == 200  # the page, not a redirect carrying a code
    assert 'id="authorizationForm"' in again.content.decode()


def test_a_site_can_override_the_consent_page(
    client: Client, oauth: None, alice: User, settings: Any, tmp_path: Any
) -> None:
    folder = tmp_path / "mcp_tools" / "oauth"
    folder.mkdir(parents=True)
    (folder / "authorize.html").write_text("<p>Ours: {{ client_name }} to {{ redirect_host }}</p>")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    client.force_login(alice)
    html = client.get("/o/authorize/", _query(_app())).content.decode()
    assert html == "<p>Ours: Notes helper to 127.0.0.1</p>"


# --------------------------------------------------------------------------- metadata


def test_metadata_offers_cimd_with_none_whatever_the_methods_setting(
    client: Client, oauth: None, settings: Any
) -> None:
    """Claude uses CIMD only when the metadata lists none among the token endpoint's methods;
    a site that sets the methods without it (DOT's default) still offers it while CIMD is on."""
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["client_secret_basic", "client_secret_post"],
    }
    body = client.get("/.well-known/oauth-authorization-server").json()
    assert body["client_id_metadata_document_supported"] is True
    assert body["token_endpoint_auth_methods_supported"] == ["none", "client_secret_basic", "client_secret_post"]
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_ENABLED": False}
    body = client.get("/.well-known/oauth-authorization-server").json()
    assert body["client_id_metadata_document_supported"] is False
    assert "none" not in body["token_endpoint_auth_methods_supported"]


def test_metadata_lists_only_mounted_endpoints(client: Client, oauth: None) -> None:
    body = client.get("/.well-known/oauth-authorization-server").json()
    endpoints = {k: v for k, v in body.items() if k.endswith("_endpoint")}
    assert endpoints == {
        "authorization_endpoint": "http://testserver/o/authorize/",
        "token_endpoint": "http://testserver/o/token/",
        "revocation_endpoint": "http://testserver/o/revoke_token/",
        "registration_endpoint": "http://testserver/o/register/",
    }
    for url in endpoints.values():
        assert client.options(urlsplit(url).path).status_code in (200, 204, 302, 405)


def test_a_cimd_document_passes_the_registration_policy(settings: Any) -> None:
    from oauth2_provider.cimd import CIMDError

    from mcp_tools.oauth.registration import PolicedMetadataFetcher

    class Fixed(PolicedMetadataFetcher):
        document: dict[str, Any] = {}

        def fetch_document(self, client_id: str) -> tuple[dict[str, Any], int]:
            return dict(self.document), 600

    Fixed.document = {
        "client_id": "https://c.example/m.json",
        "redirect_uris": ["http://evil.example/cb", "https://c.example/cb"],
        "grant_types": ["client_credentials", "authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    }
    metadata, _ = Fixed().fetch("https://c.example/m.json")
    assert metadata["redirect_uris"] == ["https://c.example/cb"]
    assert metadata["grant_types"] == ["authorization_code", "refresh_token"]
    Fixed.document = {**Fixed.document, "redirect_uris": ["http://evil.example/cb"]}
    with pytest.raises(CIMDError):
        Fixed().fetch("https://c.example/m.json")


# --------------------------------------------------------------------------- the admin


def _machine_app_form(admin: Client, scopes: list[Scope], **extra: Any) -> Any:
    page = admin.get("/admin/oauth2_provider/application/add/")
    assert page.status_code == 200
    data = {
        "client_id": "nightly-job",
        "client_secret": "s" * 40,
        "hash_client_secret": "on",
        "client_type": "confidential",
        "authorization_grant_type": "client-credentials",
        "name": "Nightly job",
        "algorithm": "",
        "redirect_uris": "",
        "post_logout_redirect_uris": "",
        "allowed_origins": "",
        "mcp_client_credentials_scopes": [s.pk for s in scopes],
        **extra,
    }
    return admin.post("/admin/oauth2_provider/application/add/", data)


def test_the_admin_edits_a_machines_entitlement_on_its_application_page(admin_client: Client, oauth: None) -> None:
    page = admin_client.get("/admin/oauth2_provider/application/add/").content.decode()
    assert "MCP scopes (client credentials)" in page
    read = Scope.objects.get(name="notes:read")
    saved = _machine_app_form(admin_client, [read])
    assert saved.status_code == 302, saved.context["adminform"].form.errors if saved.context else saved
    assert ClientEntitlement.scopes_of("nightly-job") == {"notes:read"}
    app = Application.objects.get(client_id="nightly-job")
    change = admin_client.get(f"/admin/oauth2_provider/application/{app.pk}/change/").content.decode()
    assert re.search(rf'value="{read.pk}"[^>]*checked', change)
    # A people's application cannot be given an entitlement here.
    refused = _machine_app_form(
        admin_client, [read], client_id="people", authorization_grant_type="authorization-code",
        redirect_uris="https://p.example/cb",
    )  # fmt: skip
    assert refused.status_code == 200
    assert "Only a client-credentials application" in refused.content.decode()


def test_editing_an_entitlement_needs_its_own_permission(oauth: None) -> None:
    staff = User.objects.create_user("ops", password="pw", is_staff=True)
    staff.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="oauth2_provider", codename__endswith="_application")
    )
    admin = Client()
    admin.force_login(staff)
    admin_tools = Scope.objects.get(name="admin:tools")
    saved = _machine_app_form(admin, [admin_tools])
    assert saved.status_code == 302
    assert ClientEntitlement.scopes_of("nightly-job") is None  # the field was disabled: nothing stored
    page = admin.get("/admin/oauth2_provider/application/add/").content.decode()
    assert re.search(r'name="mcp_client_credentials_scopes"[^>]*disabled', page)
