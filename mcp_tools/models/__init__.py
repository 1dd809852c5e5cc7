"""The app's models, one module per capability; import them from here (``mcp_tools.models``)."""

from .approvals import ApprovalState, McpApproval
from .audit import AuditEvent, AuditOutcome
from .clients import ClientEntitlement
from .handles import McpHandle, McpPendingInput, McpRedemption
from .revisions import RevisionAction, ToolRevision, current_frame, record_changes, revision, set_fields
from .search import SearchEntry
from .sessions import STATS_STALE_SECONDS, McpSession, StreamStats, new_session_id
from .task_rows import McpTask, TaskStatus, new_task_id
from .tools import (
    ACCESS_FIELDS,
    ANNOTATION_FIELDS,
    APPROVAL_FIELDS,
    BINDING_FIELDS,
    DISCOVERY_FIELDS,
    EDITABLE_FIELDS,
    SCOPE_NAME_RE,
    TOOL_NAME_RE,
    UI_CSP_FIELDS,
    UI_FIELDS,
    WIRE_FIELDS,
    CatalogVersion,
    Scope,
    TaskSupport,
    Tool,
    UiPermission,
    UiVisibility,
    default_input_schema,
)

__all__ = [
    "ACCESS_FIELDS",
    "ANNOTATION_FIELDS",
    "APPROVAL_FIELDS",
    "BINDING_FIELDS",
    "DISCOVERY_FIELDS",
    "EDITABLE_FIELDS",
    "SCOPE_NAME_RE",
    "STATS_STALE_SECONDS",
    "TOOL_NAME_RE",
    "UI_CSP_FIELDS",
    "UI_FIELDS",
    "WIRE_FIELDS",
    "ApprovalState",
    "AuditEvent",
    "AuditOutcome",
    "CatalogVersion",
    "ClientEntitlement",
    "McpApproval",
    "McpHandle",
    "McpRedemption",
    "McpPendingInput",
    "McpSession",
    "McpTask",
    "RevisionAction",
    "Scope",
    "SearchEntry",
    "StreamStats",
    "TaskStatus",
    "TaskSupport",
    "Tool",
    "ToolRevision",
    "UiPermission",
    "UiVisibility",
    "current_frame",
    "default_input_schema",
    "new_session_id",
    "new_task_id",
    "record_changes",
    "revision",
    "set_fields",
]
