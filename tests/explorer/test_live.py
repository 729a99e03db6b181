"""The live-training run controller: its state machine, time slices, determinism, isolation, guard and exports."""

from __future__ import annotations

import gc
import io
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
import torch

from explorer.guard import check_budget, model_limit_problems
from explorer.host import NORMAL_LIMITS, SMALL_LIMITS, HostProfile
from explorer.render.timelapse import frame_pixels, snapshots_npy, snapshots_npz, timelapse_gif, viridis_lut
from explorer.runs import load as run_load
from explorer.runs.curves import thin_series
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.load import running_count
from explorer.runs.pace import UNDRIVEN_S
from explorer.runs.slots import start_if_free
from explorer.runs.threads import torch_threads
from transformer_core.config import TransformerConfig
from transformer_core.tasks import get_task
from transformer_core.tasks.sequences import SequenceTask
from transformer_core.training import TrainConfig

TINY = TransformerConfig(vocab_size=13, max_len=5, d_model=16, n_heads=2, n_layers=1, d_ff=32, pad_id=0)
TRAIN = TrainConfig(steps=6, batch_size=8, lr=3e-3, eval_every=3, snapshot_every=2, seed=3)


@pytest.fixture(scope="module")
def task() -> SequenceTask:
    return get_task("reverse", seq_len=4, eval_size=16)


def make_run(task, *, lanes: int = 1, clock=None, **train) -> LiveRun:
    config = replace(TRAIN, **train)
    specs = [RunSpec("A", TINY, config), RunSpec("B", replace(TINY, positional="none"), config)][:lanes]
    return LiveRun(task, specs) if clock is None else LiveRun(task, specs, clock=clock)


class FakeClock:
    """A clock that moves forward by ``tick`` seconds each time it is read."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def test_state_machine(task):
    run = make_run(task)
    assert (run.status, run.step, run.advance(1.0)) == ("ready", 0, 0)  # not running: advance does nothing
    run.start()
    assert run.status == "running" and run.advance(0.0) == 1  # at least one step per slice
    run.pause()
    assert run.status == "paused" and run.advance(1.0) == 0
    assert run.step_once() == 1 and (run.status, run.step) == ("paused", 2)
    run.resume()
    run.stop()
    assert run.status == "stopped" and run.finished and run.trainers[0].stop_reason == "stopped by the user"
    run.start()
    assert run.status == "stopped"  # only Reset starts a finished run again
    run.reset()
    assert (run.status, run.step, run.trainers[0].history) == ("ready", 0, [])


def test_training_threads_apply_while_advancing_only(task):
    outer = torch.get_num_threads()
    torch.set_num_threads(2)  # not the run's one thread, so that the test sees it come back
    try:
        seen = []
        run = LiveRun(task, [RunSpec("A", TINY, TRAIN)], threads=1,
                      clock=lambda: seen.append(torch.get_num_threads()) or 0.0)
        run.start()
        run.advance(1.0)
        assert seen[1:] == [1] * (len(seen) - 1) and torch.get_num_threads() == 2
        with torch_threads(None):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(outer)


def test_step_once_from_ready_and_run_to_the_end(task):
    run = make_run(task)
    assert run.step_once() == 1 and run.status == "paused"
    run.start()
    while run.status == "running":
        run.advance(10.0)
    assert (run.status, run.step, run.progress) == ("done", TRAIN.steps, 1.0)
    assert run.step_once() == 0 and run.eta_s == 0.0


def test_advance_respects_the_time_budget(task):
    run = make_run(task, clock=FakeClock(0.1), steps=50)
    run.start()
    # The clock is read at the start and after every step (0.1 s each); the slice ends at the first reading
    # at or past the budget, so 0.25 s allows 3 steps.
    assert run.advance(0.25) == 3
    run.advance(0.25)
    assert run.steps_per_second > 0 and run.eta_s == pytest.approx((50 - run.step) / run.steps_per_second)


def test_an_interruption_ends_the_slice_after_the_current_step(task):
    run = make_run(task, steps=50)
    run.start()
    asked = []
    assert run.advance(60.0, interrupted=lambda: asked.append(run.step) or len(asked) == 3) == 3
    assert asked == [1, 2, 3] and run.status == "running"  # asked after every step; the run goes on


def test_pause_and_resume_give_the_same_curve_as_one_go(task):
    straight = make_run(task)
    straight.start()
    straight.advance(60.0)
    sliced = make_run(task)
    sliced.start()
    for _ in range(3):
        sliced.advance(0.0)
        sliced.pause()
        sliced.step_once()
        sliced.resume()
    sliced.advance(60.0)
    losses = [[r["loss"] for r in run.trainers[0].history] for run in (straight, sliced)]
    assert losses[0] == losses[1] and len(losses[0]) == TRAIN.steps


def test_reset_restores_the_seeds_initial_weights(task):
    run = make_run(task)
    initial = {k: v.clone() for k, v in run.trainers[0].model.state_dict().items()}
    run.start()
    run.advance(60.0)
    trained = run.trainers[0].model.state_dict()
    assert any(not torch.equal(initial[k], trained[k]) for k in initial)
    run.reset()
    after = run.trainers[0].model.state_dict()
    assert all(torch.equal(initial[k], after[k]) for k in initial)
    assert len(run.trainers[0].snapshots) == 1 and run.trainers[0].snapshots[0].step == 0


def test_compare_lanes_stay_in_step_and_differ(task):
    run = make_run(task, lanes=2)
    run.start()
    run.advance(0.0)
    assert [t.step for t in run.trainers] == [1, 1]
    run.advance(60.0)
    a, b = ([r["loss"] for r in t.history] for t in run.trainers)
    assert run.status == "done" and len(a) == len(b) == TRAIN.steps and a != b
    assert run.snapshot_count()[0] == run.snapshot_count()[2]


def test_two_sessions_training_at_once_do_not_interfere(task):
    """Two runs advanced by two threads at the same time match the same runs trained alone."""
    alone = []
    for seed in (1, 2):
        run = make_run(task, seed=seed)
        run.start()
        run.advance(60.0)
        alone.append([r["loss"] for r in run.trainers[0].history])
    runs = [make_run(task, seed=seed) for seed in (1, 2)]

    def train(run: LiveRun) -> None:
        run.start()
        while run.status == "running":
            run.advance(0.0)

    threads = [threading.Thread(target=train, args=(r,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [[r["loss"] for r in run.trainers[0].history] for run in runs] == alone
    assert alone[0] != alone[1]


class DivergingTask(SequenceTask):
    """Reverse, whose loss turns NaN from the third step on (for configuration "diverge" only)."""

    def __init__(self) -> None:
        super().__init__("reverse", seq_len=4, eval_size=16)
        self.calls = 0

    def loss(self, model, batch):
        loss = super().loss(model, batch)
        if getattr(model, "diverge", False):
            self.calls += 1
            if self.calls >= 3:
                return loss * float("nan")
        return loss

    def build_model(self, config):
        model = super().build_model(config)
        model.diverge = config.positional == "none"
        return model


def test_divergence_stops_with_a_clear_message():
    run = LiveRun(DivergingTask(), [RunSpec("A", replace(TINY, positional="none"), TRAIN)])
    run.start()
    run.advance(60.0)
    assert run.status == "diverged" and run.step == 3
    assert "NaN" in run.message and "lower the learning rate" in run.message


def test_a_diverged_lane_does_not_stop_the_other():
    run = LiveRun(DivergingTask(), [RunSpec("A", TINY, TRAIN), RunSpec("B", replace(TINY, positional="none"), TRAIN)])
    run.start()
    run.advance(60.0)
    assert run.message.startswith("B: loss became NaN")
    assert run.trainers[0].status == "done" and run.status == "diverged"


def test_load_weights_before_training_only(task):
    source = make_run(task, seed=9)
    run = make_run(task)
    run.load_weights(source.trainers[0].model.state_dict())
    mine, theirs = run.trainers[0].model.state_dict(), source.trainers[0].model.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine)
    np.testing.assert_array_equal(run.trainers[0].snapshots[0].attention["cross"],
                                  source.trainers[0].snapshots[0].attention["cross"])
    run.step_once()
    with pytest.raises(ValueError, match="Reset"):
        run.load_weights(theirs)


def test_a_run_has_one_or_two_lanes(task):
    with pytest.raises(ValueError, match="1 or 2"):
        LiveRun(task, [])


def test_guard_is_tighter_on_small_hosts(task):
    big = replace(task.default_model_config(), d_model=256, d_ff=1024, n_layers=4)
    train = TrainConfig(batch_size=48)
    normal = HostProfile(cores=8, memory_bytes=16 * 2**30, small=False)
    small = HostProfile(cores=1, memory_bytes=2**30 // 2, small=True)
    assert check_budget(task, big, train, host=normal).ok
    verdict = check_budget(task, big, train, host=small)
    assert not verdict.ok and "MB of memory" in verdict.reason and "step would take" in verdict.reason
    assert "batch size of" in verdict.suggestion and "smaller d_model" in verdict.suggestion
    suggested = int(verdict.suggestion.split("batch size of ")[1].split(",")[0])
    assert suggested < 64 and check_budget(task, big, replace(train, batch_size=suggested), host=small).ok
    assert not check_budget(task, big, replace(train, batch_size=2 * suggested), host=small).ok  # the largest that fits
    assert verdict.memory_budget_bytes < check_budget(task, big, train, host=normal).memory_budget_bytes
    assert check_budget(task, task.default_model_config(), train, host=small).ok
    two = check_budget(task, big, train, host=normal, lanes=2)
    assert two.memory_bytes == 2 * check_budget(task, big, train, host=normal).memory_bytes


def test_guard_estimates_with_the_threads_the_run_will_use(task):
    # The Live Training page trains every session on one thread, even on a host with 8 cores.
    big = replace(task.default_model_config(), d_model=384, d_ff=1536, n_layers=1)
    train = TrainConfig(batch_size=64)
    host = HostProfile(cores=8, memory_bytes=16 * 2**30, small=False)
    all_threads = check_budget(task, big, train, host=host)
    assert all_threads.ok and all_threads == check_budget(task, big, train, host=host, threads=4)
    one = check_budget(task, big, train, host=host, threads=1)
    assert one.step_seconds > 3 * all_threads.step_seconds and one.memory_bytes == all_threads.memory_bytes
    assert not one.ok and "step would take" in one.reason and "memory" not in one.reason
    suggested = int(one.suggestion.split("batch size of ")[1].split(",")[0])
    assert check_budget(task, big, replace(train, batch_size=suggested), host=host, threads=1).ok
    assert not check_budget(task, big, replace(train, batch_size=2 * suggested), host=host, threads=1).ok


def test_step_budget_keeps_pause_under_a_second(task):
    """A click is handled after the step under way, so the guard allows steps (all lanes) well under a second."""
    assert NORMAL_LIMITS.step_time_budget_s <= 0.5 and SMALL_LIMITS.step_time_budget_s <= 0.5
    host = HostProfile(cores=2, memory_bytes=24 * 2**30, small=False)
    wide = replace(task.default_model_config(), d_model=256, d_ff=1024, n_layers=2)
    one = check_budget(task, wide, TrainConfig(batch_size=64), host=host, threads=1)
    assert 0.5 < one.step_seconds < 2.0 and not one.ok  # the old 2 s budget took it; pausing it took ~1 s
    assert "0.4 s allowed" in one.reason and "batch size of 16" in one.suggestion
    fits = check_budget(task, wide, TrainConfig(batch_size=16), host=host, threads=1)
    assert fits.ok and fits.step_seconds <= NORMAL_LIMITS.step_time_budget_s
    two = check_budget(task, wide, TrainConfig(batch_size=16), host=host, threads=1, lanes=2)
    assert not two.ok and two.step_seconds == pytest.approx(2 * fits.step_seconds)  # lanes run one after another
    assert "turning Compare off" in two.suggestion


def test_guard_refuses_a_checkpoint_too_big_to_upload_again(task):
    """On a GPU the step time allows wide models, but their checkpoint must fit the upload limit."""
    host = HostProfile(cores=8, memory_bytes=64 * 2**30, small=False)
    gpu = TrainConfig(batch_size=8, device="cuda")
    wide = replace(task.default_model_config(), d_model=512, d_ff=2048, n_layers=4)
    verdict = check_budget(task, wide, gpu, host=host)
    assert verdict.checkpoint_bytes > NORMAL_LIMITS.max_checkpoint_bytes and not verdict.ok
    assert "checkpoint would take about" in verdict.reason and "batch size" not in verdict.suggestion
    compared = check_budget(task, wide, gpu, host=host, lanes=2)
    assert not compared.ok and "Compare" not in compared.suggestion  # a checkpoint holds one lane either way
    model = task.build_model(wide)
    assert verdict.checkpoint_bytes == sum(t.numel() * 4 for t in model.state_dict().values())
    narrower = check_budget(task, replace(wide, n_layers=2), gpu, host=host)
    assert narrower.ok and narrower.checkpoint_bytes <= NORMAL_LIMITS.max_checkpoint_bytes


def test_model_limit_problems_name_what_is_too_big():
    limits = replace(NORMAL_LIMITS, max_d_model=512, max_layers=8)
    huge = TransformerConfig(d_model=4096, n_heads=32, n_layers=48, d_ff=16384)
    assert model_limit_problems(huge, limits) == [
        "d_model 4,096 (this server trains up to 512)", "48 layers (up to 8)", "d_ff 16,384 (up to 2048)"]
    assert model_limit_problems(replace(huge, d_model=64, n_heads=2, n_layers=2, n_decoder_layers=9, d_ff=256),
                                limits) == ["9 layers (up to 8)"]
    assert model_limit_problems(TINY, limits) == []


@pytest.fixture
def no_other_runs():
    """Forget runs that earlier tests started, so counts here see only this test's runs."""
    with run_load.STARTED_LOCK:
        run_load.STARTED.clear()


def test_at_most_so_many_runs_train_at_once(task, no_other_runs):
    runs = [make_run(task, steps=50) for _ in range(3)]
    assert start_if_free(runs[0], 2) and start_if_free(runs[1], 2)
    assert running_count() == 2
    assert not start_if_free(runs[2], 2) and runs[2].status == "ready"  # the server is busy
    runs[0].pause()  # a paused run frees its place
    assert start_if_free(runs[2], 2) and runs[2].status == "running"
    assert not start_if_free(runs[0], 2) and runs[0].status == "paused"  # Resume waits for a free place
    runs[1].release("stopped by the user")  # so does a stopped run
    assert start_if_free(runs[0], 2) and running_count(exclude=runs[0]) == 1
    for run in runs:
        run.stop()
    assert running_count() == 0


def test_a_forgotten_run_does_not_hold_a_place(task, no_other_runs):
    run = make_run(task, steps=50)
    assert start_if_free(run, 1) and running_count() == 1
    del run  # its session ended without stopping it
    gc.collect()
    assert running_count() == 0 and start_if_free(make_run(task, steps=50), 1)


def test_thin_series_averages_equal_runs():
    xs = np.arange(1000.0)
    ys = np.sin(xs / 50)
    tx, ty = thin_series(xs, ys, 100)
    assert len(tx) == len(ty) == 100
    np.testing.assert_allclose(tx, xs.reshape(100, 10).mean(axis=1))
    np.testing.assert_allclose(ty, ys.reshape(100, 10).mean(axis=1))
    short_x, short_y = thin_series([1, 2, 3], [4, 5, 6], 100)
    assert short_x.tolist() == [1, 2, 3] and short_y.tolist() == [4, 5, 6]


def test_release_frees_gradients_and_optimiser_state_but_keeps_the_model(task):
    run = make_run(task, lanes=2)
    run.start()
    run.advance(0.0)  # one step per lane
    params = sum(p.numel() for t in run.trainers for p in t.model.parameters())
    assert run.training_state_bytes == 3 * 4 * params  # float32 gradients + AdamW's two averages
    with pytest.raises(ValueError, match="stop it first"):
        run.trainers[0].release()
    weights = {k: v.clone() for k, v in run.trainers[0].model.state_dict().items()}
    run.release("stopped when the page was left")
    assert run.status == "stopped" and run.finished and run.training_state_bytes == 0
    assert run.trainers[0].stop_reason == "stopped when the page was left"
    for name, value in run.trainers[0].model.state_dict().items():
        torch.testing.assert_close(value, weights[name])
    assert len(run.trainers[0].snapshots) >= 1 and run.trainers[0].history
    run.start()
    assert run.advance(1.0) == 0  # a released run does not train again

@pytest.fixture(scope="module")
def trained(task) -> LiveRun:
    run = make_run(task)
    run.start()
    run.advance(60.0)
    return run


def test_snapshots_npz_holds_every_snapshot(trained):
    snaps = trained.trainers[0].snapshots
    with np.load(io.BytesIO(snapshots_npz(snaps))) as data:
        assert data["steps"].tolist() == [s.step for s in snaps] == [0, 2, 4, 6]
        assert data["cross"].shape == (4, 1, 2, 5, 4)  # (snapshots, L, H, T, S)
        np.testing.assert_array_equal(data["cross"][-1], snaps[-1].attention["cross"])
    with pytest.raises(ValueError, match="no attention snapshots"):
        snapshots_npz([])


def test_snapshots_npy_holds_one_kind(trained):
    snaps = trained.trainers[0].snapshots
    array = np.load(io.BytesIO(snapshots_npy(snaps, "cross")), allow_pickle=False)
    assert array.shape == (4, 1, 2, 5, 4) and array.dtype == np.float16  # (snapshots, L, H, T, S)
    np.testing.assert_array_equal(array[1], snaps[1].attention["cross"])
    assert np.load(io.BytesIO(snapshots_npy(snaps, "encoder")))[0].shape == snaps[0].attention["encoder"].shape
    with pytest.raises(ValueError, match="no 'vision' attention"):
        snapshots_npy(snaps, "vision")
    with pytest.raises(ValueError, match="no attention snapshots"):
        snapshots_npy([], "cross")

def test_viridis_and_frame_colours():
    lut = viridis_lut()
    assert lut[0].tolist() == [68, 1, 84] and lut[-1].tolist() == [253, 231, 37]  # #440154 and #FDE725
    maps = np.array([[[[0.0, 1.0]], [[1.0, 0.0]]]])  # (L=1, H=2, T=1, S=2)
    pixels = frame_pixels(maps, lut, cell_px=4)
    assert pixels.shape == (2, 4 + 4 + 4, 3)  # each 1x2 map scaled by 2 to 2x4 pixels; a 4-pixel gap
    assert pixels[0, 0].tolist() == lut[0].tolist() and pixels[0, 2].tolist() == lut[-1].tolist()
    assert pixels[0, 5].tolist() == [255, 255, 255]  # the gap between the heads
    assert pixels[1, 8].tolist() == lut[-1].tolist() and pixels[1, 11].tolist() == lut[0].tolist()


def test_timelapse_gif_has_one_frame_per_snapshot(trained):
    from PIL import Image

    data = timelapse_gif(trained.trainers[0].snapshots, "cross", cell_px=40)
    with Image.open(io.BytesIO(data)) as gif:
        assert gif.format == "GIF" and gif.n_frames == len(trained.trainers[0].snapshots)
    with pytest.raises(ValueError, match="No snapshot"):
        timelapse_gif(trained.trainers[0].snapshots, "nonexistent")


def test_a_run_no_page_drives_any_more_is_paused_and_frees_its_place(task, no_other_runs, monkeypatch):
    """A tab that navigates away between a click's rerun request and the rerun leaves its run "running" with no
    loop to train it; after UNDRIVEN_S it must stop holding one of the server's places (and wait, paused)."""
    runs = [make_run(task, steps=50) for _ in range(3)]
    assert start_if_free(runs[0], 2) and start_if_free(runs[1], 2)
    assert not start_if_free(runs[2], 2)
    runs[1].advance(0.01)  # the second run's page keeps training it
    clock = [time.monotonic()]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    runs[1].driven_at = clock[0]
    clock[0] += UNDRIVEN_S - 1
    assert not start_if_free(runs[2], 2) and runs[0].status == "running"  # not yet: a rerun may be starting
    runs[1].driven_at = clock[0]
    clock[0] += 2
    assert start_if_free(runs[2], 2) and runs[2].status == "running"
    assert runs[0].status == "paused" and runs[1].status == "running"  # only the abandoned run was paused
    for run in runs:
        run.stop()


def test_a_paused_run_shows_the_attention_of_the_step_it_stopped_at(task):
    run = make_run(task, lanes=2, steps=40, snapshot_every=10)
    run.start()
    while run.step < 13:
        run.advance(0.01)
    run.pause()
    step = run.step
    assert step % 10 and [t.snapshots[-1].step for t in run.trainers] == [step, step]  # not the older step 10
    model = run.trainers[0].model
    expected = run.task.attention(model, run.trainers[0].example)
    got = run.trainers[0].snapshots[-1].attention
    assert all(np.allclose(got[k], torch.stack(expected[k]).numpy(), atol=1e-3) for k in expected)  # float16
    run.step_once()
    assert [t.snapshots[-1].step for t in run.trainers] == [step + 1, step + 1]  # "Step once" moves them too
    run.start()
    while run.status == "running":
        run.advance(1.0)
    steps = [s.step for s in run.trainers[0].snapshots]
    assert steps == [0, 10, step, step + 1, 20, 30, 40]  # training's own snapshots go on as before
