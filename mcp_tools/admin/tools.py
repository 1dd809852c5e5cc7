"""The tool editor: form, preview per revision, revisions (compare, restore, recover deleted
tools), bulk actions, import/export and Try it. Model permissions decide who does what."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import router, transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.text import capfirst
from django.views.decorators.clickjacking import xframe_options_sameorigin

from ..auth import open_door
from ..editing.history import compare, current_state, restore
from ..editing.preview import preview, ui_document, view_call_refusal
from ..editing.problems import describe, problems
from ..editing.transfer import MAX_FILE_BYTES, ImportRejected, dumps, export_tools, import_tools, loads
from ..models import (
    EDITABLE_FIELDS,
    UI_CSP_FIELDS,
    CatalogVersion,
    RevisionAction,
    Tool,
    ToolRevision,
    revision,
    set_fields,
)
from ..protocol import apps as apps_wire
from ..protocol.versions import LATEST, SUPPORTED_VERSIONS
from ..registry import registry
from ..tasking import tasks_enabled
from ..ui.render import UiRenderError
from .config_fields import config_fieldsets
from .forms import TOOL_FIELDSETS, ImportForm, ToolForm, TryForm
from .lookups import AllowedLookups
from .trial import grantable_scopes, try_tool

__all__ = ["RevisionsByUser", "ToolAdmin"]


class ToolKindFilter(admin.SimpleListFilter):
    title = "tool kind"
    parameter_name = "handler"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        used = Tool.objects.order_by().values_list("handler_key", flat=True).distinct()
        return [(key, handler_label(key)) for key in sorted(used)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Tool]) -> QuerySet[Tool]:
        value = self.value()
        return queryset.filter(handler_key=value) if value else queryset


def handler_label(key: str) -> str:
    kind = registry.get(key)
    if kind is None:
        return f"{key} (not registered)"
    return kind.label or key


def may_view_users(request: HttpRequest) -> bool:
    """Whether the admin user may view user accounts (the site's user model's view permission):
    who exists, their groups and the scopes they could be granted."""
    opts = get_user_model()._meta
    return bool(request.user.has_perm(f"{opts.app_label}.view_{opts.model_name}"))


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def copy_name(name: str, taken: set[str]) -> str:
    """``name.copy``, ``name.copy2``, ... within the 128 characters a name may have."""
    for n in range(1, 1000):
        suffix = ".copy" if n == 1 else f".copy{n}"
        candidate = name[: 128 - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
    raise ValueError(f"No free copy name for {name!r}")


class RevisionsByUser(AllowedLookups):
    """Tool revisions caused by this admin's pages (a tool saved, a scope deleted) name the user."""

    def changeform_view(
        self, request: HttpRequest, object_id: str | None = None, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        with revision(user=request.user, source="admin"):
            return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        with revision(user=request.user, source="admin"):
            return super().delete_view(request, object_id, extra_context)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with bulk_change(request.user, "Deleted with a bulk action"):
            super().delete_queryset(request, queryset)


class ToolAdmin(RevisionsByUser):
    form = ToolForm
    change_form_template = "mcp_tools/admin/tool_change_form.html"
    change_list_template = "mcp_tools/admin/tool_change_list.html"
    list_display = ("name", "title", "handler", "enabled", "task_support", "version", "updated_at")
    list_filter = (ToolKindFilter, "enabled", "required_scopes", "task_support")
    search_fields = ("name", "title", "description")
    readonly_fields = ("version", "created_at", "updated_at", "created_by", "updated_by")
    filter_horizontal = ("required_scopes",)
    actions = ("enable_tools", "disable_tools", "duplicate_tools", "export_tools")
    fieldsets = (
        *TOOL_FIELDSETS,
        ("History", {"fields": ("version", "created_at", "created_by", "updated_at", "updated_by")}),
    )

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        # The generated config fields of each kind follow the handler (see config_fields).
        base = list(super().get_fieldsets(request, obj))
        if obj is not None and not self.has_change_permission(request, obj):
            return base  # shown read-only: the stored config is in the JSON box
        at = next((i + 1 for i, (title, _) in enumerate(base) if title == "Handler"), len(base))
        return [*base[:at], *config_fieldsets(), *base[at:]]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        # The form adds the generated fields itself; the model form is built from the model's.
        kwargs["fields"] = EDITABLE_FIELDS
        return super().get_form(request, obj, change, **kwargs)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # What `manage.py check --database default` says of the tool rows (a forgotten
        # mcp_sync_toolsets, tools nobody can see), on the page a newcomer opens.
        found = problems(CatalogVersion.current())
        context = {**(extra_context or {}), "mcp_problems": [describe(message) for message in found]}
        return super().changelist_view(request, context)

    @admin.display(description="handler", ordering="handler_key")
    def handler(self, obj: Tool) -> str:
        return handler_label(obj.handler_key)

    # ------------------------------------------------------------------ permissions

    def has_try_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.try_tool")

    def has_ui_domains_permission(self, request: HttpRequest) -> bool:
        """Whether the user may set the origins a view may reach (its CSP domains): what a view
        may send its data to, so a permission of its own besides changing tools."""
        return request.user.has_perm(f"{self.opts.app_label}.set_ui_domains")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly = tuple(super().get_readonly_fields(request, obj))
        if not self.has_ui_domains_permission(request):
            readonly += tuple(UI_CSP_FIELDS)  # shown, kept as they are (a new tool: none)
        return readonly

    def _require(self, allowed: bool) -> None:
        if not allowed:
            raise PermissionDenied

    # ------------------------------------------------------------------ saving, with revisions

    def save_model(self, request: HttpRequest, obj: Tool, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        obj.updated_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        self._warn_open_doors(request, [form.instance])

    def _warn_open_doors(self, request: HttpRequest, tools: Any) -> None:
        """Say so when a save leaves a tool that reaches into the site callable by any token
        (check mcp_tools.W005)."""
        for tool in tools:
            warning = open_door(tool.name, tool.handler_key, tool.enabled, tool.required_scopes.exists())
            if warning:
                self.message_user(
                    request,
                    f"{warning} Give it a required scope granted only to whom it is meant for.",
                    messages.WARNING,
                )

    def _bulk(self, request: HttpRequest, comment: str) -> contextlib.AbstractContextManager[None]:
        """One transaction, one catalog version and one revision per tool for a bulk change."""
        return bulk_change(request.user, comment)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        context = dict(extra_context or {})
        tool = self.get_object(request, unquote(object_id))
        if tool is not None:
            context["preview"] = [
                {"version": e.version, "json": pretty(e.entry), "omitted": e.omitted}
                for e in preview(tool, tasks_enabled=tasks_enabled())
            ]
            context["preview_tool"] = tool
            context["preview_scopes"] = sorted(tool.required_scopes.values_list("name", flat=True))
            context["can_try"] = self.has_try_permission(request)
            context.update(self._who_can_use(request, tool))
            context.update(self._ui_preview(request, tool))
        return super().change_view(request, object_id, form_url, context)

    def _who_can_use(self, request: HttpRequest, tool: Tool) -> dict[str, Any]:
        """The "Who can use this tool" panel: its requirements, who meets them, and the verdict
        for one user named in ``?explain_user=`` (the same answer as ``manage.py mcp_explain``).

        It shows only what the viewer may see elsewhere in the admin: the groups a scope is
        restricted to or that hold a permission to those who may view groups (or scopes, for
        a scope's), how many users hold a permission to those who may view users, and the
        explanation for a user (who exists, their groups and grantable scopes) only to those
        who may view users, as "What a user sees" (``explain_view``) does.
        """
        from ..services.explain import audience, describe, explain, grant_for

        user = request.user
        groups = user.has_perm("auth.view_group")
        scope_groups = groups or user.has_perm(f"{self.opts.app_label}.view_scope")
        users = may_view_users(request)
        found = audience(tool, scope_groups=scope_groups, groups=groups, users=users)
        context: dict[str, Any] = {"audience": found, "can_explain": users}
        username = request.GET.get("explain_user", "").strip()[:150]
        if username and users:
            model = get_user_model()
            named = model._default_manager.filter(**{model.USERNAME_FIELD: username}).first()
            context["explain_user"] = username
            if named is None:
                context["explain_error"] = f"No user {username!r}."
            else:
                grant = grant_for(named)
                context["explain_grant"] = describe(grant)
                context["explain_verdict"] = explain(grant, [tool.name])[0]
        return context

    # ------------------------------------------------------------------ bulk actions

    @admin.action(description="Enable selected tools", permissions=["change"])
    def enable_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        self._set_enabled(request, queryset, enabled=True)

    @admin.action(description="Disable selected tools…", permissions=["change"])
    def disable_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> HttpResponse | None:
        if request.POST.get("confirm") != "yes":
            return self._confirm(
                request,
                queryset,
                action="disable_tools",
                title="Disable tools?",
                question="Clients stop seeing and calling these tools (they get list_changed).",
                affected=list(queryset.filter(enabled=True)),
                unaffected_note="already disabled",
            )
        self._set_enabled(request, queryset, enabled=False)
        return None

    def _set_enabled(self, request: HttpRequest, queryset: QuerySet[Tool], *, enabled: bool) -> None:
        selected = queryset.count()
        verb = "Enabled" if enabled else "Disabled"
        with self._bulk(request, f"{verb} with a bulk action"):
            done = queryset.filter(enabled=not enabled).update(enabled=enabled, updated_by=request.user)
        self.message_user(
            request,
            f"{verb} {done} tool(s); {selected - done} already {verb.lower()}."
            + (" The catalog version moved once." if done else " Nothing changed."),
            messages.SUCCESS if done else messages.INFO,
        )
        if enabled:
            self._warn_open_doors(request, queryset.filter(enabled=True))

    @admin.action(description="Duplicate selected tools (copies start disabled)", permissions=["add"])
    def duplicate_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        taken = set(Tool.objects.values_list("name", flat=True))
        made: list[str] = []
        refused: list[str] = []
        with self._bulk(request, "Duplicated with a bulk action"):
            for tool in queryset.prefetch_related("required_scopes"):
                copy = Tool(**{name: getattr(tool, name) for name in EDITABLE_FIELDS if name != "required_scopes"})
                copy.name = copy_name(tool.name, taken)
                copy.enabled = False
                copy.created_by = copy.updated_by = request.user  # type: ignore[assignment]
                try:
                    copy.full_clean()
                except ValidationError as exc:
                    refused.append(f"{tool.name} ({'; '.join(exc.messages)})")
                    continue
                copy.save()
                copy.required_scopes.set(tool.required_scopes.all())
                taken.add(copy.name)
                made.append(f"{tool.name} → {copy.name}")
        if made:
            self.message_user(request, f"Duplicated {len(made)} tool(s), disabled: {', '.join(made)}.")
        if refused:
            self.message_user(request, f"Not duplicated (invalid): {', '.join(refused)}.", messages.WARNING)

    @admin.action(description="Export selected tools as JSON", permissions=["view"])
    def export_tools(self, request: HttpRequest, queryset: QuerySet[Tool]) -> HttpResponse:
        tools = list(queryset)
        self.message_user(request, f"Exported {len(tools)} tool(s).")
        return _download(export_tools(tools), "tools.json")

    def _confirm(
        self,
        request: HttpRequest,
        queryset: QuerySet[Tool],
        *,
        action: str,
        title: str,
        question: str,
        affected: list[Tool],
        unaffected_note: str,
    ) -> TemplateResponse:
        selected = list(queryset)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": title,
            "question": question,
            "action": action,
            "selected": selected,
            "affected": affected,
            "unaffected": [t for t in selected if t not in affected],
            "unaffected_note": unaffected_note,
        }
        return TemplateResponse(request, "mcp_tools/admin/tool_confirm_action.html", context)

    # ------------------------------------------------------------------ extra pages

    def get_urls(self) -> list[URLPattern]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"

        def view(func: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
            return self.admin_site.admin_view(func)

        return [
            path("import/", view(self.import_view), name=f"{name}_import"),
            path("export/", view(self.export_view), name=f"{name}_export"),
            path("deleted/", view(self.deleted_view), name=f"{name}_deleted"),
            path("explain/", view(self.explain_view), name=f"{name}_explain"),
            path("revisions/<int:tool_pk>/", view(self.revisions_view), name=f"{name}_revisions"),
            path("revisions/<int:tool_pk>/compare/", view(self.compare_view), name=f"{name}_compare"),
            path(
                "revisions/<int:tool_pk>/<int:revision_pk>/restore/",
                view(self.restore_view),
                name=f"{name}_restore",
            ),
            path("<path:object_id>/try/", view(self.try_view), name=f"{name}_try"),
            path("<path:object_id>/ui/", view(self.ui_view), name=f"{name}_ui"),
            path("<path:object_id>/ui/call/", view(self.ui_call_view), name=f"{name}_ui_call"),
            *super().get_urls(),
        ]

    def _url(self, suffix: str, *args: Any) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_{suffix}", args=args)

    def _context(self, request: HttpRequest, title: str, **extra: Any) -> dict[str, Any]:
        return {**self.admin_site.each_context(request), "opts": self.opts, "title": title, **extra}

    def history_view(self, request: HttpRequest, object_id: str, extra_context: Any = None) -> HttpResponse:
        # The change page's History button: the tool's revisions.
        try:
            return self.revisions_view(request, int(unquote(object_id)))  # type: ignore[return-value]
        except ValueError as exc:
            raise Http404 from exc

    def revisions_view(self, request: HttpRequest, tool_pk: int) -> HttpResponseBase:
        self._require(self.has_view_permission(request))
        tool = Tool.objects.filter(pk=tool_pk).first()
        rows = list(ToolRevision.objects.filter(tool_pk=tool_pk).select_related("user"))
        for row in rows:
            if row.action == RevisionAction.CREATED:
                row.changed = set_fields(row.data)  # what was set, also for rows stored listing every field
        if tool is None and not rows:
            raise Http404("No such tool and no history of one")
        can_restore = self.has_change_permission(request, tool) if tool else self.has_add_permission(request)
        name = tool.name if tool else rows[0].tool_name
        context = self._context(
            request,
            f"Revisions of {name}" + ("" if tool else " (deleted)"),
            tool=tool,
            tool_pk=tool_pk,
            tool_name=name,
            revisions=rows,
            can_restore=can_restore,
            default_a=rows[1].pk if len(rows) > 1 else None,
            default_b=rows[0].pk if rows else None,
        )
        return TemplateResponse(request, "mcp_tools/admin/tool_revisions.html", context)

    def compare_view(self, request: HttpRequest, tool_pk: int) -> HttpResponseBase:
        self._require(self.has_view_permission(request))
        try:
            ids = sorted(int(request.GET[key]) for key in ("a", "b"))
        except (KeyError, ValueError) as exc:
            raise Http404("Choose two revisions") from exc
        found = {r.pk: r for r in ToolRevision.objects.filter(tool_pk=tool_pk, pk__in=ids).select_related("user")}
        if len(found) != len(set(ids)):
            raise Http404("No such revisions of this tool")
        older, newer = found[ids[0]], found[ids[1]]
        context = self._context(
            request,
            f"{older.tool_name}: revision #{older.pk} → #{newer.pk}",
            tool_pk=tool_pk,
            tool_name=newer.tool_name,
            older=older,
            newer=newer,
            changes=compare(older.data, newer.data),
        )
        return TemplateResponse(request, "mcp_tools/admin/tool_compare.html", context)

    def restore_view(self, request: HttpRequest, tool_pk: int, revision_pk: int) -> HttpResponseBase:
        old = ToolRevision.objects.filter(tool_pk=tool_pk, pk=revision_pk).first()
        if old is None:
            raise Http404("No such revision of this tool")
        tool = Tool.objects.filter(pk=tool_pk).first()
        self._require(self.has_change_permission(request, tool) if tool else self.has_add_permission(request))
        errors: list[str] = []
        if request.method == "POST" and not self.has_ui_domains_permission(request):
            errors = _domain_changes(old, tool)
        if request.method == "POST" and not errors:
            done = self._restore(request, old)
            if isinstance(done, HttpResponseRedirect):
                return done
            errors = done
        now = current_state(tool_pk) or {}
        context = self._context(
            request,
            f"Restore {old.tool_name} to revision #{old.pk}?",
            tool=tool,
            tool_pk=tool_pk,
            old=old,
            changes=compare(now, old.data),
            errors=errors,
        )
        return TemplateResponse(request, "mcp_tools/admin/tool_restore.html", context)

    def _restore(self, request: HttpRequest, old: ToolRevision) -> HttpResponseRedirect | list[str]:
        """The tool restored to ``old`` (a redirect to it), or why it was not."""
        try:
            restored = restore(old, user=request.user)
        except ValidationError as exc:
            return [f"{k}: {m}" for k, ms in exc.message_dict.items() for m in ms]
        self.message_user(
            request, f"Restored {restored.name} to revision #{old.pk}; it is now version {restored.version}."
        )
        return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_tool_change", args=[restored.pk]))

    def explain_view(self, request: HttpRequest) -> HttpResponseBase:
        """Every tool for one user: which they see and every reason they do not see the others
        (``manage.py mcp_explain --user``). Needs the view permissions of tools and of users."""
        from django.contrib.auth import get_user_model

        from ..services.explain import describe, discovery_preview, explain, grant_for

        model = get_user_model()
        self._require(self.has_view_permission(request) and may_view_users(request))
        username = request.GET.get("user", "").strip()[:150]
        extra: dict[str, Any] = {"username": username}
        if username:
            user = model._default_manager.filter(**{model.USERNAME_FIELD: username}).first()
            if user is None:
                extra["error"] = f"No user {username!r}."
            else:
                grant = grant_for(user)
                verdicts = explain(grant)
                extra.update(grant=describe(grant), verdicts=verdicts, visible=sum(v.visible for v in verdicts))
                # Progressive discovery: the grant's entry set, and a sample search as it would answer.
                extra["discovery"] = discovery_preview(grant, request.GET.get("q", ""))
        title = f"What {username} sees" if username else "What a user sees"
        return TemplateResponse(request, "mcp_tools/admin/tool_explain.html", self._context(request, title, **extra))

    def deleted_view(self, request: HttpRequest) -> HttpResponseBase:
        self._require(self.has_view_permission(request))
        live = Tool.objects.values("pk")
        latest: dict[int, ToolRevision] = {}
        deleted = ToolRevision.objects.filter(action=RevisionAction.DELETED).exclude(tool_pk__in=live)
        for row in deleted.select_related("user")[:2000]:
            latest.setdefault(row.tool_pk, row)
        context = self._context(
            request, "Deleted tools", deleted=list(latest.values()), can_restore=self.has_add_permission(request)
        )
        return TemplateResponse(request, "mcp_tools/admin/tool_deleted.html", context)

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        self._require(self.has_view_permission(request))
        return _download(export_tools(), "tools.json")

    def import_view(self, request: HttpRequest) -> HttpResponseBase:
        self._require(self.has_add_permission(request) and self.has_change_permission(request))
        form = ImportForm(request.POST or None, request.FILES or None)
        problems: list[str] = []
        report = None
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                report = import_tools(
                    loads(upload.read(MAX_FILE_BYTES + 1)),  # one byte over says it is too large
                    user=request.user,
                    source="admin import",
                    dry_run=form.cleaned_data["dry_run"],
                    may_set_ui_domains=self.has_ui_domains_permission(request),
                )
            except ImportRejected as exc:
                problems = exc.problems
            else:
                if not report.dry_run:
                    self.message_user(request, report.summary())
                    return HttpResponseRedirect(reverse(f"admin:{self.opts.app_label}_tool_changelist"))
        context = self._context(request, "Import tools", form=form, problems=problems, report=report)
        return TemplateResponse(request, "mcp_tools/admin/tool_import.html", context)

    def _ui_preview(self, request: HttpRequest, tool: Tool) -> dict[str, Any]:
        """The view's preview panel: the iframe's sandbox, CSP and ``allow``, the tools the view
        may call and where it may send data, or why it failed."""
        if not tool.has_ui:
            return {}
        try:
            _, meta = ui_document(tool)
        except UiRenderError as exc:
            return {"ui_error": str(exc)}
        allow = apps_wire.host_allow(meta)
        entry = preview(tool, tasks_enabled=tasks_enabled())[0].entry  # the newest revision's
        declared = list(tool.ui_tools) if isinstance(tool.ui_tools, list) else []
        connect = list(tool.ui_connect_domains) if isinstance(tool.ui_connect_domains, list) else []
        return {
            "ui_preview": True,
            "ui_csp": apps_wire.host_csp(meta),
            "ui_allow": allow,
            "ui_tools": declared,
            "ui_connect": connect,
            # What static/mcp_tools/ui_host.js reads (its Try it call, when there is one, is added).
            "ui_config": {
                "src": self._url("ui", tool.pk),
                "callUrl": self._url("ui_call", tool.pk),
                "csrf": get_token(request),
                "allow": allow,
                "trial": None,
                "protocolVersion": LATEST,
                # Each call the view asks for is shown and runs only when the person confirms it,
                # and only for these tools (ui_call_view refuses the others too).
                "tools": declared,
                "tool": entry,  # the host context's toolInfo.tool
                "user": request.user.get_username(),
                "connectDomains": connect,
            },
        }

    @xframe_options_sameorigin
    def ui_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """The saved tool's view, served to the preview's sandboxed iframe with the CSP a host
        builds from its ``_meta.ui`` (and the CSP ``sandbox``: its own opaque origin even when
        opened directly)."""
        tool = self.get_object(request, unquote(object_id))
        if tool is None or not tool.has_ui:
            raise Http404("No such tool or no view")
        self._require(self.has_view_permission(request, tool))
        try:
            html, meta = ui_document(tool)
        except UiRenderError as exc:
            raise Http404(f"The view cannot be rendered: {exc}") from exc
        response = HttpResponse(html, content_type="text/html; charset=utf-8")
        response["Content-Security-Policy"] = apps_wire.host_csp(meta) + "; sandbox allow-scripts"
        response["Referrer-Policy"] = "no-referrer"
        response["Cache-Control"] = "no-store"
        return response

    def ui_call_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """The preview host's ``tools/call``: a Try it call (POST JSON ``{name, arguments}``) of a
        tool the view declares (``Tool.ui_tools``), as the user, answered with the JSON-RPC
        response. The host sends it only once the person viewing the page confirmed that call;
        a tool the view does not declare, or one only the model may call, is refused here too."""
        tool = self.get_object(request, unquote(object_id))
        if tool is None:
            raise Http404("No such tool")
        self._require(self.has_view_permission(request, tool) and self.has_try_permission(request))
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        body = _call_body(request.body)
        if isinstance(body, JsonResponse):
            return body
        arguments = body.get("arguments") or {}
        refusal = view_call_refusal(tool, body["name"])
        if refusal is not None:
            return JsonResponse({"error": {"code": -32602, "message": refusal}}, status=403)
        version = body.get("protocolVersion")
        trial = try_tool(body["name"], arguments, request.user, version if version in SUPPORTED_VERSIONS else LATEST)
        if trial.response is None:
            return JsonResponse({"error": {"code": -32600, "message": trial.refusal or "No answer."}}, status=200)
        return JsonResponse(trial.response)

    def try_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        tool = self.get_object(request, unquote(object_id))
        if tool is None:
            raise Http404("No such tool")
        self._require(self.has_view_permission(request, tool) and self.has_try_permission(request))
        form = TryForm(request.POST or None, input_schema=tool.input_schema)
        trial = None
        if request.method == "POST" and form.is_valid():
            trial = try_tool(
                tool.name, form.cleaned_data["arguments"], request.user, form.cleaned_data["protocol_version"]
            )
        context = self._context(
            request,
            f"Try {tool.name}",
            tool=tool,
            form=form,
            trial=trial,
            # What the trial runs with: the scopes this user could be granted (None: no OAuth).
            trial_scopes=grantable_scopes(request.user),
            input_schema=pretty(tool.input_schema),
            **_trial_context(trial),
            **self._ui_preview(request, tool),
        )
        if trial and trial.result is not None and "ui_config" in context:
            # The view's preview, fed with this call's arguments and result.
            context["ui_trial"] = {"arguments": form.cleaned_data["arguments"], "result": trial.result}
            context["ui_config"] |= {
                "trial": context["ui_trial"],
                "protocolVersion": form.cleaned_data["protocol_version"],
            }
        return TemplateResponse(request, "mcp_tools/admin/tool_try.html", context)


@contextlib.contextmanager
def bulk_change(user: Any, comment: str) -> Iterator[None]:
    """A transaction with one catalog bump and one revision per tool touched, by ``user``."""
    using = router.db_for_write(Tool)
    with (
        transaction.atomic(using=using),
        CatalogVersion.batch(),
        revision(user=user, source="admin action", comment=comment, using=using),
    ):
        yield


def _download(document: dict[str, Any], filename: str) -> HttpResponse:
    response = HttpResponse(dumps(document), content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _result_view(result: dict[str, Any]) -> dict[str, Any]:
    """The parts of a tools/call result as a client shows them."""
    blocks = []
    for block in result.get("content") or []:
        kind = block.get("type")
        if kind in ("image", "audio"):
            blocks.append({"type": kind, "src": f"data:{block.get('mimeType')};base64,{block.get('data', '')}"})
        elif kind == "text":
            blocks.append({"type": kind, "text": block.get("text", "")})
        else:
            blocks.append({"type": kind, "text": pretty(block)})
    structured = "structuredContent" in result
    return {
        "blocks": blocks,
        "is_error": bool(result.get("isError")),
        "has_structured": structured,
        "structured": pretty(result["structuredContent"]) if structured else "",
        "kind": capfirst(str(result.get("resultType", "complete"))),
    }


def _domain_changes(old: ToolRevision, tool: Tool | None) -> list[str]:
    """The origins lists a restore would change, each as a problem for who may not set them."""
    changed = [f for f in UI_CSP_FIELDS if old.data.get(f, []) != (getattr(tool, f) if tool else [])]
    return [
        f"{field}: restoring this revision changes the origins the tool's view may reach, "
        "which needs the permission to set them (set_ui_domains)."
        for field in changed
    ]


def _call_body(body: bytes) -> dict[str, Any] | JsonResponse:
    """The preview host's call ``{name, arguments}``, or the JSON-RPC error that refuses it."""
    try:
        call = json.loads(body or b"{}")
    except ValueError:
        call = None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return JsonResponse({"error": {"code": -32602, "message": "Send {name, arguments}."}}, status=400)
    if not isinstance(call.get("arguments") or {}, dict):
        return JsonResponse({"error": {"code": -32602, "message": "arguments must be an object."}}, status=400)
    return call


def _trial_context(trial: Any) -> dict[str, Any]:
    """What the Try it page shows of a trial (None before one)."""
    return {
        "result": _result_view(trial.result) if trial and trial.result is not None else None,
        "response_json": pretty(trial.response) if trial and trial.response is not None else "",
        "notifications": [pretty(n) for n in trial.notifications] if trial else [],
    }
