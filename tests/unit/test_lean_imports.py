"""A web worker imports what its requests need (issue 27): a site of ``mcp_tools`` alone, set up
and answering ``tools/list`` and ``tools/call`` through the WSGI front, has not imported Celery,
the admin, DOT, DRF, the management commands or the Celery entry points (neither at set-up
nor for the requests). A fresh interpreter
(a subprocess) is the only place ``sys.modules`` says so: the test process has imported them all.
"""

from __future__ import annotations

from tests.support.servers import run_script

# What only a Celery worker, the admin, a management command, OAuth or an optional
# integration needs: none of it may load on the way to an answer.
NOT_ON_THE_REQUEST_PATH = (
    "celery",
    "kombu",
    "billiard",
    "django.contrib.admin",
    "oauth2_provider",
    "oauthlib",
    "jwcrypto",
    "rest_framework",
    "redis",
    "psycopg",
    "mcp_tools.admin",
    "mcp_tools.oauth.views",
    "mcp_tools.management",
    "mcp_tools.tasks",
    "mcp_tools.tasking.jobs",
    "mcp_tools.tasking.beat",
    "mcp_tools.contrib",
    "mcp_tools.editing",
    # OpenTelemetry: loaded once the site imports it (sets a provider), not for a no-op
    "opentelemetry",
    # jsonschema: a valid call of a tool with a simple schema and tools/list need none of it (fastcheck)
    "jsonschema",
    "referencing",
)

SCRIPT = r"""
import io, json, sys, types
import django
from django.conf import settings

urls = types.ModuleType("lean_urls")  # the endpoint at /mcp, the site's only URL
sys.modules["lean_urls"] = urls

settings.configure(
    DEBUG=False,
    SECRET_KEY="lean-imports-test-0123456789-0123456789-0123456789",
    ALLOWED_HOSTS=["testserver"],
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "mcp_tools"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    ROOT_URLCONF="lean_urls",
    USE_TZ=True,
    MCP_TOOLS={"AUTH_BACKEND": "mcp_tools.auth.AllowAnyBackend", "RESOURCE_URL": "http://testserver/mcp"},
)
django.setup()
at_setup = set(sys.modules)
from django.core.management import call_command

from django.urls import include, path

urls.urlpatterns = [path("mcp", include("mcp_tools.urls"))]
call_command("migrate", verbosity=0)  # (imports each app's management package: not a request's doing)
before = set(sys.modules)

from mcp_tools import ToolContext, handler
from mcp_tools.models import Tool


@handler("lean.echo")
def echo(ctx: ToolContext) -> str:
    return str(ctx.arguments.get("text", ""))


Tool.objects.create(name="echo", handler_key="lean.echo", input_schema={"type": "object"})

import mcp_tools.views  # the endpoint's documented import paths
from django.core.wsgi import get_wsgi_application
from mcp_tools.wsgi import McpWsgiFront

application = McpWsgiFront(get_wsgi_application())
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
answers = []
for method, params, name in (
    ("tools/list", {}, None),
    ("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, "echo"),
):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}).encode()
    environ = {
        "REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "SERVER_NAME": "testserver", "SERVER_PORT": "80",
        "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
        "HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28",
        "HTTP_MCP_METHOD": method, **({"HTTP_MCP_NAME": name} if name else {}),
    }
    status = []
    payload = b"".join(application(environ, lambda s, h, e=None: status.append(s)))
    answers.append([status[0], json.loads(payload)])
print(json.dumps({"answers": answers, "loaded": sorted(at_setup | (set(sys.modules) - before))}))
"""


def test_answering_requests_imports_no_worker_admin_or_oauth_code() -> None:
    report = run_script(SCRIPT, timeout=120)
    (list_status, listed), (call_status, called) = report["answers"]
    assert list_status.startswith("200"), listed
    assert [t["name"] for t in listed["result"]["tools"]] == ["echo"], listed
    assert call_status.startswith("200"), called
    assert called["result"]["content"] == [{"type": "text", "text": "hi"}], called
    loaded = [
        name
        for name in report["loaded"]
        if any(name == banned or name.startswith(banned + ".") for banned in NOT_ON_THE_REQUEST_PATH)
    ]
    assert loaded == [], f"imported by start-up or a request: {loaded}"
