"""Middleware stacks shared by the bare site and our endpoint under benchmark."""

from __future__ import annotations

import ast
from pathlib import Path


def _demo_middleware() -> list[str]:
    """``MIDDLEWARE`` of project/settings.py, read without importing ``project`` (whose
    ``__init__`` loads the demo's Celery app: the bare and lean sites would carry it)."""
    tree = ast.parse((Path(__file__).resolve().parent.parent / "project" / "settings.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MIDDLEWARE" for t in node.targets):
            value: list[str] = ast.literal_eval(node.value)
            return value
    raise RuntimeError("project/settings.py has no MIDDLEWARE list")


# "default" is the demo site's own list, so ours and bare run exactly what the demo runs.
DEFAULT = _demo_middleware()
STACKS: dict[str, list[str]] = {"default": DEFAULT, "empty": []}


def middleware_for(name: str) -> list[str]:
    try:
        return list(STACKS[name])
    except KeyError:
        raise SystemExit(f"unknown BENCH_MIDDLEWARE {name!r}; use one of {', '.join(STACKS)}") from None
