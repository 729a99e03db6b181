"""The normalisations a block can use, by name: LayerNorm (Ba et al. 2016) and RMSNorm (Zhang & Sennrich 2019).

LayerNorm centres each token vector and scales it to unit variance; RMSNorm only divides it by its root mean
square, ``x / sqrt(mean(x²) + eps) · g``, with no mean and no bias (Llama, Qwen, Mistral). Config, blocks and
sizing ask :data:`NORM_KINDS` instead of testing names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


class RMSNorm(nn.Module):
    """``x / sqrt(mean(x²) + eps) · weight`` over the last dimension, computed in float32.

    Args:
        width: size C of the last dimension.
        eps: added to the mean square, so a zero vector stays finite.

    Shape:
        ``(..., C)`` -> ``(..., C)``.
    """

    def __init__(self, width: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # float32 inside, as the published models compute it, so half-precision inputs keep their accuracy
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return self.weight * normed.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.numel()}, eps={self.eps}"


@dataclass(frozen=True)
class NormKind:
    """One normalisation: its config name, how the app names it, and how it is built."""

    name: str  # the config value, e.g. "rmsnorm"
    title: str  # its name in a menu
    summary: str  # one sentence on what it does to a token vector
    build: Callable[[int, float, bool], nn.Module]  # (width C, eps, bias) -> the module
    types: tuple[type[nn.Module], ...]  # the module classes it builds (sizing counts them as norms)


NORM_KINDS: dict[str, NormKind] = {
    kind.name: kind for kind in (
        NormKind("layernorm", "LayerNorm", "subtracts the vector's mean, divides by its standard deviation, "
                 "then scales and shifts", lambda c, eps, bias: nn.LayerNorm(c, eps=eps, bias=bias), (nn.LayerNorm,)),
        NormKind("rmsnorm", "RMSNorm", "divides the vector by its root mean square, then scales (no mean, no "
                 "shift)", lambda c, eps, bias: RMSNorm(c, eps=eps), (RMSNorm,)),
    )
}


def build_norm(kind: str, width: int, *, eps: float = 1e-5, bias: bool = True) -> nn.Module:
    """The normalisation ``kind`` over ``width`` features (RMSNorm has no bias whatever ``bias`` says)."""
    if kind not in NORM_KINDS:
        raise ValueError(f"norm_type={kind!r} is not one of {', '.join(repr(k) for k in NORM_KINDS)}.")
    return NORM_KINDS[kind].build(width, eps, bias)
