"""A site that mounts the endpoint and the metadata but neither a sign-in view nor
``mcp_tools.oauth.urls`` (check mcp_tools.W023)."""

from django.contrib import admin
from django.urls import path

from mcp_tools.oauth import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path(".well-known/oauth-protected-resource", views.resource_metadata),
]
