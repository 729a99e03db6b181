"""Which runs train on a user's own data, and a fingerprint of that data.

A run's settings determine it only together with the data it trains on. Built-in tasks make their data from
their options and the seed; a task that reads data a user supplied — today the character language model on
pasted or uploaded text (:class:`~transformer_core.tasks.language.CharLMTask` built with ``text=``) — trains on
something no setting names. Such a run is private to its session: its recording key carries the data's
fingerprint (:func:`user_data_hash`), and it is never kept in, nor replayed from, the recordings that all sessions
share (:attr:`explorer.runs.live.LiveRun.recordable` is False for it). A new task that reads user data adds its
case to :func:`user_data` below.
"""

from __future__ import annotations

import hashlib

from transformer_core.tasks.base import Task
from transformer_core.tasks.language import CharLMTask

__all__ = ["private_data", "user_data", "user_data_hash"]


def private_data(task: Task) -> bool:
    """Whether ``task`` trains on data a user supplied (what :func:`user_data` returns, without copying it)."""
    return isinstance(task, CharLMTask) and task.user_text


def user_data(task: Task) -> bytes | None:
    """The user-supplied data ``task`` trains on, as bytes, or ``None`` when it trains on built-in data only."""
    if private_data(task):
        # Both halves and the split point: two texts that differ anywhere differ here.
        return "\x00".join((task.train_text, task.val_text)).encode("utf-8", "surrogatepass")
    return None


def user_data_hash(task: Task) -> str | None:
    """A SHA-256 fingerprint (hex) of the user's data ``task`` trains on, or ``None`` for built-in data."""
    data = user_data(task)
    return None if data is None else hashlib.sha256(data).hexdigest()
