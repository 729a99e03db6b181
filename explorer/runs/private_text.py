"""What watchers receive of a run on a user's own text: the curves and the attention, never a line of the text.

A run that trains on data its user supplied (:func:`explorer.runs.user_data.user_data`) is shared live only in
a redacted form unless its owner agreed, for that run, to show watchers its samples: :func:`redact` drops the
sample predictions (lines of the held-out text and the model's continuations of them) from every frame before it
is published, and the channel's state says ``private_text`` so that a watcher's page rebuilds the task over a
placeholder text (:func:`placeholder_task`): the attention maps are drawn with "•" where the owner sees the
characters of the text. Metrics, curves and the model's settings (its vocabulary size included) are sent as for
any run; the model file only when the owner allows downloads.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from explorer.i18n import N_
from explorer.runs.frame import RunFrame
from transformer_core.tasks import get_task
from transformer_core.tasks.base import Task
from transformer_core.tasks.language import CharLMTask

__all__ = ["PLACEHOLDER", "placeholder_task", "redact"]

PLACEHOLDER = "•"  # what watchers see for every character of a private text


def redact(frame: RunFrame) -> RunFrame:
    """``frame`` without its sample predictions (each lane's samples empty), for watchers of a private run."""
    return replace(frame, lanes=tuple(replace(lane, samples=()) for lane in frame.lanes))


# What watchers read of such a run (English here: the watcher's page says them in its language, ``_(task.title)``).
TITLE = N_("Character language model (a private text)")
DESCRIPTION = N_(
    "Its owner trains on a text of their own and shares the curves and the attention only: every "
    "character is shown as {placeholder}."
)


class _PlaceholderText(CharLMTask):
    """The character language model over a placeholder text: its attention example shows only placeholders."""

    def __init__(self, block_size: int) -> None:
        super().__init__(f"{PLACEHOLDER} " * (2 * block_size + 64), block_size=block_size)  # longer than 2 windows
        self.title = TITLE
        self.description = DESCRIPTION.format(placeholder=PLACEHOLDER)

    def attention_example(self) -> dict[str, Any]:
        example = super().attention_example()
        tokens = [PLACEHOLDER] * len(example["tokens"]["decoder"])
        return {
            **example,
            "text": PLACEHOLDER * len(tokens),
            "tokens": {"decoder": tokens},
            "labels": {"decoder": (tokens, tokens)},
        }


def placeholder_task(name: str, options: dict[str, Any]) -> Task:
    """The task ``name`` with ``options`` as watchers of a private run see it: over a placeholder text whose
    attention example has as many characters as the owner's, each shown as :data:`PLACEHOLDER`."""
    task = get_task(name, **options)
    return _PlaceholderText(task.block_size) if isinstance(task, CharLMTask) else task
