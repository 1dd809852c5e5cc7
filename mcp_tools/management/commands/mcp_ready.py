"""Say what stands between this site and the hosted MCP clients (Claude, ChatGPT, VS Code, Cursor).

Each check reads the settings or asks the site itself, in process, through its own URLconf and
middleware (the metadata documents, the sign-in and consent pages), and plays each client's
documented dynamic registration inside a transaction that is rolled back, so nothing is stored.
A gap blocks a client; a note may (it depends on how the site is deployed). The command exits
with status 1 when a named client has a gap.
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import SplitResult, urlsplit

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

__all__ = ["Command"]

CLAUDE, CHATGPT, VSCODE, CURSOR = "Claude", "ChatGPT", "VS Code", "Cursor"
CLIENTS = (CLAUDE, CHATGPT, VSCODE, CURSOR)
OPTION_NAMES = {"claude": CLAUDE, "chatgpt": CHATGPT, "vscode": VSCODE, "cursor": CURSOR}

# What each client registers by DCR, from its documentation and issue trackers (docs: how-to
# "Connect hosted clients"): its callback URLs, the grants and the auth method.
REGISTRATIONS: dict[str, dict[str, Any]] = {
    CLAUDE: {
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    },
    CHATGPT: {
        "client_name": "ChatGPT",
        "redirect_uris": ["https://chatgpt.com/connector_platform_oauth_redirect"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    VSCODE: {
        "client_name": "Visual Studio Code",
        "redirect_uris": [
            "https://insiders.vscode.dev/redirect",
            "https://vscode.dev/redirect",
            "http://127.0.0.1/",
            "http://127.0.0.1:33418/",
        ],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    },
    CURSOR: {
        "client_name": "Cursor",
        "redirect_uris": [
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "http://localhost:8787/callback",
        ],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none",
    },
}
CIMD_CLIENTS = (CLAUDE, VSCODE, CHATGPT)  # those that name themselves by a metadata document URL


@dataclass
class Finding:
    ok: bool
    text: str
    clients: tuple[str, ...] = CLIENTS  # who it blocks (a gap) or may block (a note)
    note: bool = False  # depends on the deployment: said, not counted

    @property
    def label(self) -> str:
        return "ok  " if self.ok else ("note" if self.note else "GAP ")


@dataclass
class Report:
    resource: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, ok: bool, text: str, clients: tuple[str, ...] = CLIENTS, *, note: bool = False) -> bool:
        self.findings.append(Finding(ok, text, clients, note))
        return ok

    def gaps(self, client: str) -> list[int]:
        return [i for i, f in enumerate(self.findings, 1) if not f.ok and not f.note and client in f.clients]


class _Rollback(Exception):
    pass


def _public_host(host: str) -> bool:
    host = host.lower().strip("[]")
    if not host or host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".lan")):
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." in host
    return address.is_global


def readiness() -> Report:
    from ...conf import mcp_settings

    url = str(mcp_settings.RESOURCE_URL or "")
    report = Report(url)
    backend = mcp_settings.AUTH_BACKEND
    if not _takes_oauth(report, backend):
        return report
    parts = _deployment(report, url)
    if parts is None:
        return report
    site = _Site(parts)
    prm = _resource_metadata(report, site, url)
    if not _own_authorization_server(report, backend):
        return report
    issuer = (prm.get("authorization_servers") or [site.origin])[0]
    status, meta = site.get("/.well-known/oauth-authorization-server")
    if not report.add(
        status == 200 and meta.get("issuer") == issuer,
        f"Authorization server metadata at /.well-known/oauth-authorization-server, issuer {issuer} (HTTP {status})",
    ):
        return report
    _authorization_server(report, meta, issuer)
    if meta.get("registration_endpoint"):
        refresh = "refresh_token" in (meta.get("grant_types_supported") or ())
        for client, body in REGISTRATIONS.items():
            answer = _dry_run_registration(site.http, str(meta["registration_endpoint"]), body, site.secure)
            _registration(report, client, body, answer, refresh)
    _sign_in(report)
    report.add(*_consent_page(), CLIENTS)
    return report


def _takes_oauth(report: Report, backend: Any) -> bool:
    from ...auth.oauth import OAuthBackend

    takes = isinstance(backend, type) and issubclass(backend, OAuthBackend)
    return report.add(
        takes,
        "The endpoint takes OAuth tokens (MCP_TOOLS['AUTH_BACKEND'] is DOTBackend or JWTBackend)"
        if takes
        else "The endpoint does not take OAuth tokens: set MCP_TOOLS['AUTH_BACKEND'] to mcp_tools.auth.DOTBackend "
        "(the site is its own authorization server) or JWTBackend (an external one)",
    )


def _deployment(report: Report, url: str) -> SplitResult | None:
    """The resource URL, the hosts and the proxy settings; the URL's parts when the site can be asked."""
    from django.conf import settings
    from django.http.request import validate_host

    from ...auth.oauth import canonical_resource

    parts = urlsplit(url)
    if not report.add(
        bool(url) and canonical_resource(url) == url and parts.scheme in ("http", "https"),
        f"RESOURCE_URL is the endpoint's canonical absolute URL ({url or 'unset'})",
    ):
        return None
    host = parts.hostname or ""
    report.add(
        parts.scheme == "https" and _public_host(host),
        f"RESOURCE_URL is public HTTPS: hosted clients reach the server from the internet over TLS ({url})",
    )
    hosts_ok = validate_host(host, settings.ALLOWED_HOSTS or [])
    report.add(hosts_ok, f"ALLOWED_HOSTS accepts {parts.netloc}")
    if parts.scheme == "https":
        _csrf_behind_a_proxy(report, f"{parts.scheme}://{parts.netloc}")
    return parts if hosts_ok else None


def _csrf_behind_a_proxy(report: Report, origin: str) -> None:
    from django.conf import settings

    proxied = bool(getattr(settings, "SECURE_PROXY_SSL_HEADER", None))
    trusted = origin in (getattr(settings, "CSRF_TRUSTED_ORIGINS", None) or [])
    report.add(
        proxied or trusted,
        "Sign-in and consent forms pass CSRF behind a TLS-terminating proxy (SECURE_PROXY_SSL_HEADER, or "
        f"{origin} in CSRF_TRUSTED_ORIGINS); without either, only a server that speaks TLS itself works",
        note=True,
    )


class _Site:
    """The site asked in process, under the resource URL's host and scheme."""

    def __init__(self, parts: SplitResult) -> None:
        from django.test import Client

        self.parts = parts
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.secure = parts.scheme == "https"
        # Its own rate-limit bucket: the dry-run registrations do not count against a real client.
        self.http = Client(
            HTTP_HOST=parts.netloc, REMOTE_ADDR=f"mcp-ready-{uuid.uuid4().hex}", raise_request_exception=False
        )

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        response = self.http.get(path, secure=self.secure)
        try:
            return response.status_code, dict(orjson.loads(response.content))
        except (orjson.JSONDecodeError, TypeError, ValueError):
            return response.status_code, {}


def _resource_metadata(report: Report, site: _Site, url: str) -> dict[str, Any]:
    path = site.parts.path
    status, prm = site.get(f"/.well-known/oauth-protected-resource{path}")
    report.add(
        status == 200 and prm.get("resource") == url and bool(prm.get("authorization_servers")),
        f"Protected resource metadata at /.well-known/oauth-protected-resource{path} names the resource and "
        f"its authorization server (HTTP {status})",
    )
    status_root, _ = site.get("/.well-known/oauth-protected-resource")
    report.add(status_root == 200, f"...and at the root form (HTTP {status_root}), which some clients read first")
    return prm


def _own_authorization_server(report: Report, backend: type) -> bool:
    from django.apps import apps

    from ...auth import DOTBackend, JWTBackend

    own_server = issubclass(backend, DOTBackend) and apps.is_installed("oauth2_provider")
    if issubclass(backend, JWTBackend) or not own_server:
        report.add(
            True,
            "The authorization server is external (JWTBackend): registration, consent and sign-in are its own; "
            "check them against the how-to for each client",
            note=True,
        )
        return False
    return True


def _authorization_server(report: Report, meta: dict[str, Any], issuer: str) -> None:
    endpoints = [meta.get(k) for k in ("authorization_endpoint", "token_endpoint") if meta.get(k)]
    report.add(
        len(endpoints) == 2 and all(str(e).startswith(issuer + "/") for e in endpoints),
        "The authorization and token endpoints are on the issuer's origin",
    )
    report.add("S256" in (meta.get("code_challenge_methods_supported") or ()), "PKCE S256 is advertised")
    cimd = bool(meta.get("client_id_metadata_document_supported"))
    none_ok = "none" in (meta.get("token_endpoint_auth_methods_supported") or ())
    report.add(
        cimd and none_ok,
        "Client ID metadata documents are offered with 'none' among token_endpoint_auth_methods_supported "
        "(Claude and VS Code register by CIMD only then; otherwise they use DCR)",
        CIMD_CLIENTS,
        note=True,
    )
    report.add(
        bool(meta.get("authorization_response_iss_parameter_supported")),
        "The authorization response carries iss (RFC 9207), which ChatGPT's stable callback requires",
        (CHATGPT,),
    )
    dcr = bool(meta.get("registration_endpoint"))
    report.add(
        dcr or (cimd and none_ok),
        "Clients can register: a registration endpoint (DCR), or CIMD",
    )
    report.add(dcr, "Dynamic client registration is on (Cursor registers only by DCR)", (CURSOR,))


def _registration(report: Report, client: str, body: dict[str, Any], answer: dict[str, Any], refresh: bool) -> None:
    registered = answer.get("redirect_uris") or []
    if "error" in answer:
        report.add(
            False,
            f"{client}'s registration is refused: {answer.get('error_description') or answer['error']}",
            (client,),
        )
        return
    dropped = [u for u in body["redirect_uris"] if u not in registered]
    report.add(
        not dropped,
        f"{client}'s registration keeps all its callbacks"
        if not dropped
        else f"{client}'s registration drops {', '.join(dropped)}: a client that uses it cannot sign in "
        "(allow its scheme in PRIVATE_REDIRECT_SCHEMES and ALLOWED_REDIRECT_URI_SCHEMES)",
        (client,),
        note=bool(registered),
    )
    if refresh:
        report.add(
            "refresh_token" in (answer.get("grant_types") or ()),
            f"{client}'s registration answer keeps refresh_token in grant_types (the metadata advertises it)",
            (client,),
        )


def _sign_in(report: Report) -> None:
    from ...auth.signin import sign_in_url, site_sign_in

    login, served = site_sign_in()
    target = sign_in_url()
    report.add(
        served or target != login,
        f"People sign in before consent at {target}"
        + ("" if served or target != login else f": LOGIN_URL {login} is not a view of this site"),
    )


def _dry_run_registration(http: Any, endpoint: str, body: dict[str, Any], secure: bool) -> dict[str, Any]:
    from django.db import transaction

    answer: dict[str, Any] = {}
    try:
        with transaction.atomic():
            response = http.post(
                urlsplit(endpoint).path, orjson.dumps(body), content_type="application/json", secure=secure
            )
            try:
                answer = dict(orjson.loads(response.content))
            except (orjson.JSONDecodeError, TypeError, ValueError):
                answer = {"error": f"HTTP {response.status_code}"}
            raise _Rollback
    except _Rollback:
        pass
    return answer


def _consent_page() -> tuple[bool, str]:
    from django.template import TemplateDoesNotExist
    from django.template.loader import get_template
    from django.urls import NoReverseMatch, Resolver404, resolve, reverse

    try:
        view = resolve(reverse("oauth2_provider:authorize")).func
    except (NoReverseMatch, Resolver404):
        return False, "No authorize endpoint is mounted: include mcp_tools.oauth.urls"
    names = {f"{c.__module__}.{c.__qualname__}" for c in getattr(getattr(view, "view_class", None), "__mro__", ())}
    if "mcp_tools.oauth.views.ConsentView" not in names:
        return False, "The authorize endpoint is not the package's consent page (which names client and redirect host)"
    try:
        template = get_template("mcp_tools/oauth/authorize.html")
    except TemplateDoesNotExist:
        return False, "The consent page's template mcp_tools/oauth/authorize.html is missing"
    from pathlib import Path

    origin = str(getattr(getattr(template, "origin", None), "name", "") or "")
    ours = Path(__file__).resolve().parents[2] / "templates"
    which = "the package's template" if origin.startswith(str(ours)) else "the site's override of it"
    return True, f"The consent page names the client, its redirect host and the scopes ({which})"


class Command(BaseCommand):
    help = "Name what stands between this site and the hosted MCP clients (Claude, ChatGPT, VS Code, Cursor)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--client",
            action="append",
            choices=sorted(OPTION_NAMES),
            help="only this client (repeatable); default: all four",
        )

    def handle(self, *args: Any, client: list[str] | None = None, **options: Any) -> None:
        wanted = [OPTION_NAMES[c] for c in client] if client else list(CLIENTS)
        report = readiness()
        self.stdout.write(f"Hosted-client readiness of {report.resource or 'this site'}\n")
        for i, finding in enumerate(report.findings, 1):
            if not set(finding.clients) & set(wanted):
                continue
            style = self.style.SUCCESS if finding.ok else (self.style.WARNING if finding.note else self.style.ERROR)
            self.stdout.write(f"{i:>3}. {style(finding.label)} {finding.text}")
        self.stdout.write("")
        blocked = []
        for name in wanted:
            gaps = report.gaps(name)
            if gaps:
                blocked.append(name)
                self.stdout.write(f"{name}: not ready (see {', '.join(map(str, gaps))})")
            else:
                self.stdout.write(f"{name}: ready")
        if blocked:
            raise CommandError(f"Not ready for {', '.join(blocked)}; the how-to 'Connect hosted clients' says how.")
