"""Full-text ranking of papers: the one tokenizer and the one Okapi BM25 of the archive.

The labs' `search_archive` tool (`workers.lab.archive_log`) and the archive read model's
search (`projections.archive_search`) both rank with this module, so a person sees what a
lab would have been shown. A document is a paper's title, abstract and body taken as one
text; its words are the lower-cased runs of letters, digits and `_`, each cut to
`MAX_TERM` characters (hashes and run ids are longer than any word worth telling apart,
and the read model's index keeps terms of that length). BM25 has k1 = 1.5, b = 0.75 and
idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)); the query's distinct words are summed in
sorted order, so a score is the same float on every run and backend.

A leaf: it imports nothing of the project.
"""

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement

_WORD = re.compile(r"[a-z0-9_]+")

MAX_TERM = 64
"""Longer words are cut to this many characters, in documents and in queries."""
K1 = 1.5
"""Term-frequency saturation."""
B = 0.75
"""Length normalization."""

Number = TypeVar("Number", float, "ColumnElement[Any]")
"""What `weight` computes with: a Python number, or a SQL expression of a double."""


def words(text: str) -> list[str]:
    """The words of `text` in order, as documents and queries are indexed."""
    return [word[:MAX_TERM] for word in _WORD.findall(text.lower())]


def term_counts(text: str) -> Counter[str]:
    """How often each word occurs in `text`."""
    return Counter(words(text))


def query_terms(query: str) -> list[str]:
    """The distinct words of `query`, sorted, the first `MAX_QUERY_TERMS` of them: what a
    score sums over, in that order."""
    return sorted(set(words(query)))[:MAX_QUERY_TERMS]


MAX_QUERY_TERMS = 200
"""How many distinct words of a query count: a pasted paper is a query too, and a score
summed over thousands of words is one SQL expression too deep for SQLite (1,000 levels)."""


@dataclass(frozen=True)
class Corpus:
    """The statistics of the documents searched that a score needs."""

    count: int
    """Documents searched (N)."""
    length: int
    """Their words, summed."""
    df: Mapping[str, int]
    """For each query word, how many of them hold it."""

    @property
    def average(self) -> float:
        """The documents' mean length in words (1 when they hold none)."""
        return (self.length / self.count if self.count else 0.0) or 1.0


def idf(df: int, count: int) -> float:
    """The weight of a word `df` of `count` documents hold."""
    return math.log(1 + (count - df + 0.5) / (df + 0.5))


def weight(idf: float, n: Number, length: Number, average: float) -> Number:
    """A word's part of a document's score: the word (of weight `idf`) occurs `n` times
    in a document of `length` words, among documents of `average` length.

    The same operations in the same order whatever `n` and `length` are: Python numbers,
    or SQL expressions (`projections.archive_search` ranks in the database with them).
    Each step is one IEEE double operation, so either gives the same float."""
    return idf * n * (K1 + 1) / (n + K1 * (1 - B + B * length / average))


def score(terms: Sequence[str], tf: Mapping[str, int], length: int, corpus: Corpus) -> float:
    """BM25 of a document of `length` words, holding each word `tf[t]` times, for the
    query words `terms` (from `query_terms`): the weights of the words it holds, added
    in that order."""
    total = 0.0
    average = corpus.average
    for term in terms:
        n = tf.get(term, 0)
        if not n:
            continue
        total += weight(idf(corpus.df.get(term, 0), corpus.count), n, length, average)
    return total


def rank(query: str, documents: Sequence[str]) -> list[float]:
    """The BM25 score of each of `documents` (the corpus searched) for `query`."""
    terms = query_terms(query)
    counts = [term_counts(text) for text in documents]
    lengths = [sum(c.values()) for c in counts]
    corpus = _corpus_of(terms, counts, lengths)
    return [score(terms, c, n, corpus) for c, n in zip(counts, lengths, strict=True)]


def _corpus_of(
    terms: Iterable[str], counts: Sequence[Mapping[str, int]], lengths: Sequence[int]
) -> Corpus:
    """The statistics of documents with these word counts and lengths."""
    df = {t: sum(1 for c in counts if c.get(t)) for t in terms}
    return Corpus(count=len(counts), length=sum(lengths), df=df)
