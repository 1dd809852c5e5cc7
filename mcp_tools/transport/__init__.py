"""The Streamable HTTP edge: one decision per request, carried out by a sync or an async driver.

``decide`` (what a request gets, read from it without serving it), ``views`` (the drivers,
``answer`` and ``answer_sync``, and the endpoint view), ``serve`` (one message served in a
worker thread), ``waits`` (a call's notifications before its result; a ``tasks/result`` wait),
``batch`` (2025-03-26 batches), ``streams`` (GET streams and subscriptions/listen),
``replies`` (the ``Reply`` and HTTP checks), ``front`` (``McpFront``, the ASGI front) and
``wsgi`` (``McpWsgiFront``). Only I/O here: every row is read and written by ``mcp_tools.services``.
"""

__all__: list[str] = []
