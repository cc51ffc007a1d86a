"""Words of a paper as the archive's full-text index and its queries see them."""

import re
from collections import Counter

_WORD = re.compile(r"[a-z0-9_]+")

MAX_TERM = 64
"""Longer words (hashes, run ids) are cut to this many characters, in documents and queries."""


def words(text: str) -> list[str]:
    """Lower-cased runs of letters, digits and `_`, in order (the labs' search tool's rule)."""
    return [word[:MAX_TERM] for word in _WORD.findall(text.lower())]


def term_counts(text: str) -> Counter[str]:
    """How often each word occurs in `text`."""
    return Counter(words(text))
