"""The pages' one live loop: ticks at a steady pace, and a click or a closed tab let through at once.

A page that shows something live — a run training, a watched run, a place in line, a lesson's progress, a model
writing — loops in its own script: do a little, redraw, wait, again. Streamlit acts on a click (Pause, Stop, any
widget) or a closed tab only where the script sends a message or reads ``st.session_state``: there it raises
``RerunException`` (the click's rerun; this needs ``runner.fastReruns = false``, see ``.streamlit/config.toml``) or
``StopException`` (the connection ended). :func:`ticks` paces such a loop and, while it waits for the next tick,
sleeps on the script run's request signal (:func:`~ui.common.st_internals.request_signal`), which Streamlit's
click or stop sets, and lets Streamlit act on the request at once
(:func:`~ui.common.st_internals.yield_to_streamlit`), so a click lands within a tick's own work even when the
tick draws nothing. A waiting page so wakes only for its ticks and its clicks: thirty watchers of a class make
sixty wake-ups a second, not six hundred, each of which would take a turn of the server's interpreter lock and
of a core from the teacher's run. Where there is no signal (outside a script run) it looks every
:data:`~ui.common.pace.WAKE_S`. The loop's owner catches those exceptions as before: to park its run when the tab
closed, to leave the line.

    for _ in ticks(pace.WATCH_TICK_S):
        if not read_news():
            continue  # nothing new: nothing sent
        view.refresh()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from ui.common import pace, st_internals

__all__ = ["ticks", "wait_until"]


def ticks(period_s: float | Callable[[], float], *, at_once: bool = True, rest_s: float = 0.0) -> Iterator[int]:
    """Tick numbers 0, 1, 2, … for ever, each tick starting ``period_s`` after the one before started.

    The time a tick's work takes comes out of the wait (work longer than the period: the next tick comes at once).
    Args:
        period_s: seconds from one tick's start to the next, or a function asked after each tick (a pace that
            follows what the page shows).
        at_once: whether the first tick comes at once; else after one period (the page was just drawn).
        rest_s: the least wait between two ticks, even when a tick ran late (time for the server's other sessions).
    """
    started = time.monotonic()
    if not at_once:
        wait_until(started + _period(period_s), rest_s=rest_s)
    n = 0
    while True:
        started = time.monotonic()
        yield n
        n += 1
        wait_until(started + _period(period_s), rest_s=rest_s)


def wait_until(due: float, *, rest_s: float = 0.0) -> None:
    """Wait until ``due`` (a ``time.monotonic()`` time), at least ``rest_s``; a click or a closed tab meanwhile
    raises Streamlit's ``RerunException`` / ``StopException`` at once (a click already waiting raises even when
    there is no time to wait)."""
    end = max(due, time.monotonic() + rest_s)
    signal = st_internals.request_signal()
    while True:
        if signal is not None:
            signal.clear()  # before the look: a request arriving after it sets the signal again
        if st_internals.click_pending():
            st_internals.yield_to_streamlit()
        left = end - time.monotonic()
        if left <= 0:
            return
        if signal is None:
            time.sleep(min(pace.WAKE_S, left))
        else:
            signal.wait(left)


def _period(period_s: float | Callable[[], float]) -> float:
    return period_s() if callable(period_s) else period_s
