"""Image classification (Vision Transformer) on generated pictures of shapes; nothing is downloaded.

Each 32x32 RGB picture shows one shape (circle, square, triangle, cross) of random size, position and colour on
a noisy background. To name the shape, the CLS token has to gather information from the patches the shape
covers, so a trained model's CLS attention lands on the object: the "on the object" score measures how much.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import patterns
from ..config import ViTConfig
from ..vit import VisionTransformer
from .base import Batch, Sample, Task, check_config_type, evaluating, generator_for, model_device, squeeze_attention
from .registry import TaskEntry, TaskOption, register

SHAPES = ("circle", "square", "triangle", "cross", "ring", "diamond")
EXAMPLE_SEED = 31


def shape_masks(dx: torch.Tensor, dy: torch.Tensor, r: torch.Tensor) -> dict[str, torch.Tensor]:
    """Boolean pixel masks of every shape, given offsets from the centre ``(B, H, W)`` and half-sizes ``(B, 1, 1)``."""
    ax, ay = dx.abs(), dy.abs()
    dist2 = dx**2 + dy**2
    bar = r / 3
    return {
        "circle": dist2 <= r**2,
        "square": (ax <= r * 0.85) & (ay <= r * 0.85),
        "triangle": (dy <= r * 0.8) & (dy >= -r) & (ax <= (dy + r) * 0.55),
        "cross": ((ax <= bar) & (ay <= r)) | ((ay <= bar) & (ax <= r)),
        "ring": (dist2 <= r**2) & (dist2 >= (r * 0.55) ** 2),
        "diamond": ax + ay <= r * 1.1,
    }


class ShapesTask(Task):
    """Classify generated shape pictures with a Vision Transformer.

    Args:
        num_classes: how many of the shapes (circle, square, triangle, cross, ring, diamond) appear, 2 to 6.
        image_size: side of the pictures in pixels.
        noise: standard deviation of the pixel noise (pixel values lie in 0..1).
        eval_size: held-out pictures per evaluation.
    """

    name = "vit_shapes"
    title = "Shapes (Vision Transformer)"
    family = "vision"
    metric_name = "accuracy"
    metric_target = 0.95
    pattern_names = ("encoder:object",)

    def __init__(self, *, num_classes: int = 4, image_size: int = 32, noise: float = 0.1,
                 eval_size: int = 512) -> None:
        if not 2 <= num_classes <= len(SHAPES):
            raise ValueError(f"num_classes={num_classes} must be between 2 and {len(SHAPES)}.")
        if not 16 <= image_size <= 128:
            raise ValueError(f"image_size={image_size} must be between 16 and 128 pixels.")
        if not 0 <= noise <= 1:
            raise ValueError(f"noise={noise} must be between 0 and 1.")
        self.classes = SHAPES[:num_classes]
        self.image_size, self.noise, self.eval_size = image_size, noise, eval_size
        self.description = (f"Name the shape in a small noisy picture ({', '.join(self.classes)}). The picture "
                            "is cut into patches; the CLS token's attention shows which patches the model looks at.")

    def options(self) -> dict[str, Any]:
        return {"num_classes": len(self.classes), "image_size": self.image_size, "noise": self.noise}

    def train_defaults(self) -> dict[str, Any]:
        return {"steps": 400, "batch_size": 64, "lr": 2e-3, "schedule": "cosine", "warmup_steps": 30}

    def default_model_config(self) -> ViTConfig:
        return ViTConfig(image_size=self.image_size, patch_size=self.image_size // 4, num_classes=len(self.classes),
                         d_model=64, n_heads=4, n_layers=3, d_ff=128)

    def build_model(self, config: ViTConfig) -> nn.Module:
        check_config_type(config, ViTConfig, self)
        if config.image_size != self.image_size or config.in_channels != 3:
            raise ValueError(f"The pictures are {self.image_size}x{self.image_size} RGB; set image_size="
                             f"{self.image_size} and in_channels=3.")
        if config.num_classes < len(self.classes):
            raise ValueError(f"num_classes={config.num_classes} is too small for {len(self.classes)} shapes.")
        return VisionTransformer(config)

    def draw(self, labels: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Pictures ``(B, 3, H, W)`` in 0..1 and object masks ``(B, H, W)`` for shape ids ``labels`` ``(B,)``."""
        b, size = labels.numel(), self.image_size
        r = (torch.rand(b, generator=generator) * 0.15 + 0.15) * size  # half-size, 15-30% of the picture
        cx, cy = (r + torch.rand(2, b, generator=generator) * (size - 1 - 2 * r)).unbind(0)
        coords = torch.arange(size, dtype=torch.float32)
        dx = coords[None, None, :] - cx[:, None, None]  # (B, 1, W)
        dy = coords[None, :, None] - cy[:, None, None]  # (B, H, 1)
        dx, dy = torch.broadcast_tensors(dx, dy)  # (B, H, W)
        all_masks = shape_masks(dx, dy, r[:, None, None])
        masks = torch.stack([all_masks[name] for name in self.classes])  # (K, B, H, W)
        mask = masks[labels, torch.arange(b)]  # (B, H, W)
        background = torch.rand(b, 3, 1, 1, generator=generator) * 0.4
        colour = torch.rand(b, 3, 1, 1, generator=generator) * 0.4 + 0.6
        image = torch.where(mask[:, None], colour, background)  # (B, 3, H, W)
        image = image + torch.randn(image.shape, generator=generator) * self.noise
        return image.clamp(0.0, 1.0), mask

    def sample_batch(self, batch_size: int, generator: torch.Generator) -> Batch:
        labels = torch.randint(0, len(self.classes), (batch_size,), generator=generator)
        images, masks = self.draw(labels, generator)
        return {"images": images, "labels": labels, "masks": masks}

    @staticmethod
    def model_input(images: torch.Tensor) -> torch.Tensor:
        """Pixels centred on zero, as the model sees them."""
        return (images - 0.5) / 0.5

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return F.cross_entropy(model(self.model_input(batch["images"])), batch["labels"])

    def evaluate(self, model: nn.Module, *, seed: int = 0) -> dict[str, float]:
        batch = self.sample_batch(self.eval_size, generator_for(seed))
        device = model_device(model)
        with evaluating(model):
            logits = model(self.model_input(batch["images"].to(device))).cpu()
        loss = F.cross_entropy(logits, batch["labels"])
        accuracy = (logits.argmax(dim=-1) == batch["labels"]).float().mean()
        return {"loss": float(loss), "accuracy": float(accuracy)}

    def patch_mask(self, mask: torch.Tensor, patch_size: int) -> np.ndarray:
        """``(P,)`` boolean: which patches (row-major) overlap the object mask ``(H, W)``."""
        g = self.image_size // patch_size
        cells = mask.reshape(g, patch_size, g, patch_size).any(dim=3).any(dim=1)  # (g, g)
        return cells.flatten().numpy()

    def attention_example(self) -> dict[str, Any]:
        g = generator_for(EXAMPLE_SEED)
        batch = self.sample_batch(1, g)
        image = (batch["images"][0].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)  # CHW -> HWC
        # No axis labels: the patch grid depends on the model's patch size; callers draw the picture instead.
        return {"images": batch["images"], "image": image, "mask": batch["masks"][0],
                "class_name": self.classes[int(batch["labels"][0])], "labels": {}}

    def attention(self, model: nn.Module, example: dict[str, Any]) -> dict[str, list[torch.Tensor]]:
        with evaluating(model):
            _, att = model.forward_with_attention(self.model_input(example["images"].to(model_device(model))))
        return squeeze_attention(att)

    def pattern_scores(self, attention: dict[str, Any], example: dict[str, Any]) -> dict[str, np.ndarray]:
        weights = patterns.as_array(attention["encoder"])  # (L, H, 1+P, 1+P)
        patch_size = self.image_size // int(round((weights.shape[-1] - 1) ** 0.5))
        return {"encoder:object": patterns.object_score(weights, self.patch_mask(example["mask"], patch_size))}

    def images(self, n: int, *, seed: int = 0) -> np.ndarray:
        """The pictures of ``samples(model, n, seed=seed)`` as ``(n, H, W, 3)`` uint8 arrays."""
        batch = self.sample_batch(n, generator_for(seed))
        return (batch["images"].permute(0, 2, 3, 1).numpy() * 255).round().astype(np.uint8)  # NCHW -> NHWC

    def samples(self, model: nn.Module, n: int = 8, *, seed: int = 0) -> list[Sample]:
        batch = self.sample_batch(n, generator_for(seed))
        with evaluating(model):
            probs = model(self.model_input(batch["images"].to(model_device(model)))).softmax(dim=-1).cpu()
        out = []
        for i in range(n):
            truth, guess = self.classes[int(batch["labels"][i])], self.classes[int(probs[i].argmax())]
            area = int(batch["masks"][i].sum())
            out.append(Sample(f"picture {i + 1} ({area} object pixels)", truth, guess, truth == guess,
                              f"{float(probs[i].max()):.0%} sure"))
        return out


register(TaskEntry("vit_shapes", ShapesTask, options=(
    TaskOption("num_classes", int, 2, len(SHAPES)), TaskOption("image_size", int, 16, 128),
    TaskOption("noise", float, 0.0, 1.0))))
