"""The shared drawings cache: one build per key however many ask at once, keys kept apart, the byte bound held."""

from __future__ import annotations

import threading
import time

import pytest

from explorer.render.shared import SharedRenders


def _cache(max_bytes: int = 1000) -> SharedRenders:
    return SharedRenders(max_bytes, len)


def test_twenty_watchers_of_one_view_build_it_once() -> None:
    cache, builds, start = _cache(), [], threading.Barrier(20)

    def build() -> str:
        builds.append(1)
        time.sleep(0.2)  # the others ask while it is being built: they wait for it
        return "picture"

    got: list[str] = []

    def watcher() -> None:
        start.wait()
        got.append(cache.get(("chan", 5, "cross"), build))

    threads = [threading.Thread(target=watcher) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and got == ["picture"] * 20
    assert len({id(g) for g in got}) == 1  # the very same object for every watcher
    stats = cache.stats()
    assert (stats.builds, stats.hits, stats.entries) == (1, 19, 1)


def test_different_views_are_built_and_kept_apart() -> None:
    cache = _cache()
    a = cache.get(("chan", 5, "cross", 0), lambda: "a" * 10)
    b = cache.get(("chan", 5, "encoder", 0), lambda: "b" * 10)
    c = cache.get(("chan", 6, "cross", 0), lambda: "c" * 10)
    d = cache.get(("other", 5, "cross", 0), lambda: "d" * 10)
    assert len({a, b, c, d}) == 4 and cache.stats().builds == 4
    assert cache.get(("chan", 5, "encoder", 0), lambda: pytest.fail("built twice")) == b


def test_the_byte_bound_evicts_the_least_recently_used() -> None:
    cache = _cache(100)
    for step in range(3):
        cache.get(step, lambda step=step: str(step) * 40)
    assert cache.stats().bytes == 80 and cache.stats().evictions == 1  # 120 bytes do not fit in 100
    cache.get(1, lambda: pytest.fail("step 1 is kept"))  # step 1 is now the most recently used
    cache.get(3, lambda: "3" * 40)
    stats = cache.stats()
    assert stats.bytes <= 100 and stats.entries == 2 and stats.evictions == 2
    cache.get(1, lambda: pytest.fail("step 1 was used last, step 2 goes first"))
    assert cache.get(2, lambda: "rebuilt") == "rebuilt"


def test_a_value_heavier_than_the_bound_is_handed_out_but_not_kept() -> None:
    cache = _cache(10)
    assert cache.get("big", lambda: "x" * 50) == "x" * 50
    assert cache.stats().entries == 0 and cache.stats().bytes == 0


def test_a_failed_build_reaches_every_waiter_and_keeps_nothing() -> None:
    cache, start, errors = _cache(), threading.Barrier(3), []

    def build() -> str:
        time.sleep(0.1)
        raise ValueError("no snapshot")

    def watcher() -> None:
        start.wait()
        try:
            cache.get("k", build)
        except ValueError as err:
            errors.append(str(err))

    threads = [threading.Thread(target=watcher) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == ["no snapshot"] * 3 and cache.stats().entries == 0
    assert cache.get("k", lambda: "fine") == "fine"  # the next asker builds afresh


def test_a_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        SharedRenders(0, len)
