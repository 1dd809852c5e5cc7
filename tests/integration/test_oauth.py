"""OAuth: DOT as the AS, /mcp as the resource server, scopes, step-up, rate limits, audit (A-1..A-9)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.core.management import call_command
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from mcp_tools.models import AuditEvent, ClientEntitlement, Scope, Tool
from tests.support.mcp_client import Mcp, check_message

RESOURCE = "http://testserver/mcp"
PRM_URL = "http://testserver/.well-known/oauth-protected-resource/mcp"


def make_token(user: User | None, scope: str, *, resource: list[str] | None = None, **extra: Any) -> str:
    app = Application.objects.create(
        name="t",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    raw = secrets.token_urlsafe(24)
    AccessToken.objects.create(
        user=user,
        application=app,
        token=raw,
        scope=scope,
        expires=extra.pop("expires", timezone.now() + timedelta(hours=1)),
        resource=[RESOURCE] if resource is None else resource,
        **extra,
    )
    return raw


def authed(client: Any, token: str | None) -> Mcp:
    mcp = Mcp(client).modern()
    if token is not None:
        mcp.default_headers["Authorization"] = f"Bearer {token}"
    return mcp


def names(mcp: Mcp) -> list[str]:
    out: list[str] = []
    cursor = None
    while True:
        result = mcp.call("tools/list", {"cursor": cursor} if cursor else {})
        out += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            return out


def auth_params(header: str) -> dict[str, str]:
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer"
    params = {}
    for part in rest.split('", '):
        key, _, value = part.partition("=")
        params[key.strip()] = value.strip().strip('"')
    return params


# --------------------------------------------------------------------------- discovery


def test_prm_at_path_and_root_names_our_resource(client: Any, oauth: None) -> None:
    """A-1, A-2: both well-known forms; resource == RESOURCE_URL; scopes the tools use."""
    for url in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = client.get(url)
        assert response.status_code == 200
        body = response.json()
        assert body["resource"] == RESOURCE
        assert body["authorization_servers"] == ["http://testserver"]
        assert body["scopes_supported"] == ["admin:tools", "notes:read", "notes:write"]
        assert "offline_access" not in body["scopes_supported"]
        assert response["Access-Control-Allow-Origin"] == "*"
    assert client.get("/.well-known/oauth-protected-resource/other").status_code == 404


def test_progressive_mode_advertises_only_advertised_scopes(client: Any, oauth: None, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "SCOPE_ADVERTISING": "progressive"}
    assert client.get("/.well-known/oauth-protected-resource/mcp").json()["scopes_supported"] == [
        "notes:read",
        "notes:write",
    ]


def test_as_metadata_issuer_pkce_registration(client: Any, oauth: None) -> None:
    """A-S2, A-S5: issuer equals PRM authorization_servers[0]; S256 only; DCR and CIMD."""
    body = client.get("/.well-known/oauth-authorization-server").json()
    assert body["issuer"] == "http://testserver"
    assert body["code_challenge_methods_supported"] == ["S256"]
    assert body["registration_endpoint"] == "http://testserver/o/register/"
    assert body["token_endpoint"] == "http://testserver/o/token/"
    assert body["client_id_metadata_document_supported"] is True
    assert body["authorization_response_iss_parameter_supported"] is True
    assert "none" in body["token_endpoint_auth_methods_supported"]
    assert set(body["scopes_supported"]) == {"admin:tools", "notes:read", "notes:write"}


@pytest.mark.parametrize(
    "path", ["/o/register/", "/o/token/", "/o/revoke_token/", "/.well-known/oauth-authorization-server"]
)
def test_cors_preflight_on_oauth_endpoints(client: Any, oauth: None, path: str) -> None:
    response = client.options(
        path, headers={"Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"}
    )
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "content-type" in response["Access-Control-Allow-Headers"]


# --------------------------------------------------------------------------- 401 and refused tokens


def test_no_token_is_401_with_challenge(client: Any, oauth: None) -> None:
    """A-2, A-3, A-4: no error code, resource_metadata and scope in the challenge."""
    response, _ = authed(client, None).post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, validate=False
    )
    assert response.status_code == 401
    params = auth_params(response["WWW-Authenticate"])
    assert params == {"resource_metadata": PRM_URL, "scope": "admin:tools notes:read notes:write"}
    assert response["Cache-Control"] == "no-store"
    assert response.json() == {"error": "invalid_token", "error_description": "Authentication required"}


def _refused(client: Any, token: str | None, name: str = "echo", arguments: Any = None) -> Any:
    """A modern tools/call whose answer is an OAuth error (not JSON-RPC): no schema check."""
    mcp = authed(client, token)
    response, _ = mcp.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {"text": "hi"}, "_meta": mcp_meta()},
        },
        headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name},
        validate=False,
    )
    return response


def mcp_meta() -> dict[str, Any]:
    from tests.support.mcp_client import modern_meta

    return modern_meta()


REFUSED_KINDS = [
    "unknown",
    "expired",
    "revoked",
    "unbound",
    "foreign",
    "registration",
    "client_credentials",
    "inactive",
]


@pytest.mark.parametrize("kind", REFUSED_KINDS)
def test_refused_token_kinds_never_reach_a_handler(client: Any, oauth: None, alice: User, kind: str) -> None:
    """A-6: every kind is 401 invalid_token with the challenge; no audit row, no handler."""
    if kind == "unknown":
        token = "not-a-token"
    elif kind == "expired":
        token = make_token(alice, "notes:read", expires=timezone.now() - timedelta(seconds=1))
    elif kind == "revoked":
        token = make_token(alice, "notes:read")
        app = AccessToken.objects.get(token=token).application
        revoked = client.post("/o/revoke_token/", {"token": token, "client_id": app.client_id})
        assert revoked.status_code == 200
    elif kind == "unbound":
        token = make_token(alice, "notes:read", resource=[])
    elif kind == "foreign":
        token = make_token(alice, "notes:read", resource=["https://other.example/mcp"])
    elif kind == "registration":
        # What DOT's DCR endpoint hands out: scope oauth2_provider:registration, no user.
        registered = client.post(
            "/o/register/",
            json.dumps({"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"}),
            content_type="application/json",
        )
        assert registered.status_code == 201, registered.content
        token = registered.json()["registration_access_token"]
    elif kind == "client_credentials":
        token = make_token(None, "notes:read")
    else:
        alice.is_active = False
        alice.save()
        token = make_token(alice, "notes:read")
    response = _refused(client, token)
    assert response.status_code == 401
    params = auth_params(response["WWW-Authenticate"])
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == PRM_URL
    assert AuditEvent.objects.count() == 0


def test_client_credentials_allowed_when_configured(client: Any, oauth: None, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "ALLOW_CLIENT_CREDENTIALS": True}
    token = make_token(None, "notes:read")
    app = AccessToken.objects.get(token=token).application
    ClientEntitlement.objects.create(client_id=app.client_id).scopes.set(Scope.objects.filter(name="notes:read"))
    mcp = authed(client, token)
    assert "get_weather" in names(mcp)
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    client_id = AccessToken.objects.get(token=token).application.client_id
    assert AuditEvent.objects.get().principal_key == f"client:{client_id}"


def test_token_in_query_string_is_refused(client: Any, oauth: None, alice: User) -> None:
    """A-9: tokens travel only in the Authorization header."""
    token = make_token(alice, "notes:read")
    response = client.post(
        f"/mcp?access_token={token}",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": mcp_meta()}}),
        content_type="application/json",
        headers={"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"},
    )
    assert response.status_code == 400
    assert auth_params(response["WWW-Authenticate"])["error"] == "invalid_request"


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_a_session_does_not_stand_in_for_the_token(client: Any, oauth: None, alice: User, version: str) -> None:
    """A-9: every request carries the token, sessions notwithstanding: a request on an existing
    session without it is 401 with the challenge (POST, GET stream, DELETE)."""
    mcp = Mcp(client)
    mcp.default_headers["Authorization"] = f"Bearer {make_token(alice, 'notes:read')}"
    mcp.initialize(version)
    assert "get_weather" in names(mcp)
    token = mcp.default_headers.pop("Authorization")
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}, validate=False)
    session = {"Mcp-Session-Id": mcp.session_id or "", "MCP-Protocol-Version": mcp.version or ""}
    stream = client.get("/mcp", headers={**session, "Accept": "text/event-stream"})
    delete = client.delete("/mcp", headers=session)
    for refused in (response, stream, delete):
        assert refused.status_code == 401
        assert auth_params(refused["WWW-Authenticate"]) == {
            "resource_metadata": PRM_URL,
            "scope": "admin:tools notes:read notes:write",
        }
    mcp.default_headers["Authorization"] = token  # the session is still there, with the token
    assert "get_weather" in names(mcp)


def test_uppercase_resource_variant_is_accepted(client: Any, oauth: None, alice: User) -> None:
    """A-8: scheme/host case and a trailing slash do not change the audience."""
    token = make_token(alice, "notes:read", resource=["HTTP://TestServer/mcp/"])
    assert "get_weather" in names(authed(client, token))


# --------------------------------------------------------------------------- scopes


def test_different_scopes_see_different_lists_and_implication_counts(client: Any, oauth: None, alice: User) -> None:
    none = names(authed(client, make_token(alice, "")))
    read = names(authed(client, make_token(alice, "notes:read")))
    write = names(authed(client, make_token(alice, "notes:write")))  # implies notes:read
    assert "get_weather" not in none
    assert "build_report" not in none
    assert "echo" in none
    assert "get_weather" in read
    assert "build_report" not in read
    assert set(read) < set(write)
    assert "build_report" in write
    assert "test_error_handling" not in write


def test_step_up_is_403_insufficient_scope(client: Any, oauth: None, alice: User) -> None:
    """A-5: a tool the user could be granted: 403 before the handler, scope = held + needed."""
    response = _refused(client, make_token(alice, "notes:read"), "build_report", {})
    assert response.status_code == 403
    params = auth_params(response["WWW-Authenticate"])
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "notes:read notes:write"
    assert params["resource_metadata"] == PRM_URL
    # Issue 34: the body is a JSON-RPC error of the request, naming the scope the token lacks (an
    # SDK shows its message; a bare OAuth body became "-32603 Server returned an error response").
    body = response.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", 1, -32600)
    assert body["error"]["message"] == (
        "Forbidden: Tool 'build_report' requires the scope notes:write; this token lacks notes:write. "
        "Authorize again asking for the scopes: notes:read notes:write"
    )
    assert body["error"]["data"] == {"error": "insufficient_scope", "scope": "notes:read notes:write"}
    check_message("2026-07-28", body)
    event = AuditEvent.objects.get()
    assert (event.tool_name, event.outcome, event.principal_key) == ("build_report", "denied", f"user:{alice.pk}")


def test_tool_the_user_can_never_get_is_an_unknown_tool(client: Any, oauth: None, alice: User) -> None:
    """A scope restricted to a group the user is not in: -32602 like a missing tool."""
    Scope.objects.get(name="admin:tools").groups.add(Group.objects.create(name="admins"))
    mcp = authed(client, make_token(alice, "notes:read"))
    hidden = mcp.request("tools/call", {"name": "test_error_handling", "arguments": {}})
    missing = mcp.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    for response, message, _ in (hidden, missing):
        assert response.status_code == 200
        assert message["error"]["code"] == -32602
    assert hidden[1]["error"]["message"].replace("test_error_handling", "X") == missing[1]["error"]["message"].replace(
        "no_such_tool", "X"
    )


def test_a_group_member_gets_the_step_up_for_a_group_restricted_scope(client: Any, oauth: None, alice: User) -> None:
    """A-5 with group-restricted scopes: a member could be granted it, so 403 (not -32602)."""
    admins = Group.objects.create(name="admins")
    Scope.objects.get(name="admin:tools").groups.add(admins)
    alice.groups.add(admins)
    response = _refused(client, make_token(alice, "notes:read"), "test_error_handling", {})
    assert response.status_code == 403
    scope = auth_params(response["WWW-Authenticate"])["scope"].split()
    assert "admin:tools" in scope
    assert "notes:read" in scope  # what the token already holds, as granted


def test_entitled_is_one_query(alice: User, django_assert_num_queries: Any) -> None:
    """Active scopes, unrestricted or restricted to a group alice is in (any of several)."""
    from mcp_tools.auth.oauth import grantable_scopes

    admins, staff, others = (Group.objects.create(name=n) for n in ("admins", "staff", "others"))
    Scope.objects.create(name="open")
    Scope.objects.create(name="off", active=False)
    Scope.objects.create(name="two").groups.add(admins, staff)
    Scope.objects.create(name="theirs").groups.add(others, admins)
    Scope.objects.create(name="admins_only").groups.add(admins)
    alice.groups.add(staff, others)
    wanted = ["two", "missing", "admins_only", "open", "off", "theirs"]
    with django_assert_num_queries(1):
        assert grantable_scopes(alice, wanted) == ["two", "open", "theirs"]
    alice.groups.clear()
    assert grantable_scopes(alice, wanted) == ["open"]


def test_scope_changes_bump_the_catalog_and_change_lists(client: Any, oauth: None, alice: User) -> None:
    from mcp_tools.models import CatalogVersion

    mcp = authed(client, make_token(alice, "notes:read"))
    assert "build_report" not in names(mcp)
    before = CatalogVersion.current()
    Scope.objects.get(name="notes:read").implies.add(Scope.objects.get(name="notes:write"))
    assert CatalogVersion.current() > before
    assert "build_report" in names(mcp)
    before = CatalogVersion.current()
    Scope.objects.filter(name="notes:write").update(active=False)  # bulk update: no bump...
    Scope.objects.get(name="notes:write").save()  # ...a save bumps
    assert CatalogVersion.current() > before
    assert "build_report" not in names(mcp)
    tool = Tool.objects.get(name="echo")
    before = CatalogVersion.current()
    tool.required_scopes.add(Scope.objects.get(name="admin:tools"))
    assert CatalogVersion.current() > before
    assert "echo" not in names(mcp)


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_authenticated_list_reads_the_catalog_version_once(client: Any, oauth: None, alice: User, version: str) -> None:
    """The token's scopes are expanded against the catalog the request uses: a tools/list is
    the token, the catalog version (once) and, for a legacy session, the session row."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mcp_tools.models import CatalogVersion

    mcp = Mcp(client)
    mcp.default_headers["Authorization"] = f"Bearer {make_token(alice, 'notes:write')}"
    if version == "2026-07-28":
        mcp.modern()
    else:
        mcp.initialize(version)
    warm = mcp.call("tools/list")  # the catalog is loaded once per version
    assert {"build_report", "get_weather"} <= {t["name"] for t in warm["tools"]}  # implied notes:read
    version_table = CatalogVersion._meta.db_table
    with CaptureQueriesContext(connection) as ctx:
        assert mcp.call("tools/list") == warm
    version_reads = [q["sql"] for q in ctx.captured_queries if version_table in q["sql"]]
    assert len(version_reads) == 1, ctx.captured_queries
    assert len(ctx) == (2 if version == "2026-07-28" else 3), ctx.captured_queries


def test_token_call_never_loads_the_user(client: Any, oauth: None, alice: User) -> None:
    """A tools/call with a DOT token is the token, the catalog version and the audit row: the
    user's row is not read (the audit trail takes the user's id from the token's row)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from mcp_tools.models import AuditEvent

    mcp = Mcp(client)
    mcp.default_headers["Authorization"] = f"Bearer {make_token(alice, 'notes:write')}"
    mcp.modern()
    arguments = {"name": "echo", "arguments": {"text": "hi"}}
    assert not mcp.call("tools/call", arguments).get("isError")  # warm: the catalog is loaded
    with CaptureQueriesContext(connection) as ctx:
        assert not mcp.call("tools/call", arguments).get("isError")
    user_table = User._meta.db_table
    user_reads = [q["sql"] for q in ctx.captured_queries if f'FROM "{user_table}"' in q["sql"]]
    assert not user_reads, ctx.captured_queries  # (the token's own query joins it: one query)
    assert len(ctx) == 3, ctx.captured_queries  # token, catalog version, audit row (immediate)
    assert AuditEvent.objects.filter(tool_name="echo", user=alice).count() == 2


def test_token_lookup_as_under_a_server_runs_on_the_driver_cursor(
    transactional_db: None, settings: Any, rf: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a server nothing records queries and no transaction is open: the token query runs
    on the driver's own cursor with this database's placeholders (the PostgreSQL pass of
    ``make test`` runs it there too). A valid, an expired and an unknown token."""
    from django.db import connections

    from mcp_tools.auth import AuthFailure, get_auth_backend
    from mcp_tools.models import CatalogVersion

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.DOTBackend"}
    bob = User.objects.create_user("bob", password="pw-bob")
    good = make_token(bob, "notes:write notes:read")
    old = make_token(bob, "notes:write", expires=timezone.now() - timedelta(minutes=1))
    CatalogVersion.objects.update_or_create(pk=1, defaults={"version": 7})
    connection = connections["default"]
    assert not connection.in_atomic_block

    def no_django_cursor() -> None:
        raise AssertionError("Django's cursor was used")

    backend = get_auth_backend()
    with monkeypatch.context() as patched:
        patched.setattr(connection, "cursor", no_django_cursor)
        principal = backend.authenticate(rf.post("/mcp", HTTP_AUTHORIZATION=f"Bearer {good}"))
        assert CatalogVersion.current() == 7  # the other hot-path read, the same way
    assert principal.user_id == bob.pk
    assert principal.granted == {"notes:write", "notes:read"}
    for raw, says in ((old, "expired"), ("not-a-token", "not valid")):  # (the challenge reads scopes)
        with pytest.raises(AuthFailure) as failure:
            backend.authenticate(rf.post("/mcp", HTTP_AUTHORIZATION=f"Bearer {raw}"))
        assert failure.value.status == 401
        assert says in failure.value.description


def test_driver_cursor_errors_become_djangos_and_mark_the_connection(transactional_db: None) -> None:
    """An error on the driver's cursor (``models.raw.fetch_one``) is raised as Django's, and the
    connection is marked as having had an error, as Django's cursor does: a broken connection is
    then replaced at the end of the request instead of serving the next one."""
    from django.db import DatabaseError, connections

    from mcp_tools.models.raw import fetch_one

    connection = connections["default"]
    assert not connection.in_atomic_block
    connection.errors_occurred = False
    with pytest.raises(DatabaseError):
        fetch_one(connection, "SELECT version FROM mcp_tools_no_such_table WHERE id = %s", (1,))
    assert connection.errors_occurred
    connection.errors_occurred = False
    assert fetch_one(connection, "SELECT 1") == (1,)


def test_granted_scopes_not_yet_expanded_show_nothing(oauth: None) -> None:
    """A principal whose granted scopes were not expanded (Catalog.scoped) sees no tool, not all."""
    from mcp_tools.auth import get_auth_backend
    from mcp_tools.catalog import get_catalog
    from mcp_tools.types import Principal

    catalog = get_catalog()
    tool = catalog.get("echo")  # needs no scope
    assert tool is not None
    principal = Principal("user:x", granted=frozenset({"notes:read"}))
    assert not get_auth_backend().can_see(tool, principal)
    assert get_auth_backend().can_see(tool, catalog.scoped(principal))
    assert catalog.scoped(principal).scopes == {"notes:read"}


def test_filtering_1000_tools_20_scopes_every_page(client: Any, oauth: None, alice: User, settings: Any) -> None:
    """Two tokens over 1,000 tools x 20 scopes: every page is exactly the expected filter."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": 37, "RATE_LIMIT": "off"}
    rng = random.Random(7)
    scopes = [Scope.objects.create(name=f"s{i:02d}") for i in range(20)]
    # s00 implies s01 implies s02 (transitively); s10 implies s11.
    scopes[0].implies.add(scopes[1])
    scopes[1].implies.add(scopes[2])
    scopes[10].implies.add(scopes[11])
    tools = Tool.objects.bulk_create(
        [
            Tool(name=f"t{i:04d}", handler_key="demo.echo", input_schema={"type": "object"})
            for i in rng.sample(range(5000), 1000)
        ]
    )
    through = Tool.required_scopes.through
    required: dict[str, set[str]] = {}
    links = []
    for tool in tools:
        chosen = rng.sample(scopes, rng.choice([0, 1, 1, 2, 3]))
        required[tool.name] = {s.name for s in chosen}
        links += [through(tool_id=tool.pk, scope_id=s.pk) for s in chosen]
    through.objects.bulk_create(links)
    from mcp_tools.models import CatalogVersion

    CatalogVersion.bump()
    base = set(Tool.objects.exclude(name__in=required).values_list("name", flat=True))
    base_required = {t.name: {s.name for s in t.required_scopes.all()} for t in Tool.objects.exclude(name__in=required)}
    required.update(base_required)
    for granted, expanded in (
        ("s00 s10 s15", {"s00", "s01", "s02", "s10", "s11", "s15"}),
        ("s02 s05 s11 s19 notes:read", {"s02", "s05", "s11", "s19", "notes:read"}),
    ):
        expected = sorted(n for n, req in required.items() if req <= expanded)
        mcp = authed(client, make_token(alice, granted))
        cursor = None
        pages: list[list[str]] = []
        while True:
            result = mcp.call("tools/list", {"cursor": cursor} if cursor else {})
            pages.append([t["name"] for t in result["tools"]])
            cursor = result.get("nextCursor")
            if not cursor:
                break
        flat = [n for page in pages for n in page]
        assert flat == expected
        assert all(len(p) == 37 for p in pages[:-1])
        assert 0 < len(pages[-1]) <= 37
        assert len(expected) > 100
        assert len(expected) < len(required)
    assert base  # the demo tools are in the catalog too


# --------------------------------------------------------------------------- headless full flow


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def test_full_flow_headless(client: Any, oauth: None, alice: User) -> None:
    """Discovery from a 401, PRM, AS metadata, DCR, authorize with PKCE and consent, token
    with resource, then MCP calls with the token (filtered list, step-up, success)."""
    mcp = authed(client, None)
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, validate=False)
    assert response.status_code == 401
    challenge = auth_params(response["WWW-Authenticate"])
    prm = client.get(urlsplit(challenge["resource_metadata"]).path).json()
    issuer = prm["authorization_servers"][0]
    asm = client.get("/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == issuer
    registered = client.post(
        urlsplit(asm["registration_endpoint"]).path,
        json.dumps(
            {
                "redirect_uris": ["http://127.0.0.1/callback"],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "client_name": "Headless test client",
            }
        ),
        content_type="application/json",
    )
    assert registered.status_code == 201, registered.content
    client_id = registered.json()["client_id"]
    verifier, code_challenge = pkce_pair()
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": "http://127.0.0.1:5555/callback",  # loopback: any port
        "code_challenge": code_challenge,
        "code_challenge_method": "S256",
        "scope": "notes:read",
        "state": "st-1",
        "resource": prm["resource"],
    }
    authorize = urlsplit(asm["authorization_endpoint"]).path
    assert client.get(authorize, query).status_code == 302  # to the login page
    client.force_login(alice)
    page = client.get(authorize, query)
    assert page.status_code == 200
    html = page.content.decode()
    assert "Headless test client" in html
    assert 'id="redirect-host">127.0.0.1<' in html
    assert "notes:read" in html
    assert "Warning" in html
    consent = client.post(authorize, {**query, "allow": "Allow"})
    assert consent.status_code == 302
    location = parse_qs(urlsplit(consent["Location"]).query)
    assert location["state"] == ["st-1"]
    assert location["iss"] == [issuer]
    token_response = client.post(
        urlsplit(asm["token_endpoint"]).path,
        {
            "grant_type": "authorization_code",
            "code": location["code"][0],
            "redirect_uri": query["redirect_uri"],
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": prm["resource"],
        },
    )
    assert token_response.status_code == 200, token_response.content
    tokens = token_response.json()
    assert tokens["scope"] == "notes:read"
    assert AccessToken.objects.get(token=tokens["access_token"]).resource == [RESOURCE]
    client.logout()  # the MCP endpoint never uses the session cookie
    mcp = authed(client, tokens["access_token"])
    listed = names(mcp)
    assert "get_weather" in listed
    assert "build_report" not in listed
    assert mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}}).get("isError", False) is False
    assert _refused(client, tokens["access_token"], "build_report", {}).status_code == 403
    # Refresh with a trailing-slash resource: canonicalised, still bound to RESOURCE_URL.
    refreshed = client.post(
        "/o/token/",
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": client_id,
            "resource": RESOURCE + "/",
        },
    )
    assert refreshed.status_code == 200, refreshed.content
    assert "echo" in names(authed(client, refreshed.json()["access_token"]))


def test_authorize_without_resource_binds_to_ours_and_foreign_is_invalid_target(
    client: Any, oauth: None, alice: User
) -> None:
    app = Application.objects.create(
        name="c",
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )
    client.force_login(alice)
    verifier, code_challenge = pkce_pair()
    base = {
        "response_type": "code",
        "client_id": app.client_id,
        "redirect_uri": "http://127.0.0.1/cb",
        "code_challenge": code_challenge,
        "code_challenge_method": "S256",
        "scope": "notes:read openid profile",  # unknown scopes are dropped, not fatal
        "state": "s",
    }
    consent = client.post("/o/authorize/", {**base, "allow": "Allow"})
    code = parse_qs(urlsplit(consent["Location"]).query)["code"][0]
    token = client.post(
        "/o/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1/cb",
            "client_id": app.client_id,
            "code_verifier": verifier,
        },
    ).json()
    assert token["scope"] == "notes:read"
    assert AccessToken.objects.get(token=token["access_token"]).resource == [RESOURCE]
    foreign = client.post("/o/authorize/", {**base, "allow": "Allow", "resource": "https://evil.example/api"})
    assert "error=invalid_target" in foreign["Location"]
    plain = client.post(
        "/o/authorize/", {**base, "allow": "Allow", "code_challenge_method": "plain", "code_challenge": "x" * 43}
    )
    # RFC 9700: "plain" PKCE is refused with an error redirect, never a code.
    assert "error=invalid_request" in plain["Location"]
    assert "code=" not in plain["Location"]


def test_dcr_policy(client: Any, oauth: None, settings: Any) -> None:
    def register(body: dict[str, Any]) -> Any:
        return client.post("/o/register/", json.dumps(body), content_type="application/json")

    assert register({"redirect_uris": ["http://evil.example/cb"]}).status_code == 400
    assert register({"redirect_uris": ["cursor://cb"]}).status_code == 400
    assert register({"redirect_uris": []}).json()["error"] == "invalid_redirect_uri"
    assert client.post("/o/register/", b"nope", content_type="application/json").status_code == 400
    both = register(
        {
            "redirect_uris": ["https://claude.ai/api/mcp/auth_callback", "http://[::1]:3000/cb"],
            "grant_types": ["authorization_code", "client_credentials", "refresh_token"],
            "token_endpoint_auth_method": "none",
        }
    )
    assert both.status_code == 201, both.content
    assert "client_credentials" not in both.json()["grant_types"]
    # The registrations above counted too (same IP, same window): start a fresh window.
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "REGISTRATION_RATE_LIMIT": "2/h"}
    cache.clear()
    codes = [register({"redirect_uris": ["http://127.0.0.1/cb"]}).status_code for _ in range(4)]
    assert codes == [201, 201, 429, 429]


# --------------------------------------------------------------------------- mcp_token


def test_mcp_token_command(client: Any, oauth: None, alice: User) -> None:
    out = io.StringIO()
    call_command("mcp_token", "--user", "alice", "--scopes", "notes:read", "--expires", "60", stdout=out)
    token = out.getvalue().strip().splitlines()[-1]
    listed = names(authed(client, token))
    assert "get_weather" in listed
    assert "build_report" not in listed
    row = AccessToken.objects.get(token=token)
    assert row.resource == [RESOURCE]
    assert 50 < (row.expires - timezone.now()).total_seconds() <= 60
    out = io.StringIO()
    call_command("mcp_token", "--user", "alice", "--scopes", "all", stdout=out)
    assert AccessToken.objects.get(token=out.getvalue().strip().splitlines()[-1]).scope == (
        "admin:tools notes:read notes:write"
    )
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Unknown"):
        call_command("mcp_token", "--user", "alice", "--scopes", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="No active user"):
        call_command("mcp_token", "--user", "bob", "--scopes", "all", stdout=io.StringIO())


def test_mcp_token_grants_only_scopes_the_user_may_get(oauth: None, alice: User) -> None:
    """The consent page's rule: a scope restricted to a group alice is not in is never granted."""
    from django.core.management.base import CommandError

    admins = Group.objects.create(name="admins")
    Scope.objects.get(name="admin:tools").groups.add(admins)
    out = io.StringIO()
    call_command("mcp_token", "--user", "alice", "--scopes", "all", stdout=out)
    assert AccessToken.objects.get(token=out.getvalue().strip().splitlines()[-1]).scope == "notes:read notes:write"
    with pytest.raises(CommandError, match="not allowed for alice: admin:tools$"):
        call_command("mcp_token", "--user", "alice", "--scopes", "notes:read admin:tools", stdout=io.StringIO())
    alice.groups.add(admins)
    out = io.StringIO()
    call_command("mcp_token", "--user", "alice", "--scopes", "notes:read admin:tools", stdout=out)
    assert AccessToken.objects.get(token=out.getvalue().strip().splitlines()[-1]).scope == "admin:tools notes:read"


# --------------------------------------------------------------------------- audit


def test_audit_rows_and_redaction(client: Any, oauth: None, alice: User) -> None:
    tool = Tool.objects.get(name="echo")
    tool.sensitive_arguments = ["text"]
    tool.save()
    mcp = authed(client, make_token(alice, "notes:read"))
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "my secret"}})
    mcp.request("tools/call", {"name": "add", "arguments": {"a": "x", "api_key": "k", "b": [1, 2]}})
    mcp.request("tools/call", {"name": "missing", "arguments": {}})
    echo, add, missing = AuditEvent.objects.order_by("pk")
    assert echo.arguments == {"text": "[redacted]"}  # the tool's sensitive_arguments
    assert "my secret" not in json.dumps(echo.arguments)
    assert (echo.outcome, echo.tool_version, echo.principal_key, echo.user_id) == (
        "ok",
        tool.version,
        f"user:{alice.pk}",
        alice.pk,
    )
    assert echo.client_id
    assert echo.request_id
    assert echo.protocol_version == "2026-07-28"
    assert echo.duration_ms > 0
    # AUDIT_REDACT_NAMES redact by name; containers are summarised, never stored whole.
    assert add.outcome == "invalid"
    assert add.arguments == {"a": "x", "api_key": "[redacted]", "b": "[list of 2]"}
    assert missing.outcome == "invalid"
    assert missing.tool_version is None
    AuditEvent.objects.filter(pk=echo.pk).update(created_at=timezone.now() - timedelta(days=100))
    out = io.StringIO()
    call_command("mcp_purge_audit", stdout=out)
    assert "Deleted 1" in out.getvalue()
    assert AuditEvent.objects.count() == 2


def test_audit_purge_deletes_in_batches(db: None) -> None:
    from mcp_tools import audit

    old = timezone.now() - timedelta(days=100)
    AuditEvent.objects.bulk_create(
        [AuditEvent(principal_key="p", tool_name="echo", outcome="ok", created_at=old) for _ in range(5)]
        + [AuditEvent(principal_key="p", tool_name="echo", outcome="ok")]
    )
    assert audit.purge(days=30, batch_size=2) == 5
    assert AuditEvent.objects.count() == 1


def test_audit_purge_beat_task(db: None) -> None:
    """The Celery task the README's beat schedule names lives in mcp_tools.tasks (autodiscovered)."""
    from mcp_tools.tasks import purge_audit_events

    assert purge_audit_events.name == "mcp_tools.purge_audit_events"
    AuditEvent.objects.create(
        principal_key="p", tool_name="echo", outcome="ok", created_at=timezone.now() - timedelta(days=100)
    )
    assert purge_audit_events() == 1
    assert not AuditEvent.objects.exists()


def test_audit_admin_lists_and_filters(admin_client: Any, oauth: None, alice: User) -> None:
    mcp = authed(admin_client, make_token(alice, "notes:read"))
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    page = admin_client.get("/admin/mcp_tools/auditevent/?outcome__exact=ok")
    assert page.status_code == 200
    assert "echo" in page.content.decode()
    assert admin_client.get("/admin/mcp_tools/scope/").status_code == 200
    assert admin_client.get("/admin/mcp_tools/scope/add/").status_code == 200


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://testserver/mcp", []),
        (None, ["mcp_tools.E002"]),
        ("http://testserver/mcp/", ["mcp_tools.E002"]),
        ("HTTP://TestServer/mcp", ["mcp_tools.E002"]),
        ("http://elsewhere/mcp", ["mcp_tools.W003"]),
    ],
)
def test_oauth_checks(settings: Any, url: str | None, expected: list[str]) -> None:
    from mcp_tools.checks import check_settings

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.DOTBackend", "RESOURCE_URL": url}
    assert [m.id for m in check_settings()] == expected
