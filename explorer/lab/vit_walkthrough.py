"""A Vision Transformer's first steps, one picture at a time: patches, tokens, CLS attention and rollout.

:func:`walk_through` runs a :class:`~transformer_core.vit.VisionTransformer` on one image and keeps every
intermediate the ViT page draws, so the page itself only displays numbers it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from transformer_core.config import ViTConfig, divisors
from transformer_core.seeding import seeded
from transformer_core.vit import VisionTransformer, attention_rollout, patchify

MIN_PATCHES = 4  # fewer patches than this hardly make a sequence
MAX_PATCHES = 400  # more patches than this make the attention maps too slow and too small to read


def valid_patch_sizes(image_size: int, min_patches: int = MIN_PATCHES,
                      max_patches: int = MAX_PATCHES) -> list[int]:
    """Patch sizes that divide ``image_size`` and give between ``min_patches`` and ``max_patches`` patches."""
    return [p for p in divisors(image_size) if min_patches <= (image_size // p) ** 2 <= max_patches]


def attention_scores(num_patches: int, with_cls: bool = True) -> int:
    """Entries of one head's attention matrix: ``(N+1)^2`` with the CLS token, ``N^2`` without."""
    tokens = num_patches + 1 if with_cls else num_patches
    return tokens * tokens


def random_vit(config: ViTConfig, seed: int = 0) -> VisionTransformer:
    """A ViT with fresh weights drawn from ``seed``, in eval mode; the global random state is left alone."""
    with seeded(seed):
        model = VisionTransformer(config)
        # The CLS token starts at zero in the reference code; a small random start makes its row informative.
        torch.nn.init.normal_(model.cls_token, std=0.02)
    return model.eval()


@dataclass(frozen=True)
class ViTWalkthrough:
    """Every intermediate of one image's trip through a ViT (batch dimension removed)."""

    grid_size: int  # patches along each side
    patches: torch.Tensor  # (N, C*p*p) flattened patches, pixel values in [0, 1]
    patch_tokens: torch.Tensor  # (N, C) patches after the linear projection
    cls_token: torch.Tensor  # (C,) the learned CLS vector
    positions: torch.Tensor  # (N+1, C) learned position embeddings, CLS position first
    tokens: torch.Tensor  # (N+1, C) input of the first block: [CLS; patch tokens] + positions
    attention: list[torch.Tensor]  # per layer (H, N+1, N+1), CLS at index 0
    rollout: torch.Tensor  # (N+1, N+1) attention rollout over all layers (mean over heads)
    logits: torch.Tensor  # (num_classes,) the classifier's output

    @property
    def embedded(self) -> torch.Tensor:
        """``(N+1, C)``: the CLS vector followed by the projected patches, before positions are added."""
        return torch.cat([self.cls_token[None], self.patch_tokens], dim=0)

    @property
    def num_layers(self) -> int:
        return len(self.attention)

    @property
    def num_heads(self) -> int:
        return self.attention[0].size(0)

    def cls_attention(self, layer: int, head: int | None = None) -> torch.Tensor:
        """How much the CLS token attends to each patch, as a ``(grid, grid)`` map.

        ``head=None`` averages the heads. The CLS token's attention to itself is left out, so the map sums to
        one minus :meth:`cls_self_attention`.
        """
        weights = self.attention[layer]  # (H, N+1, N+1)
        row = weights[:, 0, 1:].mean(dim=0) if head is None else weights[head, 0, 1:]  # (N,)
        return row.reshape(self.grid_size, self.grid_size)

    def cls_self_attention(self, layer: int, head: int | None = None) -> float:
        """The share of the CLS token's attention that stays on the CLS token."""
        weights = self.attention[layer][:, 0, 0]  # (H,)
        return float(weights.mean() if head is None else weights[head])

    def cls_rollout(self) -> torch.Tensor:
        """Row 0 of the rollout as a ``(grid, grid)`` map: where the final CLS token's information comes from."""
        return self.rollout[0, 1:].reshape(self.grid_size, self.grid_size)


def walk_through(model: VisionTransformer, image: torch.Tensor,
                 preprocess: Callable[[torch.Tensor], torch.Tensor] | None = None) -> ViTWalkthrough:
    """Run ``model`` on one image and keep the intermediates.

    Args:
        image: pixel values in [0, 1]; ``patches`` keeps these.
        preprocess: what the model's training applied to the pixels (e.g. centring on zero), if anything.

    Shape:
        image ``(C, H, W)`` float with ``H = W = config.image_size``.
    """
    if image.dim() != 3:
        raise ValueError(f"walk_through expects one image (C, H, W), got shape {tuple(image.shape)}.")
    was_training = model.training
    model.eval()  # no dropout: the same picture always gives the same maps
    try:
        return _walk(model, image, preprocess)
    finally:
        model.train(was_training)


@torch.no_grad()
def _walk(model: VisionTransformer, image: torch.Tensor,
          preprocess: Callable[[torch.Tensor], torch.Tensor] | None) -> ViTWalkthrough:
    config = model.config
    device = next(model.parameters()).device
    pixels = image.unsqueeze(0).to(device=device, dtype=torch.float32)  # (1, C, H, W)
    patches = patchify(pixels, config.patch_size)  # (1, N, C*p*p)
    images = preprocess(pixels) if preprocess is not None else pixels
    patch_tokens = model.patch_embed(images)  # (1, N, C)
    logits, attention = model.forward_with_attention(images)
    layers = [w[0].detach().float().cpu() for w in attention["encoder"]]  # per layer (H, N+1, N+1)
    rollout = attention_rollout([w.unsqueeze(0) for w in layers])[0]  # (N+1, N+1)
    cls = model.cls_token[0, 0].detach().float().cpu()  # (C,)
    positions = model.pos_embed[0].detach().float().cpu()  # (N+1, C)
    tokens = model.tokens(images)[0].detach().float().cpu()  # (N+1, C)
    return ViTWalkthrough(
        grid_size=config.grid_size, patches=patches[0].detach().float().cpu(),
        patch_tokens=patch_tokens[0].detach().float().cpu(), cls_token=cls, positions=positions, tokens=tokens,
        attention=layers, rollout=rollout, logits=logits[0].detach().float().cpu(),
    )


def num_patches(image_size: int, patch_size: int) -> int:
    """Patches N = (H/P)·(W/P) of a square ``image_size`` picture cut into square ``patch_size`` patches."""
    if patch_size < 1 or image_size % patch_size:
        raise ValueError(f"patch_size={patch_size} must divide image_size={image_size}.")
    return (image_size // patch_size) ** 2
