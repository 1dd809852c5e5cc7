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
INSTALLED_APPS += ["mcp_tools", "mcp_tools.contrib.drf", "oauth2_provider"]
MCP_TOOLS = {
    "SERVER_NAME": "mysite",
    "AUTH_BACKEND": "mcp_tools.auth.DOTBackend",
    "RESOURCE_URL": os.environ.get("MCP_RESOURCE_URL", "http://127.0.0.1:8000/mcp"),
}
OAUTH2_PROVIDER = {
    "OIDC_ISS_ENDPOINT": os.environ.get("MCP_ISSUER", "http://127.0.0.1:8000"),
    "SCOPES_BACKEND_CLASS": "mcp_tools.oauth.scopes.DatabaseScopes",
    "OAUTH2_VALIDATOR_CLASS": "mcp_tools.oauth.validators.McpOAuth2Validator",
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "PKCE_REQUIRED": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
}
# [/mcp-settings]
