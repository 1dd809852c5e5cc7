"""Search the catalog by words, in the database, filtered by the caller's grant in the query.

One SELECT per search, over the search entries alone: the words of the request (normalised as
the entries are, ``documents.terms``) matched by the database (PostgreSQL full-text search over a
weighted ``tsvector`` with a GIN index; SQLite FTS5; another database ``LIKE``), any word enough;
the database ranks the matches (names, title, tags and the kind's terms weigh more than the
description) and returns the best ``CANDIDATES``. The grant is part of the ``WHERE`` clause, so
the ranking and the limit apply only to what the caller may use:

- the tool is not app-only (app-only tools are for an app's view, never for a model);
- its access key is one the caller meets: every scope it requires is among the caller's scopes,
  implied ones included (the rule of ``BaseAuthBackend.can_see``; a caller whose scopes were not
  expanded meets none), and its kind's permissions are held by the caller's user. The catalog's
  distinct access keys are few; those a principal meets are computed once per catalog and
  (scope set, relevant permissions held), and the query names them.

The candidates are then ranked the same way whatever the database (``rank``: BM25 over the two
fields, with the catalog's word frequencies), a tool whose exact name the request holds first,
the safer tool first among equals (read-only, then not destructive). Each tool is checked once
more against the catalog (``Catalog`` rules and the auth backend's own ``can_see``): a backend
with rules of its own, or an entry not yet rewritten, never lets a tool through that
``tools/list`` would not show with the mode off.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain

from django.db import connections, router

from ..catalog import Catalog, CompiledTool, VisibilityCheck
from ..models import SearchEntry
from ..models.search import FTS_TABLE, PG_CONFIG
from ..types import Principal
from . import index
from .documents import Document, access_key, document, split_access, terms

__all__ = [
    "Found",
    "MAX_QUERY_CHARS",
    "search",
    "usable",
]

# Tokens that may be a tool's name, for the exact-name match.
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_IDENTIFIER = re.compile(r"[_.\-]|[a-z][A-Z]")
MAX_WORDS = 16
MAX_NAMES = 8
MAX_QUERY_CHARS = 500
# How many of the database's best matches are ranked here (the limit asked is at most 20).
CANDIDATES = 40

# Words that say nothing about a tool (English), dropped from requests.
STOP_WORDS = frozenset(
    (  # noqa: SIM905 - a list literal of 150 words
        "a about above after again against all am an and any are as at be because been before being below "
        "between both but by can could did do does doing don down during each few for from further had has "
        "have having he her here hers herself him himself his how i if in into is it its itself just me more "
        "most my myself no nor not now of off on once only or other our ours ourselves out over own please "
        "same she should so some such than that the their theirs them themselves then there these they this "
        "those through to too tool tools under until up use very was we were what when where which while who "
        "whom why will with would you your yours yourself yourselves want need like let lets"
    ).split()
)


@dataclass(frozen=True, slots=True)
class Query:
    words: tuple[str, ...]  # normalised
    names: tuple[str, ...]
    # The words a row must hold one of to be a match (the others only rank): () for any word.
    selective: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.words and not self.names


def parse(text: str) -> Query:
    """The words a search looks for (stop words dropped, normalised, at most MAX_WORDS) and the
    tokens that may be a tool's exact name."""
    text = text[:MAX_QUERY_CHARS]
    # A tool's exact name: the whole request, or a token that reads as an identifier (list_book,
    # admin.tools.list, getInvoice), not a word of a sentence ("add a book" names no tool "add").
    tokens = list(dict.fromkeys(_NAME.findall(text)))
    if len(tokens) > 1:
        tokens = [token for token in tokens if _IDENTIFIER.search(token)]
    words = dict.fromkeys(word for word in terms(text) if word not in STOP_WORDS)
    return Query(tuple(words)[:MAX_WORDS], tuple(tokens[:MAX_NAMES]))


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

    ``principal`` is expanded (``Catalog.with_permissions``); ``exclude`` names tools never returned
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
    query = _selective(catalog, query)
    candidates = _run(connections[router.db_for_read(SearchEntry)], query, grant, CANDIDATES)
    found: list[CompiledTool] = []
    for name in rank(catalog, query, candidates):
        tool = catalog.get(name)
        if tool is not None and usable(tool, principal, visible):
            found.append(tool)
            if len(found) > limit:
                break
    return Found(found[:limit], len(found) > limit)


def usable(tool: CompiledTool, principal: Principal, visible: VisibilityCheck) -> bool:
    """What ``tools/list`` would show ``principal`` with the mode off, for a model: permitted,
    visible to the backend, not app-only."""
    return tool.model_visible and tool.permitted(principal) and visible(tool, principal)


# ---------------------------------------------------------------------------- word statistics

# A word in more than this share of the catalog's tools (and more than COMMON_MIN of them) is a
# common word: it ranks the matches, but when the request has rarer words a row must hold one of
# those to be a match at all. Matching "id" or "list" alone would score most of a large catalog
# on every search for little: such a word cannot tell its tools apart from the rest.
COMMON_SHARE = 0.05
COMMON_MIN = 50


@dataclass(slots=True)
class _Statistics:
    frequencies: Counter[str]  # in how many tools each word occurs
    tools: int
    names_length: float  # mean words per field
    body_length: float


_statistics: weakref.WeakKeyDictionary[Catalog, _Statistics] = weakref.WeakKeyDictionary()


def _stats(catalog: Catalog) -> _Statistics:
    """The catalog's word statistics (once per catalog, in this process)."""
    found = _statistics.get(catalog)
    if found is None:
        docs = [document(t) for t in catalog.tools]
        count = max(1, len(docs))
        found = _statistics[catalog] = _Statistics(
            Counter(chain.from_iterable({*d.names_words, *d.body_words} for d in docs)),
            len(docs),
            sum(len(d.names_words) for d in docs) / count,
            sum(len(d.body_words) for d in docs) / count,
        )
    return found


def _selective(catalog: Catalog, query: Query) -> Query:
    """``query`` with the words a match must hold when it has both common and rarer words."""
    if len(query.words) < 2:
        return query
    stats = _stats(catalog)
    cutoff = max(COMMON_MIN, COMMON_SHARE * stats.tools)
    known = [(word, stats.frequencies.get(word, 0)) for word in query.words]
    rare = tuple(word for word, count in known if 0 < count <= cutoff)
    if not rare or len(rare) == sum(1 for _, count in known if count):
        return query
    return Query(query.words, query.names, rare)


# ---------------------------------------------------------------------------- the ranking

# BM25 over two fields (names weigh NAMES_WEIGHT times the description), each normalised by its
# own length: a long description does not push down a tool whose name says what was asked.
K1 = 1.2
NAMES_WEIGHT = 5.0
NAMES_B = 0.3
BODY_B = 0.75


def rank(catalog: Catalog, query: Query, candidates: list[tuple[str, bool]]) -> list[str]:
    """The candidates' names, best first: exact names, then by score, the safer tool, the name."""
    stats = _stats(catalog)
    idf = {
        word: math.log(1 + (stats.tools - n + 0.5) / (n + 0.5))
        for word in query.words
        for n in (stats.frequencies.get(word, 0),)
    }
    scored = []
    for name, exact in candidates:
        tool = catalog.get(name)
        if tool is None:
            continue
        doc = document(tool)
        scored.append((-int(exact), -_score(doc, idf, stats), -doc.safety, name))
    scored.sort()
    return [name for *_, name in scored]


def _score(doc: Document, idf: dict[str, float], stats: _Statistics) -> float:
    names, body = doc.names_words, doc.body_words
    names_norm = 1 - NAMES_B + NAMES_B * len(names) / max(stats.names_length, 1.0)
    body_norm = 1 - BODY_B + BODY_B * len(body) / max(stats.body_length, 1.0)
    score = 0.0
    for word, weight in idf.items():
        # A word is in the names once at most (labels); it may recur in the description.
        tf = NAMES_WEIGHT * (word in names) / names_norm + body.count(word) / body_norm
        if tf:
            score += weight * tf * (K1 + 1) / (tf + K1)
    return score


# ---------------------------------------------------------------------------- the SQL
# Built from our own table and column names and %s placeholders: every value (words, names,
# access keys) is a parameter (hence the S608 exemptions).

ENTRY = SearchEntry._meta.db_table


@dataclass(frozen=True, slots=True)
class _Grant:
    where: str  # over e, the search entry
    params: list[object]


# Per catalog: its distinct access keys, and those each (scopes, held permissions) meets.
_access: weakref.WeakKeyDictionary[Catalog, tuple[tuple[str, ...], dict[str, tuple[str, ...]]]] = (
    weakref.WeakKeyDictionary()
)


def _met(catalog: Catalog, principal: Principal) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every access key of the catalog, those ``principal`` meets)."""
    found = _access.get(catalog)
    if found is None:
        keys = tuple(sorted({access_key(t.required_scopes, t.required_permissions) for t in catalog.tools}))
        found = _access[catalog] = (keys, {})
    keys, met = found
    held = (principal.permissions or frozenset()) & catalog.permission_names
    cache_key = principal.scope_key + "\0" + " ".join(sorted(held))
    allowed = met.get(cache_key)
    if allowed is None:
        scopes = principal.scopes

        def meets(key: str) -> bool:
            needed, permissions = split_access(key)
            return (scopes is None or needed <= scopes) and permissions <= held

        allowed = tuple(key for key in keys if meets(key))
        if len(met) > 1024:
            met.clear()
        met[cache_key] = allowed
    return keys, allowed


def _grant(catalog: Catalog, principal: Principal, exclude: tuple[str, ...]) -> _Grant | None:
    """The grant as SQL over the search entry ``e``; None: nothing can match."""
    if principal.scopes is None and principal.granted is not None:
        return None  # granted scopes never expanded: nothing is visible (BaseAuthBackend.can_see)
    keys, allowed = _met(catalog, principal)
    if not allowed:
        return None
    clauses = ["e.model_visible = %s"]
    params: list[object] = [True]
    if exclude:
        clauses.append(f"e.name NOT IN ({_marks(exclude)})")
        params += exclude
    if len(allowed) < len(keys):
        clauses.append(f"e.access IN ({_marks(allowed)})")
        params += allowed
    return _Grant(" AND ".join(clauses), params)


def _marks(values: Iterable[object]) -> str:
    return ", ".join("%s" for _ in values)


def _run(connection: object, query: Query, grant: _Grant, limit: int) -> list[tuple[str, bool]]:
    """(name, named exactly) of the best ``limit`` matches by the database's ranking, and of the
    tools the request names."""
    vendor = getattr(connection, "vendor", "")
    if vendor == "postgresql":
        matched, params = _postgresql(query, grant)
    elif vendor == "sqlite" and _has_fts(connection):
        matched, params = _sqlite(query, grant)
    else:
        matched, params = _like(query, grant)
    branches = []
    if matched:
        # The best ``limit`` matches; sorted, then cut, in the database (a top-N sort).
        branches.append(f"SELECT * FROM ({matched} ORDER BY score DESC, name LIMIT %s) matched")  # noqa: S608
        params = [*params, limit]
    if query.names:
        # A tool named in the request comes first, whatever its words.
        branches.append(
            f"SELECT e.name AS name, 1 AS exact, 0.0 AS score FROM {ENTRY} e "  # noqa: S608
            f"WHERE e.name IN ({_marks(query.names)}) AND {grant.where}"
        )
        params = [*params, *query.names, *grant.params]
    if not branches:
        return []
    with connection.cursor() as cursor:  # type: ignore[attr-defined]
        cursor.execute(" UNION ALL ".join(branches), params)
        rows = cursor.fetchall()
    exact = {row[0] for row in rows if row[1]}
    return [(name, name in exact) for name in dict.fromkeys(row[0] for row in rows)]


def _postgresql(query: Query, grant: _Grant) -> tuple[str, list[object]]:
    if not query.words:
        return "", []
    # Any word is enough (OR); each is letters and digits only, so the text is no tsquery syntax.
    # Rows match the selective words (when there are), and rank by every word.
    ranked = " | ".join(query.words)
    matched = " | ".join(query.selective or query.words)
    config = f"'{PG_CONFIG}'::regconfig"
    sql = (
        "SELECT e.name AS name, 0 AS exact, ts_rank(e.vector, q.ranked, 1) AS score "  # noqa: S608
        f"FROM {ENTRY} e CROSS JOIN (SELECT to_tsquery({config}, %s) AS ranked, to_tsquery({config}, %s) AS matched) q "
        f"WHERE e.vector @@ q.matched AND {grant.where}"
    )
    return sql, [ranked, matched, *grant.params]


def _sqlite(query: Query, grant: _Grant) -> tuple[str, list[object]]:
    if not query.words:
        return "", []
    match = " OR ".join(f'"{word}"' for word in query.words)
    if query.selective:
        # A row must hold a selective word; bm25 scores every word of the request (the selective
        # ones twice: this ranking only picks the candidates, ``rank`` orders them).
        match = "(" + " OR ".join(f'"{word}"' for word in query.selective) + f") AND ({match})"
    # bm25 is lower for better matches: negated, so every branch sorts higher-is-better. CROSS
    # JOIN fixes the order: the full-text match first, then each match's entry by primary key.
    sql = (
        f"SELECT e.name AS name, 0 AS exact, -bm25({FTS_TABLE}, 4.0, 1.0) AS score FROM {FTS_TABLE} "  # noqa: S608
        f"CROSS JOIN {ENTRY} e ON e.tool_id = {FTS_TABLE}.rowid "
        f"WHERE {FTS_TABLE} MATCH %s AND {grant.where}"
    )
    return sql, [match, *grant.params]


def _like(query: Query, grant: _Grant) -> tuple[str, list[object]]:
    """Any other database (or a SQLite without FTS5): a scan of the entries, scored by the words
    found in the names (4) and in the description (1), as substrings (``rank`` counts words)."""
    if not query.words:
        return "", []
    patterns = [f"%{word}%" for word in query.words]
    required = [f"%{word}%" for word in query.selective or query.words]
    score = " + ".join(
        "(CASE WHEN e.names LIKE %s THEN 4 ELSE 0 END) + (CASE WHEN e.body LIKE %s THEN 1 ELSE 0 END)" for _ in patterns
    )
    matches = " OR ".join("e.names LIKE %s OR e.body LIKE %s" for _ in required)
    sql = (
        f"SELECT e.name AS name, 0 AS exact, {score} AS score FROM {ENTRY} e "  # noqa: S608
        f"WHERE ({matches}) AND {grant.where}"
    )

    def doubled(values: list[str]) -> list[object]:
        return [p for value in values for p in (value, value)]

    return sql, [*doubled(patterns), *doubled(required), *grant.params]


_fts: dict[str, bool] = {}


def _has_fts(connection: object) -> bool:
    alias = getattr(connection, "alias", "default")
    found = _fts.get(alias)
    if found is None:
        with connection.cursor() as cursor:  # type: ignore[attr-defined]
            cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [FTS_TABLE])
            found = _fts[alias] = cursor.fetchone() is not None
    return found
