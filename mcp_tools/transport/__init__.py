"""The Streamable HTTP edge: the endpoint view, notification streams and the ASGI front.

``replies`` (the ``Reply`` and HTTP checks), ``views`` (the endpoint: POST, DELETE, batches),
``streams`` (GET streams and subscriptions/listen), ``front`` (``McpFront``, the ASGI front),
``wsgi`` (``McpWsgiFront``, the WSGI front). Only I/O here:
every row is read and written by ``mcp_tools.services``.
"""

__all__: list[str] = []
