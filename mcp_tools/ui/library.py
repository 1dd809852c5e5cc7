"""The only tags and filters a template stored in the database may use (``render.SandboxEngine``).

Django's builtins minus what reaches beyond the template: no ``{% load %}`` (other libraries),
no ``{% include %}``/``{% extends %}`` (loader tags are not builtins here, and the engine has no
loaders), no ``{% url %}``, ``{% csrf_token %}``, ``{% debug %}`` or ``{% querystring %}``, no
``{% autoescape off %}`` and no ``safe``/``safeseq`` (everything stays escaped), and none of the
tags and filters that make arbitrarily large output from a small template (``lorem``,
``center``, ``ljust``, ``rjust``, ``stringformat``).

Work is bounded too (``Budget``, set by ``render`` for each rendering): every filter's result is
at most ``MAX_VALUE_CHARS`` (nested ``{% with %}`` doubling a string stops there), ``join`` and
``floatformat`` are checked before they build, and ``{% for %}`` counts its iterations and the
characters its body renders, so nested loops stop long before they hold a worker.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from django.template import Library, Node, NodeList, defaultfilters, defaulttags
from django.template.base import Parser, Token

register = Library()

MAX_VALUE_CHARS = 1_000_000  # one filter's result
MAX_LOOP_ITERATIONS = 100_000  # all {% for %} iterations of one rendering
MAX_LOOP_CHARS = 8_000_000  # all characters rendered inside loops (nested loops count again)
MAX_FLOAT_DIGITS = 30


class ViewTooLarge(Exception):
    """A rendering went past one of the bounds (the message says which)."""


class Budget:
    """What one rendering may still do; ``render`` makes one per rendering."""

    def __init__(self) -> None:
        self.iterations = MAX_LOOP_ITERATIONS
        self.chars = MAX_LOOP_CHARS

    def iteration(self) -> None:
        self.iterations -= 1
        if self.iterations < 0:
            raise ViewTooLarge(f"too much work: more than {MAX_LOOP_ITERATIONS} loop iterations")

    def spend(self, text: str) -> None:
        self.chars -= len(text)
        if self.chars < 0:
            raise ViewTooLarge(f"the view's loops rendered larger than {MAX_LOOP_CHARS} characters")


budget: ContextVar[Budget | None] = ContextVar("mcp_tools_ui_budget", default=None)

ALLOWED_TAGS = (
    "comment",
    "cycle",
    "filter",
    "firstof",
    "for",
    "if",
    "ifchanged",
    "now",
    "regroup",
    "resetcycle",
    "spaceless",
    "templatetag",
    "verbatim",
    "widthratio",
    "with",
)
DENIED_FILTERS = frozenset({"safe", "safeseq", "center", "ljust", "rjust", "pprint", "random", "stringformat"})


def _bounded(func: Callable[..., Any]) -> Callable[..., Any]:
    """The filter, refusing a result longer than MAX_VALUE_CHARS (its flags kept: is_safe, ...)."""

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        if isinstance(result, str) and len(result) > MAX_VALUE_CHARS:
            raise ViewTooLarge(f"a value larger than {MAX_VALUE_CHARS} characters")
        return result

    return bounded


def _join_check(value: Any, arg: Any) -> None:
    try:
        items = list(value)
    except TypeError:
        return
    size = sum(len(str(item)) for item in items) + len(str(arg)) * max(0, len(items) - 1)
    if size > MAX_VALUE_CHARS:
        raise ViewTooLarge(f"a value larger than {MAX_VALUE_CHARS} characters")


def _float_check(value: Any, arg: Any = -1) -> None:
    digits = re.search(r"\d+", str(arg))
    if digits and int(digits.group()) > MAX_FLOAT_DIGITS:
        raise ViewTooLarge(f"floatformat asks for more than {MAX_FLOAT_DIGITS} digits, a value larger than allowed")


_CHECKED_FIRST: dict[str, Callable[..., None]] = {"join": _join_check, "floatformat": _float_check}


def _checked_first(func: Callable[..., Any], check: Callable[..., None]) -> Callable[..., Any]:
    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check(*args, **kwargs)
        return func(*args, **kwargs)

    return checked


class _Measured:
    """A node of a loop's body whose output is charged to the rendering's budget."""

    __slots__ = ("node", "spent")

    def __init__(self, node: Node, spent: Budget) -> None:
        self.node = node
        self.spent = spent

    def render_annotated(self, context: Any) -> str:
        text = str(self.node.render_annotated(context))
        self.spent.spend(text)
        return text


class _BudgetedBody(NodeList):
    """A ``{% for %}`` body: each pass over it is an iteration of the budget, its output charged."""

    def __iter__(self) -> Iterator[Any]:
        spent = budget.get()
        if spent is None:  # not a rendering (the engine walking its nodes)
            yield from super().__iter__()
            return
        spent.iteration()
        for node in super().__iter__():
            yield _Measured(node, spent)


def _bounded_for(parser: Parser, token: Token) -> Node:
    node = defaulttags.do_for(parser, token)
    loop: Any = node.nodelist_loop
    body = _BudgetedBody(loop)
    body.contains_nontext = loop.contains_nontext
    node.nodelist_loop = body
    return node


for _name in ALLOWED_TAGS:
    register.tags[_name] = _bounded_for if _name == "for" else defaulttags.register.tags[_name]
for _name, _func in defaultfilters.register.filters.items():
    if _name in DENIED_FILTERS:
        continue
    if _name in _CHECKED_FIRST:
        _func = _checked_first(_func, _CHECKED_FIRST[_name])
    register.filters[_name] = _bounded(_func)
