"""Where does the model decide? Activation patching and direct logit attribution.

Two texts that differ in a word (a *clean* and a *corrupt* one, the same number of tokens) give different answers.
Activation patching runs the corrupt text with one piece of the clean run put back and measures how much of the
clean answer returns (Meng et al. 2022, Wang et al. 2022):

- :func:`patch_residual`: the residual stream entering block ``l`` at position ``t``, for every ``(l, t)``;
- :func:`patch_heads`: one attention head's output (before W_O, at every position), for every query head.

Direct logit attribution (Elhage et al. 2021) splits one run's logit difference into what each head and each MLP
writes into the residual stream, read through the final norm with its scale frozen at this run's value, so the
parts add up exactly: :func:`direct_logit_attribution`.

The pieces are read and put back through context-local probe points (:mod:`.probes`, :mod:`.head_edits`); the model
is not changed and no PyTorch hook is registered. Each layer's patches run as one batch: the blocks before it run
once, and the stream entering it is copied once per patch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .interventions import _edits as head_edits
from .logit_attribution import LogitAttribution, direct_logit_attribution
from .models import Seq2SeqTransformer
from .probes import probing, recorder
from .readout import Readout, blocks, readout

Metric = Callable[[torch.Tensor], float]  # the output at the position read, (V,) -> one number
Progress = Callable[[int, int], None]  # (done, total); raise from it to stop a long run

__all__ = ["LogitAttribution", "Metric", "Patching", "direct_logit_attribution", "logit_difference", "patch_heads",
           "patch_residual"]


def logit_difference(answer: int, other: int) -> Metric:
    """``logits[answer] - logits[other]``: how much more the model favours ``answer`` than ``other``."""
    def metric(logits: torch.Tensor) -> float:
        return float(logits[answer] - logits[other])

    return metric


@dataclass(frozen=True)
class Patching:
    """The metric of every patched run, beside the two unpatched ones."""

    patched: np.ndarray  # (L, T) residual patching or (L, H) head patching: the metric of each patched corrupt run
    clean: float  # the metric of the clean run
    corrupt: float  # the metric of the corrupt run

    @property
    def restored(self) -> np.ndarray:
        """``(patched - corrupt) / (clean - corrupt)``: 1 where a patch brings the clean answer back, 0 where it
        changes nothing; all NaN when the two texts give the same metric (nothing to restore)."""
        span = self.clean - self.corrupt
        if abs(span) <= 1e-12 * max(1.0, abs(self.clean)):
            return np.full_like(self.patched, np.nan)
        return (self.patched - self.corrupt) / span


def _pair(model: nn.Module, clean_ids, corrupt_ids) -> tuple[Readout, Readout]:
    clean, corrupt = readout(model, clean_ids), readout(model, corrupt_ids)
    names = ("source", "target") if len(clean.lengths) == 2 else ("text",)
    for name, a, b in zip(names, clean.lengths, corrupt.lengths, strict=True):
        if a != b:
            raise ValueError(f"The clean {name} has {a} tokens and the corrupt {name} {b}: patching swaps position "
                             "for position, so both must have the same number of tokens.")
    return clean, corrupt


def _metrics(run: Readout, batch: int, position: int, metric: Metric) -> list[float]:
    out = run.outputs(batch, position)  # (B, V)
    return [float(metric(row)) for row in out]


def _record(run: Readout, position: int, metric: Metric, points: dict) -> tuple[float, dict]:
    """The metric of one unpatched run and the tensors seen at ``points`` (key -> probe point)."""
    store: dict = {}
    with probing({point: recorder(store, key) for key, point in points.items()}):
        value = _metrics(run, 1, position, metric)[0]
    return value, store


def _inside(model: nn.Module) -> bool:
    """Whether the copies may be made inside the forward pass, at the patched block (the blocks before it then run
    once); the encoder–decoder's two streams must keep one batch size, so its inputs are copied instead."""
    return not isinstance(model, Seq2SeqTransformer)


def patch_residual(model: nn.Module, clean_ids, corrupt_ids, metric: Metric, *, position: int = -1,
                   stack: str | None = None, progress: Progress | None = None) -> Patching:
    """Patch the residual stream entering each block at each position from the clean run into the corrupt one.

    Args:
        model: a decoder-only, encoder-only (BERT, regressor) or vision model of this package; not modified.
        clean_ids, corrupt_ids: two texts of the same length (token ids ``(T,)``), two images for a ViT, two
            ``(source, target)`` pairs for the encoder–decoder.
        metric: a function of the output at ``position`` ``(V,)``, e.g. :func:`logit_difference`.
        position: the position whose output the metric reads (BERT: the masked one; the encoder–decoder: a target
            position); ignored by ViT and regressor.
        stack: the encoder–decoder's stream to patch, ``"encoder"`` or ``"decoder"``; None for other models.
        progress: called with ``(layers done, layers)``.

    Returns:
        :class:`Patching` with ``patched`` ``(L, T)``; T counts the stream's positions (a ViT's CLS token first).

    Raises:
        ValueError: for texts of different lengths, a bad position or stack.
    """
    if stack == "cross":
        raise ValueError("stack='cross' names attention heads; the residual stream is 'encoder' or 'decoder'.")
    layers = blocks(model, "Residual patching", stack)
    inside = _inside(model)
    clean, corrupt = _pair(model, clean_ids, corrupt_ids)
    corrupt.check_position(position)
    with torch.no_grad():
        clean_value, seen = _record(clean, position, metric, {i: (b, "resid_pre") for i, b in enumerate(layers)})
        corrupt_value = _metrics(corrupt, 1, position, metric)[0]
        n = seen[0].size(1)
        rows = torch.arange(n)
        patched = np.zeros((len(layers), n))
        for i, block in enumerate(layers):
            def patch(x: torch.Tensor, src: torch.Tensor = seen[i][0]) -> torch.Tensor:
                # The blocks before run once; here the stream becomes T copies, copy t taking the clean stream
                # at position t: (1, T, C) -> (T, T, C).
                x = (x.expand(n, -1, -1) if inside else x).clone()
                at = rows.to(x.device)
                x[at, at] = src.to(x.dtype)
                return x

            with probing({(block, "resid_pre"): patch}):
                patched[i] = _metrics(corrupt, 1 if inside else n, position, metric)
            if progress is not None:
                progress(i + 1, len(layers))
    return Patching(patched, clean_value, corrupt_value)


def patch_heads(model: nn.Module, clean_ids, corrupt_ids, metric: Metric, *, position: int = -1,
                stack: str | None = None, progress: Progress | None = None) -> Patching:
    """Patch each query head's output (before W_O, at every position) from the clean run into the corrupt one.

    Arguments as :func:`patch_residual`; the encoder–decoder's ``stack`` may also be ``"cross"`` (the decoder's
    cross-attention heads). With grouped-query attention (Llama, Qwen2) every query head is patched on
    its own, though it shares its keys and values with its group.

    Returns:
        :class:`Patching` with ``patched`` ``(L, H)``.
    """
    layers = blocks(model, "Head patching", stack)
    attns = [block.cross_attn if stack == "cross" else block.self_attn for block in layers]
    inside = _inside(model)
    clean, corrupt = _pair(model, clean_ids, corrupt_ids)
    corrupt.check_position(position)
    store: dict = {}
    with torch.no_grad():
        with head_edits({a: recorder(store, a) for a in attns}):
            clean_value = _metrics(clean, 1, position, metric)[0]
        corrupt_value = _metrics(corrupt, 1, position, metric)[0]
        h = attns[0].n_heads
        own = torch.eye(h, dtype=torch.bool)[:, :, None, None]  # (H copies, H, 1, 1): copy h patches head h
        patched = np.zeros((len(attns), h))
        for i, (block, attn) in enumerate(zip(layers, attns, strict=True)):
            src = store[attn]  # (1, H, T, D)

            def patch(out: torch.Tensor, src: torch.Tensor = src) -> torch.Tensor:
                return torch.where(own.to(out.device), src.to(out.dtype), out)  # (H copies, H, T, D)

            # The blocks before run once; the stream entering this one becomes H copies: (1, T, C) -> (H, T, C).
            copies = {(block, "resid_pre"): lambda x: x.expand(h, -1, -1)} if inside else {}
            with probing(copies), head_edits({attn: patch}):
                patched[i] = _metrics(corrupt, 1 if inside else h, position, metric)
            if progress is not None:
                progress(i + 1, len(attns))
    return Patching(patched, clean_value, corrupt_value)
