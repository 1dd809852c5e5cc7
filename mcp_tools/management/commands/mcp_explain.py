"""Say, for a grant, which tools it sees and every reason it does not see the others."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import RequestFactory

__all__ = ["Command"]


class Command(BaseCommand):
    help = (
        "Explain which tools a user (with the scopes given, a real token, or every scope the user "
        "could be granted) sees, and every reason a tool is hidden."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="username (not needed with --token)")
        who = parser.add_mutually_exclusive_group()
        who.add_argument("--scopes", help="space-separated scopes the grant holds (default: all the user could get)")
        who.add_argument("--token", help="a bearer token, authenticated as the endpoint would")
        parser.add_argument("--tool", action="append", dest="tools", help="only this tool (may repeat)")
        parser.add_argument(
            "--search", metavar="WORDS", help="also: progressive discovery's entry set, and what search_tools finds"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from ...services.explain import describe, explain

        grant = _token_grant(options["token"]) if options["token"] else _user_grant(options["user"], options["scopes"])
        verdicts = explain(grant, options["tools"])
        if options["tools"] and len(verdicts) < len(set(options["tools"])):
            missing = sorted(set(options["tools"]) - {v.tool for v in verdicts})
            raise CommandError(f"No tool named {', '.join(missing)}")
        self.stdout.write(f"Grant: {describe(grant)}")
        self._verdicts(verdicts)
        if options["search"] is not None:
            self._discovery(grant, options["search"])

    def _verdicts(self, verdicts: list[Any]) -> None:
        seen = sum(v.visible for v in verdicts)
        self.stdout.write(f"{seen} of {len(verdicts)} tools visible")
        width = max((len(v.tool) for v in verdicts), default=0)
        for verdict in verdicts:
            state = "visible" if verdict.visible else "hidden"
            self.stdout.write(f"{verdict.tool.ljust(width)}  {state}")
            for reason in verdict.reasons:
                self.stdout.write(f"{'':{width}}    - {reason}")
            for note in verdict.notes:
                self.stdout.write(f"{'':{width}}    (note: {note})")

    def _discovery(self, grant: Any, words: str) -> None:
        from ...services.explain import discovery_preview

        preview = discovery_preview(grant, words)
        state = "on" if preview.active else "off"
        self.stdout.write(f"Discovery: mode {preview.mode}, {state} for this grant ({preview.usable} usable tools)")
        self.stdout.write(f"Entry set: {', '.join(preview.entry) or '(none)'}")
        self.stdout.write(f"search_tools {preview.query!r}:")
        for found in preview.found:
            self.stdout.write(f"  {found['name']}  ({found['arguments']})")
        if not preview.found:
            self.stdout.write("  (no tool matched)")


def _token_grant(token: str) -> Any:
    """The grant a bearer token gives, authenticated as the endpoint would."""
    from ...auth import AuthFailure
    from ...services.explain import grant_from_request

    request = RequestFactory().post("/mcp", HTTP_AUTHORIZATION=f"Bearer {token}")
    try:
        return grant_from_request(request)
    except AuthFailure as exc:
        raise CommandError(f"The endpoint would refuse this token ({exc.status}): {exc.description}") from exc


def _user_grant(username: str | None, scopes: str | None) -> Any:
    """The grant of a user (or no user) with those scopes (None: all the user could get)."""
    from ...services.explain import grant_for, is_oauth

    user = None
    if username:
        model = get_user_model()
        user = model._default_manager.filter(**{model.USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"No user {username!r}")
    grant = grant_for(user, scopes.split() if scopes is not None else None)
    if user is None and is_oauth():
        raise CommandError("Name the grant: --user USER (with --scopes or not), or --token TOKEN")
    return grant
