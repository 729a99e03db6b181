"""Benchmark: our training step against torch.nn's transformers, the cost of snapshots, and time-to-target.

Run ``python -m transformer_core.bench`` (add ``--quick`` for a short run, ``--tasks reverse,sort`` to pick
tasks, ``--smoke`` to check in seconds that it runs at all). Timings are interleaved (ours, reference, ours,
...) in one process and summarised by medians, so a busy machine slows both sides alike and the printed ratios
stay meaningful.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig
from .device import configure_threads
from .positional import sinusoidal_encoding
from .tasks import get_task, task_names
from .tasks.base import Task
from .train_config import make_optimizer
from .training import Trainer, default_train_config

SMOKE_STEPS = 2  # training steps per task in a --smoke run


def _torch_causal(t: int) -> torch.Tensor:
    """Causal mask in torch.nn's convention (True = may NOT attend)."""
    return torch.ones(t, t, dtype=torch.bool).triu(1)


class _Embed(nn.Module):
    """Token embedding × √C plus the sinusoidal table: the same input layer as our models."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.scale = config.d_model**0.5
        self.register_buffer("table", sinusoidal_encoding(config.max_len + 1, config.d_model), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tokens(ids) * self.scale + self.table[: ids.size(1)]


class ReferenceSeq2Seq(nn.Module):
    """``torch.nn.Transformer`` with the same sizes, embeddings and output layer as ``Seq2SeqTransformer``."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = config
        self.src_embed, self.tgt_embed = _Embed(c), _Embed(c)
        with warnings.catch_warnings():  # nn.Transformer warns that pre-norm disables its nested-tensor path
            warnings.simplefilter("ignore", UserWarning)
            self.core = nn.Transformer(c.d_model, c.n_heads, c.n_layers, c.decoder_layers, c.d_ff, c.dropout,
                                       activation=c.activation, batch_first=True, norm_first=c.pre_norm)
        self.generator = nn.Linear(c.d_model, c.vocab_size)
        self.pad_id = c.pad_id

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = _torch_causal(tgt.size(1))
        src_pad, tgt_pad = src == self.pad_id, tgt == self.pad_id
        out = self.core(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=causal, src_key_padding_mask=src_pad,
                        tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.generator(out)


class ReferenceEncoder(nn.Module):
    """``torch.nn.TransformerEncoder`` with the same sizes as ``CausalLM`` (``causal=True``) or the regressor."""

    def __init__(self, config: TransformerConfig, *, causal: bool, num_outputs: int | None = None) -> None:
        super().__init__()
        c = config
        self.embed = _Embed(c)
        layer = nn.TransformerEncoderLayer(c.d_model, c.n_heads, c.d_ff, c.dropout, activation=c.activation,
                                           batch_first=True, norm_first=c.pre_norm)
        self.core = nn.TransformerEncoder(layer, c.n_layers, norm=nn.LayerNorm(c.d_model),
                                          enable_nested_tensor=False)
        self.head = nn.Linear(c.d_model, num_outputs or c.vocab_size, bias=num_outputs is not None)
        self.causal, self.pad_id = causal, c.pad_id

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.causal:
            mask = _torch_causal(ids.size(1))
            return self.head(self.core(self.embed(ids), mask=mask, is_causal=True))
        pad = ids == self.pad_id
        x = self.core(self.embed(ids), src_key_padding_mask=pad)
        keep = (~pad)[..., None].float()  # (B, S, 1)
        return self.head((x * keep).sum(1) / keep.sum(1).clamp(min=1.0))


def _reference(task: Task) -> tuple[nn.Module, Callable[[nn.Module, dict], torch.Tensor]]:
    """A torch.nn model of the task's default size and its loss on the task's batches."""
    config = task.default_model_config()
    if task.family == "seq2seq":
        def loss(m, b):
            return F.cross_entropy(m(b["src"], b["tgt_in"]).flatten(0, 1), b["tgt_out"].flatten(),
                                   ignore_index=-100)
        return ReferenceSeq2Seq(config), loss
    if task.family == "causal_lm":
        def loss(m, b):
            return F.cross_entropy(m(b["idx"]).flatten(0, 1), b["targets"].flatten(), ignore_index=-100)
        return ReferenceEncoder(config, causal=True), loss
    return ReferenceEncoder(config, causal=False, num_outputs=1), lambda m, b: F.mse_loss(m(b["tokens"])[:, 0], b["y"])


def compare_step_time(task_name: str, *, rounds: int, steps: int) -> dict[str, Any]:
    """Median seconds per training step: ours (Trainer, no capture), torch.nn, and ours with a snapshot."""
    task = get_task(task_name)
    cfg = default_train_config(task, eval_every=0, snapshot_every=0, steps=10**6)
    trainer = Trainer(task, None, cfg)
    ref, ref_loss = _reference(task)
    ref_opt = make_optimizer(ref, cfg)
    generator = torch.Generator().manual_seed(0)

    def ref_step() -> None:
        loss = ref_loss(ref, task.sample_batch(cfg.batch_size, generator))
        ref_opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(ref.parameters(), cfg.grad_clip)
        ref_opt.step()

    def snapshot_step() -> None:
        trainer.train_step()
        trainer.snapshot()

    runners = {"ours": trainer.train_step, "torch": ref_step, "snapshot": snapshot_step}
    for run in runners.values():  # warm-up
        run()
    times: dict[str, list[float]] = {k: [] for k in runners}
    for r in range(rounds):
        order = list(runners) if r % 2 == 0 else list(reversed(runners))
        for name in order:
            start = time.perf_counter()
            for _ in range(steps):
                runners[name]()
            times[name].append((time.perf_counter() - start) / steps)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "task": task_name, "ours_ms": med["ours"] * 1e3, "torch_ms": med["torch"] * 1e3,
        "ratio": med["ours"] / med["torch"], "snapshot_ratio": med["snapshot"] / med["ours"],
        "params_ours": sum(p.numel() for p in trainer.model.parameters()),
        "params_torch": sum(p.numel() for p in ref.parameters()),
    }


def time_to_target(task_name: str, *, stop_at_target: bool, max_steps: int | None = None) -> dict[str, Any]:
    """Train the task's default configuration; report when (steps, seconds) it first met its target.

    ``max_steps`` shortens the run (the learning-rate schedule follows the shorter run).
    """
    task = get_task(task_name)
    config = default_train_config(task) if max_steps is None else default_train_config(task, steps=max_steps)
    trainer = Trainer(task, None, config)
    start = time.perf_counter()
    trainer.run(callback=lambda row: not (stop_at_target and trainer.target_step is not None))
    wall = time.perf_counter() - start
    seconds_at = next((r["seconds"] for r in trainer.history if r["step"] == trainer.target_step), None)
    last = trainer.last_eval or {}
    return {
        "task": task_name, "metric": task.metric_name, "target": task.metric_target,
        "final": last.get(task.metric_name), "steps_run": trainer.step, "target_step": trainer.target_step,
        "seconds_to_target": seconds_at, "seconds": wall, "status": trainer.status,
    }


def memory_of_default_run(task_name: str = "reverse") -> float | None:
    """Peak memory (MB) above the interpreter's baseline of a default command-line run, in a fresh process."""
    cmd = [sys.executable, "-m", "transformer_core.train", "--task", task_name, "--json", "--quiet"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])["memory_mb"]
    except (IndexError, KeyError, json.JSONDecodeError):
        return None


def _print_tables(speed: list[dict], tasks: list[dict], memory: float | None, threads: int) -> None:
    print(f"\nTraining step vs torch.nn ({threads} threads; medians of interleaved rounds)\n")
    print("| model | ours ms/step | torch.nn ms/step | ratio | snapshot step / plain step |")
    print("|---|---|---|---|---|")
    for s in speed:
        print(f"| {s['task']} | {s['ours_ms']:.1f} | {s['torch_ms']:.1f} | {s['ratio']:.2f}x | "
              f"{s['snapshot_ratio']:.2f}x |")
    if tasks:
        print("\nTime to target (default configuration of each task)\n")
        print("| task | target | steps to target | seconds to target | final | steps run | seconds |")
        print("|---|---|---|---|---|---|---|")
    for t in tasks:
        sign = "<=" if t["metric"] == "val_loss" else ">="
        at = f"{t['seconds_to_target']:.1f}" if t["seconds_to_target"] is not None else "not reached"
        final = f"{t['final']:.4f}" if t["final"] is not None else "n/a"
        print(f"| {t['task']} | {t['metric']} {sign} {t['target']} | {t['target_step'] or 'not reached'} | {at} | "
              f"{final} | {t['steps_run']} | {t['seconds']:.1f} |")
    if memory is not None:
        print(f"\nDefault reverse run: {memory:.0f} MB above the interpreter's baseline")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m transformer_core.bench``."""
    p = argparse.ArgumentParser(prog="python -m transformer_core.bench", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer timing rounds; stop each task at its target")
    p.add_argument("--smoke", action="store_true",
                   help=f"seconds only: one timing round of one step, {SMOKE_STEPS} training steps per task, "
                        "no memory run (checks that the benchmark works; its numbers mean nothing)")
    p.add_argument("--tasks", default=",".join(task_names()), help="comma-separated tasks to time to target")
    p.add_argument("--skip-speed", action="store_true", help="skip the step-time comparison")
    p.add_argument("--threads", type=int, help="CPU threads (default: all cores, at most 4)")
    p.add_argument("--json", action="store_true", help="also print all results as one JSON object")
    args = p.parse_args(argv)
    names = [n.strip() for n in args.tasks.split(",") if n.strip()]
    unknown = [n for n in names if n not in task_names()]
    if unknown:
        p.error(f"unknown task(s): {', '.join(unknown)}; choose from {', '.join(task_names())}")
    threads = configure_threads(args.threads)
    rounds, steps = (1, 1) if args.smoke else (5, 4) if args.quick else (15, 8)
    speed = [] if args.skip_speed else [compare_step_time(n, rounds=rounds, steps=steps)
                                        for n in ("reverse", "char_lm", "protein")]
    max_steps = SMOKE_STEPS if args.smoke else None
    tasks = [time_to_target(n, stop_at_target=args.quick, max_steps=max_steps) for n in names]
    memory = None if args.quick or args.smoke else memory_of_default_run()
    _print_tables(speed, tasks, memory, threads)
    if args.json:
        print(json.dumps({"threads": threads, "speed": speed, "tasks": tasks, "memory_mb": memory}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
