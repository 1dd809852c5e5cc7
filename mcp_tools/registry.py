"""Tool kinds registered by code; Tool rows in the database name them by key."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, Unpack

from .types import ToolContext

__all__ = [
    "ConfigSchema",
    "DerivedHooks",
    "HandlerFunc",
    "HandlerRegistry",
    "PermissionsHook",
    "SchemasHook",
    "TermsHook",
    "ToolKind",
    "TrustHook",
    "UnavailableHook",
    "autodiscover",
    "handler",
    "registry",
    "watch_for_handler_modules",
]

HandlerFunc = Callable[[ToolContext], Any]
SchemasHook = Callable[[Any], tuple[dict[str, Any], dict[str, Any] | None]]
"""A kind's config -> (input schema, output schema or None) of the tools bound to it."""
PermissionsHook = Callable[[Any], Iterable[str]]
"""A kind's config -> the Django permissions ("app_label.codename") a user needs to see its tools."""
ConfigSchema = dict[str, Any] | Callable[[], dict[str, Any]]
"""A kind's config schema, or a function building it when asked (choices of what the site has)."""
TermsHook = Callable[[Any], Iterable[str]]
"""A kind's config -> words people use for what its tools reach (progressive discovery searches them)."""
TrustHook = Callable[[Any], bool]
"""A kind's config -> whether its handler's structuredContent matches the derived output schema by construction."""
UnavailableHook = Callable[[Any], str]
"""A kind's config -> why a tool with it cannot run in this process ("" when it can)."""
F = TypeVar("F", bound=HandlerFunc)

_KEY = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")


@dataclass(frozen=True, slots=True)
class ToolKind:
    """A kind of tool: one registered handler, its key, what its config must look like, and the callable.

    (Named ``ToolKind`` everywhere; no other name is kept. Not to be confused
    with ``types.HandleType``, a type of handle a handler stores.)
    """

    key: str
    func: HandlerFunc
    # A dict, or a function that builds it each time it is needed (when a form is built or a
    # row is cleaned), for kinds whose choices come from the site (its Celery tasks, its routes).
    config_schema: ConfigSchema | None = None
    label: str = ""
    description: str = ""
    # Optional hooks for kinds whose tools are derived from their config (contrib.drf): the
    # schemas a row gets when it is cleaned, and the user permissions that hide it from
    # tools/list (the catalog evaluates them once per tool version).
    schemas: SchemasHook | None = None
    permissions: PermissionsHook | None = None
    # Optional, for kinds with ``schemas``: True for a config whose handler writes exactly what
    # the derived output schema says (proven by the kind's tests, for every value it can write).
    # The runner then skips the output-schema check of those tools (see ``vouches_for_output``).
    trusted_output: TrustHook | None = None
    # True for kinds that reach into the site beyond the tool row (a DRF view, a Celery task):
    # under an OAuth backend, an enabled tool of such a kind with no required scope is callable
    # by every token; check mcp_tools.W005 and the admin warn about it.
    needs_scope: bool = False
    # Optional: words that describe what a tool of this kind reaches, beyond its row's text (a
    # model's names, the verbs of its operation): progressive discovery searches them.
    terms: TermsHook | None = None
    # Optional: why a tool with a config cannot run in this process though its row is valid (a
    # model toolset that is not registered here: a handlers module added after the process
    # started). The catalog lists no such tool and mcp_explain says why.
    unavailable: UnavailableHook | None = None
    # True for a handler that does no I/O and returns at once (pure computation on its arguments
    # and config): under ASGI, where every store is in the process (``SERVE_ON_LOOP``), its
    # calls run on the event loop's thread, which serves nothing else meanwhile. Set by the
    # kind's author (code), never by a tool row.
    inline: bool = False

    def why_unavailable(self, config: Any) -> str:
        """ "" when a tool with ``config`` can run in this process, else why not (hooks' errors included)."""
        if self.unavailable is None:
            return ""
        try:
            return self.unavailable(config)
        except Exception as exc:  # a hook that cannot say: the tool is not served
            return f"its tool kind {self.key!r} could not check its config ({type(exc).__name__})"

    def derived_schemas(self, config: Any) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """(input, output) schemas for a row with ``config``, or None when the row states its own.

        Raises ValueError when the config names something that does not exist.
        """
        return None if self.schemas is None else self.schemas(config)

    def required_permissions(self, config: Any) -> frozenset[str]:
        """The permissions a user needs to see and call a tool with ``config`` (empty: none)."""
        return frozenset() if self.permissions is None else frozenset(self.permissions(config))

    def search_terms(self, config: Any) -> tuple[str, ...]:
        """Words progressive discovery finds a tool with ``config`` by (empty: none). Raises what the hook raises."""
        return () if self.terms is None else tuple(str(term) for term in self.terms(config))

    def get_config_schema(self) -> dict[str, Any] | None:
        """The config schema as of now (built by its function for kinds that compute it)."""
        return self.config_schema() if callable(self.config_schema) else self.config_schema

    def vouches_for_output(self, config: Any, output_schema: dict[str, Any] | None) -> bool:
        """Whether a row with ``config`` and ``output_schema`` needs no output-schema check.

        Only when the kind trusts the config *and* the row still states the schema the kind
        derives from it (a row edited or out of date is checked as any other). Raises what the
        hooks raise.
        """
        if self.trusted_output is None or output_schema is None or not self.trusted_output(config):
            return False
        derived = self.derived_schemas(config)
        return derived is not None and derived[1] == output_schema

    def config_errors(self, config: Any) -> list[str]:
        """Messages for a Tool's handler config that does not fit this kind (empty if it fits)."""
        schema = self.get_config_schema()
        if schema is None:
            return []
        from jsonschema import Draft202012Validator  # on first use (mcp_tools.schemas)

        validator = Draft202012Validator(schema)
        return [
            f"{'/'.join(str(p) for p in error.absolute_path) or '(config)'}: {error.message}"
            for error in sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
        ]


class HandlerRegistry:
    def __init__(self) -> None:
        self._kinds: dict[str, ToolKind] = {}

    def register(self, kind: ToolKind) -> None:
        if not _KEY.match(kind.key):
            raise ValueError(f"Invalid handler key {kind.key!r}: use 1-200 of A-Z a-z 0-9 _ . : -")
        existing = self._kinds.get(kind.key)
        if existing is not None and existing.func is not kind.func:
            raise ValueError(f"Handler key {kind.key!r} is already registered by {existing.func!r}")
        if isinstance(kind.config_schema, dict):  # a computed one is checked by tests of its kind
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(kind.config_schema)
            except SchemaError as exc:
                raise ValueError(f"Handler {kind.key!r}: invalid config_schema: {exc.message}") from exc
        self._kinds[kind.key] = kind

    def unregister(self, key: str) -> None:
        self._kinds.pop(key, None)

    def get(self, key: str) -> ToolKind | None:
        return self._kinds.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._kinds

    def __iter__(self) -> Iterator[ToolKind]:
        return iter(sorted(self._kinds.values(), key=lambda k: k.key))

    def choices(self) -> list[tuple[str, str]]:
        return [(kind.key, kind.label or kind.key) for kind in self]


registry = HandlerRegistry()


class DerivedHooks(TypedDict, total=False):
    """The optional hooks of ``@handler`` for kinds whose rows are derived from their config
    (each is the ``ToolKind`` field of the same name)."""

    schemas: SchemasHook | None
    permissions: PermissionsHook | None
    trusted_output: TrustHook | None
    terms: TermsHook | None


def handler(
    key: str,
    *,
    config_schema: ConfigSchema | None = None,
    label: str = "",
    description: str = "",
    inline: bool = False,
    **hooks: Unpack[DerivedHooks],
) -> Callable[[F], F]:
    """Register a tool kind under ``key``; put it in ``<app>/mcp_handlers.py``.

    The function takes a :class:`~mcp_tools.ToolContext` and returns a ``str``, a list of
    content blocks, a :class:`~mcp_tools.ToolResult`, or any other JSON value (which becomes
    ``structuredContent``). Raise :class:`~mcp_tools.ToolError` for a failure the model
    should read. ``schemas(config)`` (optional) derives the input and output schemas of the
    rows bound to the kind when they are cleaned; ``permissions(config)`` (optional) names the
    Django permissions a caller's user needs to see them (hidden from tools/list otherwise);
    ``trusted_output(config)`` (optional, with ``schemas``) vouches that the handler's
    ``structuredContent`` always matches the derived output schema, so the runner skips checking
    it: only for output built from the schema's own source, with a test proving it;
    ``terms(config)`` (optional) gives words progressive discovery finds the rows by, beyond their
    own name, title, description and tags. ``inline=True`` says the function does no I/O (no
    database, no network, no file, no sleep) and returns at once: under ASGI on a site whose
    stores are all in the process, its calls are then served on the event loop's thread
    (``SERVE_ON_LOOP``), which serves nothing else while it runs.
    """

    def decorator(func: F) -> F:
        registry.register(
            ToolKind(
                key,
                func,
                config_schema,
                label,
                description or (func.__doc__ or "").strip(),
                inline=inline,
                **hooks,
            )
        )
        return func

    return decorator


def autodiscover() -> None:
    from django.utils.module_loading import autodiscover_modules

    from .conf import mcp_settings

    autodiscover_modules(mcp_settings.HANDLER_MODULE)


# --------------------------------------------------------------------------- runserver


_waiting: set[Any] = set()  # the folders of apps without a handlers module (Paths), as runserver started


def watch_for_handler_modules(sender: Any, **kwargs: Any) -> None:
    """``autoreload_started``: runserver also restarts when an app gains its handlers module.

    Django's reloader watches the files of imported modules, and a module that did not exist at
    start was never imported. So the folder of each app that has none is watched too: Django's
    stat reloader sees its modification time move when a file is added in it (it ignores a file
    it sees for the first time), and watchman reports the new file itself. ``_appeared`` lets a
    change of the folder restart the server only when the handlers module is there.
    """
    from pathlib import Path

    from django.apps import apps
    from django.utils.autoreload import file_changed

    from .conf import mcp_settings

    module = mcp_settings.HANDLER_MODULE
    for config in apps.get_app_configs():
        folder = Path(config.path)
        installed = any(part in ("site-packages", "dist-packages") for part in folder.parts)
        if installed or not folder.is_dir() or _has_handlers(folder, module):
            continue  # an installed package does not gain a module while the site runs
        _waiting.add(folder)
        sender.watch_dir(folder.parent, folder.name)  # the folder itself: its mtime (stat reloader)
        sender.watch_dir(folder, f"{module}.py")  # the new file (watchman)
    file_changed.connect(_appeared, dispatch_uid="mcp_tools.handler_modules")


def _has_handlers(folder: Any, module: str) -> bool:
    return bool((folder / f"{module}.py").is_file() or (folder / module / "__init__.py").is_file())


def _appeared(sender: Any, file_path: Any, **kwargs: Any) -> bool | None:
    """``file_changed``: True (no restart) for a watched app folder that still has no handlers
    module (another file came or went: an editor's swap file); None, a restart, otherwise."""
    from pathlib import Path

    from .conf import mcp_settings

    module = mcp_settings.HANDLER_MODULE
    path = Path(file_path)
    if path in _waiting:  # the folder: some file in it came or went
        return None if _has_handlers(path, module) else True
    return None  # any other file, the handlers module among them: Django restarts
