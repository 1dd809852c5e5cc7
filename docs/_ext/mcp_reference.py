"""Reference pages generated from the code, so that they cannot drift from it.

- ``mcp-settings``: the ``MCP_TOOLS`` keys from ``mcp_tools.conf.SETTINGS`` (name, default,
  meaning);
- ``mcp-commands``: every management command of the app and its contrib apps, its help as its
  argparse parser prints it;
- ``mcp-checks``: the system checks, from the docstrings of the checks modules (one
  ``- id: meaning`` item per check).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

COMMAND_PACKAGES = ["mcp_tools.management.commands", "mcp_tools.contrib.drf.management.commands"]
CHECK_MODULES = ["mcp_tools.checks", "mcp_tools.contrib.drf.checks", "mcp_tools.contrib.celery.checks"]


def _table(header: list[str], rows: list[list[nodes.Node]], widths: list[int]) -> nodes.table:
    table = nodes.table(classes=["mcp-reference"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for title in header:
        row += nodes.entry("", nodes.paragraph(text=title))
    head += row
    body = nodes.tbody()
    group += body
    for cells in rows:
        row = nodes.row()
        for cell in cells:
            row += nodes.entry("", cell)
        body += row
    return table


def _code(text: str) -> nodes.paragraph:
    return nodes.paragraph("", "", nodes.literal(text=text))


def _default(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
        return f"{value:_}"
    return repr(value)


class SettingsDirective(SphinxDirective):
    """The table of every ``MCP_TOOLS`` key: name, default and meaning."""

    def run(self) -> list[nodes.Node]:
        from mcp_tools import conf

        self.env.note_dependency(conf.__file__)
        rows = [
            [_code(name), _code(_default(setting.default)), nodes.paragraph(text=setting.help)]
            for name, setting in conf.SETTINGS.items()
        ]
        return [_table(["key", "default", "meaning"], rows, [30, 25, 45])]


class CommandsDirective(SphinxDirective):
    """Each management command: a section with its argparse help."""

    def run(self) -> list[nodes.Node]:
        result: list[nodes.Node] = []
        for package_name in COMMAND_PACKAGES:
            package = importlib.import_module(package_name)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
                module = importlib.import_module(f"{package_name}.{info.name}")
                self.env.note_dependency(module.__file__)
                parser = module.Command().create_parser("manage.py", info.name)
                section = nodes.section(ids=[f"command-{info.name.replace('_', '-')}"])
                section += nodes.title(text=info.name)
                section += nodes.paragraph(text=f"From {package_name.rsplit('.management', 1)[0]}.")
                section += nodes.literal_block(text=_trim(parser.format_help()), language="text")
                result.append(section)
        return result


def _trim(help_text: str) -> str:
    # Django's own options (--settings, --traceback...) are the same for every command.
    lines = help_text.rstrip().splitlines()
    keep: list[str] = []
    skipping = False
    for line in lines:
        option = re.match(r"\s+(-\w, )?--(\S+)", line)
        if option:
            skipping = option.group(2).split("=")[0].split(" ")[0] in _DJANGO_OPTIONS
        elif not line.startswith("      "):
            skipping = False
        if not skipping:
            keep.append(line)
    keep.append("\nEvery command also takes Django's own options (--settings, --pythonpath, --verbosity...).")
    return "\n".join(keep)


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


class ChecksDirective(SphinxDirective):
    """The system checks, from the ``- id: meaning`` items of the checks modules' docstrings."""

    def run(self) -> list[nodes.Node]:
        rows: list[list[nodes.Node]] = []
        for module_name in CHECK_MODULES:
            module = importlib.import_module(module_name)
            self.env.note_dependency(module.__file__)
            for ident, meaning in re.findall(r"^- (\S+): (.*?)(?=^- |\Z)", module.__doc__ or "", re.M | re.S):
                text = " ".join(meaning.split()).replace("``", "")
                rows.append([_code(ident), nodes.paragraph(text=text)])
        if not rows:
            raise self.error("no checks found in the checks modules' docstrings")
        return [_table(["id", "meaning"], rows, [25, 75])]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("mcp-settings", SettingsDirective)
    app.add_directive("mcp-commands", CommandsDirective)
    app.add_directive("mcp-checks", ChecksDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
