"""The trainer: determinism, pause/resume, the step generator, NaN stop, schedules, snapshots, evaluation rows,
history exports and the optimiser."""

import csv
import dataclasses
import importlib.util
import io
import math
import sys

import numpy as np
import pytest
import torch

from transformer_core import attention as attention_module
from transformer_core.config import TransformerConfig
from transformer_core.optim import AdamW
from transformer_core.tasks import get_task
from transformer_core.train_config import learning_rate
from transformer_core.training import TrainConfig, Trainer, default_train_config

TINY = {"d_model": 32, "n_heads": 2, "n_layers": 1, "d_ff": 64}


def make_trainer(name: str = "copy", **train) -> Trainer:
    task = get_task(name, seq_len=5) if name in ("copy", "reverse") else get_task(name)
    config = dataclasses.replace(task.default_model_config(), **TINY)
    settings = {"steps": 12, "batch_size": 16, "lr": 3e-3, "eval_every": 4, "snapshot_every": 4, **train}
    return Trainer(task, config, TrainConfig(**settings))


def curve(trainer: Trainer) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "seconds"} for row in trainer.history]


def same_weights(a: Trainer, b: Trainer) -> bool:
    pairs = zip(a.model.state_dict().values(), b.model.state_dict().values(), strict=True)
    return all(torch.equal(x, y) for x, y in pairs)


def test_same_seed_same_curve_and_different_seed_differs():
    a, b, c = make_trainer(seed=1), make_trainer(seed=1), make_trainer(seed=2)
    for t in (a, b, c):
        t.run()
    assert curve(a) == curve(b) and same_weights(a, b)
    assert curve(a) != curve(c)


def test_pause_and_resume_equals_an_uninterrupted_run():
    whole = make_trainer()
    whole.run()
    sliced = make_trainer()
    sliced.run(5)
    sliced.evaluate()  # a page may evaluate or look around while paused
    sliced.run(1)
    sliced.run(time_budget_s=0.0)  # a zero budget still makes progress: one step
    sliced.run()
    assert sliced.step == whole.step == 12 and sliced.status == "done"
    assert curve(sliced) == curve(whole) and same_weights(sliced, whole)
    assert [s.step for s in sliced.snapshots] == [s.step for s in whole.snapshots]
    for x, y in zip(sliced.snapshots, whole.snapshots, strict=True):
        assert all(np.array_equal(x.attention[k], y.attention[k]) for k in x.attention)


def test_steps_yields_exactly_the_rows_of_repeated_train_step():
    by_hand = make_trainer()
    expected = []
    while not by_hand.done:
        expected.append(by_hand.train_step())
    lazy = make_trainer()
    rows = list(lazy.steps())
    assert len(rows) == 12 and lazy.status == "done" and list(lazy.steps()) == []
    assert rows == lazy.history  # the very rows the history keeps
    strip = [{k: v for k, v in row.items() if k != "seconds"} for row in rows]
    assert strip == curve(by_hand) and same_weights(lazy, by_hand)
    assert [row["step"] for row in expected] == [row["step"] for row in rows]


def test_breaking_out_of_steps_and_resuming_equals_an_uninterrupted_run():
    whole = make_trainer()
    whole.run()
    paused = make_trainer()
    for row in paused.steps():
        if row["step"] == 5:
            break
    assert paused.step == 5 and paused.status == "running"  # breaking out takes no extra step
    assert len(list(paused.steps(2))) == 2 and paused.step == 7
    for _ in paused.steps():
        pass
    assert paused.step == 12 and curve(paused) == curve(whole) and same_weights(paused, whole)
    assert [s.step for s in paused.snapshots] == [s.step for s in whole.snapshots]


def test_steps_ends_when_the_run_is_stopped_inside_the_loop():
    trainer = make_trainer()
    seen = []
    for row in trainer.steps():
        seen.append(row["step"])
        if row["step"] == 3:
            trainer.stop()
    assert seen == [1, 2, 3] and trainer.status == "stopped"


def test_dropout_runs_are_reproducible_too():
    def run():
        task = get_task("copy", seq_len=5)
        config = dataclasses.replace(task.default_model_config(), dropout=0.2, **TINY)
        trainer = Trainer(task, config, TrainConfig(steps=6, batch_size=8, eval_every=0, snapshot_every=0))
        trainer.run(2)
        trainer.run()
        return curve(trainer)

    assert run() == run()


def test_nan_loss_stops_the_run_with_a_reason():
    trainer = make_trainer()
    trainer.run(3)
    with torch.no_grad():
        trainer.model.generator.bias.fill_(math.nan)
    row = trainer.train_step()
    assert trainer.status == "diverged" and trainer.done
    assert trainer.stop_reason == "loss became NaN at step 4 — lower the learning rate"
    assert row["step"] == 4 and math.isnan(row["loss"])
    assert trainer.train_step() == {} and trainer.run() == [] and trainer.step == 4


def test_infinite_loss_and_nan_gradients_also_stop(monkeypatch):
    trainer = make_trainer()
    monkeypatch.setattr(trainer.task, "loss", lambda model, batch: model.generator.bias.sum() * math.inf)
    trainer.train_step()
    assert trainer.stop_reason == "loss became infinite at step 1 — lower the learning rate"

    trainer = make_trainer()
    before = [p.clone() for p in trainer.model.parameters()]

    def nan_gradient(model, batch):  # finite loss whose gradient is NaN (sqrt of a negative, masked by where)
        bias = model.generator.bias
        return torch.where(torch.tensor(True), bias.sum() * 0, (-bias.abs() - 1).sqrt().sum())

    monkeypatch.setattr(trainer.task, "loss", nan_gradient)
    trainer.train_step()
    assert trainer.stop_reason == "gradients became NaN at step 1 — lower the learning rate"
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters(), strict=True))  # no update applied


def test_learning_rate_schedules():
    cfg = TrainConfig(steps=100, lr=1.0, schedule="cosine", warmup_steps=10)
    assert learning_rate(cfg, 0) == pytest.approx(0.1) and learning_rate(cfg, 9) == pytest.approx(1.0)
    assert learning_rate(cfg, 10) == pytest.approx(1.0)
    assert learning_rate(cfg, 55) == pytest.approx(0.55)  # half-way: midway between 1 and the 0.1 floor
    assert learning_rate(cfg, 100) == pytest.approx(0.1)
    const = TrainConfig(steps=100, lr=0.5)
    assert {learning_rate(const, s) for s in range(100)} == {0.5}


@pytest.mark.parametrize("bad", [{"steps": 0}, {"lr": -1.0}, {"lr": math.nan}, {"schedule": "linear"},
                                 {"warmup_steps": 500}, {"batch_size": 0}, {"eval_every": -1}])
def test_invalid_settings_are_friendly_errors(bad):
    with pytest.raises(ValueError):
        TrainConfig(**bad)


def test_task_defaults_and_overrides():
    task = get_task("reverse")
    cfg = default_train_config(task, steps=7)
    assert cfg.steps == 7 and cfg.schedule == task.train_defaults()["schedule"]
    with pytest.raises(ValueError, match="Unknown training setting"):
        default_train_config(task, epochs=3)


def test_eval_rows_snapshots_and_history_exports():
    trainer = make_trainer(steps=10, eval_every=4, snapshot_every=4)
    trainer.run()
    evals = [row["step"] for row in trainer.history if "eval_loss" in row]
    assert evals == [4, 8, 10]  # every 4 steps and at the end
    assert "accuracy" in trainer.history[-1] and trainer.last_eval is not None
    assert [s.step for s in trainer.snapshots] == [0, 4, 8, 10]
    snap = trainer.snapshots[-1]
    assert snap.attention["cross"].dtype == np.float16 and snap.attention["cross"].shape == (1, 2, 6, 5)
    assert snap.scores["cross:diagonal"].shape == (1, 2)
    rows = list(csv.DictReader(io.StringIO(trainer.metrics_csv())))
    assert len(rows) == 10 and rows[3]["eval_loss"] and not rows[0]["eval_loss"]
    plain = trainer.metrics_rows()
    assert [list(row) for row in plain] == [list(rows[0])] * 10  # every row has every column, in CSV order
    assert plain[3]["eval_loss"] == trainer.history[3]["eval_loss"] and plain[0]["eval_loss"] is None
    assert plain[0]["accuracy"] is None and plain[-1]["accuracy"] == trainer.last_eval["accuracy"]


def test_metrics_frame_needs_pandas_only_when_called(monkeypatch):
    trainer = make_trainer(steps=4)
    trainer.run()
    if importlib.util.find_spec("pandas") is not None:
        frame = trainer.metrics_frame()
        assert list(frame.columns) == list(trainer.metrics_rows()[0]) and len(frame) == 4
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(ImportError, match="metrics_rows"):
        trainer.metrics_frame()
    assert len(trainer.metrics_rows()) == 4


def test_summary_carries_every_metric_of_the_last_evaluation():
    trainer = make_trainer(steps=4)
    trainer.run()
    summary = trainer.summary()
    assert summary["eval_loss"] == trainer.last_eval["loss"]
    for key, value in trainer.last_eval.items():
        if key != "loss":
            assert summary[key] == value
    assert summary["metric"] == "accuracy" and summary["steps"] == 4


@pytest.mark.slow
def test_snapshots_are_thinned_to_the_cap():
    trainer = make_trainer(steps=40, eval_every=0, snapshot_every=2, max_snapshots=6)
    trainer.run()
    steps = [s.step for s in trainer.snapshots]
    assert len(steps) <= 7 and steps[0] == 0 and steps[-1] == 40
    assert steps == sorted(set(steps))


def test_only_snapshot_steps_use_the_explicit_softmax(monkeypatch):
    calls = []
    real = attention_module.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(attention_module, "scaled_dot_product_attention", counting)
    trainer = make_trainer(steps=10, eval_every=5, snapshot_every=5)
    trainer.run()
    per_snapshot = 3  # one layer: encoder self, decoder self and cross attention
    assert len(calls) == per_snapshot * len(trainer.snapshots) == per_snapshot * 3  # steps 0, 5 and 10


def test_stop_keeps_the_model_and_history():
    trainer = make_trainer()
    trainer.run(2)
    trainer.stop()
    assert trainer.status == "stopped" and trainer.stop_reason and trainer.done
    assert trainer.run() == [] and len(trainer.history) == 2
    summary = trainer.summary()
    assert summary["steps"] == 2 and summary["status"] == "stopped"


def test_callback_can_end_a_slice():
    trainer = make_trainer()
    rows = trainer.run(callback=lambda row: row["step"] < 3)
    assert len(rows) == 3 and trainer.status == "running"


def test_adamw_matches_torch_step_by_step():
    torch.manual_seed(0)
    ours_model, ref_model = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    ref_model.load_state_dict(ours_model.state_dict())

    def groups(model):
        return [{"params": [model.weight], "weight_decay": 0.1}, {"params": [model.bias], "weight_decay": 0.0}]

    ours = AdamW(groups(ours_model), lr=0.01, betas=(0.9, 0.99))
    ref = torch.optim.AdamW(groups(ref_model), lr=0.01, betas=(0.9, 0.99), foreach=False)
    x = torch.randn(8, 5)
    for step in range(5):
        for model, opt in ((ours_model, ours), (ref_model, ref)):
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            if step == 3:
                opt.param_groups[0]["lr"] = 0.002  # schedules change the group's lr between steps
            opt.step()
        torch.testing.assert_close(ours_model.weight, ref_model.weight, rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(ours_model.bias, ref_model.bias, rtol=1e-6, atol=1e-7)


def test_the_trainer_keeps_its_model_at_evaluation_steps_within_a_budget() -> None:
    task = get_task("reverse", seq_len=4, eval_size=16)
    config = TransformerConfig(vocab_size=13, max_len=5, d_model=16, n_heads=2, n_layers=1, d_ff=32, pad_id=0)
    train = TrainConfig(steps=40, batch_size=8, eval_every=4, snapshot_every=2, seed=1)
    model_bytes = sum(t.nbytes for t in Trainer(task, config, train).model.state_dict().values())
    trainer = Trainer(task, config, train, keep_weights_bytes=4 * model_bytes)  # room for four copies
    trainer.snapshot()
    seen = {}
    for row in trainer.steps():
        seen[row["step"]] = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    steps = [s for s, _ in trainer.weights]
    assert len(steps) <= 4 and steps == sorted(steps) and steps[0] == 0
    assert all(s % 4 == 0 for s in steps) and len(set(s2 - s1 for s1, s2 in zip(steps, steps[1:], strict=False))) == 1
    evaluated = {int(r["step"]) for r in trainer.history if "eval_loss" in r}
    for step, weights in trainer.weights[1:]:
        assert step in evaluated and all(bool((weights[k] == seen[step][k]).all()) for k in weights)
    assert Trainer(task, config, train).weights == []  # none without a budget
