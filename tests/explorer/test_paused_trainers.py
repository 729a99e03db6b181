"""Paused runs inside every limit: they count against the client's quota and the server's caps on trainer processes
and training memory, a closed tab's paused run is parked and gives its trainer process back to the run store, and
its owner resumes it from there at the same step, with the same curve."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace

import pytest
import torch

from explorer.runs import load as run_load
from explorer.runs import slots as run_slots
from explorer.runs.clients import Client
from explorer.runs.line import RunLine
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.load import Capacity, server_load
from explorer.runs.place import ThisThread
from explorer.runs.registry import RunRegistry
from explorer.runs.session import RunSession
from explorer.runs.slots import held_by
from explorer.runs.store import MemoryStore
from explorer.runs.training_state import decode_state, encode_state, restore_state
from explorer.runs.worker import InWorker, WorkerRun
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config

WIDE = Capacity(max_trainers=100, memory_bytes=2**40)  # caps that never bite


@pytest.fixture(scope="module")
def task():
    return get_task("reverse", seq_len=6)


def specs_of(task, steps: int = 40) -> list[RunSpec]:
    return [RunSpec("A", task.default_model_config(),
                    default_train_config(task, steps=steps, eval_every=10, snapshot_every=10, seed=3))]


@pytest.fixture(autouse=True)
def no_other_runs():
    with run_load.STARTED_LOCK:
        run_load.STARTED.clear()
    yield
    for run in list(run_load.STARTED):
        run.release("test over")
    with run_load.STARTED_LOCK:
        run_load.STARTED.clear()


def exited(pid: int | None) -> bool:
    """Whether process ``pid`` is gone (or a zombie nobody waits for)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def train_until(run: LiveRun, step: int, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while run.status == "running" and run.step < step and time.monotonic() < deadline:
        run.advance(0.05)


def train_to_end(run: LiveRun) -> None:
    while run.status == "running":
        run.advance(0.5)


def train_some(held: RunSession, steps: int = 3, limit_s: float = 60.0) -> None:
    """Drive the session's run through ``steps`` more steps (a trainer process may take a moment to start)."""
    target, deadline = held.run.step + steps, time.monotonic() + limit_s
    while held.run.step < target and time.monotonic() < deadline:
        assert held.train_slice(0.1) is None


def reference(task, specs) -> LiveRun:
    run = ThisThread().new_run(task, specs)
    run.start()
    train_to_end(run)
    return run


def losses(run: LiveRun) -> list[float]:
    return [row["loss"] for row in run.trainers[0].history]


def test_a_runs_training_state_round_trips_into_a_fresh_run(task):
    specs = specs_of(task)
    run = ThisThread().new_run(task, specs)
    run.start()
    train_until(run, 13)
    run.pause()
    rows = len(losses(run))  # a slice may end a step or two past 13
    state = decode_state(encode_state(run))
    again = ThisThread().new_run(task, specs)
    restore_state(again, state)
    assert again.trainers[0].step == run.trainers[0].step and state.optimizer is not None
    for a, b in zip(again.trainers[0].model.parameters(), run.trainers[0].model.parameters(), strict=True):
        assert torch.equal(a, b)
    run.start()
    again.start()
    train_to_end(run)
    train_to_end(again)
    assert losses(again) == losses(run)[rows:]  # the same steps, bit for bit: the optimiser's averages came along
    with pytest.raises(ValueError, match="not one this version writes"):
        decode_state(encode_state(run).replace(b"te-training-state/1", b"te-training-state/9"))


@pytest.mark.slow
def test_a_paused_run_gives_its_trainer_back_and_resumes_from_the_store_bit_for_bit(task):
    specs, store = specs_of(task), MemoryStore()
    run = WorkerRun(task, specs)
    run.start()
    train_until(run, 15)
    run.pause()
    pid, step, rows = run.trainer_pid, run.step, len(run.trainers[0].history)
    assert run.holds_trainer and not run.give_back(MemoryStore(parked_bytes=0), 60)  # no room: it keeps it
    assert run.holds_trainer and run.give_back(store, 60)
    assert not run.holds_trainer and run.trainer_pid is None and exited(pid)
    assert run.step == step and len(run.trainers[0].history) == rows  # the page still shows its curves
    assert run.training_state_bytes == 0 and len(store._parked) == 1
    run.start()
    run.advance(0.01)  # the first slice starts a new trainer from the stored state
    again = run.trainer_pid
    train_to_end(run)
    assert run.status == "done" and again is not None and again != pid
    assert run.trainer_pid is None and exited(again)  # it ended with the run
    assert not store._parked  # taken back by the new trainer
    same = reference(task, specs)
    assert losses(run) == losses(same) and [r["step"] for r in run.trainers[0].history] == list(range(1, 41))
    # the reference's snapshots, and one where the run paused: its heatmaps showed the step it stopped at
    assert [s.step for s in run.trainers[0].snapshots] == sorted({s.step for s in same.trainers[0].snapshots} | {step})
    for a, b in zip(run.trainers[0].model.parameters(), same.trainers[0].model.parameters(), strict=True):
        assert torch.equal(a, b)
    run.release("test over")


@pytest.mark.slow
def test_a_trainer_too_busy_to_answer_in_time_is_given_back_later_and_its_late_answer_is_ignored(task, monkeypatch):
    from explorer.runs import mirror

    specs, store = specs_of(task), MemoryStore()
    run = WorkerRun(task, specs)
    run.start()
    train_until(run, 15)
    run.pause()
    pid, step, rows = run.trainer_pid, run.step, len(run.trainers[0].history)
    normal = mirror.ANSWER_S
    monkeypatch.setattr(mirror, "ANSWER_S", 0.5)
    os.kill(pid, signal.SIGSTOP)  # a trainer starved of CPU (a loaded host, niceness +15) answers late
    try:
        assert not run.give_back(store, 60) and run.holds_trainer  # no answer in time: it keeps its trainer
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(1.0)  # its late answer to that request is now in the pipe
    # The next sweep waits as long as the app does: a trainer at niceness +15 on a loaded test machine was seen to
    # take longer than 0.5 s to answer once it ran again.
    monkeypatch.setattr(mirror, "ANSWER_S", normal)
    assert run.give_back(store, 60), "the next sweep gives the trainer back"
    assert not run.holds_trainer and len(store._parked) == 1
    deadline = time.monotonic() + 30
    while not exited(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exited(pid)
    assert run.step == step and len(run.trainers[0].history) == rows
    run.start()
    train_to_end(run)
    assert run.status == "done" and [r["step"] for r in run.trainers[0].history] == list(range(1, 41))
    run.release("test over")


@pytest.mark.slow
def test_without_room_for_the_optimiser_state_the_run_goes_on_from_its_weights(task):
    specs = specs_of(task)
    run = WorkerRun(task, specs)
    run.start()
    train_until(run, 15)
    run.pause()
    step = run.step
    weights_only = sum(p.nbytes for p in run.trainers[0].model.state_dict().values())
    store = MemoryStore(parked_bytes=weights_only + 64 * 1024)  # room for the weights, not for AdamW's two averages
    assert run.give_back(store, 60)
    kept = decode_state(next(iter(store._parked.values()))[1])
    assert kept.optimizer is None and kept.step == step
    run.start()
    train_to_end(run)
    assert run.status == "done" and [r["step"] for r in run.trainers[0].history] == list(range(1, 41))
    same = reference(task, specs)
    assert losses(run)[:step] == losses(same)[:step] and losses(run)[step:] != losses(same)[step:]
    run.release("test over")


def test_a_state_the_store_lost_loses_the_run_with_a_message(task):
    store = MemoryStore()
    run = WorkerRun(task, specs_of(task, 400))
    run.start()
    train_until(run, 5)
    run.pause()
    assert run.give_back(store, 60)
    store._parked.clear()  # the store restarted
    run.start()
    run.advance(0.1)
    assert run.status == "stopped" and "could not be read back" in run.message


def session(registry, line, store, tab: str, browser: str, place, per_client: int = 2) -> RunSession:
    return RunSession(Client(tab, browser=browser), max_running=lambda: 6, registry=registry, line=line,
                      store=lambda: store, place=place, per_client=per_client)


def test_paused_runs_count_against_the_clients_quota(task, monkeypatch):
    """On a thread, a paused run keeps its optimiser state in the server: it counts until it is stopped."""
    monkeypatch.setattr(run_slots, "capacity", lambda: WIDE)
    registry, line, store = RunRegistry(), RunLine(), MemoryStore()
    tabs = [session(registry, line, store, f"tab{i}", "one-browser", ThisThread()) for i in range(3)]
    for tab in tabs[:2]:
        tab.start(task, specs_of(task, 400), "s")
        tab.train_slice(0.05)
        tab.pause()
    assert [t.run.status for t in tabs[:2]] == ["paused", "paused"] and held_by("browser:one-browser") == 2
    tabs[2].start(task, specs_of(task, 400), "s")
    assert tabs[2].run.status == "ready" and "training, paused or waiting" in tabs[2].notice[1]
    tabs[0].stop()
    tabs[2].start(task, specs_of(task, 400), "s")
    assert tabs[2].run.status == "running"


def test_at_its_quota_a_clients_own_oldest_paused_run_gives_its_trainer_back(task, monkeypatch):
    monkeypatch.setattr(run_slots, "capacity", lambda: WIDE)
    registry, line, store, place = RunRegistry(), RunLine(), MemoryStore(), InWorker()
    tabs = [session(registry, line, store, f"tab{i}", "one-browser", place) for i in range(3)]
    for tab in tabs[:2]:
        tab.start(task, specs_of(task, 400), "s")
        train_some(tab)
        tab.pause()
    first = tabs[0].run
    assert first.holds_trainer and tabs[1].run.holds_trainer
    pid = first.trainer_pid
    tabs[2].start(task, specs_of(task, 400), "s")
    assert tabs[2].run.status == "running" and tabs[2].notice is None
    assert not first.holds_trainer and exited(pid) and tabs[1].run.holds_trainer  # the oldest gave its back
    step = first.step
    tabs[2].pause()
    tabs[0].resume()  # the third one, paused, now gives its trainer back in turn
    train_some(tabs[0])
    assert first.status == "running" and first.holds_trainer and first.step >= step + 3
    assert not tabs[2].run.holds_trainer


def test_the_servers_trainer_cap_is_kept_paused_runs_giving_theirs_back_first(task, monkeypatch):
    monkeypatch.setattr(run_slots, "capacity", lambda: Capacity(max_trainers=2, memory_bytes=2**40))
    registry, line, store, place = RunRegistry(), RunLine(), MemoryStore(), InWorker()
    a, b, c, d = (session(registry, line, store, f"tab-{n}", f"browser-{n}", place) for n in "abcd")
    for held in (a, b):
        held.start(task, specs_of(task, 400), "s")
        train_some(held)
    a.pause()
    c.start(task, specs_of(task, 400), "s")  # a's trainer goes back to the store for c's
    train_some(c)
    assert c.run.status == "running" and not a.run.holds_trainer
    load = server_load(line=line, caps=Capacity(2, 2**40))
    assert (load.running, load.paused, load.trainers) == (2, 0, 2) and load.memory_bytes > 0
    d.start(task, specs_of(task, 400), "s")  # two trainers train: d waits in line, as for a place
    assert d.waiting and d.run.status == "ready" and not d.run.holds_trainer
    b.pause()
    assert d.poll_line() is None and d.run.status == "running"


def test_the_servers_memory_cap_holds_runs_paused_on_threads(task, monkeypatch):
    one_run = run_load.run_memory(LiveRun(task, specs_of(task)))
    monkeypatch.setattr(run_slots, "capacity", lambda: Capacity(max_trainers=100, memory_bytes=2 * one_run))
    registry, line, store = RunRegistry(), RunLine(), MemoryStore()
    a, b, c = (session(registry, line, store, f"tab-{n}", f"browser-{n}", ThisThread()) for n in "abc")
    for held in (a, b):
        held.start(task, specs_of(task, 400), "s")
        held.train_slice(0.05)
        held.pause()
    c.start(task, specs_of(task, 400), "s")
    assert c.waiting  # the two paused runs hold the server's training memory
    a.stop()
    assert c.poll_line() is None and c.run.status == "running"


def test_a_closed_tabs_paused_run_is_parked_gives_its_trainer_back_and_resumes_from_the_store(task):
    now = [0.0]
    gone: set[str] = set()
    store = MemoryStore()
    registry = RunRegistry(clock=lambda: now[0], sleep=lambda s: None, release_s=60, store=lambda: store,
                           alive=lambda owner: owner not in gone)
    line, place = RunLine(), InWorker()
    tab = session(registry, line, store, "tab", "browser", place)
    tab.start(task, specs_of(task, 400), "s")
    train_some(tab)
    tab.pause()
    pid, step, token = tab.run.trainer_pid, tab.run.step, tab.token
    curve = losses(tab.run)
    registry.settle()
    assert registry.parked_count() == 0 and tab.run.holds_trainer  # its tab is open: nothing happens
    gone.add("tab")  # the tab closes
    registry.settle()
    assert registry.parked_count() == 1 and tab.run.holds_trainer  # parked; its trainer waits a while
    now[0] += 59
    registry.settle()
    assert tab.run.holds_trainer
    now[0] += 2
    registry.settle()
    assert not tab.run.holds_trainer and exited(pid) and len(store._parked) == 1
    assert held_by("browser:browser", line=line) == 0  # it no longer counts against the quota
    reloaded = session(registry, line, store, "tab-reloaded", "browser", place)
    assert reloaded.take_back(token, "s") and reloaded.run.step == step and losses(reloaded.run) == curve
    reloaded.resume()
    train_some(reloaded)
    assert reloaded.run.holds_trainer and reloaded.run.trainer_pid != pid and not store._parked
    assert [r["step"] for r in reloaded.run.trainers[0].history] == list(range(1, reloaded.run.step + 1))
    reloaded.stop()


def test_a_parked_run_past_its_parking_time_is_released_and_its_stored_state_dropped(task):
    now = [0.0]
    store = MemoryStore()
    registry = RunRegistry(clock=lambda: now[0], sleep=lambda s: None, release_s=10, park_ttl_s=100,
                           store=lambda: store, alive=lambda owner: False)
    tab = session(registry, RunLine(), store, "tab", "browser", InWorker())
    tab.start(task, specs_of(task, 400), "s")
    train_some(tab)
    tab.pause()
    registry.settle()
    now[0] += 11
    registry.settle()
    assert not tab.run.holds_trainer and len(store._parked) == 1
    now[0] += 100
    registry.settle()
    assert len(registry) == 0 and tab.run.status == "stopped" and not store._parked


def test_the_host_limits_set_the_caps():
    from explorer.host import GIB, NORMAL_LIMITS, SMALL_LIMITS, HostProfile, limits_for

    cloud = limits_for(HostProfile(cores=2, memory_bytes=int(2.7 * GIB), small=True))
    assert cloud.max_trainers == SMALL_LIMITS.max_trainers >= cloud.max_live_runs
    assert cloud.training_memory_bytes == int(0.4 * 2.7 * GIB)
    tiny = limits_for(HostProfile(cores=1, memory_bytes=GIB // 4, small=True))
    assert tiny.training_memory_bytes == 2 * tiny.memory_budget_bytes  # never less than two runs' budget
    laptop = limits_for(replace(HostProfile(cores=4, memory_bytes=16 * GIB, small=False)))
    assert laptop.max_trainers == NORMAL_LIMITS.max_trainers and laptop.training_memory_bytes > 6 * GIB


@pytest.mark.slow
def test_the_trainer_release_delay_comes_from_the_environment():
    import subprocess
    import sys

    code = "from explorer.runs.registry import RELEASE_S, RunRegistry; print(RELEASE_S, RunRegistry().release_s)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "TE_TRAINER_RELEASE_S": "2.5"}).stdout.split()
    assert out == ["2.5", "2.5"]
    default = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={k: v for k, v in os.environ.items() if k != "TE_TRAINER_RELEASE_S"}).stdout
    assert float(default.split()[0]) * 1.25 + 5 < 120  # a closed tab's trainer is gone within two minutes
