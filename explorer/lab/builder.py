"""The Model Builder's engine: one set of settings for the four model families, sizes, and safe timing.

:class:`BuilderSettings` describes an encoder-only, decoder-only, encoder-decoder or Vision Transformer model
plus the batch it would train on. Sizes and costs come from :mod:`transformer_core.sizing` on the meta device
(nothing is allocated, so a 48-layer model is fine); a real training step is only timed when
:func:`measure_plan` says the estimated memory and time fit the budget of this machine.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from explorer.i18n import _
from explorer.i18n.quantities import duration, human_bytes
from transformer_core.config import TransformerConfig, ViTConfig
from transformer_core.families import FAMILIES, KINDS, by_kind
from transformer_core.models import Seq2SeqTransformer, SequenceRegressor
from transformer_core.presets import PRESETS
from transformer_core.sizing import StepEstimate, estimate_training_step, measure_step_time

KIND_TITLES = {f.kind: f.title for f in FAMILIES if f.trainable}


@dataclass(frozen=True)
class BuilderSettings:
    """A model to size: its family, its shape, and the training batch the costs are estimated for."""

    kind: str = "decoder"  # "encoder", "decoder", "seq2seq" or "vit"
    n_layers: int = 2  # blocks per stack (the encoder and the decoder each get this many)
    n_heads: int = 4  # attention heads per layer; must divide d_model
    d_model: int = 64  # width C of every token vector
    d_ff: int = 256  # hidden width of the feed-forward network
    norm: str = "pre"  # "pre" or "post" LayerNorm placement (the ViT is always pre-norm)
    positional: str = "sinusoidal"  # text models: a name from positional.kinds() (ViT: always learned)
    vocab_size: int = 1000  # distinct tokens (text models)
    seq_len: int = 64  # tokens per sequence (text; source and target for the encoder-decoder)
    image_size: int = 32  # ViT input side in pixels
    patch_size: int = 8  # ViT patch side in pixels; must divide image_size
    num_classes: int = 10  # ViT classifier outputs
    batch_size: int = 16  # sequences or images per training step
    preset: str = ""  # a name in ``presets.PRESETS``: build that published model exactly (its own extras too)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} is not one of {', '.join(KINDS)}.")
        if self.batch_size <= 0:
            raise ValueError(f"batch_size={self.batch_size} must be positive.")
        if self.preset and dataclasses.asdict(self) != _preset_fields(self.preset, self.batch_size):
            raise ValueError(f"These settings are not {self.preset}'s; leave preset empty to build your own.")

    def config(self) -> TransformerConfig | ViTConfig:
        """The model configuration (validated: a bad combination raises ``ValueError`` with the reason)."""
        if self.preset:
            return PRESETS[self.preset].config
        if self.kind == "vit":
            return ViTConfig(
                image_size=self.image_size,
                patch_size=self.patch_size,
                num_classes=self.num_classes,
                d_model=self.d_model,
                n_heads=self.n_heads,
                n_layers=self.n_layers,
                d_ff=self.d_ff,
            )
        return TransformerConfig(
            vocab_size=self.vocab_size,
            max_len=self.seq_len,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            norm_position=self.norm,
            positional=self.positional,
        )


def preset_settings(name: str, batch_size: int = BuilderSettings.batch_size) -> BuilderSettings:
    """Every setting of the published model ``name`` (a key of ``presets.PRESETS``), at ``batch_size``.

    Raises:
        ValueError: when ``name`` is not a preset.
    """
    return BuilderSettings(**_preset_fields(name, batch_size))


def _preset_fields(name: str, batch_size: int) -> dict[str, Any]:
    if name not in PRESETS:
        raise ValueError(f"{name!r} is not a preset; choose one of {', '.join(PRESETS)}.")
    preset = PRESETS[name]
    c = preset.config
    fields = dataclasses.asdict(BuilderSettings()) | dict(
        kind=preset.kind,
        n_layers=c.n_layers,
        n_heads=c.n_heads,
        d_model=c.d_model,
        d_ff=c.d_ff,
        batch_size=batch_size,
        preset=name,
    )
    if isinstance(c, ViTConfig):
        return fields | dict(
            norm="pre",
            positional="learned",
            image_size=c.image_size,
            patch_size=c.patch_size,
            num_classes=c.num_classes,
        )
    return fields | dict(norm=c.norm_position, positional=c.positional, vocab_size=c.vocab_size, seq_len=c.max_len)


def build(settings: BuilderSettings, device: torch.device | str = "meta") -> nn.Module:
    """The model; on the meta device by default (shapes only, no memory). A preset builds the published model."""
    config = settings.config()
    factory = PRESETS[settings.preset].factory if settings.preset else by_kind(settings.kind).model_class
    with torch.device(device):
        return factory(config)


def estimate(settings: BuilderSettings, model: nn.Module | None = None) -> StepEstimate:
    """FLOPs and memory of one training step at ``settings.batch_size`` (see :mod:`~transformer_core.sizing`)."""
    seq_len = None if settings.kind == "vit" else settings.seq_len
    return estimate_training_step(
        settings.config(), kind=settings.kind, batch_size=settings.batch_size, seq_len=seq_len, model=model
    )


def example_batch(settings: BuilderSettings, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Random inputs and targets of the right shapes for one training step."""
    g = generator or torch.Generator().manual_seed(0)
    b, s = settings.batch_size, settings.seq_len
    if settings.kind == "vit":
        size = settings.image_size
        return {
            "images": torch.rand(b, 3, size, size, generator=g),
            "labels": torch.randint(settings.num_classes, (b,), generator=g),
        }
    tokens = torch.randint(settings.vocab_size, (b, s), generator=g)
    if settings.kind == "encoder":
        return {"tokens": tokens, "targets": torch.randn(b, 1, generator=g)}
    return {"tokens": tokens, "targets": torch.randint(settings.vocab_size, (b, s), generator=g)}


def training_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The loss each family trains with: MSE (encoder-only regressor) or cross-entropy (the others)."""
    if "images" in batch:
        return F.cross_entropy(model(batch["images"]), batch["labels"])
    if isinstance(model, SequenceRegressor):
        return F.mse_loss(model(batch["tokens"]), batch["targets"])
    if isinstance(model, Seq2SeqTransformer):
        logits = model(batch["tokens"], batch["targets"])  # (B, T, V)
    else:
        logits = model(batch["tokens"])  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten())


def matmul_rate(device: torch.device | str = "cpu", size: int = 512, repeats: int = 5) -> float:
    """Measured float32 matrix-multiply speed of ``device`` in FLOP/s.

    The fastest of ``repeats`` runs is kept: on a shared machine the slower runs measure the neighbours.
    """
    device = torch.device(device)
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    times = []
    for _i in range(repeats + 1):
        start = time.perf_counter()
        (a @ b).sum().item()  # .item() waits for the device
        times.append(time.perf_counter() - start)
    return 2 * size**3 / max(min(times[1:]), 1e-9)


@dataclass(frozen=True)
class MeasurePlan:
    """Whether a real training step may be timed here, and why not if it may not."""

    allowed: bool  # True when the estimated memory and time fit the budgets
    estimated_seconds: float  # estimated seconds per step from the FLOPs and the measured matmul speed
    reason: str  # a sentence for the user ("" when allowed)


EFFICIENCY = 0.3  # share of the matmul speed a whole training step reaches (attention, norms, optimizer, ...)


def measure_plan(
    est: StepEstimate, *, flops_per_second: float, memory_budget_bytes: int, time_budget_seconds: float
) -> MeasurePlan:
    """Decide from the estimates alone (nothing is allocated) whether timing a real step is safe."""
    seconds = est.flops_per_step / max(flops_per_second * EFFICIENCY, 1.0)
    if est.total_bytes > memory_budget_bytes:
        return MeasurePlan(
            False,
            seconds,
            _(
                "Too big to run here: training needs about {memory} of memory, the budget on this machine is {budget}."
            ).format(memory=human_bytes(est.total_bytes), budget=human_bytes(memory_budget_bytes)),
        )
    if seconds > time_budget_seconds:
        return MeasurePlan(
            False,
            seconds,
            _(
                "Too big to run here: one step would take about {time}; the budget on this machine is {budget}."
            ).format(time=duration(seconds), budget=duration(time_budget_seconds)),
        )
    return MeasurePlan(True, seconds, "")


def measure(settings: BuilderSettings, device: torch.device | str, repeats: int = 3) -> float:
    """Median seconds of one real training step (forward, backward, AdamW) on ``device``.

    A preset is timed as its family's model: the same blocks, with the loss the step needs (a preset's extras,
    such as BERT's pooler, are far too small to change the time).
    """
    family = dataclasses.replace(settings, preset="")
    return measure_step_time(
        lambda: build(family, "meta"), example_batch(settings), training_loss, device=device, repeats=repeats
    )


