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
import torch.nn.functional as F
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
                     f"norm (decoder-only models with norm='pre', GPT-2, Llama, Qwen2, ViT); {type(model).__name__}"
                     " with its norms and head is not one.")


def _reader(norm: nn.Module, final: torch.Tensor, direction: torch.Tensor):
    """``c -> norm_frozen(c) · direction`` for parts ``c`` ``(..., C)`` of ``final`` ``(C,)``; and the norm's shift."""
    weight = norm.weight.double() if norm.weight is not None else torch.ones_like(final)
    if isinstance(norm, RMSNorm):
        scale, center, shift = weight / torch.sqrt(final.pow(2).mean() + norm.eps), False, 0.0
    elif isinstance(norm, nn.LayerNorm):
        var = (final - final.mean()).pow(2).mean()
        scale, center = weight / torch.sqrt(var + norm.eps), True
        shift = 0.0 if norm.bias is None else float(norm.bias.double() @ direction)
    else:
        raise ValueError(f"Direct logit attribution cannot freeze a {type(norm).__name__}.")

    def read(c: torch.Tensor) -> torch.Tensor:
        c = c - c.mean(dim=-1, keepdim=True) if center else c
        return (c * scale) @ direction

    return read, shift


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
    read, shift = _reader(norm, store["final"][0, p].double(), direction)
    heads, mlps = np.zeros((len(layers), layers[0].self_attn.n_heads)), np.zeros(len(layers))
    rest = read(store["embed"][0, p].double()) + shift
    if unembed.bias is not None:
        rest = rest + (unembed.bias[answer] - unembed.bias[other]).double()
    for i, block in enumerate(layers):
        attn = block.self_attn
        z = store[i][0, :, p].double()  # (H, D) each query head's output at the position
        w_o = attn.out_proj.weight.double().view(-1, attn.n_heads, attn.head_dim)  # (C, H, D)
        heads[i] = read(torch.einsum("hd,chd->hc", z, w_o)).cpu().numpy()  # (H,)
        if attn.out_proj.bias is not None:
            rest = rest + read(attn.out_proj.bias.double())
        down = _down(block.ff)
        mlp = F.linear(store["hidden", i][0, p].double(), down.weight.double(),
                       None if down.bias is None else down.bias.double())  # (C,)
        mlps[i] = float(read(mlp))
    return LogitAttribution(heads, mlps, float(rest), float(out[answer] - out[other]))
