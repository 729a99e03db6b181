"""What a stored run's ``state``, ``meta`` and timeline may hold: values read back from the shared run store are
checked like uploads.

The run store is shared between users and app servers (:mod:`explorer.runs.store`), so what a page reads back
from it is data from elsewhere: the codec (:mod:`explorer.runs.codec`) checks each value's structure, and the
functions here check what the app then relies on, as :class:`~explorer.runs.updates.RunUpdate` documents it: the
types, ranges and lengths of every field, finite numbers where a number is a time or a count, lane counts that
agree, and task options that the task's registry entry declares (only those, each of its type and within its
bounds: :func:`transformer_core.tasks.registry.checked_options`). Each function returns the checked value or
raises a :class:`ValueError` that says what is wrong.

Keys not named here may be added by newer code: ``state`` and ``meta`` keep them when their values are plain
scalars (``None``, true/false, a finite number, text of at most :data:`TEXT_CHARS`), and refuse anything else.
"""

from __future__ import annotations

import math
from typing import Any

from explorer.runs.live import STATUSES
from transformer_core.tasks.registry import checked_options, entry

__all__ = ["ID_CHARS", "LANES", "TEXT_CHARS", "check_meta", "check_note", "check_state", "check_timeline",
           "check_watcher_id", "lane_count"]

LANES = 2  # a run trains one model, or two side by side
TEXT_CHARS = 2000  # longest message, reason, label or link setting kept
ID_CHARS = 128  # longest recording key or watcher id
MAX_COUNT = 10**9  # steps, step counts: far above any run a server allows
QUERY_KEYS = 64  # settings in a link's query at most

_SCALARS = (type(None), bool, int, float, str)


def _fail(where: str, what: str) -> ValueError:
    return ValueError(f"{where} {what}")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise _fail(where, "is not an object")
    return value


def _text(value: Any, where: str, *, limit: int = TEXT_CHARS, empty: bool = True) -> str:
    if not isinstance(value, str) or len(value) > limit or (not empty and not value):
        raise _fail(where, f"is not text of {'1' if not empty else '0'} to {limit} characters")
    return value


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise _fail(where, f"is not a whole number from 0 to {MAX_COUNT:,}")
    return value


def _seconds(value: Any, where: str) -> float:
    """A finite number ≥ 0 (a duration or a rate)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise _fail(where, "is not a finite number ≥ 0")
    return float(value)


def _metrics(value: Any, where: str) -> dict[str, float]:
    """Metric name -> number (NaN and infinities allowed: a diverged run's loss is one)."""
    for name, number in _object(value, where).items():
        _text(name, f"{where}: a metric name", limit=ID_CHARS)
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise _fail(where, f"has a metric {name!r} that is not a number")
    return value


def _extras(value: dict[str, Any], known: set[str], where: str) -> None:
    """Keys besides the documented ones hold plain scalars only."""
    for key in value.keys() - known:
        extra = value[key]
        if not isinstance(extra, _SCALARS) or (isinstance(extra, float) and not math.isfinite(extra)):
            raise _fail(where, f"holds {key[:40]!r}, which is not plain data")
        if isinstance(extra, str):
            _text(extra, f"{where} {key[:40]!r}")


def _lane_state(value: Any, where: str) -> dict[str, Any]:
    lane = _object(value, where)
    if set(lane) != {"step", "steps", "done", "last_eval"}:
        raise _fail(where, "is not {step, steps, done, last_eval}")
    _count(lane["step"], f"{where} step")
    _count(lane["steps"], f"{where} steps")
    if not isinstance(lane["done"], bool):
        raise _fail(where, "'done' is not true or false")
    if lane["last_eval"] is not None:
        _metrics(lane["last_eval"], f"{where} last evaluation")
    return lane


def check_state(value: Any) -> dict[str, Any]:
    """``value`` when it is a run's state as :func:`explorer.runs.watch.state_of` makes it; else ``ValueError``."""
    state = _object(value, "state")
    missing = {"status", "step", "lanes"} - state.keys()
    if missing:
        raise _fail("state", f"lacks {', '.join(sorted(missing))}")
    if state["status"] not in STATUSES:
        raise _fail("state", f"has an unknown status {str(state['status'])[:40]!r}")
    if state.get("message") is not None:
        _text(state["message"], "state message")
    _count(state["step"], "state step")
    _seconds(state.get("steps_per_second", 0.0), "state steps per second")
    if state.get("eta_s") is not None:
        _seconds(state["eta_s"], "state time left")
    for flag in ("downloads", "replay"):
        if not isinstance(state.get(flag, False), bool):
            raise _fail("state", f"{flag!r} is not true or false")
    lanes = state["lanes"]
    if not isinstance(lanes, list) or not 1 <= len(lanes) <= LANES:
        raise _fail("state", f"does not have 1 to {LANES} lanes")
    for i, lane in enumerate(lanes):
        _lane_state(lane, f"state lane {i}")
    _extras(state, {"status", "message", "step", "steps_per_second", "eta_s", "lanes", "downloads", "replay"},
            "state")
    return state


def check_meta(value: Any) -> dict[str, Any]:
    """``value`` when it describes a run as :func:`explorer.runs.recording.recording_meta` does (its task
    registered, the task's options declared and in bounds); else ``ValueError``."""
    meta = _object(value, "meta")
    missing = {"task", "task_options", "labels", "config"} - meta.keys()
    if missing:
        raise _fail("meta", f"lacks {', '.join(sorted(missing))}")
    name = _text(meta["task"], "meta task", limit=ID_CHARS)
    entry(name)  # a registered task, or a ValueError naming the choices
    meta["task_options"] = checked_options(name, meta["task_options"])
    labels = meta["labels"]
    if not isinstance(labels, list) or not 1 <= len(labels) <= LANES:
        raise _fail("meta", f"does not have 1 to {LANES} lane labels")
    for i, label in enumerate(labels):
        _text(label, f"meta label {i}")
    _object(meta["config"], "meta config")
    if meta.get("recording") is not None:
        _text(meta["recording"], "meta recording key", limit=ID_CHARS)
    if meta.get("query") is not None:
        query = _object(meta["query"], "meta link query")
        if len(query) > QUERY_KEYS:
            raise _fail("meta link query", f"has more than {QUERY_KEYS} settings")
        for key, setting in query.items():
            _text(key, "meta link query: a setting's name", limit=ID_CHARS)
            _text(setting, f"meta link query setting {key[:40]!r}")
    _extras(meta, {"task", "task_options", "labels", "config", "recording", "query"}, "meta")
    return meta


def lane_count(lanes: int, state: dict[str, Any], meta: dict[str, Any] | None = None) -> int:
    """``lanes`` (the lanes of an update or a recording) when ``state``'s lanes and ``meta``'s labels (if given)
    agree with it; else ``ValueError``."""
    labels = len(meta["labels"]) if meta is not None else lanes
    if not lanes == len(state["lanes"]) == labels:
        raise _fail("run", f"has lane counts that disagree ({lanes} lanes, {len(state['lanes'])} lane states"
                           + (f", {labels} labels)" if meta is not None else ")"))
    return lanes


def check_timeline(value: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """A recording's pace: at least one ``(seconds, step)`` point, seconds finite, neither going back."""
    if not value:
        raise _fail("timeline", "is empty")
    last = (0.0, 0)
    for i, (seconds, step) in enumerate(value):
        _seconds(seconds, f"timeline point {i}")
        _count(step, f"timeline point {i} step")
        if seconds < last[0] or step < last[1]:
            raise _fail("timeline", f"goes back in time at point {i}")
        last = (seconds, step)
    return value


def check_note(value: Any) -> dict[str, Any]:
    """An ended channel's note, ``{"reason", "recording"}``; else ``ValueError``."""
    note = _object(value, "ended run's note")
    if set(note) != {"reason", "recording"}:
        raise _fail("ended run's note", "is not {reason, recording}")
    _text(note["reason"], "ended run's reason")
    if note["recording"] is not None:
        _text(note["recording"], "ended run's recording key", limit=ID_CHARS, empty=False)
    return note


def check_watcher_id(value: Any) -> str:
    """A watcher id: text of 1 to :data:`ID_CHARS` characters."""
    return _text(value, "watcher id", limit=ID_CHARS, empty=False)


def check_pointer(value: Any) -> str:
    """What a store's pointer names (a channel or a class link id): text of 1 to :data:`ID_CHARS` characters."""
    return _text(value, "pointer", limit=ID_CHARS, empty=False)
