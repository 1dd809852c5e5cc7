"""MCP Apps end to end: the official ``@modelcontextprotocol/ext-apps`` AppBridge as the host, in
headless Debian Chromium, against the demo server with OAuth and its book toolset's generated views.

The host page (``tests/e2e/js/apps_host.mjs``, bundled with the pinned esbuild) reads the tool's
``ui://`` resource through the official SDK client, calls the tool, mounts the view in a sandboxed
iframe with the CSP built from its ``_meta.ui``, completes ``ui/initialize`` and sends
``tool-input``/``tool-result``. The test then checks the rendered table, sorts it and pages it
(each a ``tools/call`` through the host), and submits ``create_book``'s form: a duplicate ISBN
shows the serializer's error at its field, a new one saves. Screenshots go to the test's tmp dir
(``screenshots/``). UI-1, UI-2, UI-4, UI-7.
"""

from __future__ import annotations

import functools
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support.nodejs import JS_DIR, node
from tests.support.servers import run_server

pytestmark = pytest.mark.e2e

RESOURCE = "http://127.0.0.1/mcp"
DEFAULT_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; img-src 'self' data:; font-src 'self'; media-src 'self' data:; frame-src 'none'; "
    "object-src 'none'; base-uri 'self'"
)
PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>ext-apps host</title></head>' \
    '<body><ul id="log"></ul><script src="host.js"></script></body></html>'  # fmt: skip


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def host_page(tmp_path: Path) -> Iterator[str]:
    """The host page and its bundle, served from another origin than the MCP server (127.0.0.1)."""
    root = tmp_path / "host"
    root.mkdir()
    subprocess.run(
        [str(node()), str(JS_DIR / "build_apps_host.mjs"), str(root / "host.js")],
        cwd=JS_DIR, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    (root / "index.html").write_text(PAGE)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _until(check: Callable[[], Any], what: str, timeout: float = 15, driver: Any = None) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = check()
        except StaleElementReferenceException:  # the view re-rendered under us: look again
            found = None
        if found:
            return found
        time.sleep(0.1)
    said = ""
    if driver is not None:  # what the view says (its status line), to explain the timeout
        said = " ".join(e.text for e in driver.find_elements("css selector", ".mcp-status"))
    raise AssertionError(f"timed out waiting for {what} {said!r}")


def _open_host(driver: Any, origin: str, mcp: str, token: str, tool: str, args: dict[str, Any]) -> None:
    driver.switch_to.default_content()
    # A query per tool: a new document each time (a changed hash alone would not reload the host).
    driver.get(
        f"{origin}/index.html?{tool}#" + urlencode({"mcp": mcp, "token": token, "tool": tool, "args": json.dumps(args)})
    )
    body = driver.find_element("css selector", "body")
    state = _until(
        lambda: body.get_attribute("data-state") or body.get_attribute("data-error"), f"the host to mount {tool}"
    )
    assert state == "sent", state
    # The view gets the CSP a host builds from its _meta.ui (no csp declared: the strict default).
    assert body.get_attribute("data-csp") == DEFAULT_CSP
    assert json.loads(body.get_attribute("data-server-ui")) == {"mimeTypes": ["text/html;profile=mcp-app"]}
    frame = driver.find_element("css selector", "iframe#view")
    assert frame.get_attribute("sandbox") == "allow-scripts"
    driver.switch_to.frame(frame)
    meta = driver.find_element("css selector", 'meta[http-equiv="Content-Security-Policy"]')
    assert meta.get_attribute("content") == DEFAULT_CSP


def _column(driver: Any, name: str) -> list[str]:
    return [cell.text for cell in driver.find_elements("css selector", f'tbody td[data-column="{name}"]')]


def test_the_official_host_renders_pages_sorts_and_submits(browser: Any, host_page: str, tmp_path: Path) -> None:
    shots = tmp_path / "screenshots"
    shots.mkdir()
    env = {"MCP_AUTH": "oauth", "MCP_RESOURCE_URL": RESOURCE, "MCP_RATE_LIMIT": "off", "MCP_ALLOWED_ORIGINS": host_page}
    env |= {"DJANGO_DEBUG": "1", "DEMO_ADMIN_PASSWORD": "apps-pw"}  # DEBUG: the admin's static files
    with run_server(tmp_path, extra_env=env) as server:
        server.manage("seed_library", "--books", "40")
        server.manage("mcp_sync_toolsets")
        server.manage("demo_superuser")
        token = server.manage("mcp_token", "--user", "bob", "--scopes", "library:read library:write").split()[-1]
        author = server.manage(
            "shell", "-c", "from project.library.models import Author; print(Author.objects.order_by('pk')[0].pk)"
        ).split()[-1]
        mcp = server.url  # the endpoint
        browser.implicitly_wait(0)

        # list_book: the table from a real tools/call, then a sort and a next page through the host.
        _open_host(browser, host_page, mcp, token, "list_book", {"limit": 5, "order_by": ["title"]})
        _until(lambda: len(_column(browser, "title")) == 5, "five rows")
        titles = _column(browser, "title")
        assert titles == sorted(titles)
        browser.save_screenshot(str(shots / "1-list.png"))
        browser.find_element("css selector", 'button[data-sort="pages"]').click()
        _until(lambda: "▲" in browser.find_element("css selector", 'button[data-sort="pages"]').text, "the sort")
        pages = [int(p) for p in _column(browser, "pages")]
        assert pages == sorted(pages)
        assert len(pages) == 5
        first_page = _column(browser, "id")
        browser.find_element("css selector", "button.mcp-next").click()
        _until(lambda: "later page" in browser.find_element("css selector", ".mcp-status").text, "the next page")
        second = [int(p) for p in _column(browser, "pages")]
        assert not set(_column(browser, "id")) & set(first_page)
        assert min(second) >= max(pages)  # the cursor continued the same order
        # A yes/no filter is a choice of any, yes and no (issue 34: it was a text box). Bob's
        # books are all in stock (project/library/seed.py): "no" finds none, "yes" some.
        stock = browser.find_element("css selector", 'select[name="in_stock"]')
        options = stock.find_elements("css selector", "option")
        assert [(o.get_attribute("value"), o.text) for o in options] == [("", "any"), ("true", "yes"), ("false", "no")]
        options[2].click()
        browser.find_element("css selector", "button.mcp-filter").click()
        status = browser.find_element("css selector", ".mcp-status")
        _until(lambda: status.text == "0 row(s)", "no book out of stock")
        options[1].click()
        browser.find_element("css selector", "button.mcp-filter").click()
        _until(lambda: _column(browser, "in_stock") and set(_column(browser, "in_stock")) == {"true"}, "books in stock")
        assert "mcp-error" not in status.get_attribute("class"), status.text
        browser.switch_to.default_content()
        browser.save_screenshot(str(shots / "2-sorted-next-page.png"))

        # create_book: the call creates a book; the form resubmits it (a duplicate ISBN: the
        # serializer's error at its field), then with a new ISBN it saves.
        book = {"isbn": "9781234567897", "title": "Made in a browser", "author": int(author), "genre": "poetry"}
        book |= {"price": "12.50", "pages": 88}
        _open_host(browser, host_page, mcp, token, "create_book", book)
        status = browser.find_element("css selector", ".mcp-status")
        _until(
            lambda: (
                browser.find_elements("css selector", '.mcp-detail td[data-field="id"]')
                or "mcp-error" in status.get_attribute("class")
            ),
            "the created book",
        )
        assert "mcp-error" not in status.get_attribute("class"), status.text
        assert browser.find_element("css selector", 'input[name="title"]').get_attribute("value") == book["title"]
        browser.find_element("css selector", ".mcp-form button.mcp-submit").click()
        error = _until(
            lambda: browser.find_element("css selector", '.mcp-field[data-field="isbn"] .mcp-field-error').text,
            "the ISBN error",
            driver=browser,
        )
        assert "isbn" in error.lower() or "exists" in error.lower()
        browser.switch_to.default_content()
        browser.save_screenshot(str(shots / "3-form-error.png"))
        browser.switch_to.frame(browser.find_element("css selector", "iframe#view"))
        isbn = browser.find_element("css selector", 'input[name="isbn"]')
        isbn.clear()
        isbn.send_keys("9781234567880")
        browser.find_element("css selector", ".mcp-form button.mcp-submit").click()
        _until(lambda: browser.find_element("css selector", ".mcp-status").text == "Saved.", "the save")
        assert browser.find_element("css selector", '.mcp-detail td[data-field="isbn"]').text == "9781234567880"
        browser.switch_to.default_content()
        browser.save_screenshot(str(shots / "4-form-saved.png"))

        # The admin's preview: Try it on list_book, the view in the page's host (the official
        # AppBridge, static/mcp_tools/ui_host.js), and its next page through a Try it call once
        # confirmed in the page's prompt.
        browser.get(f"{server.base_url}/admin/login/")
        browser.find_element("css selector", "[name=username]").send_keys("admin")
        browser.find_element("css selector", "[name=password]").send_keys("apps-pw")
        browser.find_element("css selector", "[type=submit]").click()
        _until(lambda: "/admin/login/" not in browser.current_url, "the login")
        pk = server.manage(
            "shell", "-c", "from mcp_tools.models import Tool; print(Tool.objects.get(name='list_book').pk)"
        ).split()[-1]
        browser.get(f"{server.base_url}/admin/mcp_tools/tool/{pk}/try/")
        box = browser.find_element("css selector", "[name=arguments]")
        box.clear()
        box.send_keys(json.dumps({"limit": 4, "order_by": ["title"]}))
        browser.find_element("css selector", "[name=_run]").click()
        host = _until(lambda: browser.find_elements("css selector", "[data-mcp-ui-host]"), "the admin's preview")[0]
        _until(lambda: host.get_attribute("data-state") == "ready", "the preview's ui/initialize")
        browser.switch_to.frame(browser.find_element("css selector", "#mcp-ui-frame"))
        _until(lambda: len(_column(browser, "title")) == 4, "the preview's rows")
        titles = _column(browser, "title")
        browser.find_element("css selector", "button.mcp-next").click()
        # The view's call waits for the person's decision (issue 32): shown, then confirmed.
        browser.switch_to.default_content()
        _until(lambda: host.get_attribute("data-asking") == "list_book", "the preview's prompt")
        assert json.loads(browser.find_element("css selector", ".mcp-ui-ask-args").text)["limit"] == 4
        run = browser.find_element("css selector", ".mcp-ui-run")
        _until(run.is_enabled, "the Run button to be armed")
        run.click()
        browser.switch_to.frame(browser.find_element("css selector", "#mcp-ui-frame"))
        _until(
            lambda: "later page" in browser.find_element("css selector", ".mcp-status").text, "the preview's next page"
        )
        assert min(_column(browser, "title")) >= max(titles)
        browser.switch_to.default_content()
        browser.save_screenshot(str(shots / "5-admin-preview.png"))
    assert sorted(p.name for p in shots.iterdir()) == [
        "1-list.png", "2-sorted-next-page.png", "3-form-error.png", "4-form-saved.png", "5-admin-preview.png",
    ]  # fmt: skip


def test_the_admin_preview_host_is_the_build_of_its_source(tmp_path: Path) -> None:
    """static/mcp_tools/ui_host.js is exactly what build_admin_ui_host.mjs makes from the pinned packages."""
    out = tmp_path / "ui_host.js"
    subprocess.run(
        [str(node()), str(JS_DIR / "build_admin_ui_host.mjs"), str(out)],
        cwd=JS_DIR, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    committed = Path(__file__).resolve().parents[2] / "mcp_tools" / "static" / "mcp_tools" / "ui_host.js"
    assert out.read_bytes() == committed.read_bytes(), "rebuild it: node tests/e2e/js/build_admin_ui_host.mjs"
