"""Create the demo superuser if missing and print its credentials (demo site only)."""

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the demo superuser (admin / the DEMO_ADMIN_PASSWORD env var or 'admin')."

    def handle(self, *args: Any, **options: Any) -> None:
        username = os.environ.get("DEMO_ADMIN_USER", "admin")
        password = os.environ.get("DEMO_ADMIN_PASSWORD", "admin")
        user_model = get_user_model()
        if not user_model.objects.filter(username=username).exists():
            user_model.objects.create_superuser(username, f"{username}@example.com", password)
            self.stdout.write(f"Created demo superuser {username!r} with password {password!r}.")
        else:
            self.stdout.write(f"Demo superuser {username!r} exists (password {password!r} unless you changed it).")
