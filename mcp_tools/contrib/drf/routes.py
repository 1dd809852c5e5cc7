"""The ``drf.view`` tool kind: a tool that calls one of this site's DRF views or viewset actions.

The config names the route (``route``: a URL pattern name, with its namespaces, chosen from the
site's URL patterns served by a DRF ``APIView`` or ``ViewSet``) and the HTTP ``method``; on a
viewset route the method picks the action, as DRF's router does (``GET`` on ``book-detail`` is
``retrieve``, ``PATCH`` is ``partial_update``). The tool's input schema is derived: the route's
URL arguments are required string properties, any other argument is sent to the view as query
parameters (``GET``, ``DELETE``) or as the JSON body (``POST``, ``PUT``, ``PATCH``).

The view runs as the caller. The MCP endpoint already authenticated the caller (OAuth token,
session ...) and the view has no credentials it could check again (the token's audience is the
MCP endpoint, and a task's worker has no request at all), so the request is built for the
caller's user the way DRF's test utilities do (``force_authenticate``): ``request.user`` is that
user and the view's permission classes, ``get_queryset`` and throttles judge it. A call with no
user (an open server) reaches the view unauthenticated, and views that need a user refuse it.

The response data is the result's ``structuredContent`` (a non-object wrapped as
``{"result": ...}``); a 4xx response is an ``isError`` result with the view's error detail
(403: the caller is not allowed). An exception inside the view is the runner's generic isError.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.urls import NoReverseMatch, URLPattern, URLResolver, get_resolver, resolve, reverse

from ...conf import mcp_settings
from ...exceptions import ToolError
from ...registry import ToolKind, registry
from ...types import ToolContext, ToolResult

__all__ = ["register_kinds"]

logger = logging.getLogger("mcp_tools")

KEY = "drf.view"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


@dataclass(frozen=True)
class Route:
    """A named URL pattern served by a DRF view: its name, URL arguments and methods."""

    name: str
    arguments: tuple[str, ...]
    methods: tuple[str, ...]
    actions: dict[str, str]  # method -> viewset action (empty for an APIView)


def _walk(patterns: Any, namespace: str = "") -> Iterator[tuple[str, URLPattern, tuple[str, ...]]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            for name, pattern, arguments in _walk(entry.url_patterns, inner):
                yield name, pattern, (*_arguments(entry), *arguments)
        elif isinstance(entry, URLPattern) and entry.name:
            yield namespace + entry.name, entry, _arguments(entry)


def _arguments(entry: URLPattern | URLResolver) -> tuple[str, ...]:
    pattern = entry.pattern
    names = getattr(pattern, "converters", None) or getattr(pattern, "regex", None) and pattern.regex.groupindex
    return tuple(name for name in (names or ()) if name != "format")


def _methods(view: Any) -> tuple[dict[str, str], tuple[str, ...]]:
    cls = view.cls
    allowed = {m for m in METHODS if m.lower() in cls.http_method_names}  # a view may refuse some
    actions = dict(getattr(view, "actions", None) or {})
    if actions:
        found = {m.upper(): action for m, action in actions.items() if m.upper() in allowed}
        return found, tuple(m for m in METHODS if m in found)
    return {}, tuple(m for m in METHODS if m in allowed and hasattr(cls, m.lower()))


def routes() -> Mapping[str, Route]:
    """The site's named routes served by DRF views (the first pattern of each name).

    Read once per URL resolver (a call looks its route up here): Django builds a new resolver
    when the URLconf changes (``clear_url_caches``, ``ROOT_URLCONF`` overridden in a test), so
    the walk is redone then and never per call.
    """
    return _routes_of(get_resolver())


@functools.lru_cache(maxsize=8)
def _routes_of(resolver: URLResolver) -> Mapping[str, Route]:
    from rest_framework.views import APIView  # with DRF's schemas and admindocs: not at start-up

    found: dict[str, Route] = {}
    for name, pattern, arguments in _walk(resolver.url_patterns):
        view = pattern.callback
        cls = getattr(view, "cls", None)
        if name in found or not (isinstance(cls, type) and issubclass(cls, APIView)):
            continue
        actions, methods = _methods(view)
        if methods:
            found[name] = Route(name, arguments, methods, actions)
    return MappingProxyType(found)


def _encoder() -> type[json.JSONEncoder]:
    from rest_framework.utils.encoders import JSONEncoder

    encoder: type[json.JSONEncoder] = JSONEncoder
    return encoder


def config_schema() -> dict[str, Any]:
    """The config schema, ``route`` an enum of the DRF routes the site has right now."""
    return {
        "type": "object",
        "properties": {
            "route": {"type": "string", "enum": sorted(routes()), "description": "The URL pattern name."},
            "method": {"type": "string", "enum": list(METHODS), "description": "The HTTP method (picks the action)."},
        },
        "required": ["route", "method"],
        "additionalProperties": False,
    }


def _route(config: Any) -> tuple[Route, str]:
    if not isinstance(config, dict):
        raise ValueError("The handler config must be an object naming a route and a method.")
    route = routes().get(config.get("route", ""))
    if route is None:
        raise ValueError(f"No DRF view is routed under the name {config.get('route')!r}.")
    method = str(config.get("method", "")).upper()
    if method not in route.methods:
        raise ValueError(f"Route {route.name!r} does not answer {method}; it answers {', '.join(route.methods)}.")
    return route, method


def derive_schemas(config: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The input schema of a tool bound to a route: its URL arguments required, others free."""
    route, method = _route(config)
    action = route.actions.get(method)
    where = "the JSON body" if method in BODY_METHODS else "query parameters"
    description = f"{method} {route.name}" + (f" ({action})" if action else "") + f"; other arguments go as {where}."
    schema: dict[str, Any] = {
        "type": "object",
        "description": description,
        "properties": {
            name: {"type": ["string", "integer"], "description": "URL argument"} for name in route.arguments
        },
        "additionalProperties": True,
    }
    if route.arguments:
        schema["required"] = list(route.arguments)
    return schema, None


def _request(method: str, path: str, arguments: dict[str, Any], user: Any) -> Any:
    from rest_framework.test import APIRequestFactory, force_authenticate

    site = urlsplit(mcp_settings.RESOURCE_URL or "")
    secure = site.scheme == "https"
    factory = APIRequestFactory(
        SERVER_NAME=site.hostname or "localhost", SERVER_PORT=str(site.port or (443 if secure else 80))
    )
    if method in BODY_METHODS:
        body = json.dumps(arguments, cls=_encoder())
        request = factory.generic(method, path, body, "application/json", secure=secure)
    else:
        request = factory.generic(method, path, secure=secure, QUERY_STRING=_query(arguments))
    if user is not None and getattr(user, "is_authenticated", False):
        force_authenticate(request, user=user)
    return request


def _query(arguments: dict[str, Any]) -> str:
    """Arguments as a query string: a list repeats its key, other values are JSON but strings."""
    pairs = [
        (key, _scalar(item))
        for key, value in arguments.items()
        for item in (value if isinstance(value, list) else [value])
    ]
    return urlencode(pairs)


def _scalar(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value, cls=_encoder())


def _detail(data: Any) -> str:
    if isinstance(data, dict) and set(data) == {"detail"}:
        return str(data["detail"])
    return json.dumps(data, cls=_encoder(), ensure_ascii=False)


def call_view(ctx: ToolContext) -> ToolResult:
    """Call a DRF view or viewset action of this site as the calling user."""
    try:
        route, method = _route(ctx.config)
    except ValueError:
        logger.error("Tool %r names DRF route %r, which is not available", ctx.tool_name, ctx.config.get("route"))
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.") from None
    url_arguments = {name: ctx.arguments[name] for name in route.arguments if name in ctx.arguments}
    try:
        path = reverse(route.name, kwargs=url_arguments)
    except NoReverseMatch:
        names = ", ".join(route.arguments) or "none"
        raise ToolError(f"The URL arguments do not fit route {route.name!r} (it takes: {names}).") from None
    rest = {k: v for k, v in ctx.arguments.items() if k not in url_arguments}
    request = _request(method, path, rest, ctx.principal.user)
    match = resolve(path)  # the URL arguments converted by the route's converters, as a request gets them
    request.resolver_match = match
    response = match.func(request, *match.args, **match.kwargs)
    data = getattr(response, "data", None)
    status = response.status_code
    if status >= 400:
        detail = _detail(data) if data is not None else response.reason_phrase
        if status in (401, 403):
            raise ToolError(f"The caller is not allowed to do this ({status}): {detail}")
        if status >= 500:
            logger.error("DRF view %r answered %s for tool %r", route.name, status, ctx.tool_name)
            raise ToolError(f"The view {route.name!r} failed ({status}).")
        raise ToolError(f"The view refused the call ({status}): {detail}")
    value = json.loads(json.dumps(data, cls=_encoder())) if data is not None else {}
    return ToolResult(structured_content=value if isinstance(value, dict) else {"result": value})


KIND = ToolKind(
    key=KEY,
    needs_scope=True,  # it reaches the site's own code: flagged when enabled with no required scope
    func=call_view,
    config_schema=config_schema,
    label="Call a DRF view of this site",
    description=(
        "Calls one of this site's Django REST framework views or viewset actions (a named route and a "
        "method) as the calling user, so the view's own permissions apply; its response is the result."
    ),
    schemas=derive_schemas,
)


def register_kinds() -> None:
    """Register ``drf.view`` (idempotent; the app config calls it)."""
    registry.register(KIND)
