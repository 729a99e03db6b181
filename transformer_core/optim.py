"""AdamW (Loshchilov & Hutter 2019) in a few lines: the same arithmetic as ``torch.optim.AdamW``.

Why not ``torch.optim.AdamW`` itself? Building any ``torch.optim`` optimiser imports the compiler stack
(``torch._dynamo``, sympy, ...), which costs seconds of start-up and about 70 MB of memory — more than the small
models trained here. The update below is written out so students can read it; a test checks it step by step
against ``torch.optim.AdamW``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch


class AdamW:
    """Adam with decoupled weight decay.

    Per parameter ``p`` with gradient ``g`` at step ``t``::

        p ← p · (1 − lr · weight_decay)
        m ← β1 · m + (1 − β1) · g            v ← β2 · v + (1 − β2) · g²
        p ← p − lr · (m / (1 − β1ᵗ)) / (√(v / (1 − β2ᵗ)) + eps)

    Args:
        param_groups: dicts with ``"params"`` and optionally ``"weight_decay"`` and ``"lr"``.
        lr: learning rate of groups that do not set their own (change ``group["lr"]`` to schedule it).
        betas: decay rates of the running mean of gradients and of squared gradients.
        eps: added to the denominator for numerical safety.
    """

    def __init__(self, param_groups: Iterable[dict[str, Any]], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.param_groups = [
            {"params": list(g["params"]), "lr": g.get("lr", lr), "weight_decay": g.get("weight_decay", 0.0)}
            for g in param_groups
        ]
        self.betas, self.eps = betas, eps
        self.state: dict[torch.Tensor, dict[str, Any]] = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of the previous step."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient."""
        beta1, beta2 = self.betas
        for group in self.param_groups:
            lr, decay = group["lr"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state.get(p)
                if state is None:
                    state = self.state[p] = {"step": 0, "exp_avg": torch.zeros_like(p),
                                             "exp_avg_sq": torch.zeros_like(p)}
                state["step"] += 1
                m, v, t = state["exp_avg"], state["exp_avg_sq"], state["step"]
                p.mul_(1 - lr * decay)
                m.lerp_(p.grad, 1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                denom = (v.sqrt() / math.sqrt(1 - beta2**t)).add_(self.eps)
                p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))
