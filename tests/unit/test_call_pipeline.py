"""One tools/call is one ``ToolCall``: named steps in order; the runner only runs the handler."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from mcp_tools.services.calls import ToolCall

ROOT = Path(__file__).resolve().parents[2]

STEPS = [
    "find_tool",
    "read_arguments",
    "decide_task",
    "check_arguments",
    "rate_limit",
    "start_task",
    "approve",
    "run",
    "shape",
]


def test_the_steps_of_a_call_run_in_their_documented_order() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(ToolCall.steps)))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    ]
    called = [node.func.attr for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset))]  # type: ignore[attr-defined]
    assert [name for name in called if name in STEPS] == STEPS
    assert ToolCall.__doc__
    documented = [line.split()[1] for line in (inspect.getmodule(ToolCall).__doc__ or "").splitlines()
                  if line[:1].isdigit()]  # fmt: skip
    assert [name.strip("`") for name in documented] == STEPS


def test_the_runner_shapes_nothing_for_the_wire() -> None:
    """Shaping per revision is protocol/shaping's: the runner imports nothing of the protocol."""
    tree = ast.parse((ROOT / "mcp_tools" / "runner.py").read_text())
    imported = [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    ]  # fmt: skip
    assert not [name for name in imported if name.startswith("protocol")], imported
