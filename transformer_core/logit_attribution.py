"""Direct logit attribution (Elhage et al. 2021): one run's logit difference split into what each part wrote.

In a pre-norm transformer the residual stream at the end is a sum: the embeddings, then each attention head's
output ``z_h · W_O^h``, each output projection's bias and each MLP's output. The final norm is linear in that sum
once its scale (the division by the standard deviation, or the root mean square) is frozen at this run's value,
and so is the unembedding: each part's share of ``logit[answer] - logit[other]`` is its own term, and the terms
add up to the model's logit difference. Re-exported by :mod:`.patching`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .feed_forward import FeedForward, SwiGLU
from .interventions import _edits as head_edits
from .models import CausalLM
from .norms import RMSNorm
from .probes import probing, recorder
from .readout import readout
from .vit import VisionTransformer

__all__ = ["LogitAttribution", "direct_logit_attribution"]


@dataclass(frozen=True)
class LogitAttribution:
    """The parts of one logit difference; ``heads.sum() + mlps.sum() + rest == total`` (to rounding)."""

    heads: np.ndarray  # (L, H) each query head's z_h · W_O^h (no bias) at the position, read through the frozen norm
    mlps: np.ndarray  # (L,) each MLP's output (with its bias), read the same way
    rest: float  # the embeddings (token and position), the output projections' biases, the norm's shift, head bias
    total: float  # the model's own logit[answer] - logit[other]


def _head_and_norm(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    if isinstance(model, VisionTransformer):
        return model.head, model.norm
    if isinstance(model, CausalLM) and not isinstance(model.final_norm, nn.Identity):
        return model.lm_head, model.final_norm
    raise ValueError("Direct logit attribution reads pre-norm models whose output is a linear map of the final "
                     "norm (decoder-only models with norm_position='pre', GPT-2, Llama, Qwen2, ViT); "
                     f"{type(model).__name__} with its norms and head is not one.")


def _reading(norm: nn.Module, final: torch.Tensor, direction: torch.Tensor) -> tuple[torch.Tensor, float]:
    """The vector ``v`` with ``norm_frozen(c) · direction = c · v`` for any part ``c`` of ``final`` ``(C,)``, and the
    norm's shift ``β · direction``; the scale is frozen at ``final``'s value."""
    weight = norm.weight.double() if norm.weight is not None else torch.ones_like(final)
    if isinstance(norm, RMSNorm):  # c / sqrt(mean(final²) + eps) · g
        return weight * direction / torch.sqrt(final.pow(2).mean() + norm.eps), 0.0
    if not isinstance(norm, nn.LayerNorm):
        raise ValueError(f"Direct logit attribution cannot freeze a {type(norm).__name__}.")
    var = (final - final.mean()).pow(2).mean()
    scaled = weight * direction / torch.sqrt(var + norm.eps)  # (C,)
    shift = 0.0 if norm.bias is None else float(norm.bias.double() @ direction)
    return scaled - scaled.mean(), shift  # (c - mean(c)) · s = c · (s - mean(s)): centring moves onto v


def _down(ff: nn.Module) -> nn.Linear:
    if isinstance(ff, FeedForward):
        return ff.linear2
    if isinstance(ff, SwiGLU):
        return ff.down_proj
    raise ValueError(f"Direct logit attribution does not know the down projection of {type(ff).__name__}.")


def _check_class(name: str, value, n: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < n:
        raise ValueError(f"{name}={value!r} must be an output index from 0 to {n - 1}.")
    return int(value)


@torch.no_grad()
def direct_logit_attribution(model: nn.Module, ids, answer: int, other: int, *,
                             position: int = -1) -> LogitAttribution:
    """Split ``logit[answer] - logit[other]`` at ``position`` of one run into heads, MLPs and the rest.

    Args:
        model: a pre-norm decoder-only model (GPT-2, Llama, Qwen2, one a task trained) or a ViT; not modified.
        ids: the text's token ids ``(T,)`` (a ViT's image ``(C, H, W)``).
        answer, other: the two tokens (classes) compared.
        position: the position read (negative counts from the end); a ViT reads its CLS token.

    Raises:
        ValueError: for another kind of model, a bad input, token or position.
    """
    unembed, norm = _head_and_norm(model)
    run = readout(model, ids)
    p = run.check_position(position)
    layers = list(model.blocks)
    points = {"embed": (layers[0], "resid_pre"), "final": (layers[-1], "resid_post"),
              **{("hidden", i): (b.ff, "hidden") for i, b in enumerate(layers)}}
    store: dict = {}
    with head_edits({b.self_attn: recorder(store, i) for i, b in enumerate(layers)}), \
            probing({point: recorder(store, key) for key, point in points.items()}):
        out = run.outputs(1, position)[0].double()  # (V,)
    answer, other = (_check_class(n, v, out.numel()) for n, v in (("answer", answer), ("other", other)))
    w = unembed.weight[[answer, other]].double()  # (2, C): only the two rows, not a large vocabulary
    direction = w[0] - w[1]  # (C,)
    v, shift = _reading(norm, store["final"][0, p].double(), direction)  # (C,)
    heads, mlps = np.zeros((len(layers), layers[0].self_attn.n_heads)), np.zeros(len(layers))
    rest = float(store["embed"][0, p].double() @ v) + shift
    if unembed.bias is not None:
        rest += float(unembed.bias[answer] - unembed.bias[other])
    for i, block in enumerate(layers):
        attn, down = block.self_attn, _down(block.ff)
        # Each weight matrix meets v once (a matrix-vector product in its own precision), then float64.
        per_head = (attn.out_proj.weight.T @ v.to(attn.out_proj.weight)).double()  # (H·D,)
        z = store[i][0, :, p].double()  # (H, D) each query head's output at the position
        heads[i] = (z * per_head.view(attn.n_heads, attn.head_dim)).sum(-1).cpu().numpy()  # (H,)
        if attn.out_proj.bias is not None:
            rest += float(attn.out_proj.bias.double() @ v)
        mlps[i] = float(store["hidden", i][0, p].double() @ (down.weight.T @ v.to(down.weight)).double())
        if down.bias is not None:
            mlps[i] += float(down.bias.double() @ v)
    return LogitAttribution(heads, mlps, float(rest), float(out[answer] - out[other]))
