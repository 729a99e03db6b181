"""A task written outside the package, registered by tests to show that one registration is all a task needs.

"Rotate": write the digits rotated left by ``shift`` places (``12345`` -> ``23451`` for a shift of one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from transformer_core.tasks import registry
from transformer_core.tasks.base import Batch
from transformer_core.tasks.sequences import SequenceTask

NAME = "rotate"
TITLE = "Rotate by one"


class RotateTask(SequenceTask):
    """The copy task's data and model, with the answer rotated left by ``shift`` places."""

    def __init__(self, *, shift: int = 1, seq_len: int = 6, min_len: int | None = None) -> None:
        super().__init__("copy", seq_len=seq_len, min_len=min_len)
        self.shift = shift
        self.name, self.title = NAME, TITLE
        self.description = "Write the digits rotated left by one place: 12345 becomes 23451."
        self.pattern_names = ()  # no known pattern is scored for it

    def pattern_scores(self, attention: dict, example: dict) -> dict:
        return {}

    def make_batch(self, digits: torch.Tensor, lengths: torch.Tensor) -> Batch:
        pos = torch.arange(digits.size(1))[None, :]  # (1, S)
        rotated = torch.gather(digits, 1, (pos + self.shift) % lengths[:, None])  # (B, S)
        question, answer = super().make_batch(digits, lengths), super().make_batch(rotated, lengths)
        return {**answer, "src": question["src"]}


ENTRY = registry.TaskEntry(NAME, RotateTask, (registry.CliOption("--rotate-by", "shift", int, "places to rotate"),))


@contextlib.contextmanager
def registered() -> Iterator[registry.TaskEntry]:
    """The rotate task registered for the duration of the block."""
    registry.register(ENTRY)
    try:
        yield ENTRY
    finally:
        registry.unregister(NAME)
