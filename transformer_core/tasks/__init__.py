"""Built-in training tasks: data generated on the fly, a loss, a metric and the attention pattern to expect.

Each task module registers its tasks in :mod:`.registry` when imported; this package imports them once, in menu
order. ``get_task(name, **options)`` builds one by name, ``task_names()`` lists the registered ones and
``TASK_NAMES`` the built-in ones.
"""

from __future__ import annotations

import importlib

from .base import Sample, Task
from .registry import get_task, task_names

MODULES = ("sequences", "induction", "language", "proteins", "images")  # the built-in task modules, menu order
for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")  # each registers its tasks

TASK_NAMES = task_names()  # the built-in tasks, in menu order

__all__ = ["TASK_NAMES", "Sample", "Task", "get_task", "task_names"]
