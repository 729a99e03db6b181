"""Vision Transformer (Dosovitskiy et al. 2020): an image becomes a sequence of patch tokens.

``patchify`` cuts the image into non-overlapping ``p x p`` patches in row-major order (left to right, then top
to bottom) and flattens each to ``C*p*p`` numbers in channel-major order, the layout of a strided ``Conv2d``
kernel; a linear layer then maps each patch to a ``d_model`` token.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .blocks import SelfAttentionBlock
from .config import ViTConfig
from .probes import probe

# Attention weights by kind: here only "encoder", one (B, H, N+1, N+1) tensor per layer, first layer first.
Attention = dict[str, list[torch.Tensor]]


def _check_divisible(h: int, w: int, p: int) -> None:
    if p <= 0 or h % p != 0 or w % p != 0:
        raise ValueError(
            f"An image of {h}x{w} pixels cannot be cut into {p}x{p} patches: "
            f"the patch size must divide both the height and the width."
        )


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut images into flattened patches.

    Shape:
        ``(B, C, H, W)`` -> ``(B, N, C*p*p)`` with ``N = (H/p)*(W/p)``, patches in row-major order.
    """
    b, c, h, w = images.shape
    p = patch_size
    _check_divisible(h, w, p)
    x = images.reshape(b, c, h // p, p, w // p, p)  # (B, C, gh, p, gw, p)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, p, p)
    return x.reshape(b, (h // p) * (w // p), c * p * p)  # (B, N, C*p*p)


def unpatchify(patches: torch.Tensor, patch_size: int, image_size: int | tuple[int, int],
               channels: int = 3) -> torch.Tensor:
    """Exact inverse of :func:`patchify`.

    Shape:
        ``(B, N, C*p*p)`` -> ``(B, C, H, W)``.
    """
    h, w = (image_size, image_size) if isinstance(image_size, int) else image_size
    p = patch_size
    _check_divisible(h, w, p)
    b, n, d = patches.shape
    if n != (h // p) * (w // p) or d != channels * p * p:
        raise ValueError(f"{n} patches of {d} numbers do not make a {channels}x{h}x{w} image with {p}x{p} patches.")
    x = patches.reshape(b, h // p, w // p, channels, p, p)  # (B, gh, gw, C, p, p)
    x = x.permute(0, 3, 1, 4, 2, 5)  # (B, C, gh, p, gw, p)
    return x.reshape(b, channels, h, w)


class PatchEmbedding(nn.Module):
    """Linear projection of flattened patches; equal to a ``Conv2d`` with kernel = stride = patch size.

    Shape:
        ``(B, C, H, W)`` -> ``(B, N, d_model)``.
    """

    def __init__(self, patch_size: int, in_channels: int, d_model: int) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(in_channels * patch_size * patch_size, d_model)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.proj(patchify(images, self.patch_size))

    def as_conv_weight(self) -> torch.Tensor:
        """The projection as a ``Conv2d`` kernel ``(d_model, C, p, p)``."""
        p = self.patch_size
        return self.proj.weight.reshape(self.proj.out_features, -1, p, p)


class VisionTransformer(nn.Module):
    """ViT: patch embedding, learnable CLS token, learned positions, pre-norm GELU blocks, final norm, linear head.

    Shape:
        images ``(B, C, H, W)`` -> logits ``(B, num_classes)``; attention ``"encoder"`` ``(B, H, N+1, N+1)``
        with the CLS token at index 0 and the patches after it in row-major order.
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.patch_embed = PatchEmbedding(c.patch_size, c.in_channels, c.d_model)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, c.d_model))
        self.pos_embed = nn.Parameter(torch.randn(1, c.num_patches + 1, c.d_model) * 0.02)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(SelfAttentionBlock(c.block()) for _ in range(c.n_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.head = nn.Linear(c.d_model, c.num_classes)

    def tokens(self, images: torch.Tensor) -> torch.Tensor:
        """The input sequence: ``[CLS; patch tokens] + positions``, shape ``(B, N+1, C)``."""
        size = self.config.image_size
        if images.shape[-3:] != (self.config.in_channels, size, size):
            raise ValueError(
                f"Expected images of shape (B, {self.config.in_channels}, {size}, {size}), got {tuple(images.shape)}."
            )
        x = probe(self, "patches", self.patch_embed(images))  # (B, N, C); see probes.py
        x = torch.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1)  # (B, N+1, C)
        return self.dropout(x + self.pos_embed)

    def _run(self, images: torch.Tensor, need_weights: bool) -> tuple[torch.Tensor, Attention]:
        x, weights = self.tokens(images), []
        for block in self.blocks:
            x, w = block(x, need_weights=need_weights)
            weights.append(w)
        return self.head(self.norm(x)[:, 0]), {"encoder": weights}  # read out the CLS token: (B, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Class logits ``(B, num_classes)`` for images ``(B, C, H, W)``."""
        return self._run(images, need_weights=False)[0]

    def forward_with_attention(self, images: torch.Tensor) -> tuple[torch.Tensor, Attention]:
        """:meth:`forward`, and each block's weights ``{"encoder": [(B, H, N+1, N+1), ...]}``."""
        return self._run(images, need_weights=True)


def attention_rollout(attentions: list[torch.Tensor], head_fusion: str = "mean",
                      add_residual: bool = True) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): how much each input token flows into each output token.

    Each layer's heads are fused (mean, max or min), the identity is added for the residual connection and rows
    are renormalised, ``A_hat = normalize(0.5 * A + 0.5 * I)``; the layers are multiplied from first to last.

    Args:
        attentions: per-layer weights ``(B, H, N, N)``, first layer first.

    Shape:
        returns ``(B, N, N)``; row ``i`` says how much each input token contributes to token ``i`` at the top.
        Row 0 of a ViT's rollout is the CLS token's view of the patches.
    """
    if not attentions:
        raise ValueError("attention_rollout needs at least one layer of attention weights.")
    fuse = {"mean": lambda a: a.mean(dim=1), "max": lambda a: a.amax(dim=1), "min": lambda a: a.amin(dim=1)}
    if head_fusion not in fuse:
        raise ValueError(f"head_fusion={head_fusion!r} must be 'mean', 'max' or 'min'.")
    n = attentions[0].size(-1)
    eye = torch.eye(n, dtype=attentions[0].dtype, device=attentions[0].device)
    result = eye.expand(attentions[0].size(0), n, n)
    for layer in attentions:
        a = fuse[head_fusion](layer)  # (B, N, N)
        if add_residual:
            a = 0.5 * a + 0.5 * eye
        a = a / a.sum(dim=-1, keepdim=True).clamp(min=1e-12)
        result = a @ result
    return result


def conv_patch_embedding(images: torch.Tensor, embed: PatchEmbedding) -> torch.Tensor:
    """Reference patch embedding with a strided convolution, ``(B, C, H, W)`` -> ``(B, N, d_model)``."""
    p = embed.patch_size
    out = F.conv2d(images, embed.as_conv_weight(), embed.proj.bias, stride=p)  # (B, d_model, gh, gw)
    return out.flatten(2).transpose(1, 2)  # NCHW -> NLC
