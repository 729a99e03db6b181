"""*Watch it write*: one writing per client, a few per server, and places that free themselves."""

from __future__ import annotations

import gc

import pytest

from explorer.lab.generation import Characters, Sampling, Writing
from explorer.lab.writing_limit import WritingLimit, WritingRefused


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def writing() -> Writing:
    return Writing((1,), ("a",), Sampling(), 5, Characters({"a": 1}), iter(()))


def test_one_writing_per_client_and_a_few_per_server() -> None:
    limit = WritingLimit(lambda: 2, clock=Clock())
    first, second = writing(), writing()
    limit.admit("browser:a", first)
    with pytest.raises(WritingRefused, match="already writing in another tab"):
        limit.admit("browser:a", second)  # a second tab of the same browser
    assert second.finished and not first.finished  # the refused one never writes
    limit.admit("browser:b", writing_b := writing())
    with pytest.raises(WritingRefused, match="at most 2 texts at once"):
        limit.admit("browser:c", writing())
    first.stop()  # a writing that ends frees its place at once
    limit.admit("browser:c", third := writing())
    assert limit.running() == 2 and not writing_b.finished and not third.finished


def test_places_of_writings_nobody_drives_or_holds_free_themselves() -> None:
    clock = Clock()
    limit = WritingLimit(lambda: 1, clock=clock, stale_s=15.0)
    driven = writing()
    limit.admit("browser:a", driven)
    for _ in range(3):  # it keeps writing: it keeps its place
        clock.now += 10.0
        driven.written.append(object())
        assert limit.running() == 1
    clock.now += 16.0  # its tab closed mid-writing: no token for 16 s
    assert limit.running() == 0
    held = writing()
    limit.admit("browser:b", held)
    del held  # its session ended: nobody holds the writing any more
    gc.collect()
    assert limit.running() == 0
    released = writing()
    limit.admit("browser:c", released)
    limit.release(released)
    assert limit.running() == 0
