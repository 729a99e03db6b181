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
    token = reg.register(run, "tab-1", browser="browser-1")
    assert reg.owns(token, "tab-1") and not reg.owns(token, "tab-2")
    step = reg.park(token, "tab-1")
    assert run.status == "paused" and step == run.step > 0 and run.training_state_bytes > 0
    claim = reg.claim(token, "tab-1-reloaded", "browser-1")
    assert claim is not None and claim.run is run and claim.moved and claim.parked
    assert reg.owns(token, "tab-1-reloaded") and not reg.owns(token, "tab-1")
    assert reg.parked_count() == 0


def test_resuming_a_claimed_run_continues_exactly_where_it_stopped(clock):
    reg, run, reference = registry(clock), tiny_run(30), tiny_run(30)
    for r in (run, reference):
        r.start()
    while run.step < 12:
        run.advance(0.01)
    token = reg.register(run, "a", browser="the-browser")
    reg.park(token, "a")
    claimed = reg.claim(token, "b", "the-browser").run
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
    token = reg.register(run, "old-tab", browser="the-browser")
    claim = reg.claim(token, "new-tab", "the-browser")  # the old tab never parks it: wait CLAIM_WAIT_S, then take over
    assert claim is not None and claim.moved and not claim.parked
    assert clock.now >= 3.0 and run.status == "paused"
    assert not reg.owns(token, "old-tab")  # the old tab's loop sees this and stops


def test_a_takeover_never_lands_inside_a_training_step():
    reg, run = RunRegistry(), tiny_run(steps=10_000)
    run.start()
    token = reg.register(run, "old", browser="the-browser")
    trainer = threading.Thread(target=lambda: [run.advance(0.05) for _ in range(200) if run.status == "running"])
    trainer.start()
    claim = reg.claim(token, "new", "the-browser")
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


def test_stale_entries_without_training_state_are_forgotten_but_not_released(clock):
    reg, run = registry(clock, stale_s=100), tiny_run()
    reg.register(run, "a")  # a run that never trained holds nothing worth keeping
    clock.now += 101
    reg.sweep()
    assert len(reg) == 0 and run.status == "ready"  # its session may still show it


def test_a_stale_entry_that_holds_training_state_is_parked_and_released_with_its_run(clock):
    reg, run = registry(clock, stale_s=100, park_ttl_s=50), tiny_run()
    run.start()
    run.advance(0.02)
    run.pause()
    reg.register(run, "a")
    clock.now += 101
    reg.sweep()
    assert len(reg) == 1 and reg.parked_count() == 1 and run.training_state_bytes > 0  # parked, not forgotten
    clock.now += 51
    reg.sweep()
    assert len(reg) == 0 and run.training_state_bytes == 0 and run.status == "stopped"  # gone with its run


def test_too_many_parked_runs_the_newest_client_gives_way(clock):
    reg = registry(clock, max_parked=2)
    runs = [tiny_run() for _ in range(3)]
    for i, run in enumerate(runs):
        run.start()
        run.advance(0.01)
        token = reg.register(run, f"tab{i}")
        clock.now += 1
        reg.park(token, f"tab{i}")
    assert runs[2].training_state_bytes == 0 and all(r.training_state_bytes > 0 for r in runs[:2])
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


def test_a_token_opened_in_another_browser_finds_nothing_and_the_owner_trains_on(clock):
    reg, run = registry(clock), tiny_run(400)
    run.start()
    token = reg.register(run, "teacher-tab", browser="teacher-browser")
    assert reg.claim(token, "student-tab", "student-browser") is None  # the address read off the projector
    assert reg.claim(token, "student-tab") is None  # a browser without an id is no owner either
    assert run.status == "running" and reg.owns(token, "teacher-tab") and clock.now == 0.0  # not even waited for
    reg.park(token, "teacher-tab")
    assert reg.claim(token, "student-tab", "student-browser") is None and run.status == "paused"
    claim = reg.claim(token, "teacher-reloaded", "teacher-browser")  # the teacher's own reload takes it back
    assert claim is not None and claim.run is run and claim.parked


def test_a_browser_without_a_token_finds_its_latest_parked_run(clock):
    reg = registry(clock)
    tokens = []
    for i in range(2):
        run = tiny_run()
        run.start()
        tokens.append(reg.register(run, f"tab{i}", browser="projector"))
        clock.now += 1
        reg.park(tokens[-1], f"tab{i}")
    assert reg.latest_parked("projector") == tokens[1]
    assert reg.latest_parked("another-browser") is None and reg.latest_parked(None) is None


def test_one_clients_parked_runs_never_push_out_anyone_elses(clock):
    reg = registry(clock, max_parked=12, max_parked_per_client=3)
    other = tiny_run()
    other.start()
    other.advance(0.01)
    reg.park(reg.register(other, "someone", browser="someone-else"), "someone")  # parked first: the oldest
    mine = []
    for i in range(12):  # one visitor's twelve tabs all close
        run = tiny_run()
        run.start()
        run.advance(0.01)
        clock.now += 1
        reg.park(reg.register(run, f"tab{i}", browser="greedy"), f"tab{i}")
        mine.append(run)
    assert other.training_state_bytes > 0 and other.status == "paused"
    assert [r.training_state_bytes > 0 for r in mine] == [False] * 9 + [True] * 3  # its own oldest went
    assert reg.parked_count() == 4


def test_when_the_server_is_full_the_biggest_holder_gives_way(clock):
    reg = registry(clock, max_parked=3, max_parked_per_client=2)
    runs = {}
    for name in ("a1", "b1", "a2", "c1"):
        run = tiny_run()
        run.start()
        run.advance(0.01)
        clock.now += 1
        reg.park(reg.register(run, name, browser=name[0]), name)
        runs[name] = run
    assert runs["a1"].training_state_bytes == 0  # client a held two of four: its oldest goes, not b's older one
    assert all(runs[n].training_state_bytes > 0 for n in ("b1", "a2", "c1"))


def test_no_registry_lock_is_held_while_a_dropped_run_is_released(clock):
    """Releasing a run tells its trainer to stop and waits for it to exit; every training page's loop asks the
    registry whether it still shows its run, so none of them may wait for that behind the registry's lock."""
    reg = registry(clock, max_parked_per_client=1)
    runs = [tiny_run(), tiny_run()]
    held_while_released: list[bool] = []
    for run in runs:
        real_release = run.release

        def release(reason: str, real_release=real_release) -> None:
            free = reg._lock.acquire(blocking=False)  # noqa: SLF001 - the lock every other session waits on
            if free:
                reg._lock.release()  # noqa: SLF001
            held_while_released.append(not free)
            real_release(reason)

        run.release = release
    tokens = [reg.register(run, f"tab-{i}", browser="browser-1") for i, run in enumerate(runs)]
    reg.park(tokens[0], "tab-0")
    clock.now += 1.0
    reg.park(tokens[1], "tab-1")  # the browser's second parked run: its first is dropped and released
    assert held_while_released == [False]
    assert runs[0].status == "stopped" and reg.claim(tokens[0], "tab-0", "browser-1") is None
