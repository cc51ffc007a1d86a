"""The archive's one tokenizer and one BM25 (`runstate.bm25`)."""

import math

import pytest

from runstate import bm25


def test_words_are_lower_cased_runs_cut_to_the_longest_term() -> None:
    long = "a" * 100
    assert bm25.words(f"Replay, HERDING_2 {long}!") == ["replay", "herding_2", "a" * 64]
    assert bm25.query_terms("b a b") == ["a", "b"]
    assert bm25.term_counts("a b a") == {"a": 2, "b": 1}


def test_rank_is_okapi_bm25_written_out() -> None:
    docs = ["replay replay memory", "fine tuning", "replay with herding exemplars"]
    scores = bm25.rank("replay herding", docs)
    average = (3 + 2 + 4) / 3

    def term(tf: int, df: int, length: int) -> float:
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * length / average))

    assert scores[0] == pytest.approx(term(2, 2, 3), rel=1e-15)
    assert scores[1] == 0.0
    assert scores[2] == pytest.approx(term(1, 2, 4) + term(1, 1, 4), rel=1e-15)
    assert bm25.rank("anything", []) == []
    assert bm25.rank("", docs) == [0.0, 0.0, 0.0]
