"""Live Training page: the run the settings describe — its specs, its signature and the resource guard's verdict.

The widgets (:mod:`ui.training.widgets`) only fill session state (:mod:`ui.training.controls`); this module reads
it back as a task and one :class:`~explorer.runs.live.RunSpec` per configuration, the form a run is built from.
The signature tells the live run whether it still matches the settings; the guard refuses what this server cannot
train before anything is built.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import streamlit as st

from explorer.guard import GuardResult, check_budget
from explorer.lab.block_compare import block_fields
from explorer.runs.live import LIVE_THREADS, RunSpec
from explorer.runs.place import default_place
from transformer_core.config import ViTConfig
from transformer_core.positional import get as positional_kind
from transformer_core.tasks import Task
from transformer_core.training import default_train_config
from ui.training import interventions, text
from ui.training.controls import (
    B_HEADS,
    B_LAYERS,
    B_NORM,
    B_POSITIONAL,
    BATCH,
    COMPARE,
    D_FF,
    D_MODEL,
    DEFAULTS,
    DEVICE,
    DROPOUT,
    HEADS,
    KV_HEADS,
    LAYERS,
    LR,
    NORM,
    POSITIONAL,
    SEED,
    STEPS,
    TASK,
    llama_block,
    load_task,
)

SNAPSHOTS_PER_RUN = 60  # attention snapshots a run aims for (the time-lapse frames)


def settings_signature() -> tuple:
    """All settings that shape a run (the user's text by its hash); a run built from other settings is out of date.

    Sampling settings and the heads switched off are left out: they change only what is shown of the run.
    """
    keys = [k for k in (*DEFAULTS, DEVICE) if k not in (*text.SAMPLING_KEYS, *interventions.KEYS)]
    return (*(st.session_state[k] for k in keys), text.text_signature(st.session_state[TASK]))


def build_specs() -> tuple[Task, list[RunSpec]]:
    """The task and one RunSpec per configuration from the current settings (ValueError if invalid)."""
    s = st.session_state
    task = text.user_task() if text.own_text_selected(s[TASK]) else load_task(s[TASK])
    base = task.default_model_config()
    arch = dict(n_layers=s[LAYERS], n_heads=s[HEADS], d_model=s[D_MODEL], d_ff=s[D_FF], dropout=s[DROPOUT])
    is_vit = isinstance(base, ViTConfig)
    llama = llama_block(task.family)
    if not is_vit:
        arch.update(norm_position=s[NORM], positional=s[POSITIONAL])
    if llama:
        arch.update(block_fields("llama", s[KV_HEADS]))
    train = default_train_config(
        task, steps=s[STEPS], batch_size=s[BATCH], lr=s[LR], seed=s[SEED], device=s[DEVICE], **cadence(s[STEPS])
    )
    model_a = replace(base, **arch)
    if not s[COMPARE]:
        return task, [RunSpec("A", model_a, train)]
    b_arch = dict(arch, n_layers=s[B_LAYERS], n_heads=s[B_HEADS])
    if llama:  # B keeps A's Llama block; its K/V heads are A's when they divide B's heads
        b_arch.update(n_kv_heads=math.gcd(s[KV_HEADS], s[B_HEADS]))
    elif not is_vit:
        b_arch.update(norm_position=s[B_NORM], positional=s[B_POSITIONAL])
    model_b = replace(base, **b_arch)
    return task, [
        RunSpec(f"A · {describe(model_a)}", model_a, train),
        RunSpec(f"B · {describe(model_b)}", model_b, train),
    ]


def cadence(steps: int) -> dict[str, int]:
    """Snapshot and evaluation intervals for a run of ``steps``.

    About 60 time-lapse frames per run, and an evaluation every 25 steps (every tenth of a short run, but not
    more often than every 5 steps: one evaluation costs about as much as a few training steps).
    """
    return {"snapshot_every": max(1, steps // SNAPSHOTS_PER_RUN), "eval_every": max(5, min(25, steps // 10))}


def describe(config: Any) -> str:
    """A short description of an architecture for legends, e.g. "2 layers, 4 heads, sinusoidal"."""
    words = (
        f"{config.n_layers} layer{'s' if config.n_layers != 1 else ''}, {config.n_heads} "
        f"head{'s' if config.n_heads != 1 else ''}"
    )
    if getattr(config, "norm_type", "layernorm") == "rmsnorm":
        kv = config.n_kv_heads or config.n_heads
        words += f", Llama block ({kv} K/V head{'s' if kv != 1 else ''})"
    elif not isinstance(config, ViTConfig):
        spec = positional_kind(config.positional)
        positions = "no positions" if spec.acts == "nothing" else f"{spec.title} positions"
        words += f", {positions}, {config.norm_position}-norm"
    return words


def guard(task: Task, specs: list[RunSpec]) -> GuardResult:
    """The resource guard's verdict for the largest configuration, counted once per lane."""
    process = default_place().overhead_bytes
    results = [_verdict(task.name, s.model_config, s.train_config, len(specs), process) for s in specs]
    return max(results, key=lambda r: (not r.ok, r.memory_bytes))


@functools.lru_cache(maxsize=256)
def _verdict(task_name: str, model_config: Any, train_config: Any, lanes: int, process_bytes: int = 0) -> GuardResult:
    """check_budget for a built-in task (a pure function of frozen settings, so it is remembered); its trainer
    process, if runs train in one, counts too."""
    # Estimate with the threads the page trains with, not all of the host's.
    return check_budget(
        load_task(task_name), model_config, train_config, lanes=lanes, threads=LIVE_THREADS, process_bytes=process_bytes
    )
