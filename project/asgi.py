"""ASGI entry point (uvicorn project.asgi:application)."""

import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_asgi_application()

if settings.DEBUG:
    # The demo serves the admin's CSS and JS itself; production puts a web server or
    # WhiteNoise in front instead.
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    application = ASGIStaticFilesHandler(application)
