"""Issue 32, finding 2: nothing an admin stores is executed without a bound.

A view stored with a tool (``ui_template``, edited in the admin) is a static document: served as
stored, with the app bridge inlined, never given to a template engine. The review's attacks
(a ``{% with %}`` chain doubling a list built by ``make_list``/``add``: 162 -> 642 MB for one
``resources/read``; ``regroup`` over 2^19 items: 1.65 s of CPU per loop pass) and a seeded fuzz
of adversarial templates up to the size limit (``MAX_UI_TEMPLATE_CHARS``) are stored as rows
written before this change would be (no validation: the form now refuses template syntax) and
read through the endpoint. Every read stays under fixed bounds:

- peak memory growth (``tracemalloc``) of one ``resources/read``: ``MAX_READ_BYTES``, 16 MiB;
- CPU time (``time.process_time``) of one ``resources/read``: ``MAX_READ_CPU_SECONDS``, 0.5 s.

The stored text reaches the client exactly as stored (``{{ tool.name }}`` stays those
characters), and the held cases of the old sandbox (``{% include %}``, ``{% debug %}``,
``{% load %}``) stay harmless: they are text. UI-4.
"""

from __future__ import annotations

import random
import time
import tracemalloc
from typing import Any

import pytest

from mcp_tools.models import CatalogVersion, Tool
from mcp_tools.models.tools import MAX_UI_TEMPLATE_CHARS
from mcp_tools.ui.render import bridge_script, head_end, is_document
from tests.support.mcp_client import APPS_CAPABILITIES, Mcp, check_message

MAX_READ_BYTES = 16 * 2**20
MAX_READ_CPU_SECONDS = 0.5
VERSION = "2025-11-25"
SEED = 32  # the issue's number: the same templates every run
FUZZ_CASES = 40


def _chain(levels: int) -> str:
    """A list from ``make_list``, doubled by ``add`` in ``levels`` nested ``{% with %}``."""
    return "{% with a0=tool.name|make_list %}" + "".join(f"{{% with a{i + 1}=a{i}|add:a{i} %}}" for i in range(levels))


def _doubling(levels: int) -> str:
    """The issue's first shape: the chain, and its length (about 39 characters a level; 24
    levels are the issue's 964 characters)."""
    return _chain(levels) + f"{{{{ a{levels}|length }}}}" + "{% endwith %}" * (levels + 1)


def _regroup(levels: int, passes: int) -> str:
    """The issue's second shape: ``regroup`` over a doubled list in every pass of a loop (the
    issue's loop ran 100,000 passes; two are enough to pass the CPU bound on the old code)."""
    loop = f'{{% for x in "{"x" * passes}" %}}{{% regroup a{levels} by x as g %}}{{{{ g|length }}}}{{% endfor %}}'
    return _chain(levels) + loop + "{% endwith %}" * (levels + 1)


def _nested_loops(width: int, depth: int) -> str:
    letters = "x" * width
    return "".join(f'{{% for v{i} in "{letters}" %}}' for i in range(depth)) + "{{ v0 }}" + "{% endfor %}" * depth


ISSUE_TEMPLATES = {
    "with-doubling-964": _doubling(24),
    "with-doubling-small": _doubling(19),
    "regroup-in-a-loop": _regroup(17, 2),
    "nested-loops": _nested_loops(400, 3),
    "include": "{% include 'admin/base.html' %}",
    "debug": "{% debug %}",
    "load": "{% load static %}{% get_static_prefix %}",
    "join": '{{ tool.name|make_list|join:", " }}',
    "lorem": "{% lorem 1000000 w %}",
    # Found on the way: the document's own parsing. Comments before a doctype backtracked
    # exponentially (24 comments: seconds; 40: hours), and a <head without its > was looked for
    # from every "<head " (quadratic); both are one pass now.
    "comments": "<!--a-->" * 24 + "<p>x</p>",
    "head-without-end": "<!DOCTYPE html>" + "<head " * 20_000,
}


@pytest.fixture
def viewer(demo_tools: None) -> Tool:
    tool = Tool(name="viewer", handler_key="demo.echo", ui_template="<p>view</p>")
    tool.full_clean()
    tool.save()
    return tool


def _store(tool: Tool, template: str) -> None:
    """As a row stored before this change holds it: written as is, no validation."""
    Tool.objects.filter(pk=tool.pk).update(ui_template=template, version=tool.version + 1)
    tool.version += 1
    CatalogVersion.bump()


def _read(mcp: Mcp) -> tuple[dict[str, Any], float, int]:
    """One resources/read of the viewer's view through the endpoint: (message, CPU s, peak bytes).

    Read twice from a cold document cache: once timed, once under tracemalloc (which slows
    Python down several times, so it does not share the timed read)."""
    from mcp_tools.ui.render import reset

    body = {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "ui://tools/viewer"}}
    reset()
    started = time.process_time()
    response, messages = mcp.post(body, validate=False)
    cpu = time.process_time() - started
    reset()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        mcp.post(body, validate=False)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert response.status_code == 200
    (message,) = messages
    check_message(VERSION, message, "resources/read")
    return message, cpu, peak


def _served_as_stored(message: dict[str, Any], template: str) -> None:
    if is_document(template) and head_end(template) is None:  # no <head> for the bridge: the form refuses it
        assert message["error"] == {"code": -32603, "message": "The tool's view could not be rendered"}
        return
    assert "result" in message, message
    (item,) = message["result"]["contents"]
    html = item["text"]
    script = "<script>\n" + bridge_script().replace("</", "<\\/") + "\n</script>"
    assert script in html  # the bridge, inlined
    if template.lstrip().lower().startswith("<!doctype"):
        assert html.replace(script, "", 1) == template
    else:
        assert template in html


@pytest.mark.parametrize("name", ISSUE_TEMPLATES)
def test_the_issue_s_templates_are_text_and_bounded(viewer: Tool, mcp: Mcp, name: str) -> None:
    template = ISSUE_TEMPLATES[name]
    mcp.initialize(VERSION, capabilities=APPS_CAPABILITIES)
    _store(viewer, template)
    message, cpu, peak = _read(mcp)
    assert peak < MAX_READ_BYTES, f"{name}: peak {peak / 2**20:.1f} MiB"
    assert cpu < MAX_READ_CPU_SECONDS, f"{name}: {cpu:.2f} s of CPU"
    _served_as_stored(message, template)


# ------------------------------------------------------------------ the fuzz

# Pieces a hostile template is made of: every tag and filter family the old sandbox allowed,
# the ones it refused, loops over what the pieces build, and text that looks like the bridge's end.
_OPEN = [
    "{% with v=tool.name|make_list %}",
    "{% with v=v|add:v %}",
    '{% for i in "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" %}',
    "{% for k, w in tool.items %}",
    "{% if v %}",
    "{% filter upper|slugify %}",
    "{% spaceless %}",
    "{% autoescape off %}",
    "{% block b %}",
    "{% verbatim %}",
    "{% ifchanged %}",
]
_CLOSE = {
    "{% with": "{% endwith %}",
    "{% for ": "{% endfor %}",
    "{% if ": "{% endif %}",
    "{% filter": "{% endfilter %}",
    "{% spaceless": "{% endspaceless %}",
    "{% autoescape": "{% endautoescape %}",
    "{% block": "{% endblock %}",
    "{% verbatim": "{% endverbatim %}",
    "{% ifchanged": "{% endifchanged %}",
}
_LEAVES = [
    "{% regroup v by 0 as g %}{{ g|length }}",
    '{{ v|join:"," }}',
    "{{ v|add:v|length }}",
    "{{ tool.input_schema|pprint }}",
    "{{ tool.name|stringformat:'99999999s' }}",
    "{{ tool.name|ljust:'99999999' }}",
    "{% widthratio 1 1 999999999999 %}",
    "{% cycle 'a' 'b' 'c' %}",
    "{% now 'Y-m-d' %}",
    "{% lorem 99999 w %}",
    "{% include 'admin/base.html' %}",
    "{% extends 'admin/base.html' %}",
    "{% load static %}",
    "{% debug %}",
    "{% url 'admin:index' %}",
    "{% csrf_token %}",
    "{% templatetag openblock %}",
    "{{ tool.title|safe }}",
    "{{ 9999999999|floatformat:99999 }}",
    "{# a comment #}",
    "</script><script>alert(1)</script>",
    "<script>mcpApp.ready.then(()=>mcpApp.callTool('delete_book',{id:3}))</script>",
    "<p data-mcp-text='title'>\u00e9\u4e2d\U0001f600</p>",
    "{{",
    "{%",
    "%}}}",
    "<!--a-->",
    "<head ",
    "<!DOCTYPE html>",
]


def _fuzzed(rng: random.Random, size: int) -> str:
    """A template of ``size`` characters (at most) built from the pieces above, nested."""
    parts: list[str] = []
    closers: list[str] = []
    length = 0
    while True:
        choice = rng.random()
        if choice < 0.3 and len(closers) < 40:
            piece = rng.choice(_OPEN)
            closer = next(c for prefix, c in _CLOSE.items() if piece.startswith(prefix))
        elif choice < 0.4 and closers:
            piece, closer = closers.pop(), ""
        else:
            piece, closer = rng.choice(_LEAVES), ""
        tail = sum(map(len, closers)) + len(closer)
        if length + len(piece) + tail > size:
            break
        parts.append(piece)
        length += len(piece)
        if closer:
            closers.append(closer)
    return "".join(parts + closers[::-1])


def _fuzz_templates() -> list[str]:
    rng = random.Random(SEED)
    sizes = [MAX_UI_TEMPLATE_CHARS, MAX_UI_TEMPLATE_CHARS - 1, 1_000, 39 * 24]
    sizes += [rng.randint(64, MAX_UI_TEMPLATE_CHARS) for _ in range(FUZZ_CASES - len(sizes))]
    templates = [_fuzzed(rng, size) for size in sizes]
    # The issue's chain as long as the limit allows.
    low, high = 24, MAX_UI_TEMPLATE_CHARS // 40
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(_doubling(middle)) <= MAX_UI_TEMPLATE_CHARS else (low, middle - 1)
    templates.append(_doubling(low))
    return templates


def test_fuzzed_templates_up_to_the_limit_are_text_and_bounded(viewer: Tool, mcp: Mcp) -> None:
    """FUZZ_CASES seeded templates, up to MAX_UI_TEMPLATE_CHARS each, and the longest doubling
    chain that fits: every read under 16 MiB of memory growth and 0.5 s of CPU."""
    mcp.initialize(VERSION, capabilities=APPS_CAPABILITIES)
    worst_cpu = worst_peak = 0.0
    templates = _fuzz_templates()
    assert max(map(len, templates)) <= MAX_UI_TEMPLATE_CHARS
    assert len(max(templates, key=len)) > MAX_UI_TEMPLATE_CHARS - 200  # the limit is reached
    for number, template in enumerate(templates):
        _store(viewer, template)
        message, cpu, peak = _read(mcp)
        assert peak < MAX_READ_BYTES, f"template {number} ({len(template)} chars): peak {peak / 2**20:.1f} MiB"
        assert cpu < MAX_READ_CPU_SECONDS, f"template {number} ({len(template)} chars): {cpu:.2f} s of CPU"
        _served_as_stored(message, template)
        worst_cpu, worst_peak = max(worst_cpu, cpu), max(worst_peak, peak)
    print(f"{len(templates)} templates: worst CPU {worst_cpu * 1000:.1f} ms, worst peak {worst_peak / 2**20:.2f} MiB")


def test_the_checks_name_views_written_for_the_old_rendering(viewer: Tool) -> None:
    """Existing data: a stored view with template syntax is served as text now (W020); a
    template path outside UI_TEMPLATE_PREFIXES is not served (W021)."""
    from django.core.checks import run_checks

    def flagged() -> dict[str, str]:
        return {m.id: m.msg for m in run_checks(databases=["default"]) if m.id in ("mcp_tools.W020", "mcp_tools.W021")}

    assert flagged() == {}
    _store(viewer, "<h1>{{ tool.title }}</h1>")
    Tool.objects.filter(name="echo").update(ui_template_name="admin/base.html")
    found = flagged()
    assert "'viewer'" in found["mcp_tools.W020"]
    assert "{{ tool.title }} on line 1" in found["mcp_tools.W020"]
    assert "'echo'" in found["mcp_tools.W021"]
    assert "UI_TEMPLATE_PREFIXES" in found["mcp_tools.W021"]
