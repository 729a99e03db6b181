"""The second half of a block, step by step: residual add → norm → up projection → activation → down projection →
residual add, computed with the block's own weights.

:func:`mlp_walkthrough` replays the feed-forward half of a
:class:`~transformer_core.blocks.SelfAttentionBlock` after its attention has run (GELU/ReLU MLP or SwiGLU,
pre-norm or post-norm) and keeps every intermediate; :func:`walk_blocks` replays a whole self-attention stack,
attention (:func:`~explorer.lab.internals.attention_walkthrough`) and MLP, layer by layer. Each layer's
``MLPSteps.output`` is the block's output, so a student can follow one token from the text to the last layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from explorer.i18n import N_
from explorer.lab.internals import AttentionSteps, attention_walkthrough
from transformer_core.families import SelfAttentionStack
from transformer_core.feed_forward import SwiGLU, activation_function
from transformer_core.norms import RMSNorm

ACTIVATIONS = {"relu": N_("ReLU"), "gelu": N_("GELU"), "gelu_tanh": N_("GELU (tanh)"),  # how the page names them
               "swiglu": N_("SiLU")}


@dataclass(frozen=True)
class MLPSteps:
    """Every intermediate of one block's feed-forward half on one sequence (the batch dimension dropped)."""

    residual: torch.Tensor  # (T, C) the block's input (the residual stream before attention)
    attn_out: torch.Tensor  # (T, C) the attention's output (after W_O)
    added: torch.Tensor  # (T, C) residual + attention output (the first residual add)
    normed: torch.Tensor  # (T, C) the feed-forward network's input: norm2(added) pre-norm, norm1(added) post-norm
    norm_weight: torch.Tensor | None  # (C,) the norm's scale g
    norm_bias: torch.Tensor | None  # (C,) the norm's shift b (LayerNorm), None for RMSNorm
    w_up: torch.Tensor  # (C, F) up projection, so that up = normed @ w_up + b_up (SwiGLU's up_proj)
    b_up: torch.Tensor | None  # (F,)
    up: torch.Tensor  # (T, F) the up projection (before the activation; SwiGLU: the ungated branch)
    w_gate: torch.Tensor | None  # (C, F) SwiGLU's gate projection, else None
    gate: torch.Tensor | None  # (T, F) SwiGLU's gate before SiLU, else None
    activated: torch.Tensor  # (T, F) activation(up), or SwiGLU's SiLU(gate)
    hidden: torch.Tensor  # (T, F) the neurons: the down projection's input (= activated, or SiLU(gate) · up)
    w_down: torch.Tensor  # (F, C) down projection, so that down = hidden @ w_down + b_down
    b_down: torch.Tensor | None  # (C,)
    down: torch.Tensor  # (T, C) the feed-forward network's output
    added2: torch.Tensor  # (T, C) the second residual add: (pre-norm) added + down, (post-norm) normed + down
    output: torch.Tensor  # (T, C) the block's output: added2 pre-norm, norm2(added2) post-norm
    norm_first: bool  # pre-norm block (GPT-2, Llama) or post-norm (2017 Transformer, BERT)
    rms_norm: bool  # the norm is RMSNorm (no mean, no shift)
    activation: str  # "relu", "gelu", "gelu_tanh" or "swiglu"


def _norm_parts(norm: nn.Module) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    return getattr(norm, "weight", None), getattr(norm, "bias", None)


def _t(linear: nn.Linear) -> torch.Tensor:
    return linear.weight.t()  # nn.Linear keeps (out, in); the page writes x @ W, so (in, out)


@torch.no_grad()
def mlp_walkthrough(block: nn.Module, residual: torch.Tensor, attn_out: torch.Tensor) -> MLPSteps:
    """The feed-forward half of ``block`` after its attention gave ``attn_out`` on ``residual``.

    Args:
        block: a :class:`~transformer_core.blocks.SelfAttentionBlock` in evaluation mode (only read).
        residual: the block's input, ``(T, C)`` or ``(1, T, C)``.
        attn_out: its attention's output (after W_O), the same shape.

    Returns:
        :class:`MLPSteps`; ``output`` equals the block's own output.
    """
    residual, attn_out = residual.reshape(-1, residual.size(-1)), attn_out.reshape(-1, attn_out.size(-1))  # (T, C)
    added = residual + attn_out
    ff_norm, out_norm = (block.norm2, None) if block.norm_first else (block.norm1, block.norm2)
    normed = ff_norm(added)
    ff = block.ff
    if isinstance(ff, SwiGLU):
        gate, up = ff.gate_proj(normed), ff.up_proj(normed)  # (T, F) each
        activated = F.silu(gate)
        hidden = activated * up
        w_up, b_up, w_gate, w_down, b_down, kind = (_t(ff.up_proj), ff.up_proj.bias, _t(ff.gate_proj),
                                                     _t(ff.down_proj), ff.down_proj.bias, "swiglu")
        down = ff.down_proj(hidden)
    else:
        gate = w_gate = None
        up = ff.linear1(normed)  # (T, F)
        activated = hidden = activation_function(ff.activation)(up)
        w_up, b_up, w_down, b_down, kind = _t(ff.linear1), ff.linear1.bias, _t(ff.linear2), ff.linear2.bias, \
            ff.activation
        down = ff.linear2(hidden)
    added2 = (added if block.norm_first else normed) + down
    output = added2 if out_norm is None else out_norm(added2)
    weight, bias = _norm_parts(ff_norm)
    return MLPSteps(residual=residual, attn_out=attn_out, added=added, normed=normed, norm_weight=weight,
                    norm_bias=bias, w_up=w_up, b_up=b_up, up=up, w_gate=w_gate, gate=gate, activated=activated,
                    hidden=hidden, w_down=w_down, b_down=b_down, down=down, added2=added2, output=output,
                    norm_first=block.norm_first, rms_norm=isinstance(ff_norm, RMSNorm), activation=kind)


@dataclass(frozen=True)
class BlockSteps:
    """One layer replayed: its attention, then its MLP."""

    attention: AttentionSteps
    mlp: MLPSteps


@torch.no_grad()
def walk_blocks(stack: SelfAttentionStack) -> list[BlockSteps]:
    """Replay every block of ``stack`` in full; one :class:`BlockSteps` per layer, first layer first.

    Each layer's input is the previous layer's ``mlp.output``: the replay never calls the blocks' own forward, so
    what the page shows is the whole computation (tests check it against the blocks).
    """
    x, steps = stack.x.reshape(-1, stack.x.size(-1)), []  # (T, C)
    for block in stack.blocks:
        attn_in = block.norm1(x) if block.norm_first else x
        attn = attention_walkthrough(block.self_attn, attn_in, stack.mask, is_causal=stack.is_causal,
                                     positions=stack.positions)
        mlp = mlp_walkthrough(block, x, attn.output)
        steps.append(BlockSteps(attn, mlp))
        x = mlp.output
    return steps
