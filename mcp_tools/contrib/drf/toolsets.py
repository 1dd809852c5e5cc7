"""Model toolsets: a ``ModelAdmin``-like declaration of which tools a model gets, checked once.

A toolset is a class registered in code (in an app's ``mcp_handlers.py``)::

    @register
    class BookTools(ModelToolset):
        model = Book
        fields = ["id", "title", "author", "tags", "published", "price"]
        operations = ["list", "get", "create", "update", "delete", "aggregate"]
        filter_fields = {"title": ["icontains"], "published": ["gte", "lte"], "author": ["exact", "in"]}
        search_fields = ["title"]
        ordering_fields = ["title", "published", "price"]
        required_scopes = {"list": ["books:read"], "create": ["books:write"]}

        def get_queryset(self, principal):
            return super().get_queryset(principal).filter(owner=principal.user)

``register`` (module ``site``) checks the declaration and keeps it; ``manage.py
mcp_sync_toolsets`` turns each registered toolset into ordinary ``Tool`` rows bound to the
tool kinds of ``handlers`` (scopes, rate limits, audit, list_changed, tasks and the
admin apply unchanged). Everything a caller may name (filters, operators, ordering, search,
aggregates, groups) comes from these allowlists; the declaration is checked when it is
registered, so a mistake fails at startup, not on a call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from django.core.exceptions import FieldDoesNotExist, ImproperlyConfigured
from django.db import models

if TYPE_CHECKING:
    from rest_framework import serializers

    from ...types import Principal

__all__ = [
    "CONFIRM_MODES",
    "ModelToolset",
    "OPERATIONS",
    "is_secret_name",
    "stored",
]

OPERATIONS: tuple[str, ...] = ("list", "get", "create", "update", "delete", "aggregate")
# The generated MCP Apps views (templates/mcp_tools/drf/ui/), per operation that has one.
UI_TEMPLATES: dict[str, str] = {
    "list": "mcp_tools/drf/ui/list.html",
    "get": "mcp_tools/drf/ui/detail.html",
    "create": "mcp_tools/drf/ui/form.html",
    "update": "mcp_tools/drf/ui/form.html",
}
READS = frozenset({"list", "get", "aggregate"})
# Django's default model permissions, per operation.
PERMISSION_ACTIONS = {
    "list": "view",
    "get": "view",
    "aggregate": "view",
    "create": "add",
    "update": "change",
    "delete": "delete",
}

TEXT_OPERATORS = ("exact", "in", "contains", "icontains", "startswith", "isnull")
ORDERED_OPERATORS = ("exact", "in", "lt", "lte", "gt", "gte", "range", "isnull")
ALL_OPERATORS = frozenset(TEXT_OPERATORS) | frozenset(ORDERED_OPERATORS)
AGGREGATES = ("count", "sum", "avg", "min", "max")
# How a destructive operation (delete, an action declared destructive) is confirmed:
# "never" runs it; "ask" asks the user through elicitation when the client can answer and runs
# it otherwise; "require" asks, and refuses (nothing done) when the client cannot answer.
CONFIRM_MODES = ("never", "ask", "require")
ACTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,80}$")

# Fields whose names look like credentials are left out of ``fields = "__all__"`` (and of
# ``exclude``): a secret leaves only when the toolset lists it by name.
SECRET_NAME = re.compile(r"pass(word|wd|phrase)?|secret|token|api_?key|private_?key|credential|otp|salt", re.I)


def _action_names(value: Any) -> bool:
    """Whether ``value`` is a list (not a string) of admin action names."""
    return not isinstance(value, str) and all(isinstance(a, str) and ACTION_NAME.match(a) for a in value)


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def stored(field: models.Field[Any, Any]) -> models.Field[Any, Any]:
    """What a field stores: a generated field's output field, any other field itself."""
    if isinstance(field, models.GeneratedField):
        output = field.output_field
        assert output is not None
        return output
    return field


def field_kind(field: models.Field[Any, Any]) -> str:
    """How a model field filters, orders and aggregates: text, number, temporal, boolean, ..."""
    if field.many_to_many:
        return "many"
    if field.is_relation:
        return "relation"
    if field.choices:
        return "choice"
    if isinstance(field, models.GeneratedField):
        return field_kind(stored(field))
    if isinstance(field, models.BooleanField):
        return "boolean"
    if isinstance(field, models.CharField | models.TextField):
        return "text"
    if isinstance(field, models.IntegerField | models.FloatField | models.DecimalField | models.AutoField):
        return "number"
    if isinstance(field, models.DateField | models.TimeField | models.DurationField):
        return "temporal"  # DateTimeField is a DateField
    if isinstance(field, models.UUIDField):
        return "uuid"
    return "other"  # JSON, binary, files: no filters, ordering or aggregates


# The operators a field kind allows, and those it gets when a toolset names only the field.
KIND_OPERATORS: dict[str, tuple[str, ...]] = {
    "text": TEXT_OPERATORS,
    "number": ORDERED_OPERATORS,
    "temporal": ORDERED_OPERATORS,
    "choice": ("exact", "in", "isnull"),
    "boolean": ("exact", "isnull"),
    "relation": ("exact", "in", "isnull"),
    "many": ("exact", "in"),
    "uuid": ("exact", "in", "isnull"),
}


class ModelToolset:
    """Declares the tools of one model; subclass it and decorate the subclass with ``register``.

    Attributes (all optional but ``model`` and ``fields``/``exclude``):

    - ``fields``: the model fields the tools read and write (``"__all__"`` leaves out names that
      look like secrets); ``exclude``; ``read_only_fields``; or a ``serializer_class`` (a
      ``ModelSerializer``; subclass ``ToolModelSerializer`` to keep model validation on writes).
    - ``operations``: any of ``list get create update delete aggregate`` (default list, get).
    - ``lookup_field``: ``"pk"`` or a unique field for get/update/delete.
    - ``filter_fields``: field names, or ``{field: [operators]}`` (exact in lt lte gt gte range
      contains icontains startswith isnull); ``search_fields`` (may follow relations: only
      you name them); ``ordering_fields`` and the default ``ordering``.
    - ``aggregate_fields`` (sum/avg: numbers; min/max: numbers and dates) and ``group_by_fields``.
    - ``page_size``, ``max_page_size``, ``max_filters``, ``max_in``, ``max_groups``,
      ``max_search_length``, ``query_timeout`` (seconds, enforced by the database).
    - ``required_scopes``: a list for every operation, or ``{operation: [scopes]}``;
      ``write_implies_read`` (default True): ``mcp_sync_toolsets`` makes each scope of a writing
      tool (create, update, delete, actions) imply the scopes of the reading ones (list, get,
      aggregate), so a token granted ``notes:write`` can list the notes it writes.
    - ``name`` (default: the model name), ``names``/``titles``/``descriptions`` per operation.
    - ``rate_limit``, ``task_support`` (``{operation: "optional"}``).
    - ``actions``: names of admin actions of the model's ``ModelAdmin`` to serve as tools
      ``<action>_<name>`` over ``{"ids": [...]}`` (at most ``max_action_ids``), each opt-in;
      ``destructive_actions``: those of them that destroy data (destructiveHint, confirmed).
    - ``confirm_destructive``: ``"ask"`` (default), ``"require"`` or ``"never"``: whether delete
      (and destructive actions) first ask the user to confirm through elicitation.

    Hooks: ``get_queryset(principal)`` (row-level rules), ``get_required_permissions(operation)``
    (default: Django's view/add/change/delete model permissions), ``perform_create``,
    ``perform_update``, ``perform_destroy``.
    """

    model: type[models.Model]
    fields: Sequence[str] | str | None = None
    exclude: Sequence[str] = ()
    read_only_fields: Sequence[str] = ()
    serializer_class: type[serializers.Serializer] | None = None
    operations: Sequence[str] = ("list", "get")
    lookup_field: str = "pk"
    filter_fields: Sequence[str] | Mapping[str, Sequence[str]] = ()
    search_fields: Sequence[str] = ()
    ordering_fields: Sequence[str] = ()
    ordering: Sequence[str] = ()
    aggregate_fields: Sequence[str] = ()
    group_by_fields: Sequence[str] = ()
    page_size: int = 50
    max_page_size: int = 200
    max_filters: int = 10
    max_in: int = 100
    max_groups: int = 500
    max_search_length: int = 200
    max_ordering: int = 3
    query_timeout: float = 5.0
    required_scopes: Sequence[str] | Mapping[str, Sequence[str]] = ()
    write_implies_read: bool = True
    name: str | None = None
    names: Mapping[str, str] = {}
    titles: Mapping[str, str] = {}
    descriptions: Mapping[str, str] = {}
    rate_limit: str = ""
    task_support: Mapping[str, str] = {}
    actions: Sequence[str] = ()
    destructive_actions: Sequence[str] = ()
    max_action_ids: int = 100
    confirm_destructive: str = "ask"
    revision: int = 0  # a toolset defined in the admin: its row's revision (0: declared in code)
    # MCP Apps: generated views for list/get/create/update (True: all of those the toolset has).
    ui: bool | Sequence[str] = False

    # ------------------------------------------------------------------ identity

    @cached_property
    def key(self) -> str:
        """What tool rows name in their config: ``<app_label>.<ClassName>``."""
        return f"{self.opts.app_label}.{type(self).__name__}"

    @cached_property
    def opts(self) -> Any:
        return self.model._meta

    @cached_property
    def base_name(self) -> str:
        return self.name or self.opts.model_name

    def tool_name(self, operation: str) -> str:
        return self.names.get(operation) or f"{operation}_{self.base_name}"

    # ------------------------------------------------------------------ hooks

    def get_queryset(self, principal: Principal) -> models.QuerySet[Any]:
        """The rows the principal may reach (list, get, update, delete, aggregate); override for
        row-level rules, e.g. ``.filter(owner=principal.user)``."""
        return self.model._default_manager.all()

    def ui_template_name(self, operation: str) -> str:
        """The generated view of an operation's tool ("" for none): opt-in with ``ui``."""
        if self.ui is True or (not isinstance(self.ui, bool) and operation in self.ui):
            return UI_TEMPLATES.get(operation, "")
        return ""

    def get_required_permissions(self, operation: str) -> list[str]:
        """The Django permissions a user needs for ``operation`` (tools are hidden otherwise)."""
        return [f"{self.opts.app_label}.{PERMISSION_ACTIONS[operation]}_{self.opts.model_name}"]

    def get_model_admin(self) -> Any:
        """The ``ModelAdmin`` whose actions ``actions`` names (default: the model's in the default
        admin site); None when the model has none."""
        from django.contrib import admin

        return admin.site._registry.get(self.model)

    def action_tool_name(self, action: str) -> str:
        return self.names.get(action) or f"{action}_{self.base_name}"

    def get_required_scopes(self, operation: str) -> list[str]:
        """The scopes of an operation's (or an action's) tool: an action not named in a
        ``{operation: [...]}`` mapping takes the scopes of ``update`` (it changes rows)."""
        scopes = self.required_scopes
        if isinstance(scopes, Mapping):
            if operation not in scopes and operation in self.actions:
                return sorted(scopes.get("update", ()))
            return sorted(scopes.get(operation, ()))
        return sorted(scopes)

    def perform_create(self, serializer: Any, principal: Principal) -> models.Model:
        return serializer.save()  # type: ignore[no-any-return]

    def perform_update(self, serializer: Any, principal: Principal) -> models.Model:
        return serializer.save()  # type: ignore[no-any-return]

    def perform_destroy(self, instance: models.Model, principal: Principal) -> None:
        instance.delete()

    # ------------------------------------------------------------------ the checked declaration

    def model_field(self, name: str) -> models.Field[Any, Any]:
        field = self.opts.pk if name == "pk" else self.opts.get_field(name)
        if not isinstance(field, models.Field):
            raise FieldDoesNotExist(name)  # a reverse relation
        return field

    @cached_property
    def filters(self) -> dict[str, tuple[str, ...]]:
        """The allowlist: field name -> operators."""
        declared = self.filter_fields
        if isinstance(declared, Mapping):
            pairs = [(name, tuple(ops)) for name, ops in declared.items()]
        else:
            pairs = [(name, ()) for name in declared]
        return {name: self._filter_operators(name, ops) for name, ops in pairs}

    def _filter_operators(self, name: str, ops: tuple[str, ...]) -> tuple[str, ...]:
        field = self._plain_field(name, "filter_fields")
        allowed = KIND_OPERATORS.get(field_kind(field))
        if allowed is None:
            raise self._error(f"filter_fields: {name!r} ({type(field).__name__}) cannot be filtered")
        if not field.null and not ops:
            allowed = tuple(op for op in allowed if op != "isnull")
        wrong = [op for op in ops if op not in allowed]
        if wrong:
            raise self._error(f"filter_fields: {name!r} does not take {wrong}; it takes {list(allowed)}")
        return ops or allowed

    @cached_property
    def search_paths(self) -> tuple[str, ...]:
        for path in self.search_fields:
            if any(is_secret_name(part) for part in path.split("__")):
                # Matching words is reading: a search over a secret would leak it a letter at a time.
                raise self._error(f"search_fields: {path!r} looks like a secret")
            field = self._path_field(path)
            if field_kind(field) not in ("text", "choice") or not isinstance(
                field, models.CharField | models.TextField
            ):
                raise self._error(f"search_fields: {path!r} is not a text field")
        return tuple(self.search_fields)

    @cached_property
    def orderings(self) -> tuple[str, ...]:
        for name in self.ordering_fields:
            field = self._plain_field(name, "ordering_fields")
            if field_kind(field) in ("many", "other"):
                raise self._error(f"ordering_fields: {name!r} ({type(field).__name__}) cannot be ordered")
        for item in self.ordering:
            if item.lstrip("-") not in self.ordering_fields and item.lstrip("-") != "pk":
                raise self._error(f"ordering: {item!r} is not in ordering_fields")
        return tuple(self.ordering_fields)

    @cached_property
    def aggregates(self) -> dict[str, tuple[str, ...]]:
        """The allowlist of aggregates: field name -> functions (count needs no field)."""
        out: dict[str, tuple[str, ...]] = {}
        for name in self.aggregate_fields:
            field = self._plain_field(name, "aggregate_fields")
            kind = field_kind(field)
            if kind == "number":
                out[name] = ("sum", "avg", "min", "max")
            elif kind == "temporal" and not isinstance(field, models.DurationField):
                out[name] = ("min", "max")
            else:
                raise self._error(f"aggregate_fields: {name!r} ({type(field).__name__}) is not a number or a date")
        return out

    @cached_property
    def groups(self) -> tuple[str, ...]:
        for name in self.group_by_fields:
            field = self._plain_field(name, "group_by_fields")
            if field_kind(field) in ("many", "other"):
                raise self._error(f"group_by_fields: {name!r} ({type(field).__name__}) cannot be grouped on")
        return tuple(self.group_by_fields)

    @cached_property
    def lookup(self) -> models.Field[Any, Any]:
        field = self._plain_field(self.lookup_field, "lookup_field")
        if not (field.primary_key or field.unique):
            raise self._error(f"lookup_field: {self.lookup_field!r} is not unique")
        return field

    @cached_property
    def lookup_argument(self) -> str:
        """The argument naming a row in get/update/delete: the lookup field's own name."""
        return self.lookup.name

    def check(self) -> None:
        """Check the whole declaration; raises ImproperlyConfigured naming the first mistake."""
        model = getattr(self, "model", None)
        if not (isinstance(model, type) and issubclass(model, models.Model)):
            raise ImproperlyConfigured(f"{type(self).__name__}: model must be a Django model class")
        self._check_operations()
        if self.serializer_class is None and self.fields is None and not self.exclude:
            raise self._error('set fields (a list, or "__all__"), exclude, or serializer_class')
        self._check_limits()
        self._check_permissions()
        self._check_actions()
        if self.confirm_destructive not in CONFIRM_MODES:
            raise self._error(f"confirm_destructive must be one of {list(CONFIRM_MODES)}")
        if isinstance(self.required_scopes, str):
            raise self._error("required_scopes is a list of scope names (or a dict of them per operation)")
        # Evaluate every allowlist: a wrong name fails here, at registration.
        self.filters, self.search_paths, self.orderings, self.aggregates, self.groups, self.lookup  # noqa: B018

    def _check_operations(self) -> None:
        wrong = [op for op in self.operations if op not in OPERATIONS]
        if wrong or not self.operations:
            raise self._error(f"operations: {wrong or '(none)'} not among {list(OPERATIONS)}")
        if not isinstance(self.ui, bool):
            unknown = [op for op in self.ui if op not in UI_TEMPLATES or op not in self.operations]
            if unknown:
                raise self._error(
                    f"ui: {unknown} are not operations of this toolset with a view ({list(UI_TEMPLATES)})"
                )

    def _check_limits(self) -> None:
        for name in (
            "page_size",
            "max_page_size",
            "max_filters",
            "max_in",
            "max_groups",
            "max_search_length",
            "max_action_ids",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise self._error(f"{name} must be a positive integer")
        if self.page_size > self.max_page_size:
            raise self._error("page_size is above max_page_size")
        if not (isinstance(self.query_timeout, int | float) and self.query_timeout > 0):
            raise self._error("query_timeout must be a positive number of seconds")

    def _check_permissions(self) -> None:
        for operation in self.operations:
            for permission in self.get_required_permissions(operation):
                if not isinstance(permission, str) or "." not in permission:
                    raise self._error(
                        f"get_required_permissions({operation!r}): {permission!r} is not app_label.codename"
                    )

    def _check_actions(self) -> None:
        """Names only (the ModelAdmin is looked up when the toolset is compiled: admin modules
        may load after this one)."""
        for setting in ("actions", "destructive_actions"):
            if not _action_names(getattr(self, setting)):
                raise self._error(f"{setting} must be a list of action names")
        if "delete_selected" in self.actions:
            raise self._error(
                "actions: 'delete_selected' answers with a confirmation page; use the delete operation instead"
            )
        if len(set(self.actions)) != len(self.actions):
            raise self._error("actions: a name is listed twice")
        wrong = [a for a in self.destructive_actions if a not in self.actions]
        if wrong:
            raise self._error(f"destructive_actions: {wrong} not in actions")
        clashes = self._clashing_actions()
        if clashes:
            raise self._error(f"actions: {clashes} would be named like an operation's tool")

    def _clashing_actions(self) -> list[str]:
        """The actions whose tool would be named like an operation's."""
        return [a for a in self.actions if self.action_tool_name(a) in {self.tool_name(op) for op in OPERATIONS}]

    def _plain_field(self, name: str, setting: str) -> models.Field[Any, Any]:
        """A concrete field of the model itself: no ``__`` traversal, no reverse relations."""
        if not isinstance(name, str) or "__" in name:
            raise self._error(f"{setting}: {name!r} must be a field of {self.opts.label} itself (no '__')")
        try:
            field = self.model_field(name)
        except FieldDoesNotExist:
            raise self._error(f"{setting}: {self.opts.label} has no field {name!r}") from None
        if not field.concrete and not field.many_to_many:
            raise self._error(f"{setting}: {name!r} is not a concrete field")
        return field

    def _path_field(self, path: str) -> models.Field[Any, Any]:
        model: Any = self.model
        parts = path.split("__")
        field: Any = None
        for i, part in enumerate(parts):
            try:
                field = model._meta.get_field(part)
            except FieldDoesNotExist:
                raise self._error(f"search_fields: {path!r}: no field {part!r} on {model._meta.label}") from None
            if i < len(parts) - 1:
                if not field.is_relation or field.related_model is None:
                    raise self._error(f"search_fields: {path!r}: {part!r} is not a relation")
                model = field.related_model
        if not isinstance(field, models.Field):  # a reverse relation
            raise self._error(f"search_fields: {path!r} is not a text field")
        return field

    def _error(self, message: str) -> ImproperlyConfigured:
        return ImproperlyConfigured(f"{type(self).__name__} ({self.opts.label}): {message}")
