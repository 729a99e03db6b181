"""A step-by-step trainer that an interactive caller can run in slices, pause, resume and stop at any time.

Every random choice is derived from the run's seed and the step number (the model's initial weights, each
training batch, dropout), so pausing and resuming, or running the same configuration twice, gives exactly the
same curve. Attention is captured on the task's fixed example every ``snapshot_every`` steps with the explicit
softmax path; ordinary steps use the fused kernel and capture nothing. The run's settings and what they
decide (initial weights, optimiser, learning rates) are in ``train_config.py``; the snapshots in ``snapshots.py``.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

import torch

from .history import history_csv, history_frame, history_rows
from .seeding import seeded, stream_seed
from .snapshots import Snapshot, take_snapshot
from .tasks.base import ModelConfig, Task, generator_for, to_device
from .train_config import TrainConfig, build_seeded_model, default_train_config, learning_rate, make_optimizer

EVAL_SEED = 8_675_309  # held-out data is the same for every run, so curves of different runs compare


class Trainer:
    """Trains ``task``'s model one step at a time; see the module docstring.

    Attributes:
        model, optimizer: the model being trained and its AdamW optimiser.
        step: optimisation steps completed so far.
        history: one row per step (``step``, ``loss``, ``lr``, ``seconds``); evaluation rows add ``eval_loss``
            and the task's metrics.
        snapshots: attention snapshots (at most ``max_snapshots``; older ones are thinned out evenly).
        weights: ``(step, state_dict)`` copies of the model before training and at evaluation steps, oldest first,
            within ``keep_weights_bytes`` (none when 0): when over, the interval between kept steps doubles and
            those off it go, so the kept steps stay evenly spread and each has its evaluation row.
        status: ``"ready"``, ``"running"``, ``"done"``, ``"stopped"`` or ``"diverged"``.
        stop_reason: why a run ended early, in words, or ``None``.
    """

    def __init__(self, task: Task, model_config: ModelConfig | None = None,
                 train_config: TrainConfig | None = None, *, keep_weights_bytes: int = 0) -> None:
        self.task = task
        self.model_config = model_config if model_config is not None else task.default_model_config()
        self.config = train_config if train_config is not None else default_train_config(task)
        self.device = torch.device(self.config.device)
        self.model = build_seeded_model(task, self.model_config, self.config.seed).to(self.device)
        self.model_config = getattr(self.model, "config", self.model_config)  # as the task completed it
        self.optimizer = make_optimizer(self.model, self.config)
        self.example = task.attention_example()
        self.step = 0
        self.history: list[dict[str, float]] = []
        self.snapshots: list[Snapshot] = []
        self.status = "ready"
        self.stop_reason: str | None = None
        self.last_eval: dict[str, float] | None = None
        self.target_step: int | None = None  # first evaluated step at which the task's target was met
        self.seconds = 0.0  # time spent inside train_step (evaluation and snapshots included)
        self._snapshot_every = self.config.snapshot_every
        self.weights: list[tuple[int, dict[str, torch.Tensor]]] = []
        model_bytes = sum(t.nbytes for t in self.model.state_dict().values())
        self._max_weights = keep_weights_bytes // max(1, model_bytes)  # copies that fit in the budget
        self._weights_every = self.config.eval_every
        self._dropout = getattr(self.model_config, "dropout", 0.0) > 0

    @property
    def done(self) -> bool:
        """Whether the run is over (finished, stopped or diverged)."""
        return self.status in ("done", "stopped", "diverged")

    def train_step(self) -> dict[str, float]:
        """One optimisation step, plus evaluation and a snapshot when they are due; ``{}`` once the run is over."""
        if self.done:
            return {}
        start = time.perf_counter()
        if self.step == 0 and self._snapshot_every and not self.snapshots:
            self.snapshot()
        lr = learning_rate(self.config, self.step)
        loss, grad_norm = self._optimise(lr)
        self.step += 1
        row = {"step": self.step, "loss": loss, "lr": lr}
        if self._check_finite(loss, grad_norm):
            self._after_step(row)
        self.seconds += time.perf_counter() - start
        row["seconds"] = self.seconds
        self.history.append(row)
        return row

    def _optimise(self, lr: float) -> tuple[float, float]:
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        generator = generator_for(stream_seed(self.config.seed, 1, self.step))
        batch = to_device(self.task.sample_batch(self.config.batch_size, generator), self.device)
        self.model.train()
        rng = seeded(stream_seed(self.config.seed, 2, self.step)) if self._dropout else contextlib.nullcontext()
        with rng:
            loss = self.task.loss(self.model, batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                return value, math.nan
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        params = [p for p in self.model.parameters() if p.grad is not None]
        norm = torch.nn.utils.clip_grad_norm_(params, self.config.grad_clip or math.inf)
        grad_norm = float(norm)
        if math.isfinite(grad_norm):
            self.optimizer.step()
        return value, grad_norm

    def _check_finite(self, loss: float, grad_norm: float) -> bool:
        if math.isfinite(loss) and math.isfinite(grad_norm):
            return True
        what = f"loss became {_nonfinite_name(loss)}" if not math.isfinite(loss) else \
            f"gradients became {_nonfinite_name(grad_norm)}"
        self.status = "diverged"
        self.stop_reason = f"{what} at step {self.step} — lower the learning rate"
        return False

    def _after_step(self, row: dict[str, float]) -> None:
        finished = self.step >= self.config.steps
        every = self.config.eval_every
        if finished or (every and self.step % every == 0):
            row.update(self._eval_row())
            self._keep_weights()
        if self._snapshot_every and (finished or self.step % self._snapshot_every == 0):
            self.snapshot()
        self.status = "done" if finished else "running"

    def _eval_row(self) -> dict[str, float]:
        metrics = self.evaluate()
        if self.target_step is None and self.task.reached_target(metrics):
            self.target_step = self.step
        row = {"eval_loss": metrics["loss"]}
        row.update({k: v for k, v in metrics.items() if k != "loss"})
        return row

    def evaluate(self) -> dict[str, float]:
        """Loss and metrics of the current model on the task's held-out data (also kept as ``last_eval``)."""
        self.last_eval = self.task.evaluate(self.model, seed=EVAL_SEED)
        return self.last_eval

    def snapshot(self) -> Snapshot:
        """Record attention on the fixed example now; thins older snapshots when over ``max_snapshots``."""
        if self.snapshots and self.snapshots[-1].step == self.step:
            return self.snapshots[-1]
        snap = take_snapshot(self.task, self.model, self.example, self.step)
        self.snapshots.append(snap)
        if len(self.snapshots) > self.config.max_snapshots:
            self.snapshots = self.snapshots[::2]
            if self._snapshot_every:
                self._snapshot_every *= 2
        if self.step == 0:
            self._keep_weights()  # the untrained model, where a replay starts
        return snap

    def _keep_weights(self) -> None:
        """Copy the model's weights at this step when they are due (see ``weights``)."""
        if self._max_weights < 1 or not self._weights_every or self.step % self._weights_every:
            return
        if self.weights and self.weights[-1][0] == self.step:
            return
        self.weights.append((self.step, {k: v.detach().to("cpu", copy=True) for k, v in
                                         self.model.state_dict().items()}))
        while len(self.weights) > self._max_weights:
            self._weights_every *= 2
            self.weights = [(s, w) for s, w in self.weights if s % self._weights_every == 0]

    def steps(self, n_steps: int | None = None) -> Iterator[dict[str, float]]:
        """Train lazily: yield each step's row as it is made, up to ``n_steps`` rows (default: to the end).

        Stops when the run is over (finished, stopped with :meth:`stop`, or diverged). A step is only taken when
        the next row is asked for, so breaking out of the loop pauses the run exactly there; a new ``steps()``
        (or :meth:`run`) resumes it, and the rows are the same as those of an uninterrupted run::

            for row in trainer.steps():
                show(row)
                if stop_pressed():
                    break
        """
        taken = 0
        while not self.done and (n_steps is None or taken < n_steps):
            yield self.train_step()
            taken += 1

    def run(self, n_steps: int | None = None, *, time_budget_s: float | None = None,
            callback: Callable[[dict[str, float]], bool | None] | None = None) -> list[dict[str, float]]:
        """Run up to ``n_steps`` steps (default: to the end) or until ``time_budget_s`` seconds have passed.

        A slice always makes at least one step (unless the run is over), so a user interface can call it with a small
        budget on every refresh.

        ``callback(row)`` is called after every step; returning ``False`` ends the slice early. Returns the rows
        of this slice. Call ``run`` again to resume exactly where the slice stopped.
        """
        rows: list[dict[str, float]] = []
        start = time.perf_counter()
        for row in self.steps(n_steps):
            rows.append(row)
            if callback is not None and callback(row) is False:
                break
            if time_budget_s is not None and time.perf_counter() - start >= time_budget_s:
                break
        return rows

    def stop(self, reason: str = "stopped by the user") -> None:
        """End the run early; the model and its history stay available."""
        if not self.done:
            self.status = "stopped"
            self.stop_reason = reason

    def release(self) -> None:
        """Free what only further training needs once the run is over: gradients and AdamW's running averages.

        The model, its history and its snapshots stay, so the trained model can still be inspected, exported
        and shown. Raises ``ValueError`` while the run can still train.
        """
        if not self.done:
            raise ValueError("Only a finished or stopped run can release its training state; stop it first.")
        self.model.zero_grad(set_to_none=True)
        self.optimizer.state.clear()

    def progress_state(self) -> dict[str, Any]:
        """Where training stands besides the weights and the optimiser, as plain data: with them,
        :meth:`restore_progress` on a fresh trainer of the same settings goes on exactly where this one is."""
        return {"step": self.step, "status": self.status, "stop_reason": self.stop_reason,
                "last_eval": dict(self.last_eval) if self.last_eval is not None else None,
                "target_step": self.target_step, "seconds": self.seconds,
                "snapshot_every": self._snapshot_every, "weights_every": self._weights_every}

    def restore_progress(self, state: dict[str, Any]) -> None:
        """Take back :meth:`progress_state` (the weights and optimiser state are loaded separately)."""
        self.step, self.status, self.stop_reason = int(state["step"]), str(state["status"]), state["stop_reason"]
        self.last_eval = {str(k): float(v) for k, v in state["last_eval"].items()} if state["last_eval"] else None
        self.target_step = None if state["target_step"] is None else int(state["target_step"])
        self.seconds = float(state["seconds"])
        self._snapshot_every, self._weights_every = int(state["snapshot_every"]), int(state["weights_every"])

    @property
    def training_state_bytes(self) -> int:
        """Bytes held by gradients and optimiser state (what :meth:`release` frees)."""
        grads = sum(p.grad.nbytes for p in self.model.parameters() if p.grad is not None)
        states = sum(v.nbytes for st in self.optimizer.state.values() for v in st.values()
                     if isinstance(v, torch.Tensor))
        return grads + states

    def metrics_rows(self) -> list[dict[str, float | None]]:
        """The history as plain rows with the same keys (``None`` in evaluation columns between evaluations)."""
        return history_rows(self.history)

    def metrics_csv(self) -> str:
        """The history as CSV text."""
        return history_csv(self.history)

    def metrics_frame(self) -> Any:
        """The history as a pandas ``DataFrame``; needs pandas, which is optional (see :meth:`metrics_rows`)."""
        return history_frame(self.history)

    def checkpoint(self) -> bytes:
        """The current weights as safetensors bytes with the configuration, task and training settings."""
        from .checkpoint import save_checkpoint

        extra = {"task_options": self.task.options(), "step": self.step, "train_config": asdict(self.config),
                 "metrics": self.last_eval or {}, **self.task.checkpoint_extra()}
        return save_checkpoint(self.model, self.model_config, task_name=self.task.name, extra=extra)

    def summary(self) -> dict[str, Any]:
        """Plain-data summary of the run so far (for the command line and interactive callers).

        Besides the headline ``metric`` it carries every metric of the last evaluation (e.g. ``accuracy`` and
        ``bits_per_char`` of the char_lm task, whose headline metric is ``val_loss``).
        """
        last = self.last_eval or {}
        metrics = {k: v for k, v in last.items() if k != "loss"}  # every metric, e.g. accuracy beside val_loss
        return {
            **metrics, "task": self.task.name, "status": self.status, "stop_reason": self.stop_reason,
            "steps": self.step, "seconds": round(self.seconds, 3),
            "steps_per_second": round(self.step / self.seconds, 2) if self.seconds else 0.0,
            "loss": self.history[-1]["loss"] if self.history else None,
            "eval_loss": last.get("loss"), "metric": self.task.metric_name,
            self.task.metric_name: last.get(self.task.metric_name),
            "target": self.task.metric_target, "reached_target": self.task.reached_target(last),
            "target_step": self.target_step, "train_config": asdict(self.config),
        }


def _nonfinite_name(value: float) -> str:
    return "NaN" if math.isnan(value) else "infinite"
