"""Live Training with its runs in trainer processes (``TE_TRAINER=process``, the served app's default): Start, Pause,
Step once, Resume and Stop drive a run that trains in a process of its own, and the page shows what comes back.

The other page tests train on the script thread (``tests/app/conftest.py``); this module overrides that. AppTest
runs a script to its end, so a click cannot land while the live loop trains: Pause is pressed the way Streamlit
delivers a click to that loop, as a click pending between two slices whose callback pauses the session's run.
"""

from __future__ import annotations

import os
import time

import pytest
import torch
from streamlit.testing.v1 import AppTest

from explorer.runs.worker import WorkerRun
from tests.app.conftest import app_at, assert_no_exception
from ui.common import st_internals, state
from ui.training import controls as tc
from ui.training import run as tr

PAGE = "pages/training.py"
TINY = {"task": "reverse", "d_model": "16", "heads": "2", "layers": "1", "d_ff": "32", "batch": "8", "steps": "10"}
LONG = {**TINY, "steps": "1000"}  # long enough that only Pause ends it within the test
# Seconds one script run may take: a visitor's own run trains at niceness +15, so on a busy machine its trainer gets
# a small share of the cores (the page's loop waits for it).
TIMEOUT_S = 300


@pytest.fixture
def live_at(monkeypatch):
    """``live_at(query, trainer="process")``: the page opened from a link, its runs trained in trainer processes
    (or on the script thread with ``trainer="thread"``); every run left is released at the end."""
    from explorer.runs.trainer_link import unavailable

    if (why := unavailable()) is not None:
        pytest.skip(f"no trainer process can start here: {why}")
    opened: list[AppTest] = []

    def open_page(query: dict[str, str], trainer: str = "process") -> AppTest:
        monkeypatch.setenv("TE_TRAINER", trainer)  # read when the session's run is made
        opened.append(app_at(PAGE, TIMEOUT_S, query=query))
        assert_no_exception(opened[-1])
        return opened[-1]

    yield open_page
    for at in opened:
        if (run := run_of(at)) is not None:
            run.release("test over")


def run_of(at: AppTest):
    return at.session_state[tc.SESSION].run


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def weights(run) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in run.trainers[0].model.state_dict().items()}


def test_start_trains_to_the_end_in_a_trainer_process_as_on_the_script_thread(live_at):
    at = live_at(TINY)
    run = run_of(at)
    assert isinstance(run, WorkerRun) and run.trainer_pid is None  # no trainer until the run first trains
    at.button(key="live.start").click().run()
    assert_no_exception(at)
    assert metric(at, "Step") == "10 / 10" and run_of(at).status == "done"
    trained = at.session_state[state.TRAINED]["seq2seq"]
    assert trained.step == 10 and trained.model is not None
    here = live_at(TINY, trainer="thread")
    assert not isinstance(run_of(here), WorkerRun)
    here.button(key="live.start").click().run()
    assert [r["loss"] for r in run_of(at).trainers[0].history] == [r["loss"] for r in run_of(here).trainers[0].history]
    theirs, ours = weights(run_of(at)), weights(run_of(here))
    assert all(torch.equal(theirs[k], ours[k]) for k in ours)  # the trained weights came back, bit for bit


def test_step_once_trains_one_step_in_a_trainer_that_the_paused_run_keeps(live_at):
    at = live_at(TINY)
    initial = weights(run_of(at))
    at.button(key="live.step").click().run()
    assert_no_exception(at)
    run = run_of(at)
    assert metric(at, "Step") == "1 / 10" and run.status == "paused"
    assert run.trainer_pid not in (None, os.getpid()) and alive(run.trainer_pid)
    stepped = weights(run)
    assert any(not torch.equal(initial[k], stepped[k]) for k in initial)  # the step's weights came back
    here = live_at(TINY, trainer="thread")
    here.button(key="live.step").click().run()
    ours = weights(run_of(here))
    assert all(torch.equal(stepped[k], ours[k]) for k in ours)
    at.button(key="live.resume").click().run()
    assert_no_exception(at)
    assert metric(at, "Step") == "10 / 10" and run_of(at).status == "done"


def test_pause_step_and_stop_a_run_training_in_its_trainer(live_at, monkeypatch):
    at = live_at(LONG)

    def click_pause_once_it_trains() -> bool:
        """A click on Pause arrives while the loop trains: its callback runs, the loop ends at its next slice."""
        run = run_of(at)
        if run.status == "running" and run.step >= 3:
            tr.session().pause()
            return True
        return False

    with monkeypatch.context() as patched:
        patched.setattr(st_internals, "click_pending", click_pause_once_it_trains)
        at.button(key="live.start").click().run()
    assert_no_exception(at)
    run = run_of(at)
    paused_at = run.step
    assert run.status == "paused" and 3 <= paused_at < 1000, paused_at
    assert metric(at, "Step").startswith(f"{paused_at:,} / ")
    assert run.training_state_bytes > 0 and alive(run.trainer_pid)  # the paused run keeps its trainer
    assert at.session_state[state.TRAINED]["seq2seq"].step == paused_at  # the paused model is handed over
    at.button(key="live.step").click().run()
    assert run_of(at) is run and run.step == paused_at + 1 and run.status == "paused"
    pid, kept = run.trainer_pid, weights(run)
    at.button(key="live.stop").click().run()
    assert_no_exception(at)
    assert run.status == "stopped" and at.button(key="live.stop").disabled
    assert run.trainer_pid is None and run.training_state_bytes == 0
    after = weights(run)
    assert all(torch.equal(kept[k], after[k]) for k in kept)  # the model of its last pause stays
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:  # the trainer quits once it has answered
        time.sleep(0.1)
    assert not alive(pid), "the stopped run's trainer process is still there"
