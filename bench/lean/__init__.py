"""The app of bench/lean_settings.py: ``mcp_handlers.py`` registers ``demo.echo`` (a package of its
own: installing ``bench`` itself would make Django import ``bench/models.py``, the benchmark script,
as that app's models)."""
