"""Where a person signs in before the consent page of the site's authorization server."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = [
    "SIGN_IN_URL_NAME",
    "package_sign_in",
    "sign_in_url",
    "site_sign_in",
]

SIGN_IN_URL_NAME = "mcp-oauth-login"


def site_sign_in() -> tuple[str, bool]:
    """``settings.LOGIN_URL`` resolved, and whether a view serves it: a path that resolves on
    this site, or an address on another host (single sign-on, not ours to check)."""
    from django.conf import settings
    from django.shortcuts import resolve_url
    from django.urls import Resolver404, resolve

    configured = str(resolve_url(settings.LOGIN_URL))
    parts = urlsplit(configured)
    if parts.scheme or parts.netloc:
        return configured, True
    try:
        resolve(parts.path or "/")
    except Resolver404:
        return configured, False
    return configured, True


def package_sign_in() -> str | None:
    """The package's sign-in page (``mcp_tools.oauth.urls``), or None when it is not mounted."""
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse(SIGN_IN_URL_NAME)
    except NoReverseMatch:
        return None


def sign_in_url() -> str:
    """Where the consent page sends a visitor to sign in: the site's ``LOGIN_URL`` when a view
    serves it, otherwise the package's sign-in page, so a site with no sign-in view of its own
    never sends a person to a 404 (issue 34). Check ``mcp_tools.W023`` names the case where
    neither exists."""
    configured, served = site_sign_in()
    if served:
        return configured
    return package_sign_in() or configured
