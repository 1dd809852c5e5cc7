"""Protocol revisions this server speaks and what each one allows on the wire."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "LATEST",
    "LATEST_LEGACY",
    "LEGACY_VERSIONS",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_RELATED_TASK",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "MODERN_VERSIONS",
    "Revision",
    "SUPPORTED_VERSIONS",
    "V2025_06_18",
    "V2025_11_25",
    "V2026_07_28",
    "get_revision",
    "unreadable_id_is_null",
]

V2025_03_26 = "2025-03-26"
V2025_06_18 = "2025-06-18"
V2025_11_25 = "2025-11-25"
V2026_07_28 = "2026-07-28"

LEGACY_VERSIONS: tuple[str, ...] = (V2025_03_26, V2025_06_18, V2025_11_25)
MODERN_VERSIONS: tuple[str, ...] = (V2026_07_28,)
SUPPORTED_VERSIONS: tuple[str, ...] = LEGACY_VERSIONS + MODERN_VERSIONS
LATEST_LEGACY = V2025_11_25
LATEST = V2026_07_28

# _meta keys the 2026-07-28 revision reserves.
META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
META_RELATED_TASK = "io.modelcontextprotocol/related-task"


@dataclass(frozen=True, slots=True)
class Revision:
    """Feature switches of one protocol revision; code asks these, never compares dates."""

    version: str
    modern: bool
    batching: bool
    version_header: bool
    title_and_output_schema: bool
    resource_link: bool
    content_last_modified: bool
    icons: bool
    core_tasks: bool
    tasks_extension: bool
    input_errors_as_results: bool
    sse_priming: bool
    any_output_schema: bool
    # The schema requires ``id`` on every error response: an unreadable id is sent as null
    # (JSON-RPC 2.0 section 5). Later revisions omit it instead (L-9), and their RequestId
    # type has no null.
    error_id_required: bool


REVISIONS: dict[str, Revision] = {
    V2025_03_26: Revision(
        V2025_03_26,
        modern=False,
        batching=True,
        version_header=False,
        title_and_output_schema=False,
        resource_link=False,
        content_last_modified=False,
        icons=False,
        core_tasks=False,
        tasks_extension=False,
        input_errors_as_results=False,
        sse_priming=False,
        any_output_schema=False,
        error_id_required=True,
    ),
    V2025_06_18: Revision(
        V2025_06_18,
        modern=False,
        batching=False,
        version_header=True,
        title_and_output_schema=True,
        resource_link=True,
        content_last_modified=True,
        icons=False,
        core_tasks=False,
        tasks_extension=False,
        input_errors_as_results=False,
        sse_priming=False,
        any_output_schema=False,
        error_id_required=True,
    ),
    V2025_11_25: Revision(
        V2025_11_25,
        modern=False,
        batching=False,
        version_header=True,
        title_and_output_schema=True,
        resource_link=True,
        content_last_modified=True,
        icons=True,
        core_tasks=True,
        tasks_extension=False,
        input_errors_as_results=True,
        sse_priming=True,
        any_output_schema=False,
        error_id_required=False,
    ),
    V2026_07_28: Revision(
        V2026_07_28,
        modern=True,
        batching=False,
        version_header=True,
        title_and_output_schema=True,
        resource_link=True,
        content_last_modified=True,
        icons=True,
        core_tasks=False,
        tasks_extension=True,
        input_errors_as_results=True,
        sse_priming=False,
        any_output_schema=True,
        error_id_required=False,
    ),
}


def get_revision(version: str) -> Revision:
    return REVISIONS[version]


def unreadable_id_is_null(header: str | None) -> bool:
    """Whether an error for a request whose id could not be read carries ``"id": null``.

    By the ``MCP-Protocol-Version`` header; without one (or with one we do not serve) the
    server assumes 2025-03-26, as the 2025-06-18 transport rules say, whose schema requires it.
    """
    revision = REVISIONS.get(header or "")
    return revision is None or revision.error_id_required
