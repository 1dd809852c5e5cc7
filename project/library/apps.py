from django.apps import AppConfig


class LibraryConfig(AppConfig):
    name = "project.library"
    label = "library"
    verbose_name = "Library (demo)"
    default_auto_field = "django.db.models.BigAutoField"
