"""Sequence-to-sequence tasks on digit strings: copy, reverse and sort (encoder-decoder model).

Token ids: 0 = padding, 1 = BOS (start of the answer), 2 = EOS (end of the answer), 3..12 = the digits 0..9.
The encoder reads the digits; the decoder writes the answer one digit at a time and then EOS. A trained model's
cross-attention shows where each output digit was copied from: the diagonal for copy, the anti-diagonal for
reverse, and for sort the source positions holding the digit being written.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .. import patterns
from ..config import TransformerConfig
from ..models import Seq2SeqTransformer
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

PAD, BOS, EOS = 0, 1, 2
DIGIT0 = 3  # id of the digit 0
IGNORE = -100  # target id that the loss skips (padding positions)
EXAMPLE_SEED = 20240611  # seed of the fixed example whose attention is recorded

KINDS = {
    "copy": ("Copy", "Write the digits back unchanged. Each output digit copies the input digit at the same "
             "position, so the cross-attention should become a diagonal."),
    "reverse": ("Reverse", "Write the digits backwards. The first output digit is the last input digit, so the "
                "cross-attention should become an anti-diagonal."),
    "sort": ("Sort", "Write the digits in ascending order. Each output digit has to find where that digit sits "
             "in the input, so the cross-attention jumps to the matching source positions."),
}
PATTERNS = {"copy": "cross:diagonal", "reverse": "cross:anti_diagonal", "sort": "cross:sorted_source"}


def transform(kind: str, digits: list[int]) -> list[int]:
    """The right answer for one digit list."""
    if kind == "copy":
        return list(digits)
    if kind == "reverse":
        return digits[::-1]
    return sorted(digits)


def digits_text(ids: list[int] | torch.Tensor) -> str:
    """Digit token ids as a digit string; special tokens are skipped."""
    return "".join(str(int(i) - DIGIT0) for i in ids if int(i) >= DIGIT0)


class SequenceTask(Task):
    """Copy, reverse or sort digit sequences of variable length with an encoder-decoder transformer.

    Args:
        kind: ``"copy"``, ``"reverse"`` or ``"sort"``.
        seq_len: longest input sequence (and the length of the fixed attention example).
        min_len: shortest input sequence; lengths are drawn uniformly from ``min_len..seq_len``. Defaults to
            half of ``seq_len`` (rounded up), so the model must find where each answer ends rather than
            learn one fixed length.
        num_digits: how many different digits appear (2 to 10).
        eval_size: held-out sequences per evaluation.

    About one digit sequence in ten is held out by a fixed rule on its digits (:func:`.base.held_out_mask`):
    training batches never contain it and evaluation batches contain nothing else, so the accuracy measures
    sequences the model has never seen (unless the settings allow too few sequences to spare any; see
    ``notice``).
    """

    family = "seq2seq"
    metric_name = "accuracy"

    def __init__(self, kind: str = "reverse", *, seq_len: int = 8, min_len: int | None = None,
                 num_digits: int = 10, eval_size: int = 512) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind={kind!r} is not one of {', '.join(KINDS)}.")
        if not 1 <= seq_len <= 64:
            raise ValueError(f"seq_len={seq_len} must be between 1 and 64.")
        min_len = (seq_len + 1) // 2 if min_len is None else min_len
        if not 1 <= min_len <= seq_len:
            raise ValueError(f"min_len={min_len} must be between 1 and seq_len={seq_len}.")
        if not 2 <= num_digits <= 10:
            raise ValueError(f"num_digits={num_digits} must be between 2 and 10.")
        self.kind, self.seq_len, self.min_len, self.num_digits = kind, seq_len, min_len, num_digits
        self.eval_size = eval_size
        self.name = kind
        self.title, self.description = KINDS[kind]
        self.metric_target = 0.95 if kind == "sort" else 0.99
        self.pattern_names = (PATTERNS[kind],)
        possible = sum(num_digits**n for n in range(min_len, seq_len + 1))
        self.held_out_split = has_split(possible)
        self.notice = None if self.held_out_split else no_split_notice(possible)

    def options(self) -> dict[str, Any]:
        return {"seq_len": self.seq_len, "min_len": self.min_len, "num_digits": self.num_digits}

    def input_vocabulary(self) -> dict[str, int]:
        return {str(d): DIGIT0 + d for d in range(self.num_digits)}

    def train_defaults(self) -> dict[str, Any]:
        return {"steps": 400 if self.kind == "sort" else 300, "batch_size": 64, "lr": 3e-3, "schedule": "cosine",
                "warmup_steps": 30}

    def default_model_config(self) -> TransformerConfig:
        return TransformerConfig(vocab_size=DIGIT0 + self.num_digits, max_len=self.seq_len + 1, d_model=64,
                                 n_heads=4, n_layers=2, d_ff=256, norm_position="pre", pad_id=PAD)

    def build_model(self, config: TransformerConfig) -> nn.Module:
        check_config_type(config, TransformerConfig, self)
        if config.vocab_size < DIGIT0 + self.num_digits:
            raise ValueError(f"vocab_size={config.vocab_size} is too small: the {self.title} task uses "
                             f"{DIGIT0 + self.num_digits} tokens (padding, BOS, EOS and {self.num_digits} digits).")
        if config.max_len < self.seq_len + 1:  # rotary tables are built for max_len positions too
            raise ValueError(f"max_len={config.max_len} is too short: answers have up to {self.seq_len + 1} "
                             "tokens (the digits and EOS).")
        if config.pad_id != PAD:
            config = replace(config, pad_id=PAD)  # padding id 0 is part of the task's vocabulary
        return Seq2SeqTransformer(config)

    def _digits(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        lengths = torch.randint(self.min_len, self.seq_len + 1, (n,), generator=generator)
        digits = torch.randint(0, self.num_digits, (n, self.seq_len), generator=generator)
        return digits, lengths

    def make_batch(self, digits: torch.Tensor, lengths: torch.Tensor) -> Batch:
        """Encoder input, decoder input and targets for digit rows ``(B, seq_len)`` cut to ``lengths``."""
        b, n = digits.shape
        pos = torch.arange(n)[None, :]  # (1, S)
        valid = pos < lengths[:, None]  # (B, S)
        keyed = torch.where(valid, digits, self.num_digits)  # padding sorts after every digit
        if self.kind == "reverse":
            idx = (lengths[:, None] - 1 - pos).clamp(min=0)
            answer = torch.gather(digits, 1, idx)
        elif self.kind == "sort":
            answer = keyed.sort(dim=1, stable=True).values
        else:
            answer = digits
        src = torch.where(valid, digits + DIGIT0, PAD)
        answer = torch.where(valid, answer + DIGIT0, PAD)
        tgt_in = torch.cat([torch.full((b, 1), BOS), answer], dim=1)  # (B, S + 1)
        tgt_out = torch.cat([answer, torch.full((b, 1), PAD)], dim=1)
        tgt_out[torch.arange(b), lengths] = EOS
        tgt_out = tgt_out.masked_fill(tgt_out == PAD, IGNORE)
        return {"src": src, "tgt_in": tgt_in, "tgt_out": tgt_out, "lengths": lengths}

    def sample_batch(self, batch_size: int, generator: torch.Generator, *, held_out: bool = False) -> Batch:
        """A batch of training sequences, or with ``held_out=True`` of evaluation-only sequences."""
        def draw(n: int) -> Batch:
            digits, lengths = self._digits(n, generator)
            return {"digits": digits, "lengths": lengths}

        if self.held_out_split:
            rows = draw_split(draw, lambda r: held_out_mask(r["digits"], r["lengths"]), batch_size,
                              evaluation=held_out)
        else:
            rows = draw(batch_size)
        return self.make_batch(rows["digits"], rows["lengths"])

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        logits = model(batch["src"], batch["tgt_in"])  # (B, T, V)
        return F.cross_entropy(logits.flatten(0, 1), batch["tgt_out"].flatten(), ignore_index=IGNORE)

    def _greedy(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """Greedy answers ``(B, seq_len + 1)``: the generated ids after BOS (digits, then EOS and padding)."""
        out = model.greedy_decode(batch["src"], bos_id=BOS, max_new_tokens=self.seq_len + 1, eos_id=EOS)
        return out[:, 1:]

    def _exact(self, answer: torch.Tensor, batch: Batch) -> torch.Tensor:
        """Per-example exact match of answers ``(B, T)`` with the targets (the digits and the EOS after them)."""
        known = batch["tgt_out"] != IGNORE
        return ((answer == batch["tgt_out"]) | ~known).all(dim=1)

    def evaluate(self, model: nn.Module, *, seed: int = 0) -> dict[str, float]:
        """Loss and exact-match accuracy on ``eval_size`` held-out sequences.

        The accuracy is that of greedy decoding, computed in one teacher-forced pass: greedy decoding writes
        the right answer exactly when the most likely token is right at every position given the right prefix
        (at the first wrong token the two would part ways, and then the answer is wrong either way).
        """
        device = model_device(model)
        batch = self.sample_batch(self.eval_size, generator_for(seed), held_out=True)
        batch = {k: v.to(device) for k, v in batch.items()}
        with evaluating(model):
            logits = model(batch["src"], batch["tgt_in"])  # (B, T, V)
            loss = F.cross_entropy(logits.flatten(0, 1), batch["tgt_out"].flatten(), ignore_index=IGNORE)
            exact = self._exact(logits.argmax(dim=-1), batch)
        return {"loss": float(loss), "accuracy": float(exact.float().mean())}

    def attention_example(self) -> dict[str, Any]:
        digits, _ = self._digits(1, generator_for(EXAMPLE_SEED))
        batch = self.make_batch(digits, torch.tensor([self.seq_len]))
        src = [str(int(d)) for d in digits[0]]
        answer = list(digits_text(batch["tgt_in"][0]))
        tgt = ["BOS", *answer]
        return {
            "src": batch["src"], "tgt_in": batch["tgt_in"], "digits": [int(d) for d in digits[0]],
            "tokens": {"src": src, "tgt": tgt},
            "labels": {"encoder": (src, src), "decoder": (tgt, tgt), "cross": (tgt, src)},
        }

    def attention(self, model: nn.Module, example: dict[str, Any]) -> dict[str, list[torch.Tensor]]:
        device = model_device(model)
        with evaluating(model):
            _, att = model.forward_with_attention(example["src"].to(device), example["tgt_in"].to(device))
        return squeeze_attention(att)

    def expected_sources(self, digits: list[int]) -> list[list[int]]:
        """For each output position, the source positions it should read from."""
        n = len(digits)
        if self.kind == "copy":
            return [[i] for i in range(n)]
        if self.kind == "reverse":
            return [[n - 1 - i] for i in range(n)]
        return [[j for j in range(n) if digits[j] == d] for d in sorted(digits)]

    def pattern_scores(self, attention: dict[str, Any], example: dict[str, Any]) -> dict[str, np.ndarray]:
        cross = patterns.as_array(attention["cross"])  # (L, H, T, S)
        t, s = cross.shape[-2:]
        pairs = [(row, col) for row, cols in enumerate(self.expected_sources(example["digits"])) for col in cols]
        return {PATTERNS[self.kind]: patterns.mask_score(cross, patterns.alignment_target(t, s, pairs))}

    def samples(self, model: nn.Module, n: int = 8, *, seed: int = 0) -> list[Sample]:
        device = model_device(model)
        batch = {k: v.to(device) for k, v in self.sample_batch(n, generator_for(seed), held_out=True).items()}
        with evaluating(model):
            answer = self._greedy(model, batch).cpu()
        exact = self._exact(answer.to(device), batch).cpu()
        out = []
        for i in range(n):
            target = digits_text(batch["tgt_in"][i].cpu())
            cut = answer[i].tolist()
            cut = cut[: cut.index(EOS)] if EOS in cut else cut
            pred = digits_text(cut)
            detail = "" if bool(exact[i]) else answer_errors(pred, target)
            out.append(Sample(digits_text(batch["src"][i].cpu()), target, pred, bool(exact[i]), detail))
        return out



def answer_errors(prediction: str, target: str) -> str:
    """What is wrong with a digit answer, counted against the right answer's length.

    Positions of the right answer that hold another digit or none are wrong; digits past its end are extra,
    e.g. "1 of 4 digits wrong, 2 extra".
    """
    wrong = sum(a != b for a, b in zip(prediction, target, strict=False)) + max(0, len(target) - len(prediction))
    extra = max(0, len(prediction) - len(target))
    parts = [f"{wrong} of {len(target)} digits wrong"] if wrong or not extra else []
    if extra:
        parts.append(f"{extra} extra digit{'s' if extra != 1 else ''}")
    return ", ".join(parts)


SEQ_LEN_OPTION = CliOption("--seq-len", "seq_len", int, "sequence length, the longest where lengths vary")
MIN_LEN_OPTION = CliOption("--min-len", "min_len", int, "shortest sequence, by default half of --seq-len")
SEQUENCE_OPTIONS = (TaskOption("seq_len", int, 1, 64), TaskOption("min_len", int, 1, 64),
                    TaskOption("num_digits", int, 2, 10))
for _kind in ("reverse", "copy", "sort"):  # menu order
    register(TaskEntry(_kind, functools.partial(SequenceTask, _kind), (SEQ_LEN_OPTION, MIN_LEN_OPTION),
                       options=SEQUENCE_OPTIONS))
