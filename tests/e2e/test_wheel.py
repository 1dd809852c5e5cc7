"""The built wheel installs clean (not editable) into a site's venv and serves a new project.

Builds the wheel (or takes the one `make dist` left in dist/), makes a venv under tmp holding the
Django this suite runs on (5.2 here, 6.1 on Python 3.13 in `make test-next`), installs the wheel
into it with plain pip and the oauth extra (the site's Django stays), runs `django-admin
startproject`, adds the app as the docs say, runs `migrate` and `check --deploy` with production
settings (no Python warning names the package either), serves the site with uvicorn on 127.0.0.1
and makes MCP calls with the official Python SDK from the repository's venv.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import django
import pytest

from tests.support.servers import free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]

PRODUCTION = """
# Added as docs/tutorial/index.md says, with the production settings check --deploy asks for.
import os
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
SECURE_SSL_REDIRECT = os.environ.get("SSL_REDIRECT") == "1"  # on behind the TLS proxy; off to serve plain HTTP here
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = 31536000
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
if "MAILERS" in globals():  # Django 6.1's new project prints mail to the console; a site sends it
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.smtp.EmailBackend"}}
INSTALLED_APPS += ["mcp_tools"]
MCP_TOOLS = {"SERVER_NAME": "wheelsite"}
# No OAuth clients in this smoke test: the open endpoint is intended here.
SILENCED_SYSTEM_CHECKS = ["mcp_tools.W004"]
"""

URLS = """
urlpatterns += [path("mcp", include("mcp_tools.urls"))]
"""


def run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout


def run_all(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Like run, and gives stdout and stderr together (the warnings are on stderr)."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return done.stdout + done.stderr


def wheel(tmp_path: Path) -> Path:
    from mcp_tools import __version__

    built = ROOT / "dist" / f"django_mcp_tools-{__version__}-py3-none-any.whl"
    if built.exists():
        return built
    run(sys.executable, "-m", "build", "--wheel", "-o", tmp_path / "dist", ROOT)
    return next((tmp_path / "dist").glob("*.whl"))


@pytest.mark.timeout(600)
def test_wheel_installs_and_serves(tmp_path: Path) -> None:
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV"}}
    env["DJANGO_SECRET_KEY"] = "wheel-smoke-" + "k" * 50 + "-not-a-real-secret-0123456789"
    whl = wheel(tmp_path)
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    py = venv / "bin" / "python"
    # The site first, on the Django this suite runs on; then the package, as a site adds it.
    run(py, "-m", "pip", "install", "-q", f"Django=={django.__version__}")
    run(py, "-m", "pip", "install", "-q", f"{whl}[oauth]", "uvicorn>=0.31.1,<1")
    kept = run(py, "-c", "import django; print(django.__version__)", cwd=tmp_path, env=env).strip()
    assert kept == django.__version__, f"installing the wheel changed the site's Django to {kept}"
    # Not editable: the package comes from site-packages, templates and migrations included.
    where = run(
        py, "-c", "import mcp_tools, pathlib; print(pathlib.Path(mcp_tools.__file__).parent)", cwd=tmp_path, env=env
    ).strip()
    assert "site-packages" in where
    assert (Path(where) / "templates" / "mcp_tools" / "admin" / "tool_change_form.html").exists()
    # The sign-in, consent and error pages of the authorization server ship in the wheel (issue 34).
    for page in ("authorize.html", "error.html", "login.html", "base.html"):
        assert (Path(where) / "templates" / "mcp_tools" / "oauth" / page).exists()
    assert (Path(where) / "migrations" / "0001_initial.py").exists()

    (tmp_path / "site").mkdir()
    run(venv / "bin" / "django-admin", "startproject", "mysite", tmp_path / "site", env=env)
    site = tmp_path / "site"
    with (site / "mysite" / "settings.py").open("a") as f:
        f.write(PRODUCTION)
    urls = site / "mysite" / "urls.py"
    urls.write_text(
        urls.read_text().replace("from django.urls import path", "from django.urls import include, path") + URLS
    )
    # Every Python warning shown, and none may name the package.
    shown = {**env, "PYTHONWARNINGS": "default"}
    migrated = run_all(py, "manage.py", "migrate", "--noinput", "-v0", cwd=site, env=shown)
    checked = run_all(
        py, "manage.py", "check", "--deploy", "--fail-level", "WARNING", cwd=site, env={**shown, "SSL_REDIRECT": "1"}
    )
    for output in (migrated, checked):
        assert "mcp_tools" not in output, output[-3000:]

    port = free_port()
    server = subprocess.Popen(
        [venv / "bin" / "uvicorn", "mysite.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=site,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=1)
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(server.stderr.read().decode() if server.stderr else "uvicorn exited")
                time.sleep(0.1)
        result = asyncio.run(call(url))
        assert result == ("wheelsite", [])
    finally:
        server.terminate()
        server.wait(timeout=10)
        if server.stderr:
            server.stderr.close()
    print(f"wheel smoke test: {time.monotonic() - started:.1f} s")


async def call(url: str) -> tuple[str, list[str]]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
    return init.server_info.name, [tool.name for tool in tools.tools]
