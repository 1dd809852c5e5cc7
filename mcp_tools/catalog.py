"""The compiled tool catalog of one catalog version, with pre-serialised list pages.

A process keeps the catalog of the newest version it has seen. Reading the version costs one
query per request (none while ``CATALOG_VERSION_MAX_AGE`` lets a process reuse it, see
``freshness``, and none on SQLite in WAL mode while nothing was committed, ``models.walmark``);
the tool rows are loaded once per version, validators are compiled once per
tool version, and each ``tools/list`` page is serialised once per (catalog version,
revision, scope set, position). Serialised pages are kept in a least-recently-used cache bounded
in bytes (``PAGE_CACHE_BYTES``): an evicted page is rebuilt, identically, when asked for again.

Who sees a tool depends on the principal's scopes (``BaseAuthBackend.can_see``) and, for tools
whose tool kind requires Django permissions (contrib.drf model tools), on the permissions
the principal's user holds among those the catalog's tools require. Views and pages are cached
per (scope set, held permissions): two users with the same scopes and the same relevant
permissions share them, and a permission change is seen on the user's next request.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import logging
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from . import freshness
from .conf import mcp_settings
from .fastcheck import Check, compile_check
from .protocol.apps import UiLink, UiResourceMeta, ui_uri
from .protocol.headers import ParamHeader, SchemaHeaderError, extract_param_headers
from .protocol.shaping import ToolSpec, shape_tool
from .protocol.versions import Revision
from .registry import registry
from .schemas import compile_validator, error_messages
from .threads import NotOnLoop, on_loop
from .types import Principal
from .ui import UiSource

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = [
    "PageQuery",
    "Catalog",
    "CompiledTool",
    "Subset",
    "VisibilityCheck",
    "compile_tool",
    "get_catalog",
    "last_built",
    "reset",
    "user_permissions",
]

logger = logging.getLogger("mcp_tools")

# What one cached page costs beyond its body: its key, tuple and dict slot (an estimate that
# keeps many small pages from escaping the byte bound).
PAGE_ENTRY_OVERHEAD = 256


@dataclass(slots=True)
class CompiledTool:
    pk: int
    version: int
    spec: ToolSpec
    handler_key: str
    handler_config: dict[str, Any]
    required_scopes: frozenset[str]
    param_headers: tuple[ParamHeader, ...]
    rate_limit: str = ""
    sensitive_arguments: frozenset[str] = frozenset()
    required_permissions: frozenset[str] = frozenset()
    output_trusted: bool = False  # its kind vouches for its structuredContent (ToolKind.trusted_output)
    # Why this process cannot run it ("" when it can): its tool kind, or what the kind needs (a
    # model toolset), is not loaded here. Such a tool is listed to no one; a call of it answers
    # "not available right now" and the log says why.
    unavailable: str = ""
    requires_approval: bool = False
    approval_timeout: int | None = None  # seconds; None: the site's APPROVAL_TIMEOUT
    # MCP Apps: the view's template (text or a path in the site's templates) and its _meta.ui.
    ui_template: str = ""
    ui_template_name: str = ""
    ui_meta: UiResourceMeta | None = None
    # Progressive discovery: listed in its entry set, and the groups it is found by.
    always_listed: bool = False
    tags: tuple[str, ...] = ()
    _input_validator: Validator | None = field(default=None, repr=False)
    _output_validator: Validator | None = field(default=None, repr=False)
    # Compiled predicates of simple schemas (fastcheck), built on first use.
    _checks: tuple[Check | None, Check | None] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    def ui_source(self) -> UiSource:
        """What the tool's view is rendered from (``resources/read`` and the admin's preview)."""
        return UiSource(
            pk=self.pk,
            version=self.version,
            name=self.name,
            title=self.spec.title,
            description=self.spec.description,
            template=self.ui_template,
            template_name=self.ui_template_name,
            input_schema=self.spec.input_schema,
            output_schema=self.spec.output_schema,
            resource_uri=ui_uri(self.name),
        )

    @property
    def model_visible(self) -> bool:
        """Whether a client without MCP Apps lists and calls it: not an app-only tool."""
        ui = self.spec.ui
        return ui is None or ui.model_visible

    def permitted(self, principal: Principal) -> bool:
        """Whether the principal's user holds the permissions the tool's kind requires."""
        if not self.required_permissions:
            return True
        return principal.permissions is not None and self.required_permissions <= principal.permissions

    @property
    def input_validator(self) -> Validator:
        if self._input_validator is None:
            self._input_validator = compile_validator(self.spec.input_schema)
        return self._input_validator

    @property
    def output_validator(self) -> Validator | None:
        if self.spec.output_schema is None:
            return None
        if self._output_validator is None:
            self._output_validator = compile_validator(self.spec.output_schema)
        return self._output_validator

    def input_problems(self, arguments: Any) -> list[str]:
        """What is wrong with ``arguments`` (empty: valid). A simple schema is checked by its
        compiled predicate; jsonschema runs when there is something to explain."""
        check = self._compiled_checks()[0]
        if check is not None and check(arguments):
            return []
        return error_messages(self.input_validator, arguments)

    def output_problems(self, structured: Any) -> list[str]:
        """As :meth:`input_problems`, for structured output (the tool must have an output schema)."""
        validator = self.output_validator
        assert validator is not None
        check = self._compiled_checks()[1]
        if check is not None and check(structured):
            return []
        return error_messages(validator, structured)

    def _compiled_checks(self) -> tuple[Check | None, Check | None]:
        if self._checks is None:
            output = self.spec.output_schema
            self._checks = (compile_check(self.spec.input_schema), None if output is None else compile_check(output))
        return self._checks


VisibilityCheck = Callable[[CompiledTool, Principal], bool]


@dataclass(frozen=True, slots=True)
class Subset:
    """What ``tools/list`` shows instead of a principal's whole view (progressive discovery's
    entry set): the tools of the view that ``keep`` accepts, after ``lead`` (tools that are no
    rows) on the first page. ``key`` names it in the cached views and pages."""

    key: str
    keep: Callable[[CompiledTool], bool]
    lead: tuple[CompiledTool, ...] = ()


@dataclass(frozen=True, slots=True)
class ScopeInfo:
    """The active scopes of one catalog version and what each implies (transitively)."""

    closure: dict[str, frozenset[str]] = field(default_factory=dict)
    advertised: frozenset[str] = frozenset()
    descriptions: dict[str, str] = field(default_factory=dict)

    def expand(self, granted: frozenset[str] | set[str]) -> frozenset[str]:
        """The granted scopes that are active, plus everything they imply."""
        out: set[str] = set()
        for name in granted:
            implied = self.closure.get(name)
            if implied is not None:
                out |= implied
        return frozenset(out)


def build_scope_info(rows: list[tuple[str, str, bool]], edges: list[tuple[str, str]]) -> ScopeInfo:
    """``rows``: (name, description, advertised) of active scopes; ``edges``: (scope, implied)."""
    active = {name for name, _, _ in rows}
    direct: dict[str, set[str]] = {name: set() for name in active}
    for source, target in edges:
        if source in active and target in active:
            direct[source].add(target)
    return ScopeInfo(
        closure={name: _implied(name, direct) for name in active},
        advertised=frozenset(name for name, _, adv in rows if adv),
        descriptions={name: description for name, description, _ in rows},
    )


def _implied(name: str, direct: dict[str, set[str]]) -> frozenset[str]:
    """``name`` and every scope it implies, directly or through others."""
    seen = {name}
    stack = [name]
    while stack:
        for nxt in direct[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return frozenset(seen)


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every call.
@dataclass(slots=True)
class PageQuery:
    """One page of tools/list asked of the catalog: for a revision and a principal (seeing
    what ``visible`` lets it see), after a tool's name, at most ``page_size`` tools and (with
    ``max_bytes``) that many bytes; ``apps``: the client declared MCP Apps; ``subset``: only
    the tools progressive discovery keeps."""

    rev: Revision
    principal: Principal
    visible: VisibilityCheck
    after: str | None
    page_size: int
    tasks_enabled: bool
    max_bytes: int = 0
    apps: bool = False
    subset: Subset | None = None


@dataclass(frozen=True, slots=True)
class Page:
    """The tools of one page, shaped, and the name the next page starts after (None: the last)."""

    key: tuple[Any, ...]
    tools: list[dict[str, Any]]
    next_after: str | None


@dataclass(slots=True)
class _View:
    # Positions in ``Catalog.tools``, 4 bytes each (a list of ints costs 36: 10,000 tools seen
    # through 100 scope sets took 16 MB as lists).
    indices: array[int]
    fingerprint: str | None = None  # computed on first use (list_changed listeners)


class Catalog:
    def __init__(
        self,
        version: int,
        tools: list[CompiledTool],
        scopes: ScopeInfo | None = None,
        *,
        page_cache_bytes: int | None = None,
    ) -> None:
        self.version = version
        self.scopes = scopes or ScopeInfo()
        self.tools = sorted(tools, key=lambda t: t.name)
        self.names = [t.name for t in self.tools]
        self.by_name = {t.name: t for t in self.tools}
        # Every permission some tool requires: a principal's held subset keys the cached views.
        self.permission_names: frozenset[str] = frozenset().union(*(t.required_permissions for t in self.tools))
        # Tools with a view, and whether some are app-only (left out for clients without MCP Apps).
        self.has_ui = any(t.spec.ui is not None for t in self.tools)
        self.has_app_only = any(not t.model_visible for t in self.tools)
        self._views: dict[str, _View] = {}
        # (revision, view key, position, page size, tasks) -> body; least recently used first.
        self._pages: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        self._page_bytes = 0
        self.page_cache_limit = mcp_settings.PAGE_CACHE_BYTES if page_cache_bytes is None else page_cache_bytes
        self._lock = threading.Lock()

    def get(self, name: str) -> CompiledTool | None:
        return self.by_name.get(name)

    def scoped(self, principal: Principal) -> Principal:
        """``principal`` with the scopes its token was granted expanded under this version.

        OAuth backends set only ``granted``: whoever reads the catalog for a request expands
        it here, so a request reads the catalog version once.
        """
        if principal.granted is None:
            return principal
        scopes = self.scopes.expand(principal.granted)
        return principal if scopes == principal.scopes else dataclasses.replace(principal, scopes=scopes)

    def with_permissions(self, principal: Principal) -> Principal:
        """``scoped(principal)`` with the user's permissions loaded when some tool requires any.

        Reads the database (``user.has_perm``: none for a superuser, two queries otherwise),
        so it runs in request threads, never on the event loop; listeners keep what was
        loaded when their stream opened.
        """
        principal = self.scoped(principal)
        if not self.permission_names or principal.permissions is not None:
            return principal
        return dataclasses.replace(principal, permissions=user_permissions(principal.user, self.permission_names))

    def _key(self, principal: Principal) -> str:
        """What visibility depends on: the scope set, and the relevant permissions held."""
        if not self.permission_names:
            return principal.scope_key
        held = (principal.permissions or frozenset()) & self.permission_names
        return principal.scope_key + "\0" + " ".join(sorted(held))

    def _view(
        self, principal: Principal, visible: VisibilityCheck, apps: bool = True, subset: Subset | None = None
    ) -> _View:
        """What one scope set sees, computed once per catalog version; without ``apps`` (a
        client that did not declare MCP Apps) app-only tools are left out; with ``subset``, only
        the tools it keeps."""
        key = self._view_key(principal, apps, subset)
        found = self._views.get(key)
        if found is None:
            found = _View(
                array(
                    "i",
                    (
                        i
                        for i, tool in enumerate(self.tools)
                        if not tool.unavailable
                        and tool.permitted(principal)
                        and visible(tool, principal)
                        and (apps or tool.model_visible)
                        and (subset is None or subset.keep(tool))
                    ),
                )
            )
            with self._lock:
                if len(self._views) > 1024:
                    self._views.clear()
                self._views[key] = found
        return found

    def _view_key(self, principal: Principal, apps: bool, subset: Subset | None) -> str:
        key = self._key(principal)
        if not apps and self.has_app_only:
            key += "\0model"
        if subset is not None:
            key += "\0" + subset.key
        return key

    def visible_indices(self, principal: Principal, visible: VisibilityCheck) -> array[int]:
        return self._view(principal, visible).indices

    def fingerprint(self, principal: Principal, visible: VisibilityCheck) -> str:
        """A short digest of what ``principal`` sees: the visible tools and their versions.

        Two catalogs give the same digest for a principal exactly when its ``tools/list`` is
        the same, so list_changed goes only to listeners whose view changed (issue: live
        catalog). Stable across processes (stored on sessions to catch up on reconnect).
        """
        view = self._view(principal, visible)
        if view.fingerprint is None:
            digest = hashlib.blake2b(digest_size=12)
            for i in view.indices:
                tool = self.tools[i]
                digest.update(f"{tool.pk}:{tool.version};".encode())
            view.fingerprint = digest.hexdigest()
        return view.fingerprint

    def cached_page(self, query: PageQuery) -> bytes | None:
        """The serialised page ``query`` asks for, if this catalog has it (then it is the most
        recently used)."""
        key = self._page_key(query)
        cached = self._pages.get(key)
        if cached is not None:
            with self._lock:
                if key in self._pages:
                    self._pages.move_to_end(key)
        return cached

    def select_page(self, query: PageQuery) -> Page:
        """The tools of the page ``query`` asks for, shaped for its revision, and the position
        of the next page; whoever serialises it gives the bytes to ``remember_page``.

        With ``max_bytes`` a page also ends before its tools would pass that many bytes (it holds
        one tool at least), so a page of large tools stays within the bound on answers. With
        ``subset``, the pages list only what it keeps, its ``lead`` tools first.
        """
        apps, subset, after, rev = query.apps and self.has_ui, query.subset, query.after, query.rev
        indices = self._view(query.principal, query.visible, apps, subset).indices
        start = 0
        if after is not None:
            # Keyset position: the first visible tool whose name sorts after ``after``.
            # Binary search through the view by name: no list of its names built per page.
            start = bisect.bisect_right(indices, after, key=self.names.__getitem__)
        chosen = indices[start : start + query.page_size]
        tools = [shape_tool(self.tools[i].spec, rev, tasks_enabled=query.tasks_enabled, apps=apps) for i in chosen]
        lead = [] if subset is None or after is not None else [shape_tool(t.spec, rev) for t in subset.lead]
        if query.max_bytes and tools:
            kept = max(_fitting(lead + tools, query.max_bytes) - len(lead), 1)
            chosen, tools = chosen[:kept], tools[:kept]
        next_after = self.tools[chosen[-1]].name if chosen and start + len(chosen) < len(indices) else None
        return Page(self._page_key(query), lead + tools, next_after)

    def remember_page(self, page: Page, body: bytes) -> None:
        """Keep ``body``, the serialised ``page``, for the next request of the same page."""
        self._remember(page.key, body)

    def _page_key(self, query: PageQuery) -> tuple[Any, ...]:
        subset = query.subset
        return (
            query.rev.version, self._key(query.principal), query.after, query.page_size, query.tasks_enabled,
            query.max_bytes, query.apps and self.has_ui,  # no view anywhere: every client shares the same pages
            None if subset is None else subset.key,
        )  # fmt: skip

    def _remember(self, key: tuple[Any, ...], body: bytes) -> None:
        """Cache one page, evicting the least recently used ones past ``page_cache_limit``."""
        cost = len(body) + PAGE_ENTRY_OVERHEAD
        if cost > self.page_cache_limit:
            return  # larger than the whole cache: served, never kept
        # orjson's buffer can be up to twice the body's length: keep an exact-size copy, so the
        # bytes counted are the bytes held.
        body = bytes(memoryview(body))
        with self._lock:
            old = self._pages.pop(key, None)
            if old is not None:
                self._page_bytes -= len(old) + PAGE_ENTRY_OVERHEAD
            self._pages[key] = body
            self._page_bytes += cost
            while self._page_bytes > self.page_cache_limit:
                _, evicted = self._pages.popitem(last=False)
                self._page_bytes -= len(evicted) + PAGE_ENTRY_OVERHEAD

    def page_cache_stats(self) -> tuple[int, int]:
        """(pages cached, bytes they are counted as): the body sizes plus a fixed overhead each."""
        with self._lock:
            return len(self._pages), self._page_bytes


# Bytes of a page's frame besides its tools: the JSON-RPC envelope, a cursor, modern _meta.
PAGE_FRAME_BYTES = 16_384


def _fitting(tools: list[dict[str, Any]], max_bytes: int) -> int:
    """How many of ``tools`` (one at least) fit in a page of ``max_bytes``."""
    budget = max_bytes - PAGE_FRAME_BYTES
    used = 0
    for count, tool in enumerate(tools):
        used += len(orjson.dumps(tool)) + 1
        if used > budget and count:
            return count
    return len(tools)


def compile_tool(row: dict[str, Any]) -> CompiledTool:
    annotations = {
        "title": row["annotation_title"] or None,
        "readOnlyHint": row["read_only_hint"],
        "destructiveHint": row["destructive_hint"],
        "idempotentHint": row["idempotent_hint"],
        "openWorldHint": row["open_world_hint"],
    }
    spec = ToolSpec(
        name=row["name"],
        title=row["title"],
        description=row["description"],
        input_schema=row["input_schema"],
        output_schema=row["output_schema"],
        annotations=annotations,
        icons=tuple(row["icons"] or ()),
        task_support=row["task_support"],
        ui=_ui_link(row),
    )
    try:
        headers = extract_param_headers(row["input_schema"])
    except SchemaHeaderError:
        headers = ()
    unavailable = _unavailable(row)  # then its kind's other hooks would fail too: not asked
    return CompiledTool(
        pk=row["pk"],
        version=row["version"],
        spec=spec,
        handler_key=row["handler_key"],
        handler_config=row["handler_config"] or {},
        param_headers=headers,
        sensitive_arguments=_sensitive(row),
        required_permissions=frozenset() if unavailable else _permissions(row),
        output_trusted=not unavailable and _output_trusted(row),
        unavailable=unavailable,
        ui_meta=_ui_meta(row),
        **_optional_fields(row),
    )


def _optional_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The fields a row may lack (a partial ``values()``, a test's row), with their defaults."""
    return {
        "required_scopes": frozenset(row.get("required_scopes") or ()),
        "rate_limit": row.get("rate_limit") or "",
        "requires_approval": bool(row.get("requires_approval")),
        "approval_timeout": row.get("approval_timeout") or None,
        "ui_template": row.get("ui_template") or "",
        "ui_template_name": row.get("ui_template_name") or "",
        "always_listed": bool(row.get("always_listed")),
        "tags": tuple(t for t in row.get("tags") or () if isinstance(t, str)),
    }


def _ui_link(row: dict[str, Any]) -> UiLink | None:
    if not (row.get("ui_template") or row.get("ui_template_name")):
        return None
    visibility = row.get("ui_visibility") or ""
    return UiLink(ui_uri(row["name"]), (visibility,) if visibility else ("model", "app"))


def _ui_meta(row: dict[str, Any]) -> UiResourceMeta | None:
    if not (row.get("ui_template") or row.get("ui_template_name")):
        return None
    from .models import UI_CSP_FIELDS

    return UiResourceMeta.build(
        {key: row.get(column) or [] for column, key in UI_CSP_FIELDS.items()},
        row.get("ui_permissions") or [],
        row.get("ui_domain") or "",
        row.get("ui_prefers_border"),
    )


def _unavailable(row: dict[str, Any]) -> str:
    """Why this process cannot run the row's tool ("" when it can), logged once per tool version."""
    kind = registry.get(row["handler_key"])
    if kind is None:
        why = (
            f"its tool kind {row['handler_key']!r} is not registered in this process (is the app that "
            "provides it in INSTALLED_APPS, and its handlers module imported?)"
        )
    else:
        why = kind.why_unavailable(row["handler_config"] or {}).rstrip(".")
    if why:
        logger.warning(
            "Tool %r is not served by this process, so it is not listed: %s. A handlers module added "
            "after the server started is loaded when it restarts (runserver restarts by itself).",
            row["name"], why,
        )  # fmt: skip
    return why


def _output_trusted(row: dict[str, Any]) -> bool:
    kind = registry.get(row["handler_key"])
    if kind is None or kind.trusted_output is None:
        return False
    try:
        return kind.vouches_for_output(row["handler_config"] or {}, row["output_schema"])
    except Exception:
        logger.exception("Tool %r: its tool kind could not say whether its output is trusted", row["name"])
        return False  # checked, as any tool's


def _permissions(row: dict[str, Any]) -> frozenset[str]:
    kind = registry.get(row["handler_key"])
    if kind is None:
        return frozenset()  # the call answers "not available"; nothing to hide behind
    try:
        return kind.required_permissions(row["handler_config"] or {})
    except Exception:
        # A kind that cannot say what its tool needs hides it from every user but superusers.
        logger.exception("Tool %r: its tool kind could not name its permissions", row["name"])
        return frozenset({f"{kind.key}:unavailable"})


def user_permissions(user: Any, names: frozenset[str]) -> frozenset[str]:
    """The permissions among ``names`` that ``user`` holds (``has_perm``, so every backend)."""
    if user is None or not getattr(user, "is_active", False):
        return frozenset()
    return frozenset(name for name in sorted(names) if user.has_perm(name))


def _sensitive(row: dict[str, Any]) -> frozenset[str]:
    names = {n for n in row.get("sensitive_arguments") or () if isinstance(n, str)}
    properties = (row["input_schema"] or {}).get("properties")
    if isinstance(properties, dict):
        names |= {k for k, v in properties.items() if isinstance(v, dict) and v.get("writeOnly") is True}
    return frozenset(names)


_current: Catalog | None = None
_build_lock = threading.Lock()
_version_model: Any = None
# CATALOG_VERSION_MAX_AGE: the catalog whose version was read last, until when it may be served
# without reading the version again, and the freshness epoch of that read.
_reuse: tuple[float, int, Catalog | None] = (0.0, -1, None)
# SQLite in WAL mode: the database's commit mark, freshness epoch and catalog of the last
# version read (see ``models.walmark``); served again while neither moved.
_unmoved: tuple[bytes, int, Catalog | None] = (b"", -1, None)


def get_catalog(*, fresh: bool = False) -> Catalog:
    """The catalog of the current version: one query, plus a few more when the version moved.

    With ``CATALOG_VERSION_MAX_AGE`` the version read last is reused for that long, unless a
    catalog change was heard meanwhile (see ``freshness``): then no query. ``fresh``: read the
    version whatever the setting, and start no reuse with it (the list_changed hub, just told of
    a change; ``warm()``, which may run before a server forks its workers).
    """
    global _version_model
    max_age = mcp_settings.CATALOG_VERSION_MAX_AGE
    reuse = bool(max_age) and not fresh
    if reuse:
        reused = _reusable()
        if reused is not None:
            return reused
    if _version_model is None:  # bound once: an import statement per request costs a microsecond
        from .models import CatalogVersion

        _version_model = CatalogVersion
    epoch = freshness.state.epoch
    read_at = time.monotonic()
    # On SQLite in WAL mode: nothing committed anywhere since the version was read, nothing to
    # read again (``models.walmark``; taken before the read, so a commit during it moves it).
    mark = _version_model.commit_mark()
    if mark is not None and not fresh:
        seen_mark, seen_epoch, seen = _unmoved
        if seen is not None and seen_mark == mark and seen_epoch == epoch and seen is _current:
            return seen
    version = _version_model.current()
    catalog = _current
    if catalog is None or catalog.version != version:
        if on_loop():
            raise NotOnLoop  # building compiles every tool (and may wait for another builder)
        catalog = _build(version)
        _announce_first(version)
    if mark is not None and catalog is _current:
        _set_unmoved(mark, epoch, catalog)
    if reuse:
        _remember(catalog, read_at + max_age, epoch)
    return catalog


def _set_unmoved(mark: bytes, epoch: int, catalog: Catalog) -> None:
    global _unmoved
    _unmoved = (mark, epoch, catalog)


def _reusable() -> Catalog | None:
    """The catalog read last, while its ``CATALOG_VERSION_MAX_AGE`` runs and no change was heard."""
    until, epoch, reused = _reuse
    if reused is not None and epoch == freshness.state.epoch and time.monotonic() < until and freshness.reusable():
        return reused
    return None


def _remember(catalog: Catalog, until: float, epoch: int) -> None:
    """Let ``catalog`` be served until ``until`` if nothing moved since its version was read."""
    global _reuse
    if not freshness.reusable():
        return
    with _build_lock:
        if _current is catalog and epoch == freshness.state.epoch:
            _reuse = (until, epoch, catalog)


def _build(version: int) -> Catalog:
    global _current, _reuse
    from .models import BINDING_FIELDS, DISCOVERY_FIELDS, UI_FIELDS, WIRE_FIELDS, Scope, Tool

    with _build_lock:
        catalog = _current
        if catalog is not None and catalog.version == version:
            return catalog
        rows = list(
            Tool.objects.enabled()
            .order_by()
            .values("pk", "version", *WIRE_FIELDS, *BINDING_FIELDS, *UI_FIELDS, *DISCOVERY_FIELDS)
        )
        # A few more queries on a rebuild only: required scopes, active scopes, implications.
        required: dict[int, set[str]] = {}
        links = Tool.required_scopes.through.objects.values_list("tool_id", "scope__name")
        for tool_id, scope_name in links:
            required.setdefault(tool_id, set()).add(scope_name)
        for row in rows:
            row["required_scopes"] = frozenset(required.get(row["pk"], ()))
        scope_rows = list(Scope.objects.filter(active=True).values_list("name", "description", "advertised"))
        edges = list(Scope.implies.through.objects.values_list("from_scope__name", "to_scope__name"))
        scopes = build_scope_info(scope_rows, edges)
        # Reuse compiled tools (and their validators) whose row version did not change.
        previous = {t.pk: t for t in catalog.tools} if catalog is not None else {}
        tools = []
        for row in rows:
            old = previous.get(row["pk"])
            if old is not None and old.version == row["version"] and old.required_scopes == row["required_scopes"]:
                tools.append(old)
            else:
                tools.append(compile_tool(row))
        catalog = Catalog(version, tools, scopes)
        _current = catalog
        _reuse = (0.0, -1, None)  # what a slower reader of an older version set is not served
        return catalog


_announced = False


def _announce_first(version: int) -> None:
    """``signals.first_catalog``, once per process (outside the build lock); a receiver's
    failure is logged, never the request's."""
    global _announced
    if _announced:
        return
    _announced = True
    from .signals import first_catalog

    for _receiver, outcome in first_catalog.send_robust(sender=Catalog, version=version):
        if isinstance(outcome, Exception):
            logger.error("A receiver of first_catalog failed: %r", outcome, exc_info=outcome)


def last_built() -> Catalog | None:
    """The catalog this process built last, its version unchecked (None before the first): a
    hint for what a request is likely to find, never what it is served from."""
    return _current


def reset() -> None:
    global _current, _reuse, _unmoved
    _current = None
    _reuse = (0.0, -1, None)
    _unmoved = (b"", -1, None)
