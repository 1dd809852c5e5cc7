"""The MCP methods served from the database: sessions, discovery, tools/list, tools/call, tasks.

Synchronous Django code, run off the event loop; the transport does the I/O and calls
``handle_request`` with an ``Exchange``. Modules: ``dispatch`` (method table), ``tools``
(tools/list; the tool a call names), ``calls`` (``ToolCall``: one tools/call, step by step,
through the runner), ``inputs`` (asking within a call), ``resources`` (MCP Apps' ``ui://``
views), ``task_methods`` (tasks/get, result, list, cancel, update), ``sessions`` (legacy
session rows), ``identity`` (serverInfo, capabilities), ``exchange`` (the request being
served), ``listen`` (the frames of listen streams), ``explain`` (why a grant does or does
not see a tool).
"""

from .dispatch import PLAIN, Method, MethodTraits, accept_notification, handle_request, traits
from .exchange import Exchange
from .identity import (
    capabilities,
    list_changed_supported,
    modern_meta,
    server_info,
    tools_fingerprint,
    with_permissions,
)
from .inputs import accept_answer
from .listen import LIST_CHANGED, listen_frames
from .sessions import (
    Session,
    SessionNotFound,
    cancel_request,
    create_session,
    end_session,
    load_session,
    mark_initialized,
    open_get_stream,
    owns_get_stream,
)
from .tools import authorize_batch

__all__ = [
    "LIST_CHANGED",
    "PLAIN",
    "Exchange",
    "Method",
    "MethodTraits",
    "accept_notification",
    "traits",
    "authorize_batch",
    "Session",
    "SessionNotFound",
    "accept_answer",
    "cancel_request",
    "capabilities",
    "create_session",
    "end_session",
    "handle_request",
    "list_changed_supported",
    "listen_frames",
    "load_session",
    "mark_initialized",
    "modern_meta",
    "open_get_stream",
    "owns_get_stream",
    "server_info",
    "tools_fingerprint",
    "with_permissions",
]
