"""Benchmarks of the /mcp endpoint against a bare Django view (run ``python bench/run.py``)."""
