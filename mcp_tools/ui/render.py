"""A tool's view as a complete HTML5 document: its template rendered in a sandbox, cached per version.

A template stored in the database (edited in the admin) is compiled by ``SandboxEngine``: no
loaders (nothing reaches files or the database), the restricted builtins of ``library``,
autoescape on, and a context of plain values (the tool's name, title, description, schemas and
``ui://`` URI), never a model instance. A template path names a template of the site's own
engines, trusted as the site's code is, rendered with the same context. A fragment is wrapped
in a complete document; the app bridge (``templates/mcp_tools/ui/bridge.js``) is inlined in
either, since a sandboxed view can load nothing the CSP does not declare.
"""

from __future__ import annotations

import copy
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from django.template import Context, Engine, TemplateDoesNotExist, TemplateSyntaxError, loader

from . import library

__all__ = ["MAX_DOCUMENT_BYTES", "SandboxEngine", "UiSource", "render_document", "template_problems"]

# A rendered view larger than this is refused (a loop over a large context cannot grow past it).
MAX_DOCUMENT_BYTES = 2_000_000
_CACHE_SIZE = 512
_DOCTYPE = re.compile(r"^\s*(?:<!--.*?-->\s*)*<!doctype\s+html", re.IGNORECASE | re.DOTALL)
_HEAD = re.compile(r"<head(?:\s[^>]*)?>", re.IGNORECASE)


class SandboxEngine(Engine):
    """An engine whose builtins are ``mcp_tools.ui.library`` only (Django's always-loaded
    builtins, loader tags among them, are left out) and that loads no template by name."""

    default_builtins: list[str] = []  # overrides Engine's class attribute

    def __init__(self) -> None:
        super().__init__(
            dirs=[],
            app_dirs=False,
            loaders=[],
            libraries={},
            builtins=["mcp_tools.ui.library"],
            autoescape=True,
            debug=False,
            string_if_invalid="",
        )


@cache
def sandbox() -> SandboxEngine:
    return SandboxEngine()


@cache
def bridge_script() -> str:
    path = Path(__file__).resolve().parent.parent / "templates" / "mcp_tools" / "ui" / "bridge.js"
    return path.read_text(encoding="utf-8")


@dataclass(frozen=True, slots=True)
class UiSource:
    """What a view is rendered from: one tool version's template (text or path) and context."""

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


def template_problems(template: str, template_name: str) -> dict[str, list[str]]:
    """What keeps a UI's template from compiling, by field (empty: it compiles)."""
    if template:
        try:
            sandbox().from_string(template)
        except TemplateSyntaxError as exc:
            return {"ui_template": [f"Template error: {exc}"]}
        except Exception as exc:  # a broken tag's own exception: still the template's fault
            return {"ui_template": [f"Template error: {type(exc).__name__}: {exc}"]}
    elif template_name:
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
    """The complete HTML5 document of ``source``; rendered once per tool version (and URI)."""
    key = (source.pk, source.version, source.resource_uri)
    found = _rendered.get(key)
    if found is not None:
        return found
    html = _document(_render_body(source))
    if len(html.encode()) > MAX_DOCUMENT_BYTES:
        raise UiRenderError(f"The rendered view is larger than {MAX_DOCUMENT_BYTES} bytes.")
    with _lock:
        _rendered[key] = html
        while len(_rendered) > _CACHE_SIZE:
            _rendered.popitem(last=False)
    return html


def _render_body(source: UiSource) -> str:
    context = source.context()
    token = library.budget.set(library.Budget())
    try:
        if source.template:
            return sandbox().from_string(source.template).render(Context(context, autoescape=True))
        if source.template_name:
            return loader.get_template(source.template_name).render(context)
    except library.ViewTooLarge as exc:
        raise UiRenderError(f"The view is too large to render: {exc}.") from exc
    except Exception as exc:
        raise UiRenderError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        library.budget.reset(token)
    raise UiRenderError("The tool has no UI.")


def _document(body: str) -> str:
    script = "<script>\n" + bridge_script().replace("</", "<\\/") + "\n</script>"
    if _DOCTYPE.match(body):
        head = _HEAD.search(body)
        if head is None:
            raise UiRenderError("A complete document needs a <head> (the app bridge goes there).")
        return body[: head.end()] + script + body[head.end() :]
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
