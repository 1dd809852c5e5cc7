"""Parts of the docs generated from the code and the tutorial's files, committed in the pages.

A page is read where it lands (on the forge, in an editor) as often as in the built site, so
what is generated is written into the Markdown itself, between two comments::

    <!-- generated: settings -->
    | key | default | meaning |
    ...
    <!-- end generated -->

Kinds:

- ``settings``: the ``MCP_TOOLS`` keys from ``mcp_tools.conf.SETTINGS`` (name, default, meaning);
- ``commands``: every management command of the app and its contrib apps: its help, and a
  table of its arguments and options from its argparse parser;
- ``checks``: the system checks, from the docstrings of the checks modules (one ``- id: meaning``
  item per check);
- ``include PATH [start-after=TEXT] [end-before=TEXT] [language=NAME]``: a file (relative to the
  page), or the lines between two markers of it, as a fenced code block.

``python docs/_ext/mcp_reference.py`` (``make docs-reference``) writes every region again;
``--check`` says which are out of date. The Sphinx extension fails the build (a warning, and
``make docs`` turns warnings into errors) when a page's regions are not what the code gives now,
and ``tests/unit/test_docs_current.py`` checks the same in the test suite.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import shlex
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
COMMAND_PACKAGES = ["mcp_tools.management.commands", "mcp_tools.contrib.drf.management.commands"]
CHECK_MODULES = ["mcp_tools.checks", "mcp_tools.contrib.drf.checks", "mcp_tools.contrib.celery.checks"]
REGION = re.compile(r"^<!-- generated: (?P<spec>.+?) -->\n(?P<body>.*?)^<!-- end generated -->$", re.M | re.S)


# --------------------------------------------------------------------------- the kinds


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _default(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
        return f"{value:_}"
    return repr(value)


def settings() -> str:
    from mcp_tools import conf

    rows = ["| key | default | meaning |", "| --- | --- | --- |"]
    for name, setting in conf.SETTINGS.items():
        rows.append(f"| {_code(name)} | {_cell(_code(_default(setting.default)))} | {_cell(setting.help)} |")
    return "\n".join(rows) + "\n"


def commands() -> str:
    """Each command: what it does, then its arguments and options as a table (written here, not
    argparse's help text, which differs between Python versions and terminal widths)."""
    parts: list[str] = []
    for package_name in COMMAND_PACKAGES:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
            module = importlib.import_module(f"{package_name}.{info.name}")
            command = module.Command()
            parser = command.create_parser("manage.py", info.name)
            app = package_name.rsplit(".management", 1)[0]
            lines = [f"## {info.name}", "", f"From `{app}`. {_cell(str(command.help))}", ""]
            lines += ["| argument or option | meaning |", "| --- | --- |"]
            formatter = parser._get_formatter()
            for action in parser._actions:
                if action.help == argparse.SUPPRESS or action.dest == "help":
                    continue
                names = action.option_strings or [action.dest]
                if any(name.lstrip("-") in _DJANGO_OPTIONS for name in names):
                    continue
                metavar = ""
                if action.nargs != 0:
                    metavar = " " + formatter._metavar_formatter(action, action.dest.upper())(1)[0]
                shown = ", ".join(f"{name}{metavar}" if action.option_strings else name for name in names)
                meaning = formatter._expand_help(action) if action.help else ""
                lines.append(f"| {_code(shown)} | {_cell(meaning)} |")
            parts.append("\n".join(lines) + "\n")
    parts.append("Every command also takes Django's own options (`--settings`, `--pythonpath`, `--verbosity`...).\n")
    return "\n".join(parts)


_DJANGO_OPTIONS = {
    "version",
    "verbosity",
    "settings",
    "pythonpath",
    "traceback",
    "no-color",
    "force-color",
    "skip-checks",
}


def checks() -> str:
    rows = ["| id | meaning |", "| --- | --- |"]
    for module_name in CHECK_MODULES:
        module = importlib.import_module(module_name)
        for ident, meaning in re.findall(r"^- (\S+): (.*?)(?=^- |\Z)", module.__doc__ or "", re.M | re.S):
            rows.append(f"| {_code(ident)} | {_cell(meaning.replace('``', '`'))} |")
    if len(rows) == 2:
        raise ValueError("no checks found in the checks modules' docstrings")
    return "\n".join(rows) + "\n"


def include(page: Path, args: list[str]) -> str:
    path, *options = args
    opts = dict(option.split("=", 1) for option in options)
    lines = (page.parent / path).read_text().splitlines()
    if "start-after" in opts:
        lines = lines[next(i for i, line in enumerate(lines) if opts["start-after"] in line) + 1 :]
    if "end-before" in opts:
        lines = lines[: next(i for i, line in enumerate(lines) if opts["end-before"] in line)]
    suffix = Path(path).suffix.lstrip(".")
    language = opts.get("language", {"py": "python"}.get(suffix, suffix))
    return f"```{language}\n" + "\n".join(lines).rstrip("\n") + "\n```\n"


# --------------------------------------------------------------------------- the pages


def generate(page: Path, spec: str) -> str:
    kind, *args = shlex.split(spec)
    if kind == "include":
        return include(page, args)
    return {"settings": settings, "commands": commands, "checks": checks}[kind]()


def refreshed(page: Path) -> str:
    """The page's text with every region generated again."""
    text = page.read_text()

    def one(match: re.Match[str]) -> str:
        return f"<!-- generated: {match['spec']} -->\n{generate(page, match['spec'])}<!-- end generated -->"

    return REGION.sub(one, text)


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts and REGION.search(p.read_text()))


def stale() -> list[Path]:
    """The pages whose generated regions are not what the code and files give now."""
    return [page for page in pages() if refreshed(page) != page.read_text()]


def setup_django() -> None:
    sys.path[:0] = [str(ROOT)]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()


def main(argv: list[str]) -> int:
    setup_django()
    if "--check" in argv:
        out_of_date = stale()
        for page in out_of_date:
            print(f"{page.relative_to(ROOT)}: generated parts out of date (make docs-reference)")
        return 1 if out_of_date else 0
    for page in pages():
        text = refreshed(page)
        if text != page.read_text():
            page.write_text(text)
            print(f"wrote {page.relative_to(ROOT)}")
    return 0


# --------------------------------------------------------------------------- Sphinx


def _check_current(app: Any) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for page in stale():
        logger.warning("%s: its generated parts are out of date: run make docs-reference", page.relative_to(ROOT))


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _check_current)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
