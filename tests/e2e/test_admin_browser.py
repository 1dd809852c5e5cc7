"""The tool editor in a real headless Chromium against a real server, checked step by step
through the official MCP Python SDK: create, a schema error, fix, preview, Try it, disable,
restore, and approve a pending call once the tool requires approval; the audit trail's usage
page over 100,000 rows. Screenshots of each step go to the test's tmp dir (``screenshots/``).
One Chromium serves every test of the module."""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from tests.support.servers import ROOT, LiveServer, prepare_database, run_server, server_env

pytestmark = pytest.mark.e2e

TOOL = "browser_echo"


@pytest.fixture
def admin_server(tmp_path: Path) -> Iterator[LiveServer]:
    # DEBUG serves the admin's own CSS, so the screenshots show its theme.
    with run_server(tmp_path, extra_env={"DJANGO_DEBUG": "1", "DEMO_ADMIN_PASSWORD": "browser-pw"}) as live:
        live.manage("demo_superuser")
        yield live


@pytest.fixture
def browser_session(browser: Any) -> Any:
    """The module's Chromium, logged out of every server (cookies are per host, not per port)."""
    browser.delete_all_cookies()
    return browser


class Steps:
    """The browser session, a screenshot per step, and an MCP client to check each one."""

    def __init__(self, driver: Any, admin_server: LiveServer, shots: Path) -> None:
        self.driver = driver
        self.server = admin_server
        self.shots = shots
        self.count = 0
        shots.mkdir()

    def open(self, path: str) -> None:
        self.driver.get(self.server.base_url + path)

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def follow(self, element: Any) -> None:
        """Click something that loads a page, and wait until the new page has replaced the old."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        old = self.driver.find_element(By.TAG_NAME, "html")
        element.click()
        # Mid-navigation Chromium may answer a look at the old page with an "unhandled inspector
        # error" instead of "stale element": ask again until the new page is there.
        wait = WebDriverWait(self.driver, 15, ignored_exceptions=(WebDriverException,))
        wait.until(expected_conditions.staleness_of(old))
        wait.until(lambda d: d.execute_script("return document.readyState") == "complete")

    def submit(self, css: str) -> None:
        self.follow(self.find(css))

    def fill(self, name: str, value: str) -> None:
        field = self.find(f"[name='{name}']")
        field.clear()
        field.send_keys(value)

    def shot(self, label: str) -> None:
        self.count += 1
        self.driver.save_screenshot(str(self.shots / f"{self.count:02d}-{label}.png"))

    def messages(self) -> list[str]:
        return [m.text for m in self.find_all("ul.messagelist li")]

    # -- through the official MCP client

    def listed(self) -> dict[str, dict[str, Any]]:
        return anyio.run(_list_tools, self.server.url)

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return anyio.run(_call_tool, self.server.url, name, arguments)


async def _list_tools(url: str) -> dict[str, dict[str, Any]]:
    from mcp import Client

    found: dict[str, dict[str, Any]] = {}
    async with Client(url, mode="2026-07-28") as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                found[tool.name] = tool.model_dump(by_alias=True, exclude_none=True)
            cursor = page.next_cursor
            if not cursor:
                return found


async def _call_tool(url: str, name: str, arguments: dict[str, Any]) -> Any:
    from mcp import Client, MCPError

    async with Client(url, mode="2026-07-28") as client:
        try:
            result = await client.call_tool(name, arguments)
        except MCPError as exc:  # an unknown tool is a JSON-RPC error
            return exc
        return result.model_dump(by_alias=True, exclude_none=True)


BROKEN = '{"type": "object", "properties": {"text": {"type": "strin"}}, "required": "text"}'
FIXED = '{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}'


def test_an_admin_edits_a_tool_in_a_real_browser(
    browser_session: Any, admin_server: LiveServer, tmp_path: Path
) -> None:
    browser = browser_session
    steps = Steps(browser, admin_server, tmp_path / "screenshots")
    assert TOOL not in steps.listed()

    # Log in.
    steps.open("/admin/login/?next=/admin/mcp_tools/tool/")
    steps.fill("username", "admin")
    steps.fill("password", "browser-pw")
    steps.submit("input[type=submit]")
    assert browser.title.startswith("Select tool to change")
    steps.shot("changelist")

    # Create a tool bound to a demo handler, with a broken schema: form errors, nothing listed.
    steps.open("/admin/mcp_tools/tool/add/")
    steps.fill("name", TOOL)
    steps.fill("description", "Echoes text with a prefix")
    steps.find("input[name=handler_key][value='demo.echo']").click()
    steps.fill("handler_config", '{"prefix": ">> "}')
    steps.fill("input_schema", BROKEN)
    steps.submit("input[name=_continue]")
    errors = [e.text for e in steps.find_all(".field-input_schema .errorlist li")]
    assert [e.split(":")[0] for e in errors] == [
        "Input schema is not a valid schema at /properties/text/type",
        "Input schema is not a valid schema at /required",
    ]
    steps.shot("schema-errors")
    assert TOOL not in steps.listed()

    # Fix it and save: the tool is listed, and the change page previews the exact entry.
    steps.fill("input_schema", FIXED)
    steps.submit("input[name=_continue]")
    assert "was added successfully" in " ".join(steps.messages())
    listed = steps.listed()
    assert TOOL in listed
    preview = json.loads(steps.find("pre[data-revision='2026-07-28']").get_attribute("textContent"))
    assert preview == listed[TOOL]
    steps.shot("saved-with-preview")
    change_url = browser.current_url

    # Try it: the same answer a client gets (the argument typed in the field made from the schema).
    steps.submit("a.mcp-try-link")
    steps.fill("arg__text", "hi")
    steps.submit("input[name=_run]")
    assert steps.find("#try-is-error").text == "isError: false"
    assert [b.text for b in steps.find_all(".mcp-block pre")] == [">> hi"]
    steps.shot("try-it")
    called = steps.call(TOOL, {"text": "hi"})
    assert called["content"] == [{"type": "text", "text": ">> hi"}]

    # Edit the description and the prefix, in the config field made from demo.echo's schema (only
    # the chosen kind's fields are shown), then disable it with the bulk action (confirmed).
    browser.get(change_url)
    assert steps.find("[name='config__demo.echo__prefix']").get_attribute("value") == ">> "
    assert not steps.find("[name='config__demo.report__step_seconds']").is_displayed()
    steps.fill("description", "Echoes text, edited")
    steps.fill("config__demo.echo__prefix", "## ")
    browser.execute_script("arguments[0].scrollIntoView()", steps.find("fieldset.mcp-config:not([style*='none'])"))
    steps.shot("config-fields")
    steps.submit("input[name=_continue]")
    assert steps.listed()[TOOL]["description"] == "Echoes text, edited"
    assert steps.call(TOOL, {"text": "hi"})["content"] == [{"type": "text", "text": "## hi"}]
    steps.open(f"/admin/mcp_tools/tool/?q={TOOL}")
    steps.find("input[name=_selected_action]").click()
    from selenium.webdriver.support.ui import Select

    Select(steps.find("select[name=action]")).select_by_value("disable_tools")
    steps.submit("button[name=index]")
    assert "Disable tools?" in browser.page_source
    steps.shot("confirm-disable")
    steps.submit('input[type=submit][value="Yes, I\'m sure"]')
    assert steps.messages() == ["Disabled 1 tool(s); 0 already disabled. The catalog version moved once."]
    steps.shot("disabled")
    assert TOOL not in steps.listed()
    refused = steps.call(TOOL, {"text": "hi"})
    assert isinstance(refused, Exception)
    assert f"Unknown tool: {TOOL}" in str(refused)

    # Restore the first revision: enabled again, with the first description.
    browser.get(change_url.replace("/change/", "/history/"))
    actions = [cell.text for cell in steps.find_all("#revisions tbody tr td:nth-child(7)")]
    assert actions == ["Changed", "Changed", "Created"]
    steps.shot("revisions")
    steps.follow(steps.find_all("#revisions tbody tr")[-1].find_element("css selector", "a.button"))
    assert "as a new revision; what changes:" in browser.page_source
    steps.shot("restore-confirm")
    steps.submit("input[type=submit][value='Restore this revision']")
    assert "Restored browser_echo to revision" in steps.messages()[0]
    steps.shot("restored")
    listed = steps.listed()
    assert listed[TOOL]["description"] == "Echoes text with a prefix"
    assert steps.call(TOOL, {"text": "back"})["content"] == [{"type": "text", "text": ">> back"}]

    # Gate it behind approval: a client's call waits until an admin approves it in the browser.
    browser.get(change_url)
    steps.find("[name='requires_approval']").click()
    steps.submit("input[name=_continue]")
    waiting: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: waiting.update(result=steps.call(TOOL, {"text": "gated"})), daemon=True)
    caller.start()
    links: list[Any] = []
    for _ in range(50):  # the pending call shows within 10 s
        steps.open("/admin/mcp_tools/mcpapproval/")
        links = steps.find_all("#result_list a[href*='/mcpapproval/']")
        if links:
            break
        time.sleep(0.2)
    assert len(links) == 1
    assert "result" not in waiting  # the client is still waiting
    steps.shot("pending-calls")
    steps.follow(links[0])
    assert '"text": "gated"' in steps.find("pre.mcp-arguments").text
    steps.shot("pending-call")
    steps.submit("input[type=submit][value='Approve']")
    [approved] = steps.messages()
    assert re.fullmatch(rf"Approved call #\d+ of tool {TOOL}\.", approved)
    steps.shot("approved")
    caller.join(timeout=30)
    assert waiting["result"]["content"] == [{"type": "text", "text": ">> gated"}]


def test_explain_for_a_user_saves_nothing(browser_session: Any, admin_server: LiveServer, tmp_path: Path) -> None:
    """Issue 34 (1): the "Explain for user" button sat in a form inside the change form;
    Chromium drops the nested form, so the button submitted the save (a new revision, a catalog
    bump, list_changed to every client, the unsaved edit saved). Clicking it now only explains."""
    browser = browser_session
    steps = Steps(browser, admin_server, tmp_path / "screenshots")
    [(pk, description)] = admin_server.query("SELECT id, description FROM mcp_tools_tool WHERE name = %s", ("echo",))

    def saved() -> tuple[Any, ...]:
        revisions = admin_server.query("SELECT count(*) FROM mcp_tools_toolrevision WHERE tool_pk = %s", (pk,))[0][0]
        [(version,)] = admin_server.query("SELECT version FROM mcp_tools_catalogversion")
        [(text, tool_version)] = admin_server.query(
            "SELECT description, version FROM mcp_tools_tool WHERE id = %s", (pk,)
        )
        return revisions, version, text, tool_version

    before = saved()
    steps.open(f"/admin/login/?next=/admin/mcp_tools/tool/{pk}/change/")
    steps.fill("username", "admin")
    steps.fill("password", "browser-pw")
    steps.submit("input[type=submit]")
    steps.fill("description", "an edit nobody saved")  # unsaved: must stay unsaved
    steps.fill("explain_user", "admin")
    browser.execute_script("arguments[0].scrollIntoView()", steps.find("#mcp-audience"))
    steps.shot("explain-typed")
    steps.submit("input[type=submit][value='Explain']")
    steps.shot("explained")
    query = parse_qs(urlsplit(browser.current_url).query)
    assert query == {"explain_user": ["admin"]}, browser.current_url
    assert "sees this tool" in steps.find("#mcp-audience").text
    assert not steps.messages()  # no "was changed successfully"
    assert steps.find("[name='description']").get_attribute("value") == description
    assert saved() == before  # no revision, no catalog bump, nothing saved
    assert steps.listed()["echo"]["description"] == description


def test_a_startproject_site_under_uvicorn_has_its_admin_css(browser_session: Any, tmp_path: Path) -> None:
    """Issue 26: a brand-new ``startproject`` site with the app added as the docs say, its
    ``asgi.py`` as the docs write it (``McpFront(get_asgi_application())``), served by uvicorn
    in DEBUG: the admin's pages have their CSS (they had none: /static/ answered 404)."""
    import os

    import httpx

    from tests.support.servers import free_port

    browser = browser_session

    site = tmp_path / "site"
    site.mkdir()
    subprocess.run([sys.executable, "-m", "django", "startproject", "mysite", str(site)], check=True, timeout=60)
    settings = site / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["mcp_tools"]\n')
    urls = site / "mysite" / "urls.py"
    urls.write_text(
        urls.read_text().replace("from django.urls import path", "from django.urls import include, path")
        + '\nurlpatterns += [path("mcp", include("mcp_tools.urls"))]\n'
    )
    (site / "mysite" / "asgi.py").write_text(
        "import os\n\n"
        "from django.core.asgi import get_asgi_application\n\n"
        'os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")\n'
        "from mcp_tools.asgi import McpFront  # noqa: E402\n\n"
        "application = McpFront(get_asgi_application())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update({"DJANGO_SETTINGS_MODULE": "mysite.settings", "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])})
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=site, env=env, check=True, timeout=120)
    port = free_port()
    log = (tmp_path / "uvicorn.log").open("wb")
    admin_server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "mysite.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
        cwd=site,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                css = httpx.get(f"{base}/static/admin/css/base.css", timeout=2)
                break
            except httpx.HTTPError:
                assert admin_server.poll() is None, (tmp_path / "uvicorn.log").read_text()
                assert time.monotonic() < deadline, (tmp_path / "uvicorn.log").read_text()
                time.sleep(0.2)
        assert css.status_code == 200
        assert css.headers["content-type"].startswith("text/css")
        browser.get(f"{base}/admin/login/")
        shots = tmp_path / "screenshots"
        shots.mkdir(exist_ok=True)
        browser.save_screenshot(str(shots / "startproject-admin-login.png"))
        print(f"screenshot: {shots / 'startproject-admin-login.png'}")
        header = browser.execute_script("return getComputedStyle(document.getElementById('header')).backgroundColor")
        assert header not in ("", "transparent", "rgba(0, 0, 0, 0)"), header  # the admin's theme applied
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        answer = httpx.post(
            f"{base}/mcp", json=initialize, headers={"Accept": "application/json, text/event-stream"}, timeout=10
        )
        assert answer.status_code == 200, answer.text  # the endpoint beside the static files
    finally:
        admin_server.terminate()
        admin_server.wait(timeout=20)
        log.close()


USAGE_ROWS = 100_000


@pytest.fixture
def usage_server(tmp_path: Path) -> Iterator[LiveServer]:
    """The demo with 100,000 audit rows over the last week, inserted before the server starts."""
    started = time.monotonic()
    env = server_env(tmp_path, {"DJANGO_DEBUG": "1", "DEMO_ADMIN_PASSWORD": "browser-pw"})
    prepare_database(env)  # a copy of the suite's migrated database (made once per run)
    prepared = time.monotonic()
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         "from django.core.management import call_command as c; "
         f"c('demo_audit_rows', '{USAGE_ROWS}'); c('demo_superuser')"],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    seeded = time.monotonic()
    with run_server(tmp_path, extra_env=env, prepare=False) as live:
        print(
            f"usage page setup: database {prepared - started:.1f} s, {USAGE_ROWS} audit rows and the admin user "
            f"{seeded - prepared:.1f} s, server {time.monotonic() - seeded:.1f} s"
        )
        yield live


def _count_rows(admin_server: LiveServer, tool: str, since: str) -> int:
    """The server's audit rows of ``tool`` since ``since``, read from its SQLite file."""
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(since).astimezone(UTC).replace(tzinfo=None).isoformat(" ")
    with contextlib.closing(sqlite3.connect(admin_server.env["MCP_SQLITE_PATH"])) as db:
        sql = "SELECT count(*) FROM mcp_tools_auditevent WHERE tool_name = ? AND created_at >= ?"
        return int(db.execute(sql, (tool, moment)).fetchone()[0])


NAVIGATION = """
const [n] = performance.getEntriesByType("navigation");
return {server: n.responseStart - n.requestStart, dom: n.domContentLoadedEventEnd, load: n.loadEventEnd};
"""


def test_the_usage_page_over_100000_audit_rows(browser_session: Any, usage_server: LiveServer, tmp_path: Path) -> None:
    """Issue 23: the usage page's SVG charts over 100,000 audit rows, its render time in the
    browser (navigation timing), and a chart's link to the audit changelist filtered the same way."""
    browser = browser_session
    steps = Steps(browser, usage_server, tmp_path / "screenshots")
    page = "/admin/mcp_tools/auditevent/usage/"
    steps.open(f"/admin/login/?next={page}?period=week")
    steps.fill("username", "admin")
    steps.fill("password", "browser-pw")
    steps.submit("input[type=submit]")
    assert browser.title.startswith("Usage")

    timings = {}
    for period in ("hour", "day", "week"):  # the week last: the page stays on it
        steps.open(f"{page}?period={period}")
        timings[period] = browser.execute_script(NAVIGATION)
    print("usage page in Chromium (ms: server = request to first byte, load = loadEventEnd):")
    for period, timing in timings.items():
        print(f"  {period}: server {timing['server']:.0f}, DOM ready {timing['dom']:.0f}, load {timing['load']:.0f}")
    # Under 1 s on an idle machine (see docs/howto/observability.md); a loaded CI machine gets slack.
    assert all(0 < t["load"] < 5000 for t in timings.values()), timings

    total = int(re.search(r"([0-9]+) calls", steps.find("#mcp-usage p strong").text)[1])  # type: ignore[index]
    assert USAGE_ROWS - 100 <= total <= USAGE_ROWS  # the oldest rows leave the week as the clock moves
    charts = steps.find_all("svg.mcp-chart")
    assert len(charts) == 5
    for chart in charts[:2]:  # calls per tool (the top 5) and the error rate: lines over 8 days
        lines = chart.find_elements("css selector", "polyline")
        assert lines
        assert all(len(line.get_attribute("points").split()) == 8 for line in lines)
    assert len(charts[0].find_elements("css selector", "polyline")) == 5
    assert len(charts[2].find_elements("css selector", "rect[fill]")) >= 10  # p50 and p95 of 5 tools
    assert len(charts[3].find_elements("css selector", "a rect")) == 8  # the top 8 callers
    assert charts[4].text == "Nothing in this period."  # no task
    # Every audit chart links to the audit changelist, filtered by the period.
    changelist = "/admin/mcp_tools/auditevent/?"
    for chart in charts[:4]:
        hrefs = [a.get_dom_attribute("href") for a in chart.find_elements("css selector", "a")]
        assert hrefs
        assert all(h.startswith(changelist) and "created_at__gte=" in h for h in hrefs), hrefs
    browser.execute_script("window.scrollTo(0, 0)")
    shot = steps.shots / "usage-week.png"
    browser.save_screenshot(str(shot))
    print(f"screenshot: {shot}")

    # Follow a tool's bar (its durations) to the changelist: that tool's calls of the week.
    bar = charts[2].find_elements("css selector", "a")[0]
    tool = bar.find_element("css selector", "text").text
    steps.follow(bar.find_element("css selector", "rect"))
    assert browser.title.startswith("Select audit event to view")
    assert f"tool_name__exact={tool}" in browser.current_url
    shown = {cell.text for cell in steps.find_all("#result_list td.field-tool_name")}
    assert shown == {tool}
    count = int(re.search(r"([0-9]+) audit events?", steps.find("p.paginator").text)[1])  # type: ignore[index]
    since = parse_qs(urlsplit(browser.current_url).query)["created_at__gte"][0]
    assert count == _count_rows(usage_server, tool, since)
    steps.shot("usage-filtered-changelist")
