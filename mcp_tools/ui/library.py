"""The only tags and filters a template stored in the database may use (``render.SandboxEngine``).

Django's builtins minus what reaches beyond the template: no ``{% load %}`` (other libraries),
no ``{% include %}``/``{% extends %}`` (loader tags are not builtins here, and the engine has no
loaders), no ``{% url %}``, ``{% csrf_token %}``, ``{% debug %}`` or ``{% querystring %}``, no
``{% autoescape off %}`` and no ``safe``/``safeseq`` (everything stays escaped), and none of the
tags and filters that make arbitrarily large output from a small template (``lorem``,
``center``, ``ljust``, ``rjust``).
"""

from __future__ import annotations

from django.template import Library, defaultfilters, defaulttags

register = Library()

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
DENIED_FILTERS = frozenset({"safe", "safeseq", "center", "ljust", "rjust", "pprint", "random"})

for _name in ALLOWED_TAGS:
    register.tags[_name] = defaulttags.register.tags[_name]
for _name, _func in defaultfilters.register.filters.items():
    if _name not in DENIED_FILTERS:
        register.filters[_name] = _func
