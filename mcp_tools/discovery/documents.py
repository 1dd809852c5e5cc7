"""What discovery finds a tool by: its search document, built from the compiled tool.

Two texts: ``names`` (the name's words, title, annotation title, tags and the terms its kind
gives, weighted most) and ``body`` (the description), plus the Django permissions its kind
requires (the grant filter of the query reads them). A document is built once per tool version
in a process, and compared with the stored one by its digest.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass

from ..catalog import CompiledTool
from ..registry import registry

logger = logging.getLogger("mcp_tools")

# Words are split at what separates them in tool names: _ . - and camelCase.
_SEPARATORS = re.compile(r"[_.\-/:]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Bounds on a kind's terms (they come from code, but a document stays small whatever it says).
MAX_TERMS = 64
MAX_TERM_CHARS = 200


@dataclass(frozen=True, slots=True)
class Document:
    names: str
    body: str
    permissions: str  # the kind's required permissions, sorted, space-separated ("" for none)
    digest: str


def name_words(name: str) -> str:
    """``list_book`` -> ``list book``; ``getInvoice`` -> ``get Invoice``."""
    return " ".join(_CAMEL.sub(" ", _SEPARATORS.sub(" ", name)).split())


def permission_key(permissions: frozenset[str]) -> str:
    return " ".join(sorted(permissions))


def kind_terms(tool: CompiledTool) -> tuple[str, ...]:
    kind = registry.get(tool.handler_key)
    if kind is None or kind.terms is None:
        return ()
    try:
        terms = kind.search_terms(tool.handler_config)
    except Exception:
        logger.exception("Tool %r: its tool kind could not give its search terms", tool.name)
        return ()
    return tuple(term[:MAX_TERM_CHARS] for term in terms[:MAX_TERMS])


def build(tool: CompiledTool) -> Document:
    spec = tool.spec
    parts = [name_words(tool.name), spec.title, spec.annotations.get("title") or "", *tool.tags, *kind_terms(tool)]
    # " . " between parts: a phrase never runs on from one part into the next.
    names = " . ".join(part for part in parts if part)
    body = spec.description
    permissions = permission_key(tool.required_permissions)
    digest = hashlib.blake2b(f"{names}\0{body}\0{permissions}".encode(), digest_size=16).hexdigest()
    return Document(names, body, permissions, digest)


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
