"""A pretrained ViT on one picture: preprocessed as the model expects, its top labels and CLS attention.

The picture goes through the model's own ``preprocess`` (resize, centre crop, rescale, mean/std from its
``preprocessor_config.json``); the pixels it shows are that tensor with the normalisation undone, so the
attention maps lie over exactly what the model saw. The model is only read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from explorer.i18n import _
from explorer.lab.vit_walkthrough import ViTWalkthrough, walk_through
from transformer_core.pretrained import Pretrained


@dataclass(frozen=True)
class Label:
    """One class and its probability."""

    name: str  # the model's class name
    probability: float  # in [0, 1]


@dataclass(frozen=True)
class PretrainedViTRun:
    """What the page draws for a pretrained ViT."""

    pixels: np.ndarray  # (S, S, 3) uint8: the picture as the model saw it (normalisation undone)
    walk: ViTWalkthrough  # every intermediate, attention per layer and the rollout
    top: list[Label]  # the best labels, most likely first


def seen_pixels(pre: Pretrained, x: torch.Tensor) -> np.ndarray:
    """The preprocessed tensor ``(1, 3, S, S)`` back as ``(S, S, 3)`` uint8 pixels (normalisation undone)."""
    p = pre.preprocess
    img = x[0].permute(1, 2, 0).double().numpy()  # (C, S, S) -> (S, S, C)
    if p.mean is not None:
        img = img * np.asarray(p.std) + np.asarray(p.mean)
    if p.rescale_factor is not None:
        img = img / p.rescale_factor
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def top_labels(pre: Pretrained, logits: torch.Tensor, k: int = 5) -> list[Label]:
    """The ``k`` most likely classes of ``logits`` ``(num_classes,)``, from their softmax."""
    probs = torch.softmax(logits.double(), dim=-1)
    values, ids = probs.topk(min(k, probs.numel()))
    names = pre.labels or ()
    return [Label(names[int(i)] if int(i) < len(names) else _("class {n}").format(n=int(i)), float(v))
            for v, i in zip(values, ids, strict=True)]


@torch.no_grad()
def classify(pre: Pretrained, pixels: np.ndarray, k: int = 5) -> PretrainedViTRun:
    """Run the pretrained ViT on ``pixels`` ``(H, W, 3)`` uint8 of any size.

    Raises:
        ValueError: for a model that is not a ViT.
    """
    if pre.family != "vit" or pre.preprocess is None:
        raise ValueError(f"{pre.name} is not a picture model.")
    x = pre.preprocess(Image.fromarray(np.asarray(pixels, dtype=np.uint8)))  # (1, 3, S, S), normalised
    shown = seen_pixels(pre, x)
    image = torch.from_numpy(shown.transpose(2, 0, 1).astype(np.float32) / 255)  # (3, S, S) in [0, 1]
    walk = walk_through(pre.model, image, lambda _: x)  # the model reads the exact preprocessed tensor
    return PretrainedViTRun(shown, walk, top_labels(pre, walk.logits, k))
