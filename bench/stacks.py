"""Middleware stacks shared by the bare site and our endpoint under benchmark."""

from __future__ import annotations

# The demo site's list, copied from project/settings.py (checked at run time by bench/run.py).
DEFAULT = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
STACKS: dict[str, list[str]] = {"default": DEFAULT, "empty": []}


def middleware_for(name: str) -> list[str]:
    try:
        return list(STACKS[name])
    except KeyError:
        raise SystemExit(f"unknown BENCH_MIDDLEWARE {name!r}; use one of {', '.join(STACKS)}") from None
