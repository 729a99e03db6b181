"""The registry of tasks: each task module registers its tasks here when the package imports it.

An entry says how to build the task (``build(**options)``) and which command-line options it understands, so the
trainer, ``python -m transformer_core.train`` and the app's task menus list and build tasks without naming them.
Everything else a task offers (title, description, model family, tuned model and training settings, the patterns
it scores) lives on the :class:`~transformer_core.tasks.base.Task` it builds.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import Task


@dataclass(frozen=True)
class CliOption:
    """One command-line option of a task: ``--flag VALUE`` becomes the keyword ``option`` of the task's builder."""

    flag: str  # e.g. "--seq-len"; several tasks may declare the same flag
    option: str  # keyword of the task's builder it sets, e.g. "seq_len"
    type: Callable[[str], Any]  # argparse's converter of the raw text, e.g. int
    help: str  # the help text shown by --help
    read: Callable[[Any], Any] | None = None  # turns the parsed value into the option's value (e.g. a file's text)

    @property
    def dest(self) -> str:
        """The attribute argparse stores the value under (``--seq-len`` -> ``seq_len``)."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class TaskOption:
    """One option of :meth:`Task.options`, declared so that options read from elsewhere (a shared run, a stored
    recording) can be checked before a task is built with them."""

    name: str  # keyword of the task's builder, e.g. "seq_len"
    type: type  # int, float or str; a float option also takes a whole number
    low: float | None = None  # smallest allowed number (int and float options)
    high: float | None = None  # largest allowed number (int and float options)
    choices: tuple[str, ...] = ()  # the allowed texts (str options)

    def check(self, value: Any, task: str) -> Any:
        """``value`` as this option's type; ``ValueError`` saying what is wrong when it is not allowed."""
        where = f"Option {self.name!r} of the {task!r} task"
        if self.type is str:
            if not isinstance(value, str) or value not in self.choices:
                raise ValueError(f"{where} must be one of {', '.join(self.choices)}, not {value!r:.40}.")
            return value
        number = isinstance(value, int) or (self.type is float and isinstance(value, float))
        if isinstance(value, bool) or not number or (isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"{where} must be a {'whole ' if self.type is int else ''}number, not {value!r:.40}.")
        low = -math.inf if self.low is None else self.low
        high = math.inf if self.high is None else self.high
        if not low <= value <= high:
            raise ValueError(f"{where} must be between {low:g} and {high:g}, not {value!r:.40}.")
        return self.type(value)


@dataclass(frozen=True)
class TaskEntry:
    """One registered task."""

    name: str  # the task's name in menus, links, checkpoints and the CLI, e.g. "reverse"
    build: Callable[..., Task]  # build(**options) -> the task; its keyword parameters are the valid options
    cli_options: tuple[CliOption, ...] = ()  # command-line options it understands besides the common ones
    writes_text: bool = False  # the trained model can write text (the CLI's --temperature and --top-k)
    options: tuple[TaskOption, ...] = ()  # what Task.options() returns: the only options checked_options accepts


_ENTRIES: dict[str, TaskEntry] = {}


def register(entry: TaskEntry) -> TaskEntry:
    """Add ``entry`` at the end of the menu order; a name may be registered once."""
    if entry.name in _ENTRIES:
        raise ValueError(f"A task called {entry.name!r} is already registered.")
    _ENTRIES[entry.name] = entry
    return entry


def unregister(name: str) -> None:
    """Remove the task called ``name`` (tests that register a task of their own clean up with this)."""
    _ENTRIES.pop(name, None)


def task_names() -> tuple[str, ...]:
    """The registered task names in menu order."""
    return tuple(_ENTRIES)


def entry(name: str) -> TaskEntry:
    """The entry of task ``name``; ``ValueError`` naming the choices for an unknown name."""
    if name not in _ENTRIES:
        raise ValueError(f"Unknown task {name!r}; choose one of {', '.join(_ENTRIES)}.")
    return _ENTRIES[name]


def get_task(name: str, **options: Any) -> Task:
    """Build the task called ``name`` with its keyword ``options`` (e.g. ``seq_len=8``, ``text=...``, ``pool="cls"``).

    Raises:
        ValueError: for an unknown name or an invalid option.
    """
    build = entry(name).build
    accepted = [k for k, p in inspect.signature(build).parameters.items() if p.kind is not p.VAR_KEYWORD]
    unknown = sorted(k for k in options if k not in accepted)
    if unknown:
        raise ValueError(f"Invalid option(s) {', '.join(unknown)} for the {name!r} task; it accepts: "
                         f"{', '.join(accepted)}.")
    return build(**options)


def checked_options(name: str, options: Any) -> dict[str, Any]:
    """``options`` for task ``name`` read from outside this process, checked against the options its entry
    declares (:class:`TaskOption`): only those, each of its type and within its bounds.

    Raises:
        ValueError: for an unknown task, options that are not a mapping, an undeclared option or a bad value.
    """
    declared = {option.name: option for option in entry(name).options}
    if not isinstance(options, dict):
        raise ValueError(f"The options of the {name!r} task are not a mapping of names to values.")
    unknown = sorted(str(k)[:40] for k in options if k not in declared)
    if unknown:
        raise ValueError(f"Undeclared option(s) {', '.join(unknown)} for the {name!r} task; it declares: "
                         f"{', '.join(declared) or 'none'}.")
    return {k: declared[k].check(v, name) for k, v in options.items()}


def cli_options() -> dict[str, tuple[CliOption, tuple[str, ...]]]:
    """Every task's command-line options by flag, each with the names of the tasks that understand it."""
    found: dict[str, tuple[CliOption, tuple[str, ...]]] = {}
    for name, task_entry in _ENTRIES.items():
        for option in task_entry.cli_options:
            first, names = found.get(option.flag, (option, ()))
            found[option.flag] = (first, (*names, name))
    return found
