"""The one bounded cache: the least recently used entries go past its capacity, counted in
entries or in weights, and an entry is made once however many threads ask for it."""

import pickle
import threading

import pytest

from events.bounded_cache import BoundedCache


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now b is the least recently used
    cache.put("c", 3)
    assert "b" not in cache
    assert (cache.get("a"), cache.get("c"), len(cache)) == (1, 3, 2)


def test_an_entry_of_none_is_kept_and_used() -> None:
    cache: BoundedCache[str, int | None] = BoundedCache(2)
    cache.put("none", None)
    cache.put("b", 2)
    assert cache.get("none") is None and "none" in cache  # used: b goes next
    cache.put("c", 3)
    assert "none" in cache and "b" not in cache


def test_weights_bound_the_total_and_the_latest_entry_stays_whatever_its_weight() -> None:
    cache: BoundedCache[str, list[int]] = BoundedCache(5, len)
    cache.put("a", [1, 2])
    cache.put("b", [1, 2, 3])
    cache.put("c", [1])  # 6 > 5: a goes
    assert ("a" in cache, "b" in cache, "c" in cache) == (False, True, True)
    cache.put("b", [1])  # replaced: its old weight no longer counts
    cache.put("d", [1, 2, 3])
    assert ("b" in cache, "c" in cache, "d" in cache) == (True, True, True)
    cache.put("huge", list(range(10)))
    assert len(cache) == 1 and cache.get("huge") == list(range(10))


def test_pop_removes_an_entry_and_its_weight() -> None:
    cache: BoundedCache[str, list[int]] = BoundedCache(4, len)
    cache.put("a", [1, 2, 3])
    assert cache.pop("a") == [1, 2, 3]
    assert cache.pop("a") is None
    cache.put("b", [1, 2])
    cache.put("c", [1, 2])
    assert "b" in cache and "c" in cache


def test_obtain_makes_an_entry_once_across_threads() -> None:
    cache: BoundedCache[str, object] = BoundedCache(8)
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    got: list[object] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        got.append(cache.obtain("run", make))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and all(value is made[0] for value in got) and len(got) == 8


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity must be at least 1, not 0"):
        BoundedCache(0)


def test_a_cache_survives_pickling_with_its_entries_and_order() -> None:
    """Projectors holding one are sent to the processes of a parallel rebuild."""
    cache: BoundedCache[str, list[int]] = BoundedCache(4, len)
    cache.put("a", [1, 2])
    cache.put("b", [1, 2])
    copy = pickle.loads(pickle.dumps(cache))
    copy.put("c", [1])  # the oldest, a, goes
    assert ("a" in copy, copy.get("b"), copy.get("c")) == (False, [1, 2], [1])
    assert copy.obtain("d", list) == []  # its lock works
