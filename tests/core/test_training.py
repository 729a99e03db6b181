"""The trainer: determinism, pause/resume, NaN stop, schedules, snapshots, evaluation rows and the optimiser."""

import csv
import dataclasses
import io
import math

import numpy as np
import pytest
import torch

from transformer_core import attention as attention_module
from transformer_core.optim import AdamW
from transformer_core.tasks import get_task
from transformer_core.training import TrainConfig, Trainer, default_train_config, learning_rate

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
    assert list(trainer.metrics_frame().columns[:4]) == ["step", "loss", "lr", "seconds"]


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
