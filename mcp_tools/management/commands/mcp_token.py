"""Print an access token for the MCP endpoint (scripts, the MCP Inspector); needs DOT."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

__all__ = ["Command"]

CLI_APP_NAME = "mcp_token (command line)"


class Command(BaseCommand):
    help = "Issue an access token bound to MCP_TOOLS['RESOURCE_URL']; the token is the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="username of the token's owner")
        parser.add_argument("--scopes", required=True, help='space-separated scope names, or "all"')
        parser.add_argument("--expires", type=int, default=3600, help="lifetime in seconds (default 3600)")

    def handle(self, *args: Any, user: str, scopes: str, expires: int, **options: Any) -> None:
        try:
            from oauth2_provider.generators import generate_client_id
            from oauth2_provider.models import get_access_token_model, get_application_model
            from oauthlib.common import generate_token
        except ImportError as exc:  # pragma: no cover
            raise CommandError("mcp_token needs django-oauth-toolkit (pip install django-mcp-tools[oauth])") from exc

        from ...auth.oauth import grantable_scopes, resource_url
        from ...models import Scope

        if expires <= 0:
            raise CommandError("--expires must be a positive number of seconds")
        owner = get_user_model()._default_manager.filter(**{get_user_model().USERNAME_FIELD: user}).first()
        if owner is None or not owner.is_active:
            raise CommandError(f"No active user {user!r}")
        # The same rule as the consent page and step-up: active, and not restricted to groups
        # the user is not in.
        if scopes.strip() == "all":
            names = grantable_scopes(owner, sorted(Scope.objects.filter(active=True).values_list("name", flat=True)))
        else:
            requested = sorted(set(scopes.split()))
            names = grantable_scopes(owner, requested)
            refused = [n for n in requested if n not in names]
            if refused:
                raise CommandError(f"Unknown, inactive or not allowed for {user}: {', '.join(refused)}")
        Application = get_application_model()
        app = Application.objects.filter(name=CLI_APP_NAME).first()
        if app is None:
            app = Application.objects.create(
                name=CLI_APP_NAME,
                client_id=generate_client_id(),
                client_type=Application.CLIENT_PUBLIC,
                authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
                redirect_uris="http://127.0.0.1/callback",
            )
        raw = generate_token()
        get_access_token_model().objects.create(
            user=owner,
            application=app,
            token=raw,
            scope=" ".join(names),
            expires=timezone.now() + timedelta(seconds=expires),
            resource=[resource_url()],
        )
        self.stdout.write(
            f"Token for {user} with scopes {' '.join(names) or '(none)'}, valid {expires} s, for {resource_url()}"
        )
        self.stdout.write(raw)
