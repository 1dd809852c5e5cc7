from django.apps import AppConfig


class DrfAppConfig(AppConfig):
    name = "tests.drfapp"
    label = "drfapp"
    default_auto_field = "django.db.models.BigAutoField"
