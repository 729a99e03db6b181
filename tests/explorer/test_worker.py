"""Runs trained in trainer processes (explorer.runs.worker): the same run as on a thread, pauses that bring the
weights back, a killed trainer lost with a message, priorities, and the messages between server and trainer."""

from __future__ import annotations

import dataclasses
import os
import time

import pytest
import torch

from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.place import ThisThread, default_place
from explorer.runs.wire import describe_run, pack, portable_text, rebuild_run, unpack
from explorer.runs.worker import OWN_NICE, SHARED_NICE, InWorker, WorkerRun
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config


def _specs(steps: int = 40, lanes: int = 1) -> tuple:
    task = get_task("reverse", seq_len=6)
    train = default_train_config(task, steps=steps, eval_every=10, snapshot_every=10, seed=3)
    return task, [RunSpec("AB"[i], task.default_model_config(), train) for i in range(lanes)]


def _train_until(run: LiveRun, step: int, limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while run.status == "running" and run.step < step and time.monotonic() < deadline:
        run.advance(0.1)


@pytest.fixture
def worker_run():
    runs: list[WorkerRun] = []

    def make(*args, **kwargs) -> WorkerRun:
        runs.append(WorkerRun(*args, **kwargs))
        return runs[-1]

    yield make
    for run in runs:
        run.release("test over")


def _trained_here(task, specs) -> LiveRun:
    """The same run trained on this thread, as the thread place trains it (with its torch thread count)."""
    run = ThisThread().new_run(task, specs)
    run.start()
    while run.status == "running":
        run.advance(1.0)
    return run


@pytest.mark.slow
def test_a_trainer_process_trains_the_run_a_thread_would(worker_run):
    """Bit for bit: both places train with LIVE_THREADS torch threads (the count decides the order of a matrix
    product's sums: 1 against 2 threads differ by about 3e-5 in the loss here)."""
    task, specs = _specs(steps=30, lanes=2)
    run = worker_run(task, specs)
    run.start()
    assert run.trainer_pid is None  # the click does not wait for a trainer: the page loop's first slice starts it
    run.advance(0.1)
    pid = run.trainer_pid
    assert pid is not None and pid != os.getpid()
    _train_until(run, 30)
    assert run.status == "done" and run.step == 30
    torch.set_num_threads(2)  # whatever this thread's own setting, the thread place trains with LIVE_THREADS
    try:
        same = _trained_here(task, specs)
    finally:
        torch.set_num_threads(1)
    for mine, theirs in zip(run.trainers, same.trainers, strict=True):
        assert [r["loss"] for r in mine.history] == [r["loss"] for r in theirs.history]
        assert [s.step for s in mine.snapshots] == [s.step for s in theirs.snapshots]
        for a, b in zip(mine.model.parameters(), theirs.model.parameters(), strict=True):
            assert torch.equal(a, b)  # the weights came back with the end
    assert run.trainer_pid is None and run.training_state_bytes == 0  # the trainer ended with the run


def test_a_run_that_ends_lets_its_trainer_go_whoever_reads_its_last_news(worker_run):
    """Not only the page's loop: here the news of the end comes with a pause's answer, and nobody calls
    release; the trainer process still ends with the run."""
    task, specs = _specs(steps=12)
    run = worker_run(task, specs)
    run.start()
    run.advance(0.05)
    process = run._link.process
    deadline = time.monotonic() + 60
    while run._link is not None and run._link.answered == 0 and time.monotonic() < deadline:
        run.advance(0.05)
    for wait_s in (1.0, 2.0, 4.0, 8.0):  # a busy machine may take longer than a second for the twelve steps
        time.sleep(wait_s)  # the trainer trains meanwhile: its news of the end waits in the pipe
        run.pause()  # reads the pipe until the pause is answered: the end's news is applied on the way
        if run.status == "done":
            break
        run.resume()  # paused before its end: let it train on, and ask again
    assert run.status == "done" and run.step == 12
    assert run.trainer_pid is None and run.training_state_bytes == 0
    process.join(timeout=10)
    assert not process.is_alive()


@pytest.mark.slow
def test_a_finished_runs_recording_holds_the_trainers_step_models(worker_run):
    """A replay of a run trained in a trainer process rests on the model of its step, as for one trained here."""
    from explorer.runs.recording import ReplayRun, record

    task, specs = _specs(steps=30)
    run = worker_run(task, specs)
    run.start()
    _train_until(run, 30)
    assert run.status == "done"
    here = _trained_here(task, specs)
    recording, expected = record(run), record(here)
    steps = [s for s, _ in expected.models[0]]
    assert steps == [0, 10, 20, 30] and [s for s, _ in recording.models[0]] == steps
    assert [s for s, _ in run.trainers[0].weights] == steps
    for (_, mine), (_, theirs) in zip(run.trainers[0].weights, here.trainers[0].weights, strict=True):
        assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    # How many points the recorded pace has depends on the machine (a fast one trains all 30 steps in one slice):
    # replay the recorded models at a pace that passes step 15, between two of them.
    paced = dataclasses.replace(recording, timeline=[(0.0, 0), (1.0, 15), (2.0, 30)])
    replay = ReplayRun(task, run.specs, paced)
    replay.start()
    replay._move_to(1.0)
    replay.pause()
    model, step = replay.model_at(0)
    assert step == 10  # the latest recorded model not after step 15
    kept = dict(here.trainers[0].weights)[step]
    for name, value in model.state_dict().items():
        assert torch.equal(value, kept[name]), name


def test_pause_lands_promptly_and_brings_the_weights_back(worker_run):
    task, specs = _specs(steps=100_000)
    run = worker_run(task, specs, nice=SHARED_NICE)  # a visitor's own run (+15) may wait long on a busy machine
    untrained = [p.detach().clone() for p in run.trainers[0].model.parameters()]
    run.start()
    _train_until(run, 5)
    began = time.monotonic()
    run.pause()
    # A pause lands after the step in progress (0.1-0.3 s on an idle machine, weights included; 3 s seen beside a
    # parallel test run): the bound leaves room for load and still fails a pause that waits for the run's end.
    assert time.monotonic() - began < 15.0
    assert run.status == "paused"
    step = run.step
    assert run.trainers[0].snapshots[-1].step == step  # the heatmaps show the step it stopped at
    time.sleep(0.3)
    run.advance(0.1)
    assert run.step == step  # a paused trainer trains nothing
    assert any(not torch.equal(a, b) for a, b in zip(untrained, run.trainers[0].model.parameters(), strict=True))
    assert run.step_once() == 1 and run.step == step + 1 and run.status == "paused"
    assert run.trainers[0].snapshots[-1].step == step + 1  # and each step taken once
    run.start()
    _train_until(run, step + 3)
    assert run.step > step + 1  # resumed where it stopped


def test_samples_are_written_by_the_trainer_after_each_evaluation(worker_run):
    task, specs = _specs(steps=30)
    run = worker_run(task, specs)
    run.start()
    run.update_samples({}, "", 4, 7)  # asked once: the trainer writes them now and after every evaluation
    _train_until(run, 30)
    assert run.status == "done"
    steps = [s.step for s in run.samples[0]]  # one set per evaluation (every 10 steps), written right after it
    assert len(steps) == 4 and steps[-1] == 30 and len(run.samples[0][0].items) == 4, steps
    assert all(10 * k <= step < 10 * k + 10 for k, step in enumerate(steps)), steps


def test_a_training_runs_current_weights_come_on_demand(worker_run):
    task, specs = _specs(steps=100_000)
    run = worker_run(task, specs)
    untrained = [p.detach().clone() for p in run.trainers[0].model.parameters()]
    run.start()
    _train_until(run, 5)
    run.current_weights()
    assert run.status == "running"
    assert any(not torch.equal(a, b) for a, b in zip(untrained, run.trainers[0].model.parameters(), strict=True))


def test_a_killed_trainer_loses_its_run_with_a_message(worker_run):
    task, specs = _specs(steps=100_000)
    run = worker_run(task, specs)
    run.start()
    _train_until(run, 3)
    os.kill(run.trainer_pid, 9)
    _train_until(run, 10**6, limit_s=5.0)
    assert run.status == "stopped" and run.finished
    assert "trainer process ended unexpectedly" in run.message
    assert run.trainer_pid is None and run.training_state_bytes == 0
    again = worker_run(task, specs)  # the server goes on: a new run trains
    again.start()
    _train_until(again, 2)
    assert again.step >= 2


def _training_thread_nice(run: WorkerRun) -> list[int]:
    """The niceness, relative to this process, of the trainer's threads other than its main thread."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    tids = [int(t) for t in os.listdir(f"/proc/{run.trainer_pid}/task") if int(t) != run.trainer_pid]
    return [os.getpriority(os.PRIO_PROCESS, tid) - base for tid in tids]


def test_shared_runs_come_before_visitors_own(worker_run):
    """A visitor's own run trains nicer than the server; a shared run (or a lesson) and an own run that becomes
    shared while it trains as nice as the server: it moves to a new thread, since a priority once lowered cannot
    be raised without privileges."""
    task, specs = _specs(steps=100_000)
    own = worker_run(task, specs)
    own.start()
    own.advance(0.1)
    own.pause()  # answered: the trainer has set its priority
    shared = InWorker().new_run(task, specs, shared=True)
    try:
        shared.start()
        shared.advance(0.1)
        shared.pause()
        assert (own.trainer_nice, shared.trainer_nice) == (OWN_NICE, SHARED_NICE)
        assert _training_thread_nice(own) == [OWN_NICE] and _training_thread_nice(shared) == [SHARED_NICE]
        assert os.getpriority(os.PRIO_PROCESS, own.trainer_pid) == os.getpriority(os.PRIO_PROCESS, 0)
        own.start()
        own.advance(0.1)
        InWorker().prioritize(own)  # the visitor shares a run that trains
        step = own.step
        _train_until(own, step + 3)
        own.pause()
        assert own.trainer_nice == SHARED_NICE and _training_thread_nice(own) == [SHARED_NICE]
        assert own.step >= step + 3 and own.status == "paused"  # the run went on where it was, on its new thread
    finally:
        shared.release("test over")


def test_a_trainer_never_raises_a_priority_itself(monkeypatch):
    """Without privileges a thread can only become nicer: lower_thread never asks for more."""
    from explorer.runs import trainer_process

    asked: list[int] = []
    monkeypatch.setattr(trainer_process.os, "setpriority", lambda which, who, value: asked.append(value))
    now = trainer_process.thread_nice()
    assert trainer_process.lower_thread(now - 1) == now and asked == []
    trainer_process.lower_thread(now + 2)
    assert asked == [now + 2]


def test_the_place_comes_from_te_trainer(monkeypatch):
    from explorer.runs import trainer_link

    monkeypatch.setattr(trainer_link, "_UNAVAILABLE", [])
    monkeypatch.setenv("TE_TRAINER", "process")
    assert isinstance(default_place(), InWorker)
    monkeypatch.delenv("TE_TRAINER")
    assert isinstance(default_place(), InWorker)  # trainer processes are the default
    monkeypatch.setenv("TE_TRAINER", "thread")
    assert isinstance(default_place(), ThisThread)
    monkeypatch.setenv("TE_TRAINER", "gpu")
    with pytest.raises(ValueError, match="TE_TRAINER"):
        default_place()


def test_where_no_trainer_process_can_start_runs_train_here(monkeypatch, caplog):
    """The first run trains on the calling thread, with the reason logged, and the next runs train here from
    the start; a run that a trainer already held is lost instead (its optimiser state was in the trainer)."""
    from explorer.runs import trainer_link

    monkeypatch.setattr(trainer_link, "_UNAVAILABLE", [])
    monkeypatch.setenv("TE_TRAINER", "process")

    def refuse() -> trainer_link.TrainerLink:
        raise OSError("no processes in this sandbox")

    task, specs = _specs(steps=20)
    run = WorkerRun(task, specs, connect=refuse, fall_back=True)
    run.start()
    _train_until(run, 20)
    assert run.status == "done" and run.step == 20 and "no processes in this sandbox" in run.here
    assert run.message is None and run.trainer_pid is None
    assert "runs train on the web server's threads" in caplog.text
    assert [r["loss"] for r in run.trainers[0].history] == \
        [r["loss"] for r in _trained_here(task, specs).trainers[0].history]
    place = default_place()
    assert isinstance(place, ThisThread)
    strict = WorkerRun(task, specs, connect=refuse)  # a remote trainer's run: no fallback, a message
    strict.start()
    strict.advance(0.1)
    assert strict.status == "stopped" and "no trainer process could start" in strict.message


def test_a_trainer_never_runs_the_servers_main_script(worker_run, monkeypatch, tmp_path):
    """Under Streamlit ``__main__`` is the page being run: a trainer must not run it again before training."""
    import sys
    import types

    marker = tmp_path / "ran"
    script = tmp_path / "page.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    page = types.ModuleType("__main__")
    page.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", page)
    task, specs = _specs(steps=3)
    run = worker_run(task, specs)
    run.start()
    _train_until(run, 3)
    assert run.status == "done" and not marker.exists()


def test_messages_carry_json_and_bytes_and_rebuild_the_run():
    header, parts = unpack(pack({"op": "create", "n": 1}, [b"abc", b""]))
    assert header == {"op": "create", "n": 1} and parts == [b"abc", b""]
    with pytest.raises(ValueError):
        unpack(b"\x00\x00\x00\xffxx")
    task, specs = _specs()
    rebuilt_task, rebuilt = rebuild_run(describe_run(task, specs, None))
    assert rebuilt_task.options() == task.options() and rebuilt == specs


def test_a_users_own_text_travels_as_text():
    task = get_task("char_lm", text="the cat sat on the mat. " * 40)
    text = portable_text(task)
    rebuilt, _ = rebuild_run(describe_run(task, [], text))
    assert (rebuilt.train_text, rebuilt.val_text) == (task.train_text, task.val_text)
    assert portable_text(get_task("reverse")) is None


def test_the_process_trees_memory_counts_the_trainers(worker_run, tmp_path):
    from explorer.process_tree import pss_bytes, tree, tree_pss_bytes

    task, specs = _specs(steps=100_000)
    run = worker_run(task, specs)
    run.start()
    run.advance(0.1)
    run.pause()
    members = tree(os.getpid())
    assert run.trainer_pid in members  # through the fork server
    assert tree_pss_bytes(os.getpid()) >= pss_bytes(os.getpid()) + pss_bytes(run.trainer_pid) > pss_bytes(os.getpid())
    fake = tmp_path / "7"
    fake.mkdir()
    (fake / "stat").write_text("7 (a (b) c) S 1 7")
    (fake / "smaps_rollup").write_text("Rss: 10 kB\nPss: 4 kB\n")
    assert tree_pss_bytes(7, tmp_path) == 4096 and tree(1, tmp_path) == [1, 7]


def test_the_guard_counts_a_runs_trainer_process():
    from explorer.guard import check_budget
    from explorer.host import HostProfile, limits_for

    host = HostProfile(cores=2, memory_bytes=2**30, small=True)
    task, specs = _specs()
    spec = specs[0]
    alone = check_budget(task, spec.model_config, spec.train_config, host=host)
    counted = check_budget(task, spec.model_config, spec.train_config, host=host,
                           process_bytes=InWorker().overhead_bytes)
    assert counted.memory_bytes == alone.memory_bytes + InWorker().overhead_bytes and ThisThread.overhead_bytes == 0
    over = limits_for(host).memory_budget_bytes - alone.memory_bytes + 1
    refused = check_budget(task, spec.model_config, spec.train_config, host=host, process_bytes=over)
    assert alone.ok and not refused.ok and "memory" in refused.reason


def test_news_older_than_a_start_does_not_undo_it(worker_run):
    task, specs = _specs(steps=100_000)
    run = worker_run(task, specs)
    run.start()
    run.advance(0.0)  # the trainer starts; its answer to "create" (a run still ready) may come first
    for _ in range(20):
        assert run.status == "running"
        run.advance(0.02)


def test_trainers_start_with_pytorchs_first_use_modules_imported():
    """The fork server imports what PyTorch imports on a first optimiser step, so that no trainer spends ~2 s of
    CPU on it (benchmarks/first_use.py)."""
    from multiprocessing import forkserver

    from explorer.heap import LAZY_MODULES
    from explorer.runs.trainer_link import context

    context()
    preload = forkserver._forkserver._preload_modules  # what set_forkserver_preload keeps
    assert "explorer.runs.trainer_process" in preload and set(LAZY_MODULES) <= set(preload)
