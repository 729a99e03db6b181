"""Attention Lab: the data the page draws, computed from the random model or from one trained in this session.

:func:`run_random` and :func:`run_trained` return a :class:`LabRun`: the tokens and every intermediate of every
layer as NumPy arrays (computed by ``explorer.lab.internals`` and ``explorer.lab.block_steps``), so the views and
charts draw from plain arrays and a run can be cached for every visitor. :func:`trained_input` encodes a text in a
trained model's task vocabulary, for this module and for the lenses that run that model themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import streamlit as st
import torch

from explorer.i18n import _, num
from explorer.lab.block_steps import MLPSteps, walk_blocks
from explorer.lab.internals import AttentionSteps, lab_stack, trained_stack
from explorer.lab.kv_groups import kv_heads_of
from explorer.lab.subjects import random_lab
from explorer.lab.text_input import MAX_TOKENS, LabInput, encode_for_task, task_vocabulary
from transformer_core import positional
from transformer_core.families import family
from ui.common import state


@dataclass(frozen=True)
class LabRun:
    """Everything the page draws: tokens and, per layer, every intermediate as NumPy arrays."""

    tokens: tuple[str, ...]  # one label per position (padding and CLS included)
    steps: list[dict[str, np.ndarray | None]]  # per layer: AttentionSteps fields as arrays
    n_heads: int
    d_model: int
    norm_first: bool  # LayerNorm before attention (pre-norm)
    mask: str  # "none", "causal", "padding" or a description of a trained model's mask
    rotary: bool  # rotary positions inside attention
    title: str  # where the weights come from
    valid: tuple[bool, ...] | None = None  # real tokens (True) and padding (False), for the padding mask
    notices: list[str] = field(default_factory=list)
    embedding: str = ""  # LaTeX of layer 1's input when it is not E√d_model + PE (pretrained models)
    embedding_note: str = ""  # what the letters of ``embedding`` stand for
    kv_heads: int = 0  # key/value heads the query heads share (grouped-query attention); 0: one per query head
    rms_norm: bool = False  # the blocks' norm is RMSNorm (Llama family), not LayerNorm
    mlp: list[dict[str, object]] = field(default_factory=list)  # per layer: MLPSteps fields as arrays ({}: not kept)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def weights(self) -> np.ndarray:
        """All attention weights ``(L, H, T, S)``."""
        return np.stack([s["weights"] for s in self.steps])


def _arrays(steps: AttentionSteps | MLPSteps) -> dict[str, np.ndarray | None]:
    out = {}
    for name, value in vars(steps).items():
        if isinstance(value, torch.Tensor):
            out[name] = value.detach().float().cpu().numpy() if value.dtype != torch.bool else value.cpu().numpy()
        elif name != "rotary":
            out[name] = value
    return out


@st.cache_data(max_entries=64, show_spinner=False)
def run_random(text: str, kind: str, d_model: int, heads: int, layers: int, mask: str, seed: int) -> LabRun:
    """The lab's random encoder on ``text`` (cached: a pure function of its arguments)."""
    lab, config, model = random_lab(text, kind, d_model=d_model, heads=heads, layers=layers, mask=mask, seed=seed)
    notices = lab.notices()
    pre_norm, rotary = config.pre_norm, positional.get(config.positional).acts == "rotate"
    if model is None:
        return LabRun((), [], heads, d_model, pre_norm, mask, rotary, "random", notices=notices)
    with torch.no_grad():
        steps = walk_blocks(lab_stack(model, lab.ids, lab.tokens, mask, lab.valid))
    return LabRun(lab.tokens, [_arrays(s.attention) for s in steps], heads, d_model, pre_norm, mask, rotary,
                  f"random weights, seed {seed}", lab.valid, notices, mlp=[_arrays(s.mlp) for s in steps])


@st.cache_resource(max_entries=8, show_spinner=False)
def _task(name: str, options: tuple[tuple[str, object], ...]) -> object:
    """A built-in task, built once per name and options (the lab only reads its vocabulary)."""
    from transformer_core.tasks import get_task

    return get_task(name, **dict(options))


def trained_input(entry: state.TrainedModel, text: str) -> tuple[LabInput, object, dict[str, int]]:
    """``text`` encoded for a model trained in this session: its tokens, its task and the task's vocabulary.

    Raises:
        ValueError: with a friendly message when the task is not available or its vocabulary does not fit.
    """
    options = tuple(sorted((getattr(entry, "task_options", None) or {}).items()))
    try:
        task = getattr(entry, "task", None) or _task(entry.task_name, options)
    except (ImportError, ValueError, TypeError) as err:
        raise ValueError(_("The {task} task is not available here ({error}).").format(task=entry.task_title,
                                                                                       error=err)) from err
    vocab = task_vocabulary(task) or {}
    if vocab and max(vocab.values()) + 1 != entry.config.vocab_size:
        raise ValueError(_("The {task} model knows {n} tokens but the task's standard vocabulary has {m}: it was "
                           "trained with other options.").format(task=entry.task_title, n=num(entry.config.vocab_size),
                                                                 m=num(max(vocab.values()) + 1)))
    cls = 1 if getattr(entry.model, "pool", None) == "cls" else 0
    lab = encode_for_task(task, text, max_tokens=min(MAX_TOKENS, entry.config.max_len - cls))
    return lab, task, vocab


def run_trained(entry: state.TrainedModel, text: str) -> LabRun:
    """A model trained in this session on ``text`` encoded in its task's vocabulary.

    Raises:
        ValueError: with a friendly message when the text cannot be encoded for this model.
    """
    lab, _task_used, vocab = trained_input(entry, text)
    known = "".join(sorted(vocab))
    notices = lab.notices()
    if lab.empty and text.strip():
        shown = known if len(known) <= 40 else known[:40] + "…"
        notices.append(_("The {task} model reads only these characters: {chars}").format(task=entry.task_title,
                                                                                          chars=shown))
    config = entry.config
    mask = family(entry.family).mask_title
    if lab.empty:
        return LabRun((), [], config.n_heads, config.d_model, config.pre_norm, mask, False, entry.task_title,
                      notices=notices)
    model = entry.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            stack = trained_stack(model, lab.ids, lab.tokens)
            steps = walk_blocks(stack)
    finally:
        model.train(was_training)
    rotary = positional.get(config.positional).acts == "rotate"
    return LabRun(stack.labels, [_arrays(s.attention) for s in steps], config.n_heads, config.d_model,
                  config.pre_norm, mask, rotary,
                  _("{task}, trained {steps} steps").format(task=entry.task_title, steps=num(entry.step)), None,
                  notices,
                  kv_heads=kv_heads_of(config), rms_norm=getattr(config, "norm_type", "layernorm") == "rmsnorm",
                  mlp=[_arrays(s.mlp) for s in steps])
