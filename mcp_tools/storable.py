"""What a client sends, made storable on every database (Django-free).

PostgreSQL refuses NUL (U+0000) in text columns and in JSON, in a value written and in a value
looked up alike; SQLite and MySQL take it. A JSON string may hold one (``"\\u0000"`` is valid
JSON), so a value a client chose reaches a row only through :func:`text` or :func:`json_value`,
which show NUL as U+FFFD, and an id a client chose is looked up only when :func:`lookable`:
what the server makes (ids, keys) never holds NUL, so an id that does is unknown.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NUL", "holds_nul", "json_value", "lookable", "text"]

NUL = "\x00"
_SHOWN_AS = "\ufffd"


def text(value: str) -> str:
    """``value`` with NUL shown as U+FFFD (the same object when it holds none)."""
    return value.replace(NUL, _SHOWN_AS) if NUL in value else value


def json_value(value: Any) -> Any:
    """A JSON value with NUL shown as U+FFFD in every string, keys included (the same object
    when none holds one). One pass over the value, whatever its depth."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        shown = {text(k) if isinstance(k, str) else k: json_value(v) for k, v in value.items()}
        # (Two keys that differ only by NUL against U+FFFD become one: shorter, not the same.)
        same = len(shown) == len(value) and all(
            k is k2 and v is v2 for (k, v), (k2, v2) in zip(value.items(), shown.items(), strict=False)
        )
        return value if same else shown
    if isinstance(value, list):
        items = [json_value(item) for item in value]
        return value if all(a is b for a, b in zip(value, items, strict=True)) else items
    return value


def lookable(value: str) -> bool:
    """Whether ``value`` may be looked up as it is (no NUL: no id or key the server made holds one)."""
    return NUL not in value


def holds_nul(value: Any) -> bool:
    """Whether a string of ``value`` (a JSON value: strings, lists and objects, keys included) holds NUL."""
    if isinstance(value, str):
        return NUL in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_nul(item) for item in value)
    return False
