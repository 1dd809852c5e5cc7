"""English for generated titles and scope descriptions: "an invoice", "customers and invoices"."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["enumerate_words", "indefinite"]

# Words spelled with a vowel that start with a consonant sound ("a user", "a one-off"), and
# words spelled with a consonant that start with a vowel sound ("an hour").
_CONSONANT_SOUND = re.compile(r"^(u[bcdfgjklmpqrstvz][aeiou]|uni(?![nmd])|eu|ewe|one\b|one-|once|ouija)", re.I)
_VOWEL_SOUND = re.compile(r"^(hour|honest|honou?r|heir|herb)", re.I)
# Spelled-out capitals read letter by letter: "an SMS", "a PDF" (F is "ef", but P is "pee").
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9]+\b")


def indefinite(noun: str) -> str:
    """``noun`` with "a" or "an" before it, by how it sounds: "an invoice", "a user", "an hour"."""
    word = noun.strip()
    if not word:
        return noun
    if _ACRONYM.match(word):
        return f"{'an' if word[0] in 'AEFHILMNORSX' else 'a'} {noun}"
    if _VOWEL_SOUND.match(word):
        return f"an {noun}"
    if word[0].lower() in "aeiou" and not _CONSONANT_SOUND.match(word):
        return f"an {noun}"
    return f"a {noun}"


def enumerate_words(items: Sequence[str]) -> str:
    """``["a", "b", "c"]`` -> "a, b and c"."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
