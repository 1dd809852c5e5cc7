"""DOT's application admin with what an MCP site needs on it: the scopes a client-credentials
application is entitled to (``ClientEntitlement``), edited on the application's own page.

``oauth2_provider_settings()`` names it as DOT's ``APPLICATION_ADMIN_CLASS``; a site that
configures DOT by hand sets ``"APPLICATION_ADMIN_CLASS": "mcp_tools.oauth.admin.ApplicationAdmin"``
(or subclasses it). Editing the entitlement needs the ``mcp_tools.change_cliententitlement``
permission besides the application's own: entitling a machine to a scope grants what a person
would otherwise consent to.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.db import transaction
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from oauth2_provider.admin import ApplicationAdmin as DOTApplicationAdmin
from oauth2_provider.forms import ApplicationForm

from ..models import ClientEntitlement, Scope

__all__ = ["ApplicationAdmin"]

ENTITLEMENT_FIELD = "mcp_client_credentials_scopes"
CLIENT_CREDENTIALS = "client-credentials"  # DOT's Application.GRANT_CLIENT_CREDENTIALS


class EntitlementForm(ApplicationForm):  # type: ignore[misc]
    """DOT's application form plus the scopes of the application's client-credentials tokens."""

    mcp_client_credentials_scopes = forms.ModelMultipleChoiceField(
        label=_("MCP scopes (client credentials)"),
        queryset=Scope.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=_(
            "For a client-credentials application only, with MCP_TOOLS['ALLOW_CLIENT_CREDENTIALS'] on: the "
            "scopes its tokens may carry (no person consents to them). With none chosen it gets no token. "
            "People's applications get their scopes at consent, not here."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields[ENTITLEMENT_FIELD]
        field.queryset = Scope.objects.order_by("name")
        client_id = getattr(self.instance, "client_id", "") if self.instance.pk else ""
        row = ClientEntitlement.objects.filter(client_id=client_id).first() if client_id else None
        self.entitlement = row
        if row is not None:
            self.initial[ENTITLEMENT_FIELD] = list(row.scopes.all())

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean()
        chosen = cleaned.get(ENTITLEMENT_FIELD)
        grant = cleaned.get("authorization_grant_type", getattr(self.instance, "authorization_grant_type", ""))
        if chosen and grant != CLIENT_CREDENTIALS:
            self.add_error(
                ENTITLEMENT_FIELD,
                _("Only a client-credentials application is entitled to scopes here; people consent to theirs."),
            )
        return cleaned


class ApplicationAdmin(DOTApplicationAdmin):  # type: ignore[misc]
    form = EntitlementForm
    # DOT's get_absolute_url names its application pages, which the app does not mount.
    view_on_site = False

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if ENTITLEMENT_FIELD in form.base_fields and not request.user.has_perm("mcp_tools.change_cliententitlement"):
            form.base_fields[ENTITLEMENT_FIELD].disabled = True
        return form

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if form.fields[ENTITLEMENT_FIELD].disabled:
                return
            save_entitlement(form.entitlement, obj.client_id, obj.authorization_grant_type, form.cleaned_data)


def save_entitlement(row: ClientEntitlement | None, client_id: str, grant: str, cleaned: dict[str, Any]) -> None:
    """Store the entitlement the form chose, following a changed client id; none for an
    application that does not use client credentials."""
    scopes = list(cleaned.get(ENTITLEMENT_FIELD) or ())
    if grant != CLIENT_CREDENTIALS or not scopes:
        ClientEntitlement.objects.filter(client_id__in={client_id, getattr(row, "client_id", client_id)}).delete()
        return
    if row is None:
        row = ClientEntitlement.objects.filter(client_id=client_id).first() or ClientEntitlement(client_id=client_id)
    row.client_id = client_id
    row.save()
    row.scopes.set(scopes)
