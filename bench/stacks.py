"""Middleware stacks shared by the bare site and our endpoint under benchmark."""

from __future__ import annotations

from project.settings import MIDDLEWARE

# "default" is the demo site's own list, so ours and bare run exactly what the demo runs.
DEFAULT = list(MIDDLEWARE)
STACKS: dict[str, list[str]] = {"default": DEFAULT, "empty": []}


def middleware_for(name: str) -> list[str]:
    try:
        return list(STACKS[name])
    except KeyError:
        raise SystemExit(f"unknown BENCH_MIDDLEWARE {name!r}; use one of {', '.join(STACKS)}") from None
