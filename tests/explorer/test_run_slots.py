"""The places for runs training at once and the first-come, first-served line for them."""

from __future__ import annotations

import pytest

from explorer.runs import load as run_load
from explorer.runs import slots as run_slots
from explorer.runs.line import RunLine
from explorer.runs.slots import estimated_wait_s, start_if_free
from tests.explorer.test_watch_replay import make_run


@pytest.fixture(scope="module")
def task():
    from transformer_core.tasks import get_task

    return get_task("reverse", seq_len=4, eval_size=16)


@pytest.fixture(autouse=True)
def no_other_runs():
    with run_load.STARTED_LOCK:
        run_load.STARTED.clear()
    yield
    with run_load.STARTED_LOCK:
        run_load.STARTED.clear()


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


def test_one_client_holds_at_most_per_client_places_and_line_entries(task) -> None:
    """Four tabs of one browser on a server with four places: two train, the others are refused with the limit,
    and a second visitor still finds a place."""
    line = RunLine()
    runs = [make_run(task, lanes=1) for _ in range(4)]
    assert run_slots.take_place(runs[0], 4, "tab0", "greedy", line=line) is None
    assert run_slots.take_place(runs[1], 4, "tab1", "greedy", line=line) is None
    for i in (2, 3):
        with pytest.raises(run_slots.QuotaExceeded, match=f"most one visitor may hold at once.*{2}|{2} runs"):
            run_slots.take_place(runs[i], 4, f"tab{i}", "greedy", line=line)
        assert runs[i].status == "ready" and line.place(f"tab{i}") is None
    assert str(run_slots.PER_CLIENT) in str(run_slots.QuotaExceeded(run_slots.PER_CLIENT))
    assert run_slots.take_place(make_run(task, lanes=1), 4, "someone", "someone-else", line=line) is None
    runs[0].pause()  # a paused run frees its place, and so the client's quota
    assert run_slots.take_place(runs[2], 4, "tab2", "greedy", line=line) is None


def test_line_entries_count_against_the_client_too(task) -> None:
    line, training = RunLine(), make_run(task, lanes=1)  # held here: a run nobody holds frees its place
    assert run_slots.take_place(training, 1, "other", "other-visitor", line=line) is None
    assert run_slots.take_place(make_run(task, lanes=1), 1, "tab0", "greedy", line=line) == 1
    assert run_slots.take_place(make_run(task, lanes=1), 1, "tab1", "greedy", line=line) == 2
    with pytest.raises(run_slots.QuotaExceeded):  # a third tab may not queue ahead of everyone who comes next
        run_slots.take_place(make_run(task, lanes=1), 1, "tab2", "greedy", line=line)
    assert run_slots.take_place(make_run(task, lanes=1), 1, "late", "late-visitor", line=line) == 3
    assert run_slots.take_place(make_run(task, lanes=1), 1, "tab1", "greedy", line=line) == 2  # renewing is fine


def test_no_lock_is_held_while_a_run_no_page_drives_is_paused(task, monkeypatch) -> None:
    """Pausing a run in a trainer process waits for the trainer's answer (a low-priority process on a busy host may
    take many seconds), and every page's sidebar reads the server's load under the places' lock: the lock must be
    free meanwhile, and a second page asking at that moment does not wait for the same answer."""
    import threading

    from explorer.runs.pace import UNDRIVEN_S

    run = make_run(task, lanes=1)
    assert start_if_free(run, 2)
    run.driven_at -= UNDRIVEN_S + 1  # its page's loop is gone
    seen: dict[str, object] = {}
    real_pause = run.pause

    def pause() -> None:  # what a trainer's slow answer would be: look at the lock and the load from elsewhere
        def elsewhere() -> None:
            seen["lock free"] = run_load.STARTED_LOCK.acquire(blocking=False)
            if seen["lock free"]:
                run_load.STARTED_LOCK.release()
            seen["load"] = run_load.server_load()  # another page's sidebar, meanwhile

        other = threading.Thread(target=elsewhere)
        other.start()
        other.join(30)
        seen["pauses"] = seen.get("pauses", 0) + 1
        real_pause()

    monkeypatch.setattr(run, "pause", pause)
    load = run_load.server_load()
    assert seen["lock free"] is True, "the places' lock was held while the run paused"
    assert seen["pauses"] == 1, "the other page left the run to the one pausing it"
    assert run.status == "paused" and load.running == 0 and load.paused >= 0
