"""The run registry: a page whose connection ended parks its run; a reload claims it back; memory stays bounded."""

from __future__ import annotations

import threading
import time

import pytest

from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.registry import RunRegistry
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture()
def clock() -> FakeClock:
    return FakeClock()


def tiny_run(steps: int = 40) -> LiveRun:
    task = get_task("reverse", seq_len=4, eval_size=16)
    config = task.default_model_config()
    return LiveRun(task, [RunSpec("A", config, default_train_config(task, steps=steps, seed=3))], threads=1)


def registry(clock: FakeClock, **kw) -> RunRegistry:
    return RunRegistry(clock=clock, sleep=clock.sleep, **kw)


def test_a_parked_run_is_paused_kept_whole_and_claimed_back_by_a_reload(clock):
    reg, run = registry(clock), tiny_run()
    run.start()
    run.advance(0.05)
    token = reg.register(run, "tab-1")
    assert reg.owns(token, "tab-1") and not reg.owns(token, "tab-2")
    step = reg.park(token, "tab-1")
    assert run.status == "paused" and step == run.step > 0 and run.training_state_bytes > 0
    claim = reg.claim(token, "tab-1-reloaded")
    assert claim is not None and claim.run is run and claim.moved and claim.parked
    assert reg.owns(token, "tab-1-reloaded") and not reg.owns(token, "tab-1")
    assert reg.parked_count() == 0


def test_resuming_a_claimed_run_continues_exactly_where_it_stopped(clock):
    reg, run, reference = registry(clock), tiny_run(30), tiny_run(30)
    for r in (run, reference):
        r.start()
    while run.step < 12:
        run.advance(0.01)
    token = reg.register(run, "a")
    reg.park(token, "a")
    claimed = reg.claim(token, "b").run
    claimed.resume()
    while claimed.status == "running":
        claimed.advance(1.0)
    while reference.status == "running":
        reference.advance(1.0)
    losses = [h["loss"] for h in claimed.trainers[0].history]
    assert losses == pytest.approx([h["loss"] for h in reference.trainers[0].history], rel=1e-5)


def test_unknown_tokens_and_the_owner_itself(clock):
    reg, run = registry(clock), tiny_run()
    token = reg.register(run, "a")
    assert reg.claim("no-such-token", "a") is None
    same = reg.claim(token, "a")
    assert same is not None and not same.moved and not same.parked
    assert len(token) >= 20 and reg.register(tiny_run(), "a") != token  # long, random tokens


def test_a_run_still_shown_elsewhere_is_waited_for_then_taken_over_and_paused(clock):
    reg, run = registry(clock), tiny_run()
    run.start()
    token = reg.register(run, "old-tab")
    claim = reg.claim(token, "new-tab")  # the old tab never parks it: wait CLAIM_WAIT_S, then take over
    assert claim is not None and claim.moved and not claim.parked
    assert clock.now >= 3.0 and run.status == "paused"
    assert not reg.owns(token, "old-tab")  # the old tab's loop sees this and stops


def test_a_takeover_never_lands_inside_a_training_step():
    reg, run = RunRegistry(), tiny_run(steps=10_000)
    run.start()
    token = reg.register(run, "old")
    trainer = threading.Thread(target=lambda: [run.advance(0.05) for _ in range(200) if run.status == "running"])
    trainer.start()
    claim = reg.claim(token, "new")
    trainer.join(timeout=30)
    assert claim is not None and run.status == "paused" and not trainer.is_alive()
    history = run.trainers[0].history
    assert len(history) == run.trainers[0].step  # every step finished and recorded, none half done


def test_parked_runs_nobody_claims_are_released_after_the_wait(clock):
    reg, run = registry(clock, park_ttl_s=60), tiny_run()
    run.start()
    run.advance(0.02)
    token = reg.register(run, "a")
    reg.park(token, "a")
    clock.now += 59
    reg.sweep()
    assert run.training_state_bytes > 0 and reg.parked_count() == 1
    clock.now += 2
    reg.sweep()
    assert run.training_state_bytes == 0 and run.status == "stopped" and len(reg) == 0
    assert reg.claim(token, "a") is None


def test_stale_entries_are_forgotten_but_not_released(clock):
    reg, run = registry(clock, stale_s=100), tiny_run()
    run.start()
    run.advance(0.02)
    run.pause()
    reg.register(run, "a")
    clock.now += 101
    reg.sweep()
    assert len(reg) == 0 and run.training_state_bytes > 0  # its session may still show it


def test_too_many_parked_runs_release_the_oldest_first(clock):
    reg = registry(clock, max_parked=2)
    runs = [tiny_run() for _ in range(3)]
    for i, run in enumerate(runs):
        run.start()
        run.advance(0.01)
        token = reg.register(run, f"tab{i}")
        clock.now += 1
        reg.park(token, f"tab{i}")
    assert runs[0].training_state_bytes == 0 and all(r.training_state_bytes > 0 for r in runs[1:])
    assert reg.parked_count() == 2


def test_a_parked_run_is_released_in_the_background_when_nobody_visits():
    reg, run = RunRegistry(park_ttl_s=0.5), tiny_run()
    run.start()
    run.advance(0.02)
    reg.park(reg.register(run, "a"), "a")
    deadline = time.monotonic() + 10
    while run.training_state_bytes and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run.training_state_bytes == 0 and len(reg) == 0
