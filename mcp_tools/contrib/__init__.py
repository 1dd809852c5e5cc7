"""Integrations with optional libraries; the core (everything outside ``contrib``) never imports them."""

__all__: list[str] = []
