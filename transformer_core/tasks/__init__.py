"""Built-in training tasks: data generated on the fly, a loss, a metric and the attention pattern to expect.

``get_task(name, **options)`` builds one by name; ``TASK_NAMES`` lists them in menu order.
"""

from __future__ import annotations

import inspect
from typing import Any

from .base import Sample, Task

TASK_NAMES = ("reverse", "copy", "sort", "induction", "char_lm", "protein", "vit_shapes")


def _task_class(name: str) -> type[Task]:
    """The class implementing ``name`` (imported on demand, so loading one task does not load them all)."""
    if name in ("reverse", "copy", "sort"):
        from .sequences import SequenceTask

        return SequenceTask
    if name == "induction":
        from .induction import InductionTask

        return InductionTask
    if name == "char_lm":
        from .language import CharLMTask

        return CharLMTask
    if name == "protein":
        from .proteins import ProteinTask

        return ProteinTask
    from .images import ShapesTask

    return ShapesTask


def get_task(name: str, **options: Any) -> Task:
    """Build the task called ``name`` with its keyword ``options`` (e.g. ``seq_len=8``, ``text=...``, ``pool="cls"``).

    Raises:
        ValueError: for an unknown name or an invalid option.
    """
    if name not in TASK_NAMES:
        raise ValueError(f"Unknown task {name!r}; choose one of {', '.join(TASK_NAMES)}.")
    task_class = _task_class(name)
    accepted = inspect.signature(task_class).parameters
    unknown = sorted(k for k in options if k not in accepted or k == "kind")
    if unknown:
        valid = ", ".join(k for k in accepted if k != "kind")
        raise ValueError(f"Invalid option(s) {', '.join(unknown)} for the {name!r} task; it accepts: {valid}.")
    if name in ("reverse", "copy", "sort"):
        return task_class(name, **options)
    return task_class(**options)


__all__ = ["TASK_NAMES", "Sample", "Task", "get_task"]
