"""The position-wise feed-forward networks a block can use, by name: the activation MLP and SwiGLU.

``"mlp"``: ``linear2(activation(linear1(x)))`` with ReLU (2017 paper) or GELU (GPT-2, BERT, ViT).
``"swiglu"`` (Shazeer 2020, "GLU Variants Improve Transformer"; Llama, Qwen, Mistral):
``down(silu(gate(x)) · up(x))``, a gated unit with three matrices; its hidden width is ``d_ff``. Config, blocks and
sizing ask :data:`FEED_FORWARDS` instead of testing names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .probes import probe

_ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2's "gelu_new"
}


def activation_function(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The element-wise non-linearity called ``name``: "relu", "gelu" or "gelu_tanh"."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation={name!r} is not one of {', '.join(_ACTIVATIONS)}.")
    return _ACTIVATIONS[name]


class FeedForward(nn.Module):
    """``linear2(dropout(activation(linear1(x))))``, applied to every position independently.

    Shape:
        ``(B, T, C)`` -> ``(B, T, C)`` with a hidden width ``d_ff``.
    """

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0, activation: str = "relu",
                 bias: bool = True) -> None:
        super().__init__()
        activation_function(activation)  # refuses an unknown name
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = probe(self, "hidden", _ACTIVATIONS[self.activation](self.linear1(x)))  # (B, T, d_ff)
        return self.linear2(self.dropout(hidden))


class SwiGLU(nn.Module):
    """``down_proj(dropout(silu(gate_proj(x)) · up_proj(x)))``: the gate decides, feature by feature, how much
    of the up-projection passes.

    Shape:
        ``(B, T, C)`` -> ``(B, T, C)`` with a hidden width ``d_ff``.
    """

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0, bias: bool = False) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = probe(self, "hidden", F.silu(self.gate_proj(x)) * self.up_proj(x))  # (B, T, d_ff)
        return self.down_proj(self.dropout(hidden))


@dataclass(frozen=True)
class FeedForwardKind:
    """One feed-forward network: its config name, how the app names it, and how it is built."""

    name: str  # the config value, e.g. "swiglu"
    title: str  # its name in a menu
    matrices: int  # weight matrices of width C x d_ff (sizing: 2 for the MLP, 3 for SwiGLU)
    uses_activation: bool  # whether the config's ``activation`` applies (SwiGLU's is always SiLU)
    build: Callable[..., nn.Module]  # (d_model, d_ff, *, dropout, activation, bias) -> the module
    types: tuple[type[nn.Module], ...]  # the module classes it builds (sizing counts them as feed-forward)


def _mlp(d_model: int, d_ff: int, *, dropout: float, activation: str, bias: bool) -> nn.Module:
    return FeedForward(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)


def _swiglu(d_model: int, d_ff: int, *, dropout: float, activation: str, bias: bool) -> nn.Module:
    return SwiGLU(d_model, d_ff, dropout=dropout, bias=bias)


FEED_FORWARDS: dict[str, FeedForwardKind] = {
    kind.name: kind for kind in (
        FeedForwardKind("mlp", "MLP (two layers and an activation)", 2, True, _mlp, (FeedForward,)),
        FeedForwardKind("swiglu", "SwiGLU (gated, three matrices)", 3, False, _swiglu, (SwiGLU,)),
    )
}


def build_feed_forward(kind: str, d_model: int, d_ff: int, *, dropout: float = 0.0, activation: str = "relu",
                       bias: bool = True) -> nn.Module:
    """The feed-forward network ``kind`` (see :data:`FEED_FORWARDS`)."""
    if kind not in FEED_FORWARDS:
        raise ValueError(f"feed_forward={kind!r} is not one of {', '.join(repr(k) for k in FEED_FORWARDS)}.")
    return FEED_FORWARDS[kind].build(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
