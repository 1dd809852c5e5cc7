"""What discovery finds a tool by: its search document, built from the compiled tool.

Two texts, as words: ``names`` (the name's words, title, annotation title, tags and the terms its
kind gives; labels, so each word once, weighted most) and ``body`` (the description). Both are
stored normalised (``terms``: letters and digits, lower case, plurals made singular), and a
request's words are normalised the same way, so PostgreSQL (the ``simple`` configuration) and
SQLite (FTS5's ``unicode61`` tokenizer) match the same words, and the ranking (``rank``) counts
them alike. Beside the text, what the grant filter of a search reads: the name, the access key
(the scopes the tool requires, then the Django permissions its kind requires) and whether a model
may call it. A document is built once per compiled tool in a process, and compared with the
stored one by its digest.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from dataclasses import dataclass

from ..catalog import CompiledTool
from ..registry import registry

__all__ = [
    "Document",
    "access_key",
    "document",
    "keep_only",
    "split_access",
    "terms",
]

logger = logging.getLogger("mcp_tools")

# Words are split at what separates them in tool names: _ . - and camelCase.
_SEPARATORS = re.compile(r"[_.\-/:]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"[^\W_]+")
# Bounds on a kind's terms (they come from code, but a document stays small whatever it says).
MAX_TERMS = 64
MAX_TERM_CHARS = 200


@dataclass(frozen=True, slots=True)
class Document:
    name: str
    names_words: tuple[str, ...]  # normalised, each once
    body_words: tuple[str, ...]  # normalised words of the description
    access: str  # access_key(): what a grant must hold to use the tool
    model_visible: bool
    safety: int  # 2 read-only, 1 not destructive, 0 otherwise: orders equal matches
    digest: str

    @property
    def names(self) -> str:
        return " ".join(self.names_words)

    @property
    def body(self) -> str:
        return " ".join(self.body_words)


def name_words(name: str) -> str:
    """``list_book`` -> ``list book``; ``getInvoice`` -> ``get Invoice``."""
    return " ".join(_CAMEL.sub(" ", _SEPARATORS.sub(" ", name)).split())


def singular(word: str) -> str:
    """A lower-case word's plural made singular, roughly (``invoices`` -> ``invoice``,
    ``categories`` -> ``category``, ``addresses`` -> ``address``; ``status`` stays): the one
    stemming discovery does, the same for every database."""
    if len(word) <= 3 or not word.endswith("s"):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes", "zes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is")):
        return word
    return word[:-1]


def terms(text: str) -> list[str]:
    """The normalised words of ``text``: split as tool names are, lower case, singular."""
    return [sys.intern(singular(word)) for word in _TOKEN.findall(name_words(text).casefold())]


def access_key(scopes: frozenset[str], permissions: frozenset[str]) -> str:
    """``scope1 scope2|app.perm1 app.perm2``: the same for two tools exactly when the same
    grants may use them (as far as scopes and permissions say)."""
    return " ".join(sorted(scopes)) + "|" + " ".join(sorted(permissions))


def split_access(key: str) -> tuple[frozenset[str], frozenset[str]]:
    scopes, _, permissions = key.partition("|")
    return frozenset(scopes.split()), frozenset(permissions.split())


def kind_terms(tool: CompiledTool) -> tuple[str, ...]:
    kind = registry.get(tool.handler_key)
    if kind is None or kind.terms is None:
        return ()
    try:
        found = kind.search_terms(tool.handler_config)
    except Exception:
        logger.exception("Tool %r: its tool kind could not give its search terms", tool.name)
        return ()
    return tuple(term[:MAX_TERM_CHARS] for term in found[:MAX_TERMS])


def build(tool: CompiledTool) -> Document:
    spec = tool.spec
    labels = [tool.name, spec.title, spec.annotations.get("title") or "", *tool.tags, *kind_terms(tool)]
    # Labels, not prose: each word once, so that a model's name given again by the title, the
    # annotation title and the kind's terms does not weigh four times the operation's verb.
    names = tuple(dict.fromkeys(word for label in labels for word in terms(label)))
    body = tuple(terms(spec.description))
    access = access_key(tool.required_scopes, tool.required_permissions)
    hints = spec.annotations
    safety = 2 if hints.get("readOnlyHint") is True else 1 if hints.get("destructiveHint") is False else 0
    fields = (tool.name, " ".join(names), " ".join(body), access, str(tool.model_visible), str(safety))
    digest = hashlib.blake2b("\0".join(fields).encode(), digest_size=16).hexdigest()
    return Document(tool.name, names, body, access, tool.model_visible, safety, digest)


# By the compiled tool's identity (a catalog reuses a compiled tool while its row's version is
# the same); the entry holds the tool, so its id cannot be reused while it is here.
_documents: dict[int, tuple[CompiledTool, Document]] = {}


def document(tool: CompiledTool) -> Document:
    """The tool's document, built once per compiled tool in this process."""
    found = _documents.get(id(tool))
    if found is None or found[0] is not tool:
        found = _documents[id(tool)] = (tool, build(tool))
    return found[1]


def keep_only(tools: list[CompiledTool]) -> None:
    """Drop the documents of compiled tools that are not in ``tools`` (the current catalog's)."""
    alive = {id(tool) for tool in tools}
    for key in [k for k in _documents if k not in alive]:
        _documents.pop(key, None)
