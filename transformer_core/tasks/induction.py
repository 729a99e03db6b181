"""Induction task: a random string of letters followed by its repeat (decoder-only model).

The first half is random, so nothing can predict it. In the second half every next letter can be read off the
first copy: find where the current letter appeared before and copy the letter that followed it. The attention
that does this is the "induction head" pattern (Olsson et al. 2022): a stripe one step right of the diagonal
through the first copy. A second, "previous-token" head usually helps it.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import patterns
from ..config import TransformerConfig
from ..models import CausalLM
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
from .registry import CliOption, TaskEntry, TaskOption, register

BOS = 0  # start token; letters are ids 1..num_symbols
IGNORE = -100
EXAMPLE_SEED = 4242


class InductionTask(Task):
    """Predict the second copy of a repeated random string, one letter at a time.

    Args:
        seq_len: length of the random string (the whole sequence is BOS + string + string).
        num_symbols: size of the alphabet (2 to 26 letters).
        eval_size: held-out sequences per evaluation.

    As in the digit tasks, about one string in ten is evaluation-only (:func:`.base.held_out_mask`). With the
    default settings a repeat is astronomically unlikely anyway, but short strings over few letters recur.
    """

    name = "induction"
    title = "Induction (repeat a sequence)"
    family = "causal_lm"
    description = ("A random string of letters is followed by its repeat. The model can only predict the repeat "
                   "by looking back at the first copy: the attention draws a stripe that an 'induction head' makes.")
    metric_name = "accuracy"
    metric_target = 0.95
    pattern_names = ("decoder:induction", "decoder:previous_token")

    def __init__(self, *, seq_len: int = 12, num_symbols: int = 16, eval_size: int = 512) -> None:
        if not 2 <= seq_len <= 64:
            raise ValueError(f"seq_len={seq_len} must be between 2 and 64.")
        if not 2 <= num_symbols <= 26:
            raise ValueError(f"num_symbols={num_symbols} must be between 2 and 26.")
        self.seq_len, self.num_symbols, self.eval_size = seq_len, num_symbols, eval_size
        self.held_out_split = has_split(num_symbols**seq_len)
        self.notice = None if self.held_out_split else no_split_notice(num_symbols**seq_len)

    @property
    def total_len(self) -> int:
        """Tokens per sequence: BOS and two copies of the string."""
        return 1 + 2 * self.seq_len

    def options(self) -> dict[str, Any]:
        return {"seq_len": self.seq_len, "num_symbols": self.num_symbols}

    def input_vocabulary(self) -> dict[str, int]:
        return {chr(ord("A") + i): i + 1 for i in range(self.num_symbols)}  # letters are ids 1..num_symbols

    def train_defaults(self) -> dict[str, Any]:
        return {"steps": 300, "batch_size": 64, "lr": 3e-3, "schedule": "cosine", "warmup_steps": 30}

    def default_model_config(self) -> TransformerConfig:
        return TransformerConfig(vocab_size=1 + self.num_symbols, max_len=self.total_len, d_model=64, n_heads=4,
                                 n_layers=2, d_ff=256, norm_position="pre")

    def build_model(self, config: TransformerConfig) -> nn.Module:
        check_config_type(config, TransformerConfig, self)
        if config.vocab_size < 1 + self.num_symbols:
            raise ValueError(f"vocab_size={config.vocab_size} is too small for BOS and {self.num_symbols} letters.")
        if config.max_len < self.total_len:  # rotary tables are built for max_len positions too
            raise ValueError(f"max_len={config.max_len} is too short for sequences of {self.total_len} tokens.")
        return CausalLM(config)

    def make_batch(self, letters: torch.Tensor) -> Batch:
        """Model input and targets for random strings ``(B, seq_len)`` of letter ids (1-based)."""
        b, n = letters.shape
        idx = torch.cat([torch.full((b, 1), BOS), letters, letters], dim=1)  # (B, 1 + 2n)
        targets = torch.full_like(idx, IGNORE)
        # Position p (n < p < 2n) holds a repeated letter; the letter after it is known from the first copy.
        targets[:, n + 1 : 2 * n] = idx[:, n + 2 :]
        return {"idx": idx, "targets": targets}

    def sample_batch(self, batch_size: int, generator: torch.Generator, *, held_out: bool = False) -> Batch:
        """A batch of training strings, or with ``held_out=True`` of evaluation-only strings."""
        def draw(n: int) -> Batch:
            return {"letters": torch.randint(1, self.num_symbols + 1, (n, self.seq_len), generator=generator)}

        def is_held_out(rows: Batch) -> torch.Tensor:
            letters = rows["letters"]
            return held_out_mask(letters, torch.full((letters.size(0),), self.seq_len))

        if self.held_out_split:
            rows = draw_split(draw, is_held_out, batch_size, evaluation=held_out)
        else:
            rows = draw(batch_size)
        return self.make_batch(rows["letters"])

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        logits = model(batch["idx"])  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten(), ignore_index=IGNORE)

    def _predict(self, model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        logits = model(batch["idx"])  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten(), ignore_index=IGNORE)
        return loss, logits.argmax(dim=-1)

    def evaluate(self, model: nn.Module, *, seed: int = 0) -> dict[str, float]:
        device = model_device(model)
        batch = self.sample_batch(self.eval_size, generator_for(seed), held_out=True)
        batch = {k: v.to(device) for k, v in batch.items()}
        with evaluating(model):
            loss, pred = self._predict(model, batch)
        known = batch["targets"] != IGNORE
        accuracy = (pred == batch["targets"])[known].float().mean()
        return {"loss": float(loss), "accuracy": float(accuracy)}

    def attention_example(self) -> dict[str, Any]:
        g = generator_for(EXAMPLE_SEED)
        # Distinct letters (when the alphabet allows) make the expected induction stripe unambiguous.
        if self.seq_len <= self.num_symbols:
            letters = torch.randperm(self.num_symbols, generator=g)[: self.seq_len] + 1
        else:
            letters = torch.randint(1, self.num_symbols + 1, (self.seq_len,), generator=g)
        batch = self.make_batch(letters[None, :])
        tokens = ["BOS", *(self.letter(int(i)) for i in batch["idx"][0, 1:])]
        return {"idx": batch["idx"], "ids": batch["idx"][0].tolist(), "tokens": {"decoder": tokens},
                "labels": {"decoder": (tokens, tokens)}}

    def attention(self, model: nn.Module, example: dict[str, Any]) -> dict[str, list[torch.Tensor]]:
        with evaluating(model):
            _, att = model.forward_with_attention(example["idx"].to(model_device(model)))
        return squeeze_attention(att)

    def pattern_scores(self, attention: dict[str, Any], example: dict[str, Any]) -> dict[str, np.ndarray]:
        weights = patterns.as_array(attention["decoder"])  # (L, H, T, T)
        t = weights.shape[-1]
        return {
            "decoder:induction": patterns.mask_score(weights, patterns.induction_target(example["ids"])),
            "decoder:previous_token": patterns.mask_score(weights, patterns.previous_token_target(t)),
        }

    @staticmethod
    def letter(token: int) -> str:
        """Display form of a letter id."""
        return string.ascii_uppercase[token - 1] if token >= 1 else "BOS"

    def samples(self, model: nn.Module, n: int = 8, *, seed: int = 0) -> list[Sample]:
        device = model_device(model)
        batch = {k: v.to(device) for k, v in self.sample_batch(n, generator_for(seed), held_out=True).items()}
        with evaluating(model):
            _, pred = self._predict(model, batch)
        out = []
        k = self.seq_len
        for i in range(n):
            first = "".join(self.letter(int(t)) for t in batch["idx"][i, 1 : k + 1])
            guesses = "".join(self.letter(int(t)) if int(t) >= 1 else "?" for t in pred[i, k + 1 : 2 * k])
            wrong = sum(a != b for a, b in zip(guesses, first[1:], strict=True))
            detail = f"{wrong} of {k - 1} letters wrong" if wrong else ""
            out.append(Sample(first, first, first[0] + guesses, wrong == 0, detail))
        return out


register(TaskEntry("induction", InductionTask, (CliOption("--seq-len", "seq_len", int, "sequence length"),),
                   options=(TaskOption("seq_len", int, 2, 64), TaskOption("num_symbols", int, 2, 26))))
