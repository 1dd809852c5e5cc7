"""The tutorial's site (docs/tutorial/site, copied into docs/tutorial/index.md by make docs-reference) works as the
page says: migrate, import the handler tool, sync the model toolset, mint a token, call both tools.

It runs the site's own manage.py in subprocesses (its settings, its apps), so the page's code is
the code under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "tutorial" / "site"

CALL = """
import json
import django
django.setup()
from django.test import Client
from notes.models import Note
from tests.support.mcp_client import Mcp

Note.objects.create(title="Django tips")
Note.objects.create(title="More django")
mcp = Mcp(Client())
mcp.default_headers["Authorization"] = "Bearer " + {token!r}
mcp.initialize("2025-11-25")
names = sorted(tool["name"] for tool in mcp.call("tools/list")["tools"])
counted = mcp.call("tools/call", {{"name": "count_notes", "arguments": {{"word": "django"}}}})
listed = mcp.call("tools/call", {{"name": "list_note", "arguments": {{}}}})
print(json.dumps({{"names": names, "counted": counted, "listed": listed}}))
"""

# A newcomer's first OAuth connection to the tutorial's site (no sign-in view of its own): a
# client registers, the browser is sent to sign in (the package's page, not a 404), then to the
# consent page naming the client and the redirect host (issue 34).
SIGN_IN = """
import json, re
import django
django.setup()
from urllib.parse import urlencode, urlsplit
from django.test import Client
from mcp_tools.checks import check_authorization_server

browser = Client()
client = browser.post("/o/register/", json.dumps({{"client_name": "Newcomer app",
    "redirect_uris": ["https://app.example/cb"], "token_endpoint_auth_method": "none"}}),
    content_type="application/json").json()
query = urlencode({{"response_type": "code", "client_id": client["client_id"], "redirect_uri": "https://app.example/cb",
    "code_challenge": "x" * 43, "code_challenge_method": "S256", "scope": "notes:read"}})
first = browser.get("/o/authorize/?" + query)
login = first["Location"]
page = browser.get(login)
csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
nxt = re.search(r'name="next" value="([^"]*)"', page.content.decode()).group(1).replace("&amp;", "&")
back = browser.post(urlsplit(login).path, {{"username": "admin", "password": {password!r}, "next": nxt,
    "csrfmiddlewaretoken": csrf}})
consent = browser.get(back["Location"]).content.decode()
print(json.dumps({{"login": login, "login_status": page.status_code, "back": back.status_code,
    "consent": consent, "checks": [m.id for m in check_authorization_server()]}}))
"""


def manage(site: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=site, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.mark.timeout(300)
def test_the_tutorial_site_serves_both_tools(tmp_path: Path) -> None:
    import json

    site = tmp_path / "site"
    shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("__pycache__", "*.sqlite3"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "DJANGO_SETTINGS_MODULE": "mysite.settings",
        "TUTORIAL_DB": str(tmp_path / "db.sqlite3"),
        "MCP_RESOURCE_URL": "http://testserver/mcp",
        "DJANGO_SUPERUSER_PASSWORD": "tutorial-password-1",
    }
    manage(site, env, "migrate", "--noinput", "-v0")
    manage(site, env, "mcp_import", "tools.json")
    assert "list_note" in manage(site, env, "mcp_sync_toolsets")
    manage(site, env, "check", "--database", "default", "--fail-level", "ERROR")
    manage(site, env, "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com")
    token = manage(site, env, "mcp_token", "--user", "admin", "--scopes", "notes:read").strip().splitlines()[-1]

    done = subprocess.run(
        [sys.executable, "-c", CALL.format(token=token)], cwd=site, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["names"] == ["count_notes", "get_note", "list_note"]
    assert out["counted"]["structuredContent"] == {"word": "django", "count": 2}
    assert not out["listed"].get("isError"), out["listed"]
    assert "Django tips" in json.dumps(out["listed"])

    done = subprocess.run(
        [sys.executable, "-c", SIGN_IN.format(password=env["DJANGO_SUPERUSER_PASSWORD"])],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    signed = json.loads(done.stdout.strip().splitlines()[-1])
    assert signed["login"].startswith("/o/login/?next=")
    assert signed["login_status"] == 200
    assert signed["back"] == 302
    assert 'id="client-name">Newcomer app<' in signed["consent"]
    assert 'id="redirect-host">app.example<' in signed["consent"]
    assert signed["checks"] == []
