"""An existing site's settings, as ``django-admin startproject`` writes them, plus MCP."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "tutorial-only-not-secret")
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "notes",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "mysite.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ.get("TUTORIAL_DB", BASE_DIR / "db.sqlite3")}
}
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True

# [mcp-settings]
from mcp_tools.oauth.settings import oauth2_provider_settings  # noqa: E402

INSTALLED_APPS += ["mcp_tools", "mcp_tools.contrib.drf", "oauth2_provider"]
MCP_TOOLS = {
    "SERVER_NAME": "mysite",
    "AUTH_BACKEND": "mcp_tools.auth.DOTBackend",
    "RESOURCE_URL": os.environ.get("MCP_RESOURCE_URL", "http://127.0.0.1:8000/mcp"),
}
OAUTH2_PROVIDER = oauth2_provider_settings(MCP_TOOLS["RESOURCE_URL"])  # DOT, MCP-ready; any key overridable
# [/mcp-settings]
