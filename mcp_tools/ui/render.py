"""A tool's view as a complete HTML5 document, cached per tool version.

A view stored in the database (``Tool.ui_template``, edited in the admin) is a static document:
served exactly as stored, never given to a template engine, so nothing an admin stores runs on
the server (issue 32: the sandboxed engine bounded strings, not the memory and CPU of lists,
``regroup`` and loops). Its data reach it in the browser through the app bridge: the call's
arguments and result, the host's context (``toolInfo`` names the tool).

Only a template shipped in code is rendered on the server: a template path
(``Tool.ui_template_name``, the generated views of model toolsets) names a template of the
site's own engines, trusted as the site's code is, and only under one of the prefixes of the
``UI_TEMPLATE_PREFIXES`` setting (an admin cannot name any template of the site: the admin's
own pages, a site's page that lists its users). It is rendered with a context of plain values
(the tool's name, title, description, schemas and ``ui://`` URI), never a model instance.

A fragment is wrapped in a complete document; the app bridge (``templates/mcp_tools/ui/bridge.js``)
is inlined in either, since a sandboxed view can load nothing the CSP does not declare.
"""

from __future__ import annotations

import copy
import posixpath
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.template import TemplateDoesNotExist, TemplateSyntaxError, loader

from ..conf import mcp_settings

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "UiRenderError",
    "UiSource",
    "render_document",
    "template_name_problem",
    "template_problems",
    "template_syntax",
]

# A rendered view larger than this is refused (a code-shipped template looping over a large
# schema cannot grow past it).
MAX_DOCUMENT_BYTES = 2_000_000
_CACHE_SIZE = 512
_DOCTYPE = re.compile(r"<!doctype\s+html", re.IGNORECASE)
_SPACE = re.compile(r"\s*")
_HEAD = re.compile(r"<head[\s>]", re.IGNORECASE)


def is_document(text: str) -> bool:
    """Whether ``text`` starts with ``<!DOCTYPE html>`` (after spaces and comments): a complete
    document rather than a fragment. One pass over the text (a regular expression of repeated
    comments backtracked exponentially: 30 comments held a worker for minutes)."""
    at = 0
    while True:
        spaces = _SPACE.match(text, at)
        at = spaces.end() if spaces is not None else at
        if not text.startswith("<!--", at):
            return _DOCTYPE.match(text, at) is not None
        end = text.find("-->", at + 4)
        if end < 0:
            return False
        at = end + 3


def head_end(text: str) -> int | None:
    """Where the document's ``<head>`` (or ``<head ...>``) tag ends, or None: one pass (a
    pattern scanning for the tag's ``>`` from every ``<head `` is quadratic)."""
    found = _HEAD.search(text)
    if found is None:
        return None
    end = text.find(">", found.start())
    return None if end < 0 else end + 1


@cache
def bridge_script() -> str:
    path = Path(__file__).resolve().parent.parent / "templates" / "mcp_tools" / "ui" / "bridge.js"
    return path.read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class UiSource:
    """What a view is made from: one tool version's stored document or template path, and the
    context a template path is rendered with."""

    pk: int
    version: int
    name: str
    title: str = ""
    description: str = ""
    template: str = ""
    template_name: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    resource_uri: str = ""

    def context(self) -> dict[str, Any]:
        """Copies: a template may call a value's methods (``dict.clear`` too), and the schemas
        are the catalog's own, shared by every request of the process."""
        return {
            "tool": {
                "name": self.name,
                "title": self.title or self.name,
                "description": self.description,
                "input_schema": copy.deepcopy(self.input_schema),
                "output_schema": copy.deepcopy(self.output_schema),
                "resource_uri": self.resource_uri,
            }
        }


class UiRenderError(Exception):
    """The view could not be rendered (its message is safe to show to an admin, not a client)."""


_PAIRS = {"{{": "}}", "{%": "%}", "{#": "#}"}
_OPENING = re.compile(r"\{[{%#]")


def template_syntax(text: str) -> str | None:
    """The first piece of Django template syntax in ``text`` (``{{ x }}``, ``{% x %}`` or
    ``{# x #}`` on one line, as Django's lexer reads them) with its line, or None: what a stored
    view written for the old server-side rendering holds, served as text now.

    One pass over the text: Django's own pattern (a lazy ``.*?`` per opening) takes time
    quadratic in a line's length, and a stored view may be one line of 262,144 characters."""
    closing: dict[str, int] = {}  # the next position of each closing pair found so far
    newline = -1
    for found in _OPENING.finditer(text):
        start = found.start()
        opening = found.group(0)
        close = _PAIRS[opening]
        if newline < start:
            newline = text.find("\n", start)
            if newline < 0:
                newline = len(text)
        at = closing.get(close, -2)
        if at != -1 and at < start + 2:
            at = closing[close] = text.find(close, start + 2)
        if at < 0 or at > newline:
            continue
        line = text.count("\n", 0, start) + 1
        piece = text[start : at + 2]
        return f"{piece if len(piece) <= 40 else piece[:37] + '...'} on line {line}"
    return None


def template_name_problem(template_name: str) -> str | None:
    """Why ``template_name`` may not name a view (outside ``UI_TEMPLATE_PREFIXES``, or a path
    that climbs out of them), or None."""
    prefixes = tuple(mcp_settings.UI_TEMPLATE_PREFIXES)
    normal = posixpath.normpath(template_name)
    if (
        template_name.startswith("/")
        or "\\" in template_name
        or normal != template_name
        or not template_name.startswith(prefixes)
    ):
        allowed = ", ".join(prefixes) or "none (UI_TEMPLATE_PREFIXES is empty)"
        return f"A view's template path starts with one of: {allowed} (the UI_TEMPLATE_PREFIXES setting)."
    return None


def template_problems(template: str, template_name: str) -> dict[str, list[str]]:
    """What keeps a view from being served, by field (empty: nothing)."""
    if template:
        problems = []
        syntax = template_syntax(template)
        if syntax is not None:
            problems.append(
                f"A stored view is served as written: template syntax is not rendered ({syntax}). "
                "Give the view its data through the app bridge (data-mcp-text, data-mcp-tool, "
                "mcpApp.on(...)), or ship it as a template in code and give its path instead."
            )
        if is_document(template) and head_end(template) is None:
            problems.append("A complete document needs a <head> (the app bridge goes there).")
        return {"ui_template": problems} if problems else {}
    if template_name:
        problem = template_name_problem(template_name)
        if problem is not None:
            return {"ui_template_name": [problem]}
        try:
            loader.get_template(template_name)
        except TemplateDoesNotExist:
            return {"ui_template_name": [f"No template {template_name!r} in the site's templates."]}
        except TemplateSyntaxError as exc:
            return {"ui_template_name": [f"Template error: {exc}"]}
    return {}


_rendered: OrderedDict[tuple[int, int, str], str] = OrderedDict()
_lock = threading.Lock()


def render_document(source: UiSource) -> str:
    """The complete HTML5 document of ``source``; made once per tool version (and URI)."""
    key = (source.pk, source.version, source.resource_uri)
    found = _rendered.get(key)
    if found is not None:
        return found
    html = _document(_body(source))
    if len(html.encode()) > MAX_DOCUMENT_BYTES:
        raise UiRenderError(f"The view is larger than {MAX_DOCUMENT_BYTES} bytes.")
    with _lock:
        _rendered[key] = html
        while len(_rendered) > _CACHE_SIZE:
            _rendered.popitem(last=False)
    return html


def _body(source: UiSource) -> str:
    if source.template:
        return source.template  # stored: served as it is
    if source.template_name:
        problem = template_name_problem(source.template_name)
        if problem is not None:  # a row stored before the prefixes changed
            raise UiRenderError(problem)
        try:
            return loader.get_template(source.template_name).render(source.context())
        except Exception as exc:
            raise UiRenderError(f"{type(exc).__name__}: {exc}") from exc
    raise UiRenderError("The tool has no UI.")


def _document(body: str) -> str:
    script = "<script>\n" + bridge_script().replace("</", "<\\/") + "\n</script>"
    if is_document(body):
        end = head_end(body)
        if end is None:
            raise UiRenderError("A complete document needs a <head> (the app bridge goes there).")
        return body[:end] + script + body[end:]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<style>{BASE_CSS}</style>\n{script}\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


BASE_CSS = (
    "body{font-family:var(--font-sans,system-ui,sans-serif);color:var(--color-text-primary,#1f2328);"
    "background:var(--color-background-primary,transparent);margin:0;padding:12px;font-size:14px}"
    "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;"
    "border-bottom:1px solid var(--color-border-primary,#d0d7de)}"
    "button{font:inherit;cursor:pointer}.mcp-error{color:#cf222e}"
)


def reset() -> None:
    with _lock:
        _rendered.clear()
