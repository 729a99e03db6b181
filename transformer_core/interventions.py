"""Interventions: switch attention heads off, score how much each head matters, and read the logit lens.

A heatmap shows where a head looks, not whether the model needs it. Three classic experiments answer that:

- :func:`ablate_heads` switches heads off inside a ``with`` block: a head's output (its slice of the
  concatenated heads, before the output projection W_O) becomes zero (``mode="zero"``) or its mean over a
  reference batch (``mode="mean"``, means from :func:`head_means`).
- :func:`head_importance` ablates every head alone and reports how much a score changes, as a
  ``(layers, heads)`` map per attention stack.
- :func:`logit_lens` (nostalgebraist 2020) reads a decoder-only model's residual stream after each layer through
  the final norm and the unembedding: what the model would predict if it stopped there.

Heads are named by :data:`HeadRef` ``(stack, layer, head)``: ``stack`` is a key of the attention dict the model
returns from ``forward_with_attention`` ("encoder", "decoder" or "cross"), layer and head count from 0.

Nothing here changes the model: no weights are edited and no PyTorch hooks are registered. The switched-off heads
live in a context variable that ``MultiHeadAttention.forward`` reads through one small hook
(``head_edits.edit_heads``), so each thread sees only its own ablations and several threads may ablate different
heads of one shared model at the same time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn

from .attention import MultiHeadAttention
from .families import of_model
from .head_edits import HEAD_EDITS, HeadEdit
from .lens import LogitLens, logit_lens

HeadRef = tuple[str, int, int]  # (stack, layer, head), e.g. ("cross", 1, 3); layer and head 0-based
MODES = ("zero", "mean")

__all__ = ["MODES", "HeadRef", "LogitLens", "ablate_heads", "all_heads", "attention_stacks", "head_importance",
           "head_means", "logit_lens"]


def attention_stacks(model: nn.Module) -> dict[str, list[MultiHeadAttention]]:
    """The attention modules of ``model`` per stack, in the order and with the keys of its attention dict, as its
    family (:mod:`.families`) lists them.

    Raises:
        ValueError: for a model that is not one of this package's transformers.
    """
    try:
        entry = of_model(model)
    except ValueError:
        raise ValueError(f"{type(model).__name__} is not a transformer of this package; its heads cannot be "
                         "ablated.") from None
    return entry.attention_modules(model)


def all_heads(model: nn.Module) -> list[HeadRef]:
    """Every head of ``model``, stack by stack, layer by layer."""
    return [(stack, layer, head) for stack, modules in attention_stacks(model).items()
            for layer, module in enumerate(modules) for head in range(module.n_heads)]


def _check_ref(stacks: Mapping[str, list[MultiHeadAttention]], ref: Any) -> HeadRef:
    if not isinstance(ref, tuple | list) or len(ref) != 3:
        raise ValueError(f"A head is named (stack, layer, head), e.g. ('decoder', 0, 1); got {ref!r}.")
    stack, layer, head = ref
    if stack not in stacks:
        raise ValueError(f"Unknown attention stack {stack!r}: this model has {', '.join(map(repr, stacks))}.")
    modules = stacks[stack]
    for name, value, count in (("layer", layer, len(modules)), ("head", head, modules[0].n_heads if modules else 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < count:
            raise ValueError(f"{name} {value!r} does not exist in the {stack} stack: it has {count} "
                             f"{name}s, numbered 0 to {count - 1}.")
    return str(stack), int(layer), int(head)


def _replacement(module: MultiHeadAttention, heads: list[int], fills: list[torch.Tensor]) -> HeadEdit:
    """The edit that puts ``fills[i]`` ``(D,)`` in place of head ``heads[i]``'s output at every position."""
    weight = module.out_proj.weight
    keep = torch.ones(module.n_heads, dtype=torch.bool, device=weight.device)
    keep[heads] = False
    fill = torch.zeros(module.n_heads, module.head_dim, dtype=weight.dtype, device=weight.device)
    fill[heads] = torch.stack(fills).to(fill)
    keep, fill = keep[None, :, None, None], fill[None, :, None, :]  # (1, H, 1, 1) and (1, H, 1, D)

    def edit(out: torch.Tensor) -> torch.Tensor:
        return torch.where(keep, out, fill.to(out.dtype))  # (B, H, T, D); out-of-place, so autograd still works

    return edit


def _fill(ref: HeadRef, module: MultiHeadAttention, mode: str, means: Mapping[HeadRef, torch.Tensor] | None):
    if mode == "zero":
        return torch.zeros(module.head_dim)
    if ref not in means:
        raise ValueError(f"No mean was recorded for head {ref}: the reference run passed to head_means never "
                         "reached it.")
    mean = torch.as_tensor(means[ref])
    if mean.shape != (module.head_dim,):
        raise ValueError(f"The mean of head {ref} has shape {tuple(mean.shape)}; expected ({module.head_dim},).")
    return mean


def _plan(model: nn.Module, heads: Iterable[HeadRef], mode: str,
          means: Mapping[HeadRef, torch.Tensor] | None) -> dict[nn.Module, HeadEdit]:
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} must be 'zero' or 'mean'.")
    if mode == "mean" and means is None:
        raise ValueError("mode='mean' needs the heads' mean outputs: pass means=head_means(model, run).")
    stacks = attention_stacks(model)
    chosen: dict[MultiHeadAttention, dict[int, torch.Tensor]] = {}
    for raw in heads:
        ref = _check_ref(stacks, raw)
        module = stacks[ref[0]][ref[1]]
        chosen.setdefault(module, {})[ref[2]] = _fill(ref, module, mode, means)
    return {m: _replacement(m, list(fills), list(fills.values())) for m, fills in chosen.items()}


def _compose(outer: HeadEdit, inner: HeadEdit) -> HeadEdit:
    return lambda out: inner(outer(out))


@contextmanager
def _edits(edits: Mapping[nn.Module, HeadEdit]) -> Iterator[None]:
    """Apply ``edits`` in this context only, on top of any edits already active (nested ``with`` blocks)."""
    merged = dict(HEAD_EDITS.get() or {})
    for module, edit in edits.items():
        merged[module] = _compose(merged[module], edit) if module in merged else edit
    token = HEAD_EDITS.set(merged)
    try:
        yield
    finally:
        HEAD_EDITS.reset(token)


@contextmanager
def ablate_heads(model: nn.Module, heads: Iterable[HeadRef], mode: str = "zero",
                 means: Mapping[HeadRef, torch.Tensor] | None = None) -> Iterator[None]:
    """Switch ``heads`` of ``model`` off for the forward passes run inside the ``with`` block.

    Args:
        model: one of this package's transformers (text, ViT, BERT, pretrained GPT-2); it is not modified.
        heads: the heads to switch off, as ``(stack, layer, head)``.
        mode: ``"zero"`` replaces each head's output by zeros; ``"mean"`` by its mean output on a reference batch.
        means: for ``mode="mean"``, the result of :func:`head_means`.

    Raises:
        ValueError: for an unknown stack, layer or head, an unknown mode, or a missing mean.

    The ablation belongs to the current thread (and asyncio task) only; leaving the block restores the model's
    behaviour exactly, also when the block raises.
    """
    with _edits(_plan(model, heads, mode, means)):
        yield


def _recorder(sums: dict[nn.Module, list], module: nn.Module) -> HeadEdit:
    def record(out: torch.Tensor) -> torch.Tensor:
        total = out.detach().sum(dim=(0, 2), dtype=torch.float64)  # (H, D)
        entry = sums.setdefault(module, [0.0, 0])
        entry[0] = entry[0] + total
        entry[1] += out.size(0) * out.size(2)
        return out

    return record


def head_means(model: nn.Module, run: Callable[[nn.Module], Any]) -> dict[HeadRef, torch.Tensor]:
    """Each head's mean output over a reference batch, for ``ablate_heads(..., mode="mean")``.

    ``run(model)`` is called once and may run any forward passes (a batch, a greedy decode); every head output
    ``(B, H, T, D)`` they produce is averaged over the batch and the query positions, padding positions included
    (pass a batch without padding for a clean mean). Heads the run never reaches are left out.

    Returns:
        ``(stack, layer, head)`` -> mean output ``(D,)`` in the dtype and on the device of the model's weights.
    """
    stacks = attention_stacks(model)
    sums: dict[nn.Module, list] = {}
    with _edits({m: _recorder(sums, m) for modules in stacks.values() for m in modules}), torch.no_grad():
        run(model)
    out = {}
    for stack, modules in stacks.items():
        for layer, module in enumerate(modules):
            if module in sums and sums[module][1] > 0:
                mean = (sums[module][0] / sums[module][1]).to(module.out_proj.weight)  # (H, D)
                out.update({(stack, layer, h): mean[h] for h in range(module.n_heads)})
    return out


def head_importance(model: nn.Module, score: Callable[[nn.Module], float], *, heads: Iterable[HeadRef] | None = None,
                    mode: str = "zero", means: Mapping[HeadRef, torch.Tensor] | None = None,
                    progress: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
    """How much ``score(model)`` changes when each head is switched off alone.

    Args:
        score: the quantity to watch, e.g. ``lambda m: task.evaluate(m, seed=0)["accuracy"]`` or a text's loss.
        heads: the heads to try (default: all); the others are NaN in the maps.
        mode, means: as in :func:`ablate_heads`.
        progress: called with ``(done, total)`` after each ablation.

    Returns:
        stack -> ``(layers, heads)`` float array of ``score with the head off - score with every head on``: for
        an accuracy, a large negative value marks a head the model needs; for a loss, a large positive one.
    """
    stacks = attention_stacks(model)
    refs = list(dict.fromkeys(_check_ref(stacks, r) for r in (all_heads(model) if heads is None else heads)))
    maps = {s: np.full((len(ms), ms[0].n_heads if ms else 0), np.nan) for s, ms in stacks.items()}
    with torch.no_grad():
        base = float(score(model))
        for i, ref in enumerate(refs):
            with ablate_heads(model, [ref], mode, means):
                maps[ref[0]][ref[1], ref[2]] = float(score(model)) - base
            if progress is not None:
                progress(i + 1, len(refs))
    return maps
