"""Reachability of the external services the suite uses (PostgreSQL, Redis).

Outside CI a missing service skips the tests that need it; in CI (CI=true) it fails them.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

SERVICES = {
    "postgres": (os.environ.get("POSTGRES_HOST", "127.0.0.1"), int(os.environ.get("POSTGRES_PORT", "5432"))),
    "redis": ("127.0.0.1", 6379),
}


def reachable(name: str) -> bool:
    host, port = SERVICES[name]
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def require(name: str) -> None:
    if reachable(name):
        return
    message = f"{name} is not reachable at {SERVICES[name][0]}:{SERVICES[name][1]}"
    if IN_CI:
        pytest.fail(f"{message} (CI=true: a missing service is a failure)")
    pytest.skip(message)


@contextlib.contextmanager
def temporary_postgres_database(prefix: str = "mcp_tmp") -> Iterator[str]:
    """A fresh PostgreSQL database for servers started by a test or the bench; dropped afterwards."""
    import uuid

    import psycopg

    host, port = SERVICES["postgres"]
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"

    def admin() -> psycopg.Connection[Any]:
        return psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", autocommit=True)

    with admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
