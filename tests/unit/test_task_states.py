"""The task state machine: one table of legal moves, and every status write goes through ``move``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcp_tools.models import McpTask
from mcp_tools.models.task_rows import TRANSITIONS, can_move, sources_of
from mcp_tools.protocol import task_wire as wire

ROOT = Path(__file__).resolve().parents[2]

W, IR, C, F, X = wire.WORKING, wire.INPUT_REQUIRED, wire.COMPLETED, wire.FAILED, wire.CANCELLED


def test_the_table_names_every_status_and_only_statuses() -> None:
    assert set(TRANSITIONS) == set(wire.STATUSES)
    assert all(set(nexts) <= set(wire.STATUSES) for nexts in TRANSITIONS.values())


def test_the_legal_moves_of_t11_7() -> None:
    assert TRANSITIONS[W] == {IR, C, F, X}
    assert TRANSITIONS[IR] == {W, C, F, X}
    assert all(not TRANSITIONS[t] for t in wire.TERMINAL)
    assert sources_of(W) == (IR,)
    assert sources_of(X) == (W, IR)
    # A live status may be written again (a claim, a retry); a terminal one never.
    assert can_move(W, W)
    assert can_move(IR, IR)
    assert not any(can_move(t, s) for t in wire.TERMINAL for s in wire.STATUSES)


def test_move_refuses_an_illegal_expected_status() -> None:
    with pytest.raises(ValueError, match="cannot move"):
        McpTask.objects.move("x", W, expected=C)


def _status_writes(tree: ast.AST) -> list[int]:
    """Lines of ``.update(status=...)`` calls and ``.status = ...`` assignments outside ``move``."""
    found: list[int] = []

    def visit(node: ast.AST, inside_move: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside_move = inside_move or node.name == "move"
        if (
            not inside_move
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"update", "bulk_update"}
            and any(k.arg == "status" for k in node.keywords)
        ):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside_move)

    visit(tree, False)
    return found


def test_no_task_status_is_written_outside_move() -> None:
    """``TaskQuerySet.move`` keeps the legal transitions; a raw ``.update(status=...)`` bypasses it."""
    offenders = []
    for path in sorted((ROOT / "mcp_tools").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for line in _status_writes(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "task status written outside TaskQuerySet.move: " + ", ".join(offenders)
