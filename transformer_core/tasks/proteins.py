"""Protein property regression (encoder-only model) on generated amino-acid sequences.

Each sequence is a string over the 20 standard amino acids; the target is a real property computed from it:
the GRAVY score (grand average of hydropathy, Kyte & Doolittle 1982: the mean hydropathy of the residues) or
the net charge at pH 7 (+1 per K and R, -1 per D and E, +0.1 per H). Sequences mix a hydrophobic and a
hydrophilic "style" in random proportions, so the targets spread widely, as they do for real proteins.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..config import TransformerConfig
from ..models import SequenceRegressor
from .base import (
    Batch,
    Sample,
    Task,
    check_config_type,
    draw_split,
    evaluating,
    generator_for,
    has_split,
    held_out_mask,
    model_device,
    no_split_notice,
    squeeze_attention,
)
from .registry import TaskEntry, TaskOption, register

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
PAD = 0  # residues are ids 1..20 in AMINO_ACIDS order
KYTE_DOOLITTLE = {
    "A": 1.8, "R": -4.5, "N": -3.5, "D": -3.5, "C": 2.5, "Q": -3.5, "E": -3.5, "G": -0.4, "H": -3.2, "I": 4.5,
    "L": 3.8, "K": -3.9, "M": 1.9, "F": 2.8, "P": -1.6, "S": -0.8, "T": -0.7, "W": -0.9, "Y": -1.3, "V": 4.2,
}
CHARGE_PH7 = {"K": 1.0, "R": 1.0, "H": 0.1, "D": -1.0, "E": -1.0}
PROPERTIES = {"gravy": "GRAVY hydropathy", "net_charge": "net charge at pH 7"}
EXAMPLE_SEED = 777


def gravy(sequence: str) -> float:
    """Grand average of hydropathy: the mean Kyte–Doolittle value of the residues."""
    return sum(KYTE_DOOLITTLE[a] for a in sequence) / len(sequence)


def net_charge(sequence: str) -> float:
    """Approximate net charge at pH 7 from the charged side chains."""
    return sum(CHARGE_PH7.get(a, 0.0) for a in sequence)


def _residue_table(values: dict[str, float]) -> torch.Tensor:
    return torch.tensor([0.0] + [values.get(a, 0.0) for a in AMINO_ACIDS])  # indexed by token id


class ProteinTask(Task):
    """Predict a property of a protein sequence from its residues.

    Args:
        property: ``"gravy"`` (mean hydropathy) or ``"net_charge"``.
        pool: ``"mean"`` (average the residue vectors) or ``"cls"`` (read a learned CLS token, as BERT does).
        min_len, max_len: sequence lengths are drawn uniformly from this range.
        eval_size: held-out sequences per evaluation.

    About one sequence in ten is evaluation-only (:func:`.base.held_out_mask`), as in the digit tasks; it only
    matters for very short sequences, since longer ones practically never repeat.
    """

    name = "protein"
    family = "regression"
    metric_name = "r2"
    metric_target = 0.9

    def __init__(self, *, property: str = "gravy", pool: str = "mean", min_len: int = 10, max_len: int = 30,
                 eval_size: int = 512) -> None:
        if property not in PROPERTIES:
            raise ValueError(f"property={property!r} is not one of {', '.join(PROPERTIES)}.")
        if pool not in ("mean", "cls"):
            raise ValueError(f"pool={pool!r} must be 'mean' or 'cls'.")
        if not 1 <= min_len <= max_len <= 512:
            raise ValueError(f"Lengths must satisfy 1 <= min_len ({min_len}) <= max_len ({max_len}) <= 512.")
        self.property, self.pool, self.min_len, self.max_len = property, pool, min_len, max_len
        self.eval_size = eval_size
        possible = sum(len(AMINO_ACIDS) ** n for n in range(min_len, max_len + 1))
        self.held_out_split = has_split(possible)
        self.notice = None if self.held_out_split else no_split_notice(possible)
        values = KYTE_DOOLITTLE if property == "gravy" else CHARGE_PH7
        self.table = _residue_table(values)
        self.mean, self.std = self._target_stats()
        self.title = f"Protein {PROPERTIES[property]}"
        self.description = (f"Read a made-up protein sequence and predict its {PROPERTIES[property]}. The answer "
                            "depends on every residue, so the model has to gather information from the whole sequence.")

    def options(self) -> dict[str, Any]:
        return {"property": self.property, "pool": self.pool, "min_len": self.min_len, "max_len": self.max_len}

    def input_vocabulary(self) -> dict[str, int]:
        return {a: i + 1 for i, a in enumerate(AMINO_ACIDS)}  # residues are ids 1..20, 0 is padding

    def train_defaults(self) -> dict[str, Any]:
        return {"steps": 200, "batch_size": 64, "lr": 2e-3, "schedule": "cosine", "warmup_steps": 20}

    def default_model_config(self) -> TransformerConfig:
        extra = 1 if self.pool == "cls" else 0
        return TransformerConfig(vocab_size=1 + len(AMINO_ACIDS), max_len=self.max_len + extra, d_model=64,
                                 n_heads=4, n_layers=2, d_ff=256, norm_position="pre", pad_id=PAD, activation="gelu")

    def build_model(self, config: TransformerConfig) -> nn.Module:
        check_config_type(config, TransformerConfig, self)
        if config.vocab_size < 1 + len(AMINO_ACIDS):
            raise ValueError(f"vocab_size={config.vocab_size} is too small for padding and 20 amino acids.")
        needed = self.max_len + (self.pool == "cls")
        if config.max_len < needed:  # rotary tables are built for max_len positions too
            raise ValueError(f"max_len={config.max_len} is too short for {needed} tokens.")
        if config.pad_id != PAD:
            raise ValueError(f"The protein task pads with token {PAD}; set pad_id={PAD}.")
        return SequenceRegressor(config, num_outputs=1, pool=self.pool)

    def _target_stats(self) -> tuple[float, float]:
        batch = self.sample_batch(4096, generator_for(0), standardise=False)
        y = batch["y"]
        return float(y.mean()), float(y.std())

    def _draw(self, n: int, generator: torch.Generator) -> Batch:
        """``n`` sequences: token ids ``(n, max_len)`` padded with ``PAD``, and their lengths ``(n,)``."""
        lengths = torch.randint(self.min_len, self.max_len + 1, (n,), generator=generator)
        # Each sequence draws residues from a random blend of a uniform and a property-skewed distribution.
        blend = torch.rand(n, 1, generator=generator) * 2 - 1  # (B, 1) in [-1, 1]
        skew = self.table[1:] / self.table[1:].abs().max()  # (20,) in [-1, 1]
        probs = (1 + blend * skew).clamp(min=0.05)  # (B, 20)
        residues = torch.multinomial(probs, self.max_len, replacement=True, generator=generator) + 1
        valid = torch.arange(self.max_len)[None, :] < lengths[:, None]  # (B, S)
        return {"tokens": torch.where(valid, residues, PAD), "lengths": lengths}

    def sample_batch(self, batch_size: int, generator: torch.Generator, *, standardise: bool = True,
                     held_out: bool = False) -> Batch:
        """Training sequences (or evaluation-only ones with ``held_out=True``) and their standardised targets
        (real units with ``standardise=False``)."""
        if self.held_out_split:
            rows = draw_split(lambda n: self._draw(n, generator), lambda r: held_out_mask(r["tokens"], r["lengths"]),
                              batch_size, evaluation=held_out)
        else:
            rows = self._draw(batch_size, generator)
        tokens, lengths = rows["tokens"], rows["lengths"]
        y = self.table[tokens].sum(dim=1)
        if self.property == "gravy":
            y = y / lengths
        if standardise:
            y = (y - self.mean) / self.std
        return {"tokens": tokens, "y": y}

    def predict(self, model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
        """Predicted property values in real units ``(B,)``."""
        return model(tokens)[:, 0] * self.std + self.mean

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return F.mse_loss(model(batch["tokens"])[:, 0], batch["y"])

    def evaluate(self, model: nn.Module, *, seed: int = 0) -> dict[str, float]:
        batch = self.sample_batch(self.eval_size, generator_for(seed), standardise=False, held_out=True)
        device = model_device(model)
        with evaluating(model):
            pred = self.predict(model, batch["tokens"].to(device)).cpu()
        y = batch["y"]
        mse = float(((pred - y) ** 2).mean())
        r2 = 1.0 - mse / float(((y - y.mean()) ** 2).mean())
        return {"loss": mse / self.std**2, "mse": mse, "r2": r2}

    def sequence_text(self, tokens: torch.Tensor) -> str:
        """Residue letters of one row of token ids (padding skipped)."""
        return "".join(AMINO_ACIDS[int(t) - 1] for t in tokens if int(t) != PAD)

    def attention_example(self) -> dict[str, Any]:
        batch = self.sample_batch(1, generator_for(EXAMPLE_SEED), standardise=False)
        seq = self.sequence_text(batch["tokens"][0])
        tokens = batch["tokens"][:, : len(seq)]
        labels = (["CLS"] if self.pool == "cls" else []) + list(seq)
        return {"tokens_ids": tokens, "sequence": seq, "target": float(batch["y"][0]),
                "tokens": {"encoder": labels}, "labels": {"encoder": (labels, labels)}}

    def attention(self, model: nn.Module, example: dict[str, Any]) -> dict[str, list[torch.Tensor]]:
        with evaluating(model):
            _, att = model.forward_with_attention(example["tokens_ids"].to(model_device(model)))
        return squeeze_attention(att)

    def samples(self, model: nn.Module, n: int = 8, *, seed: int = 0) -> list[Sample]:
        batch = self.sample_batch(n, generator_for(seed), standardise=False, held_out=True)
        with evaluating(model):
            pred = self.predict(model, batch["tokens"].to(model_device(model))).cpu()
        tolerance = 0.1 * self.std  # "right" = within a tenth of the spread of the targets
        out = []
        for i in range(n):
            error = float(pred[i] - batch["y"][i])
            out.append(Sample(self.sequence_text(batch["tokens"][i]), f"{float(batch['y'][i]):.2f}",
                              f"{float(pred[i]):.2f}", abs(error) <= tolerance, f"error {error:+.2f}"))
        return out


register(TaskEntry("protein", ProteinTask, options=(
    TaskOption("property", str, choices=tuple(PROPERTIES)), TaskOption("pool", str, choices=("mean", "cls")),
    TaskOption("min_len", int, 1, 512), TaskOption("max_len", int, 1, 512))))
