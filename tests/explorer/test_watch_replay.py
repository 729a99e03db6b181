"""Watching and replaying show exactly what training showed: the watcher's and the replay's frames against the
owner's own, step by step, on real (tiny) runs; through one in-memory store, and between two servers' stores on
one real Redis (every value through the codec)."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest

from explorer.runs.frame import RunFrame
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.recording import ReplayRun, find_replay, keep, record, recording_key
from explorer.runs.store import DamagedValue, MemoryStore, RunStore
from explorer.runs.threads import torch_threads
from explorer.runs.watch import Publisher, WatchedRun, new_watcher_id
from transformer_core.config import TransformerConfig
from transformer_core.tasks import get_task
from transformer_core.training import EVAL_SEED, TrainConfig

TINY = TransformerConfig(vocab_size=13, max_len=5, d_model=16, n_heads=2, n_layers=1, d_ff=32, pad_id=0)
TRAIN = TrainConfig(steps=24, batch_size=8, lr=3e-3, eval_every=4, snapshot_every=1, seed=3, max_snapshots=8)


@pytest.fixture(params=["memory", "redis"])
def stores(request) -> tuple[RunStore, RunStore]:
    """The owner's and a watcher's store: one in memory, or two servers' stores on one real Redis (skipped where
    no redis-server can start)."""
    if request.param == "memory":
        store = MemoryStore()
        return store, store
    return request.getfixturevalue("redis_pair")


@pytest.fixture(scope="module")
def task():
    return get_task("reverse", seq_len=4, eval_size=16)


def make_run(task, lanes: int = 2, train: TrainConfig = TRAIN) -> LiveRun:
    specs = [RunSpec("A", TINY, train), RunSpec("B · no positions", replace(TINY, positional="none"), train)]
    return LiveRun(task, specs[:lanes])


def seen(frame: RunFrame, *, timing: bool = True) -> tuple:
    """Everything the live view draws of a frame, as comparable plain data (``timing``: with wall-clock seconds,
    which two real runs never share)."""
    lanes = []
    for lane in frame.lanes:
        snaps = [(s.step, {k: v.tobytes() for k, v in s.attention.items()},
                  {k: np.asarray(v).tobytes() for k, v in s.scores.items()}) for s in lane.snapshots]
        rows = [{k: v for k, v in r.items() if timing or k != "seconds"} for r in lane.history]
        lanes.append((lane.label, rows, snaps,
                      [(s.step, s.caption, s.items) for s in lane.samples], lane.last_eval, lane.step, lane.steps,
                      lane.done))
    return frame.status, frame.step, frame.total_steps, lanes


def train_slices(run: LiveRun, on_slice) -> None:
    """Train to the end one step a slice, writing samples after every evaluation as the page does."""
    run.start()
    while run.status == "running":
        run.advance(0.0)
        run.update_samples({}, "", 3, seed=7)
        on_slice(run)


def test_watcher_sees_what_the_owner_sees(task, stores) -> None:
    store, watchers_store = stores
    run = make_run(task)
    publisher = Publisher(store)
    watcher = WatchedRun(watchers_store, publisher.run_id, "w1")
    late = WatchedRun(watchers_store, publisher.run_id, "w2")  # joins at the end and reads everything at once
    meta = {"task": task.name, "task_options": task.options(), "labels": run.labels, "config": run.config_dict(),
            "recording": None}
    compared = 0

    def check(r: LiveRun) -> None:
        nonlocal compared
        if publisher.publish(r.frame(), meta, force=True):
            assert watcher.sync()
            assert seen(watcher.frame()) == seen(r.frame())
            compared += 1

    run.update_samples({}, "", 3, seed=7)
    train_slices(run, check)
    assert compared == TRAIN.steps
    assert len(run.trainers[0].snapshots) < TRAIN.steps  # the trainer thinned its snapshots: so did the watcher
    assert late.sync() and seen(late.frame()) == seen(run.frame())
    assert store.watcher_count(publisher.run_id) == 2
    publisher.end("released by its owner", recording="key")
    assert not watcher.sync() and watcher.gone() == {"reason": "released by its owner", "recording": "key"}


def test_replay_shows_exactly_what_training_showed(task, stores) -> None:
    unthinned = replace(TRAIN, max_snapshots=200)  # as on the page: about 60 snapshots a run, never thinned
    first, frames = make_run(task, train=unthinned), {}
    first.update_samples({}, "", 3, seed=7)
    train_slices(first, lambda r: None)
    kept = record(first)
    assert kept is not None and kept.key == recording_key(first)
    stores[0].save_recording(kept)
    recording = stores[1].load_recording(kept.key)  # kept by one server, replayed by another

    second = make_run(task, train=unthinned)  # the same settings, trained for real: its frame at every step
    assert recording_key(second) == recording.key
    second.update_samples({}, "", 3, seed=7)
    train_slices(second, lambda r: frames.setdefault(r.step, seen(r.frame(), timing=False)))

    replay = ReplayRun(task, second.specs, recording)
    replay.start()
    for played, step in recording.timeline[1:]:
        replay._move_to(played)
        assert replay.step == step
        assert seen(replay.frame(), timing=False)[1:] == frames[step][1:]  # the status differs only at the end
    assert replay.status == "done" and seen(replay.frame(), timing=False) == seen(second.frame(), timing=False)
    for a, b in zip(replay.trainers, second.trainers, strict=True):  # the recorded trained models, bit for bit
        for (name, x), (_, y) in zip(a.model.state_dict().items(), b.model.state_dict().items(), strict=True):
            assert torch_equal(x, y), name


def torch_equal(x, y) -> bool:
    return bool((x == y).all())


def test_replay_plays_at_the_recorded_pace(task) -> None:
    run = make_run(task, lanes=1)
    train_slices(run, lambda r: None)
    recording = record(run)
    recording.timeline[:] = [(0.0, 0), (10.0, 12), (20.0, 24)]  # pretend the run took 20 s
    now = [0.0]
    replay = ReplayRun(task, run.specs, recording, speed=2.0, clock=lambda: now[0])
    replay.start()
    replay._move_to(4.0 * replay.speed)
    assert replay.step == 0 and replay.eta_s == pytest.approx(6.0)  # 12 recorded seconds left, at 2×
    replay._move_to(12.0)
    assert replay.step == 12 and replay.status == "running"
    replay.pause()  # rests on the latest step whose model was recorded
    assert replay.step in replay.recorded_steps() and replay.step <= 12 and replay.status == "paused"
    while replay.status == "paused":  # "Step once" moves from recorded model to recorded model, then to the end
        before, target = replay.step, replay.next_recorded_step()
        assert replay.step_once() == target - before and replay.step == target
    assert replay.step == 24 and replay.status == "done"


def test_a_paused_replay_is_the_model_of_the_step_it_shows(task) -> None:
    """Switching heads off on a replay paused at step N measures the step-N model, bit for bit."""
    from explorer.runs.heads_off import HeadProbe

    trained: dict[int, dict] = {}
    run = make_run(task, lanes=1)
    train_slices(run, lambda r: trained.setdefault(r.step, {k: v.clone() for k, v in
                                                            r.trainers[0].model.state_dict().items()}))
    recording = record(run)
    assert [s for s, _ in recording.models[0]] == [s for s, _ in run.trainers[0].weights]
    replay = ReplayRun(task, run.specs, recording)
    replay.start()
    replay._move_to(recording.timeline[len(recording.timeline) // 2][0])
    shown = replay.step
    replay.pause()
    model, step = replay.model_at(0)
    assert step == replay.step and 0 < step <= shown and replay.frame().step == step
    for name, value in model.state_dict().items():
        assert torch_equal(value, trained[step][name]), name
    at_step = copy.deepcopy(run.trainers[0].model)
    at_step.load_state_dict(trained[step])
    measured = HeadProbe(task, model, step).outcome()
    assert measured.metrics == task.evaluate(at_step, seed=EVAL_SEED)
    lane = replay.frame().lanes[0]  # the live view's numbers at that step: its evaluation and its samples
    assert lane.history[-1]["step"] == step and lane.last_eval == pytest.approx(measured.metrics)
    assert lane.samples[-1].step == step


def test_a_paused_replay_shows_the_samples_of_the_model_it_rests_on(task) -> None:
    """The page wrote the recorded samples at whatever step its loop had reached; paused on a recorded model, the
    replay writes that model's own samples, so the table and head switching show the same model."""
    trained: dict[int, dict] = {}
    run = make_run(task, lanes=1)
    run.start()
    while run.status == "running":
        run.advance(0.0)
        trained.setdefault(run.step, {k: v.clone() for k, v in run.trainers[0].model.state_dict().items()})
    run.update_samples({}, "", 3, seed=7)  # the only samples: at the end
    replay = ReplayRun(task, run.specs, record(run))
    replay.start()
    replay._move_to(replay.recording.timeline[len(replay.recording.timeline) // 2][0])
    assert not replay.update_samples({}, "", 3, seed=7)  # while it plays: the recorded samples only
    replay.pause()
    step = replay.step
    assert 0 < step < TRAIN.steps and not replay.frame().lanes[0].samples
    assert replay.update_samples({}, " · greedy", 3, seed=7)
    at_step = copy.deepcopy(run.trainers[0].model)
    at_step.load_state_dict(trained[step])
    latest = replay.frame().lanes[0].samples[-1]
    assert (latest.step, latest.caption) == (step, " · greedy")
    assert latest.items == tuple(task.samples(at_step.eval(), 3, seed=7))
    assert not replay.update_samples({}, " · greedy", 3, seed=7)  # written once per resting place
    replay.resume()
    assert all(s.step != step or s.caption == "" for s in replay.frame().lanes[0].samples)


def test_runs_that_cannot_be_replayed(task) -> None:
    run = make_run(task, lanes=1)
    run.start()
    run.advance(0.0)
    run.stop()
    assert record(run) is None  # stopped part way: when it stopped is not in the settings
    loaded = make_run(task, lanes=1)
    loaded.load_weights(run.trainers[0].model.state_dict())
    train_slices(loaded, lambda r: None)
    assert record(loaded) is None  # started from given weights, not from the seed
    other = make_run(task, lanes=1)
    other.specs = (replace(other.specs[0], train_config=replace(TRAIN, seed=4)),)
    assert recording_key(other) != recording_key(make_run(task, lanes=1))


@pytest.mark.slow
def test_the_lessons_live_run_trains_what_the_lessons_train() -> None:
    from explorer.lessons.experiments import train_reverse_lesson
    from explorer.lessons.runs import reverse_lesson_run, summaries

    labels = ["sinusoidal", "none"]
    with torch_threads(1):  # the live run trains on one thread; sums over other thread counts may round apart
        expected = train_reverse_lesson(labels, steps=12, seed=2)
    run = reverse_lesson_run(labels, steps=12, seed=2)
    train_slices(run, lambda r: None)
    for label, got in summaries(run, labels).items():
        want = expected[label]
        assert got.losses == want.losses and got.metric == want.metric and got.snapshot_steps == want.snapshot_steps
        for a, b in zip(got.snapshots, want.snapshots, strict=True):
            assert all(np.array_equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="Choose one or two"):
        reverse_lesson_run(["rotary"])


def test_watchers_get_random_ids() -> None:
    store = MemoryStore()
    ids = {WatchedRun(store, "run").watcher_id for _ in range(3)} | {new_watcher_id()}
    assert len(ids) == 4 and all(len(i) == 22 for i in ids)


def _meta(task, labels=("A",), **options) -> dict:
    return {"task": task.name, "task_options": {**task.options(), **options}, "labels": list(labels),
            "config": {}, "recording": None}


def test_a_channel_that_does_not_hold_together_raises_the_one_exception(task, stores) -> None:
    from tests.explorer.test_run_store import _update

    store, watchers_store = stores
    store.publish("no-meta", _update(1, 1))  # its first update does not say what runs
    with pytest.raises(DamagedValue, match="does not describe the run"):
        WatchedRun(watchers_store, "no-meta").sync()
    store.publish("lanes", _update(1, 1, _meta(task)))
    two = _update(2, 1)
    two.lanes *= 2
    two.state["lanes"] *= 2
    store.publish("lanes", two)  # a second lane in a run of one
    lanes = WatchedRun(watchers_store, "lanes")
    for _ in range(2):  # reported on every read, never skipped
        with pytest.raises(DamagedValue, match="an update of 2 lanes in a run of 1"):
            lanes.sync()
    assert len(lanes.history[0]) == 1  # the good first update stays applied once
    store.publish("options", _update(1, 1, _meta(task, seq_len=4, min_len=9)))  # each in bounds, not together
    with pytest.raises(DamagedValue, match="its task cannot be rebuilt"):
        WatchedRun(watchers_store, "options").sync()
    store.publish("fine", _update(1, 1, _meta(task)))
    watched = WatchedRun(watchers_store, "fine")
    assert watched.sync() and watched.task.options() == task.options()


def test_a_recording_that_does_not_fit_its_run_is_dropped(task, stores) -> None:
    store, other = stores
    run = make_run(task)
    train_slices(run, lambda r: None)
    good = record(run)
    forgeries = [replace(good, checkpoints=good.checkpoints[::-1]),  # each lane given the other's model
                 replace(good, checkpoints=[b"not a checkpoint"] * 2),
                 replace(good, meta={**good.meta, "labels": ["X", "Y"]})]
    for forged in forgeries:
        store.save_recording(forged)
        assert find_replay(make_run(task), other) is None and not other.has_recording(good.key)
        assert keep(run, other) is not None  # the run trained for real is kept instead
        assert isinstance(find_replay(make_run(task), store), ReplayRun)
        other.drop_recording(good.key)
