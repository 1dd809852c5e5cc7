"""Search the catalog by words, in the database, filtered by the caller's grant in the query.

One SELECT per search: the words of the request matched against the search entries (PostgreSQL
full-text search over a weighted ``tsvector`` with a GIN index; SQLite FTS5 with BM25; another
database ``LIKE``), any word enough, ranked (names, title, tags and the kind's terms weigh more
than the description); a tool whose exact name the request contains comes first. The grant is
part of the ``WHERE`` clause, so the ranking and the limit apply to what the caller may use:

- the tool is enabled and not app-only (app-only tools are for an app's view, never for a model);
- every scope it requires is among the caller's scopes, implied ones included (the same rule as
  ``BaseAuthBackend.can_see``; a caller whose scopes were not expanded matches nothing);
- the permissions its kind requires are held by the caller's user (the permission sets of the
  catalog that the user holds, by value).

Each tool found is then checked once more against the catalog (``Catalog`` rules and the auth
backend's own ``can_see``): a backend with rules of its own, or an entry not yet rewritten,
never lets a tool through that ``tools/list`` would not show with the mode off.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connections, router

from ..catalog import Catalog, CompiledTool, VisibilityCheck
from ..models import Scope, SearchEntry, Tool
from ..models.search import FTS_TABLE, PG_CONFIG
from ..types import Principal
from . import index
from .documents import name_words, permission_key

# A query's words: letters and digits (no punctuation reaches the full-text syntax).
_WORD = re.compile(r"[^\W_]+")
# Tokens that may be a tool's name, for the exact-name match.
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
MAX_WORDS = 16
MAX_NAMES = 8
MAX_QUERY_CHARS = 500

# Words that say nothing about a tool (English; PostgreSQL's english configuration drops the
# same ones, SQLite's FTS5 keeps them).
STOP_WORDS = frozenset(
    (  # noqa: SIM905 - a list literal of 150 words
        "a about above after again against all am an and any are as at be because been before being below "
        "between both but by can could did do does doing don down during each few for from further had has "
        "have having he her here hers herself him himself his how i if in into is it its itself just me more "
        "most my myself no nor not now of off on once only or other our ours ourselves out over own please "
        "same she should so some such than that the their theirs them themselves then there these they this "
        "those through to too tool tools under until up use very was we were what when where which while who "
        "whom why will with would you your yours yourself yourselves want need like let lets "
    ).split()
)


@dataclass(frozen=True, slots=True)
class Query:
    words: tuple[str, ...]
    names: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.words and not self.names


def parse(text: str) -> Query:
    """The words a search looks for (stop words dropped, at most MAX_WORDS) and the tokens that
    may be a tool's exact name."""
    text = text[:MAX_QUERY_CHARS]
    tokens = list(dict.fromkeys(_NAME.findall(text)))
    # Tokens that look like tool names (list_book, admin.tools.list) first.
    tokens.sort(key=lambda token: not any(c in token for c in "_.-"))
    names = tuple(tokens[:MAX_NAMES])
    words: list[str] = []
    for word in _WORD.findall(name_words(text).casefold()):
        if word not in STOP_WORDS and word not in words:
            words.append(word)
    return Query(tuple(words[:MAX_WORDS]), names)


@dataclass(frozen=True, slots=True)
class Found:
    tools: list[CompiledTool]
    more: bool  # more tools matched than were asked for


def search(
    catalog: Catalog,
    principal: Principal,
    visible: VisibilityCheck,
    text: str,
    limit: int,
    *,
    exclude: Iterable[str] = (),
) -> Found:
    """The tools ``principal`` may use that match ``text``, best first, at most ``limit``.

    ``principal`` is expanded (``Catalog.entitled``); ``exclude`` names tools never returned
    (the discovery tools' own names). One query (and, once per catalog version in a process,
    the check of the search entries, ``index.ensure``).
    """
    query = parse(text)
    if query.empty:
        return Found([], False)
    grant = _grant(catalog, principal, tuple(exclude))
    if grant is None:
        return Found([], False)
    index.ensure(catalog)
    alias = router.db_for_read(SearchEntry)
    names = _run(connections[alias], query, grant, limit * 2 + 1)
    found: list[CompiledTool] = []
    for name in names:
        tool = catalog.get(name)
        if tool is not None and usable(tool, principal, visible):
            found.append(tool)
    return Found(found[:limit], len(found) > limit)


def usable(tool: CompiledTool, principal: Principal, visible: VisibilityCheck) -> bool:
    """What ``tools/list`` would show ``principal`` with the mode off, for a model: permitted,
    visible to the backend, not app-only."""
    return tool.model_visible and tool.permitted(principal) and visible(tool, principal)


# ---------------------------------------------------------------------------- the SQL
# Built from our own table and column names and %s placeholders: every value (words, names,
# scopes, permissions) is a parameter (hence the S608 exemptions).


@dataclass(frozen=True, slots=True)
class _Grant:
    where: str  # over t (the tool row) and e (its search entry)
    params: list[object]


_permission_sets: weakref.WeakKeyDictionary[Catalog, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _catalog_permission_sets(catalog: Catalog) -> tuple[str, ...]:
    found = _permission_sets.get(catalog)
    if found is None:
        found = _permission_sets[catalog] = tuple(
            sorted({permission_key(t.required_permissions) for t in catalog.tools})
        )
    return found


def _grant(catalog: Catalog, principal: Principal, exclude: tuple[str, ...]) -> _Grant | None:
    """The grant as SQL over the tool row ``t`` and its entry ``e``; None: nothing can match."""
    tables = _tables()
    clauses = ["t.enabled = %s", "t.ui_visibility <> %s"]
    params: list[object] = [True, "app"]
    if exclude:
        clauses.append(f"t.name NOT IN ({_marks(exclude)})")
        params += exclude
    scopes = principal.scopes
    if scopes is None:
        if principal.granted is not None:
            return None  # granted scopes never expanded: nothing is visible (BaseAuthBackend.can_see)
    elif scopes:
        clauses.append(
            f"NOT EXISTS (SELECT 1 FROM {tables.links} rs JOIN {tables.scope} s ON s.id = rs.{tables.link_scope} "  # noqa: S608
            f"WHERE rs.{tables.link_tool} = t.id AND s.name NOT IN ({_marks(scopes)}))"
        )
        params += sorted(scopes)
    else:
        clauses.append(f"NOT EXISTS (SELECT 1 FROM {tables.links} rs WHERE rs.{tables.link_tool} = t.id)")  # noqa: S608
    sets = _catalog_permission_sets(catalog)
    if sets != ("",):
        held = principal.permissions or frozenset()
        allowed = [key for key in sets if not key or set(key.split()) <= held]
        if len(allowed) < len(sets):
            clauses.append(f"e.permissions IN ({_marks(allowed)})")
            params += allowed
    return _Grant(" AND ".join(clauses), params)


def _marks(values: Iterable[object]) -> str:
    return ", ".join("%s" for _ in values)


@dataclass(frozen=True, slots=True)
class _Tables:
    tool: str
    entry: str
    scope: str
    links: str
    link_tool: str
    link_scope: str


_tables_cache: list[_Tables] = []


def _tables() -> _Tables:
    if not _tables_cache:
        through = Tool.required_scopes.through._meta
        _tables_cache.append(
            _Tables(
                tool=Tool._meta.db_table,
                entry=SearchEntry._meta.db_table,
                scope=Scope._meta.db_table,
                links=through.db_table,
                link_tool=through.get_field("tool").column,
                link_scope=through.get_field("scope").column,
            )
        )
    return _tables_cache[0]


def _run(connection: object, query: Query, grant: _Grant, limit: int) -> list[str]:
    vendor = getattr(connection, "vendor", "")
    if vendor == "postgresql":
        matched, params = _postgresql(query, grant)
    elif vendor == "sqlite" and _has_fts(connection):
        matched, params = _sqlite(query, grant)
    else:
        matched, params = _like(query, grant)
    t = _tables()
    branches = [matched] if matched else []
    if query.names:
        # A tool named in the request comes first, whatever its words.
        branches.append(
            f"SELECT t.name AS name, 1 AS exact, 0.0 AS score FROM {t.tool} t JOIN {t.entry} e ON e.tool_id = t.id "  # noqa: S608
            f"WHERE t.name IN ({_marks(query.names)}) AND {grant.where}"
        )
        params = [*params, *query.names, *grant.params]
    sql = (
        f"SELECT name, MAX(exact) AS exact, MAX(score) AS score FROM ({' UNION ALL '.join(branches)}) found "  # noqa: S608
        "GROUP BY name ORDER BY MAX(exact) DESC, MAX(score) DESC, name LIMIT %s"
    )
    with connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(sql, [*params, limit])
        return [row[0] for row in cursor.fetchall()]


def _postgresql(query: Query, grant: _Grant) -> tuple[str, list[object]]:
    if not query.words:
        return "", []
    t = _tables()
    # Any word is enough (OR); each is letters and digits only, so the text is no tsquery syntax.
    tsquery = " | ".join(query.words)
    sql = (
        f"SELECT t.name AS name, 0 AS exact, ts_rank(e.vector, q.q, 1) AS score "  # noqa: S608
        f"FROM {t.entry} e JOIN {t.tool} t ON t.id = e.tool_id "
        f"CROSS JOIN (SELECT to_tsquery('{PG_CONFIG}'::regconfig, %s) AS q) q "
        f"WHERE e.vector @@ q.q AND {grant.where}"
    )
    return sql, [tsquery, *grant.params]


def _sqlite(query: Query, grant: _Grant) -> tuple[str, list[object]]:
    if not query.words:
        return "", []
    t = _tables()
    match = " OR ".join(f'"{word}"' for word in query.words)
    # bm25 is lower for better matches: negated, so every branch sorts higher-is-better.
    sql = (
        f"SELECT t.name AS name, 0 AS exact, -bm25({FTS_TABLE}, 4.0, 1.0) AS score "  # noqa: S608
        f"FROM {FTS_TABLE} JOIN {t.entry} e ON e.tool_id = {FTS_TABLE}.rowid JOIN {t.tool} t ON t.id = e.tool_id "
        f"WHERE {FTS_TABLE} MATCH %s AND {grant.where}"
    )
    return sql, [match, *grant.params]


def _like(query: Query, grant: _Grant) -> tuple[str, list[object]]:
    """Any other database (or a SQLite without FTS5): a scan of the entries, scored by the words
    found in the names (4) and in the description (1)."""
    if not query.words:
        return "", []
    t = _tables()
    patterns = [f"%{word}%" for word in query.words]
    score = " + ".join(
        "(CASE WHEN LOWER(e.names) LIKE %s THEN 4 ELSE 0 END) + (CASE WHEN LOWER(e.body) LIKE %s THEN 1 ELSE 0 END)"
        for _ in patterns
    )
    matches = " OR ".join("LOWER(e.names) LIKE %s OR LOWER(e.body) LIKE %s" for _ in patterns)
    sql = (
        f"SELECT t.name AS name, 0 AS exact, {score} AS score FROM {t.entry} e JOIN {t.tool} t ON t.id = e.tool_id "  # noqa: S608
        f"WHERE ({matches}) AND {grant.where}"
    )
    doubled = [p for pattern in patterns for p in (pattern, pattern)]
    return sql, [*doubled, *doubled, *grant.params]


_fts: dict[str, bool] = {}


def _has_fts(connection: object) -> bool:
    alias = getattr(connection, "alias", "default")
    found = _fts.get(alias)
    if found is None:
        with connection.cursor() as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [FTS_TABLE])
            found = _fts[alias] = cursor.fetchone() is not None
    return found
