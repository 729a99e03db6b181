"""The places for runs training at once and the first-come, first-served line for them."""

from __future__ import annotations

import pytest

from explorer.runs import slots as run_slots
from explorer.runs.slots import RunLine, estimated_wait_s, start_if_free
from tests.explorer.test_watch_replay import make_run


@pytest.fixture(scope="module")
def task():
    from transformer_core.tasks import get_task

    return get_task("reverse", seq_len=4, eval_size=16)


@pytest.fixture(autouse=True)
def no_other_runs():
    with run_slots._STARTED_LOCK:
        run_slots._STARTED.clear()
    yield
    with run_slots._STARTED_LOCK:
        run_slots._STARTED.clear()


def test_line_is_first_come_first_served_and_forgets_closed_tabs() -> None:
    now = [0.0]
    line = RunLine(stale_s=6.0, clock=lambda: now[0])
    assert [line.join(t) for t in ("a", "b", "c")] == [1, 2, 3]
    assert line.join("b") == 2 and line.ahead("c") == 2 and line.ahead(None) == 3
    line.leave("a")
    assert line.place("b") == 1 and line.place("c") == 2 and line.place("a") is None
    now[0] = 5.0
    line.join("c")  # c renews its ticket, b does not (its tab was closed)
    now[0] = 7.0
    assert line.place("b") is None and line.place("c") == 1 and len(line) == 1


def test_a_third_run_waits_its_turn_then_starts(task) -> None:
    line = RunLine()
    first, second, third, fourth = (make_run(task, lanes=1) for _ in range(4))
    assert start_if_free(first, 2, "t1", line) and start_if_free(second, 2, "t2", line)
    assert not start_if_free(third, 2, "t3", line) and third.status == "ready"
    line.join("t3")
    line.join("t4")
    first.pause()  # a place frees: the first in line gets it, not a later one
    assert not start_if_free(fourth, 2, "t4", line)
    assert start_if_free(third, 2, "t3", line) and third.status == "running" and line.place("t3") is None
    assert line.place("t4") == 1


def test_newcomers_queue_behind_those_waiting(task) -> None:
    line = RunLine()
    line.join("waiting")
    assert not start_if_free(make_run(task, lanes=1), 1, None, line)  # a free place, but someone waits first


def test_estimated_wait_follows_the_runs_ends(task, monkeypatch) -> None:
    runs = [make_run(task, lanes=1) for _ in range(2)]
    for run in runs:
        assert start_if_free(run, 2, None, RunLine())
    monkeypatch.setattr(type(runs[0]), "eta_s", property(lambda r: 10.0 if r is runs[0] else 30.0))
    assert estimated_wait_s(1, 2) == pytest.approx(10.0)
    assert estimated_wait_s(2, 2) == pytest.approx(30.0)
    # runs last 20 s on average here (0 s run so far): the third in line waits for the first one after it
    assert estimated_wait_s(3, 2) == pytest.approx(30.0)
    assert estimated_wait_s(3, 2, run_s=5.0) == pytest.approx(20.0)  # 10 -> 15 -> 20
