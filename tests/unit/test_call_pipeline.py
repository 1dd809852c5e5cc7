"""One tools/call is one ``ToolCall``: named steps in order; the runner only runs the handler."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from mcp_tools.services.calls import ToolCall

ROOT = Path(__file__).resolve().parents[2]


def test_the_module_docstring_lists_the_steps_of_a_call_in_order() -> None:
    """``ToolCall.STEPS`` is the one list; the docstring and ARCHITECTURE.md say the same."""
    steps = [step.__name__ for step in ToolCall.STEPS]
    assert steps[0] == "find_tool"
    assert steps[-2:] == ["run", "shape"]
    documented = [line.split()[1] for line in (inspect.getmodule(ToolCall).__doc__ or "").splitlines()
                  if line[:1].isdigit()]  # fmt: skip
    assert [name.strip("`") for name in documented] == steps
    architecture = (ROOT / "ARCHITECTURE.md").read_text()
    assert "ToolCall.STEPS" in architecture


def test_serving_a_call_runs_the_steps_of_the_one_list() -> None:
    """``steps`` runs ``STEPS`` (a step named only in ``steps`` would escape the list)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(ToolCall.steps)))
    called = {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    }
    assert not called & {step.__name__ for step in ToolCall.STEPS}, called
    assert "self.STEPS" in inspect.getsource(ToolCall.steps)


def test_the_runner_shapes_nothing_for_the_wire() -> None:
    """Shaping per revision is protocol/shaping's: the runner imports nothing of the protocol."""
    tree = ast.parse((ROOT / "mcp_tools" / "runner.py").read_text())
    imported = [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    ]  # fmt: skip
    assert not [name for name in imported if name.startswith("protocol")], imported
