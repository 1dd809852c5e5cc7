"""What an admin entitles an OAuth application to when it calls with no user (client credentials)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from .tools import Scope

__all__ = ["ClientEntitlement"]


class ClientEntitlement(models.Model):
    """The scopes a client-credentials application may hold, chosen by an admin.

    A token issued to an application with no user (``ALLOW_CLIENT_CREDENTIALS``) acts for no
    person, so no consent page narrows it: it carries only the scopes named here, at the
    authorization server (the token request) and again at the endpoint (every call, so
    narrowing an entitlement takes effect at once). An application entitled to no active scope
    gets no client-credentials token, and its tokens are refused.

    Keyed by the application's ``client_id`` (django-oauth-toolkit's natural key, which an
    application's tokens carry), so the core app needs no migration of DOT's; the application's
    admin page edits it (``mcp_tools.oauth.admin.ApplicationAdmin``).
    """

    client_id = models.CharField(_("OAuth client id"), max_length=255, unique=True)
    scopes = models.ManyToManyField(
        Scope,
        verbose_name=_("scopes"),
        blank=True,
        related_name="+",
        help_text=_("The scopes this application's client-credentials tokens may carry."),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ("client_id",)
        verbose_name = _("client-credentials entitlement")
        verbose_name_plural = _("client-credentials entitlements")

    def __str__(self) -> str:
        return self.client_id

    @classmethod
    def scopes_of(cls, client_id: str, using: str | None = None) -> frozenset[str] | None:
        """The active scope names ``client_id`` is entitled to; None when it is entitled to none
        (no row, or none of its scopes active): such an application gets no token and its
        tokens are refused. One query."""
        rows = cls.objects.using(using).filter(client_id=client_id, scopes__active=True).values_list("scopes__name")
        names = frozenset(name for (name,) in rows)
        return names or None
