"""Which input tokens made the model say that: gradient × input and integrated gradients (Sundararajan et al. 2017).

The scalar explained is one output: the logit of ``target`` at ``position`` for a text model (a decoder position of
the encoder–decoder; BERT's masked position), the class logit of a ViT, output ``target`` of a sequence regressor.
The input is the rows of the token-embedding table the text looks up, before positions are added or anything is
scaled (a ViT's patch embeddings), entering the model through a context-local probe (:mod:`.probes`); the model is
not changed and no gradient reaches its parameters.

- Gradient × input: ``Σ_c ∂f/∂x[t, c] · x[t, c]`` for each token ``t``, one forward and backward pass.
- Integrated gradients: the same product, with the gradient averaged along the straight path from all-zero rows
  (the baseline) to the real ones, at ``steps`` evenly spaced points (the midpoint rule), run as batches. Its values
  sum to ``f(x) - f(0)`` when the path is sampled finely enough; :attr:`Attribution.gap` says how far they are.
  Through GPT-2 and BERT (positions added after the rows) 32 points leave a gap well under 1%. Through a model
  whose first norm is an RMSNorm (Llama, Qwen2) the rows near zero make ``x / sqrt(mean(x²) + eps)`` switch on
  abruptly, the gradient there spikes by orders of magnitude and no even spacing (nor a quadratic or logarithmic
  one, measured) samples it well: the gap is then large, and it is reported, not hidden.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .probes import probing
from .readout import Readout, readout

METHODS = ("grad_x_input", "integrated_gradients")
TOKEN_ROWS_PER_BATCH = 512  # copies x tokens run at once along the path (bounds memory on long texts)

__all__ = ["METHODS", "Attribution", "path_points", "token_attributions"]


@dataclass(frozen=True)
class Attribution:
    """One value per input token: how much it moved the explained output."""

    values: np.ndarray  # (N,) float64: per token (per patch for a ViT); source tokens, then target tokens (enc–dec)
    method: str  # "grad_x_input" or "integrated_gradients"
    output: float  # f(x): the explained output with the real input
    baseline_output: float | None  # f(0): with all-zero rows (integrated gradients only)
    steps: int  # points along the path (1 for gradient × input)
    n_source: int = 0  # encoder–decoder: how many of ``values`` belong to the source tokens; else 0

    @property
    def gap(self) -> float | None:
        """Completeness gap ``Σ values - (f(x) - f(0))`` of integrated gradients (None for gradient × input)."""
        if self.baseline_output is None:
            return None
        return float(self.values.sum() - (self.output - self.baseline_output))

    @property
    def source(self) -> np.ndarray:
        """The encoder–decoder's values over its source tokens (empty for other models)."""
        return self.values[:self.n_source]

    @property
    def target(self) -> np.ndarray:
        """The values over the tokens the output reads directly (the decoder's, for the encoder–decoder)."""
        return self.values[self.n_source:]


def path_points(steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The midpoint rule on the path: ``α = (k + ½) / steps`` for ``k < steps``, each with weight ``1 / steps``.

    The ends are left out: at ``α = 0`` a model with RMSNorm has its largest gradient, which one end point would
    weigh far beyond its share of the path.
    """
    alphas = (torch.arange(steps, dtype=torch.float64) + 0.5) / steps
    return alphas, torch.full((steps,), 1.0 / steps, dtype=torch.float64)


def _check_target(target, n: int) -> None:
    if isinstance(target, bool) or not isinstance(target, int | np.integer) or not 0 <= target < n:
        raise ValueError(f"target={target!r} must be an output index from 0 to {n - 1}.")


def _gradients(run: Readout, alphas: torch.Tensor, target: int, position: int,
               progress: Callable[[int, int], None] | None, batch_points: int | None = None):
    """The output at ``α · rows`` for each ``α``, ``(K,)``, and its gradients w.r.t. each stream's scaled rows,
    ``(K, N, C)`` per stream."""
    outs, grads = [], [[] for _ in run.rows]
    chunk = batch_points or max(1, TOKEN_ROWS_PER_BATCH // sum(run.lengths))
    dtype = run.rows[0].dtype
    for start in range(0, alphas.numel(), chunk):
        a = alphas[start:start + chunk].to(dtype=dtype, device=run.rows[0].device)  # (k,)
        scaled = [(a[:, None, None] * r[None]).requires_grad_() for r in run.rows]  # (k, N, C) leaves
        probes = {point: (lambda x, s=s: s.to(x.dtype)) for point, s in zip(run.points, scaled, strict=True)}
        with probing(probes), torch.enable_grad():
            full = run.outputs(a.numel(), position)  # (k, V)
            _check_target(target, full.size(-1))
            out = full[:, target]  # (k,)
            parts = torch.autograd.grad(out.sum(), scaled)
        outs.append(out.detach().double())
        for store, g in zip(grads, parts, strict=True):
            store.append(g.detach().double())
        if progress is not None:
            progress(start + a.numel(), alphas.numel())
    return torch.cat(outs), [torch.cat(g) for g in grads]


def _ends(run: Readout, position: int) -> torch.Tensor:
    """The outputs at the baseline (all-zero rows) and at the real rows, ``(2, V)``."""
    probes = {point: (lambda x, r=r: torch.stack([torch.zeros_like(r), r]).to(x.dtype))
              for point, r in zip(run.points, run.rows, strict=True)}
    with probing(probes), torch.no_grad():
        return run.outputs(2, position).double()


def token_attributions(model: nn.Module, ids, target: int, *, position: int = -1,
                       method: str = "grad_x_input", steps: int = 32,
                       progress: Callable[[int, int], None] | None = None,
                       batch_points: int | None = None) -> Attribution:
    """Attribute one output of ``model`` on ``ids`` to its input tokens.

    Args:
        model: any transformer of this package (GPT-2, Llama/Qwen2, BERT, ViT, the models tasks train); use eval
            mode. It is not modified.
        ids: the text's token ids ``(T,)``; the encoder–decoder's ``(source ids, target ids)``; a ViT's image
            ``(C, H, W)``.
        target: the token whose logit is explained (a class for a ViT, an output index for a regressor).
        position: the position read (negative counts from the end); BERT: the masked position; the
            encoder–decoder: a decoder position. Ignored by a ViT (its CLS token) and a regressor.
        method: ``"grad_x_input"`` or ``"integrated_gradients"``.
        steps: integrated gradients' points along the path (at least 1); 32 by default.
        progress: called with ``(points done, points)`` after each batch of points; raise from it to stop.
        batch_points: points run as one batch (None: as many as keep a batch under ``TOKEN_ROWS_PER_BATCH``
            token rows); fewer make ``progress`` come more often, e.g. for a progress bar that can be stopped.

    Raises:
        ValueError: for an unknown method, too few steps, an unreadable input, a bad target or position.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} must be one of {', '.join(map(repr, METHODS))}.")
    if method == "integrated_gradients" and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ValueError(f"steps={steps!r}: integrated gradients needs a whole number of points, at least 1.")
    if batch_points is not None and (isinstance(batch_points, bool) or not isinstance(batch_points, int)
                                     or batch_points < 1):
        raise ValueError(f"batch_points={batch_points!r} must be a whole number of points, at least 1.")
    run = readout(model, ids)
    run.check_position(position)
    ig = method == "integrated_gradients"
    alphas, weights = path_points(steps) if ig else (torch.ones(1, dtype=torch.float64),) * 2
    outs, grads = _gradients(run, alphas, target, position, progress, batch_points)
    ends = _ends(run, position)[:, target] if ig else torch.stack([outs[0], outs[0]])  # f(0), f(x)
    values = [torch.einsum("k,knc,nc->n", weights.to(g.device), g, r.double())
              for g, r in zip(grads, run.rows, strict=True)]  # Σ over points and the model dimension
    return Attribution(
        values=torch.cat(values).cpu().numpy(), method=method, output=float(ends[1]),
        baseline_output=float(ends[0]) if ig else None, steps=int(alphas.numel()),
        n_source=run.lengths[0] if len(run.rows) == 2 else 0,
    )
