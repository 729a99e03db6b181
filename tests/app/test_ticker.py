"""The pages' one live loop (ui.common.ticker) and the clocks that pace it (ui.common.pace, explorer.runs.pace)."""

from __future__ import annotations

import pytest

from explorer.runs import pace as services
from ui.common import pace, st_internals, ticker


class _Clock:
    """A fake ``time`` module: ``sleep`` moves ``monotonic`` on, and every sleep is noted."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.now += seconds


class _Click(Exception):
    """Stands for Streamlit's RerunException in these tests."""


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    fake = _Clock()
    monkeypatch.setattr(ticker, "time", fake)
    monkeypatch.setattr(st_internals, "click_pending", lambda: False)
    monkeypatch.setattr(st_internals, "request_signal", lambda: None)  # no script run: the loop polls
    return fake


def _starts(clock: _Clock, gen, work: list[float]) -> list[float]:
    """When each tick of ``gen`` started, each doing ``work[i]`` seconds of work."""
    seen = []
    for i in gen:
        seen.append(round(clock.now - 100.0, 3))
        if i == len(work):
            break
        clock.now += work[i]
    return seen


def test_ticks_start_a_period_apart_and_work_comes_out_of_the_wait(clock):
    assert _starts(clock, ticker.ticks(0.1), [0.03, 0.07, 0.0]) == [0.0, 0.1, 0.2, 0.3]


def test_a_late_tick_is_followed_at_once_without_a_burst_of_catching_up(clock):
    # the second tick's work takes 2.5 periods: the third comes at once, the fourth a period after it
    assert _starts(clock, ticker.ticks(0.1), [0.0, 0.25, 0.0]) == [0.0, 0.1, 0.35, 0.45]


def test_the_first_tick_can_wait_a_period_and_a_rest_is_kept_even_when_late(clock):
    assert _starts(clock, ticker.ticks(0.5, at_once=False), [0.0]) == [0.5, 1.0]
    clock.now = 100.0
    assert _starts(clock, ticker.ticks(0.1, rest_s=0.05), [0.3, 0.0]) == [0.0, 0.35, 0.45]


def test_the_period_is_asked_after_every_tick(clock):
    periods = iter([0.1, 1.0, 0.5])
    assert _starts(clock, ticker.ticks(lambda: next(periods)), [0.0, 0.0, 0.0]) == [0.0, 0.1, 1.1, 1.6]


def test_without_a_request_signal_waiting_wakes_often_so_a_click_lands_within_a_wake(clock, monkeypatch):
    """A click 0.33 s into a 1 s wait interrupts it by 0.33 s + WAKE_S, not at the next tick."""
    def pending() -> bool:
        return clock.now >= 100.33

    def act() -> None:
        raise _Click

    monkeypatch.setattr(st_internals, "click_pending", pending)
    monkeypatch.setattr(st_internals, "yield_to_streamlit", act)
    with pytest.raises(_Click):
        for _ in ticker.ticks(1.0):
            pass
    assert 0.33 <= clock.now - 100.0 <= 0.33 + pace.WAKE_S + 1e-9
    assert max(clock.sleeps) <= pace.WAKE_S


def test_a_waiting_click_is_let_through_between_ticks_that_never_wait(clock, monkeypatch):
    """The owner's loop ticks back to back (the training is the tick's time): a click still lands between two."""
    clicked = {"at": 3}

    def pending() -> bool:
        return clicked["at"] == 0

    def act() -> None:
        raise _Click

    monkeypatch.setattr(st_internals, "click_pending", pending)
    monkeypatch.setattr(st_internals, "yield_to_streamlit", act)
    done = []
    with pytest.raises(_Click):
        for n in ticker.ticks(0.0):
            done.append(n)
            clicked["at"] -= 1
            clock.now += 0.25
    assert done == [0, 1, 2] and not clock.sleeps


class _Signal:
    """A fake request signal on the fake clock: ``wait`` sleeps until ``set_at`` (the click) or its timeout."""

    def __init__(self, clock: _Clock, set_at: float) -> None:
        self.clock, self.set_at, self.waits, self.flag = clock, set_at, [], False

    def clear(self) -> None:
        self.flag = False

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        if self.clock.now < self.set_at <= self.clock.now + timeout:
            self.clock.now, self.flag = self.set_at, True
        else:
            self.clock.now += timeout
        return self.flag


def test_a_waiting_loop_sleeps_until_its_tick_or_a_click_without_polling(clock, monkeypatch):
    """Two quiet ticks cost two waits (no wake-ups in between); a click 0.33 s into the third wakes it at 0.33 s."""
    signal = _Signal(clock, set_at=102.33)
    monkeypatch.setattr(st_internals, "request_signal", lambda: signal)
    monkeypatch.setattr(st_internals, "click_pending", lambda: clock.now >= signal.set_at)  # Streamlit's state

    def act() -> None:
        raise _Click

    monkeypatch.setattr(st_internals, "yield_to_streamlit", act)
    with pytest.raises(_Click):
        for _ in ticker.ticks(1.0):
            pass
    assert clock.now == pytest.approx(102.33)
    assert signal.waits == pytest.approx([1.0, 1.0, 1.0]) and not clock.sleeps


def test_a_real_click_wakes_a_long_wait_at_once(monkeypatch):
    """Streamlit's own request (from the server's event loop thread) ends a 60 s wait in another thread."""
    import threading
    import time
    from types import SimpleNamespace

    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

    requests = ScriptRequests()
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: SimpleNamespace(script_requests=requests))
    looks = []

    def pending() -> bool:
        looks.append(requests._state.name)
        return requests._state.name != "CONTINUE"

    def act() -> None:
        raise _Click

    monkeypatch.setattr(st_internals, "click_pending", pending)
    monkeypatch.setattr(st_internals, "yield_to_streamlit", act)
    outcome = []

    def wait() -> None:
        try:
            ticker.wait_until(time.monotonic() + 60.0)
        except _Click:
            outcome.append(time.monotonic())

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    time.sleep(0.3)
    clicked = time.monotonic()
    requests.request_rerun(RerunData())
    waiter.join(30.0)
    assert outcome and outcome[0] - clicked < 30.0, "the click did not end the wait"
    assert looks[-1] == "RERUN" and looks.count("CONTINUE") <= 2, f"the wait polled: {len(looks)} looks"


def test_yield_to_streamlit_runs_the_script_runners_own_check(monkeypatch):
    from types import SimpleNamespace

    from streamlit.runtime.state import SafeSessionState, SessionState

    calls = []
    state = SafeSessionState(SessionState(), yield_callback=lambda: calls.append("checked"))
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: SimpleNamespace(session_state=state))
    st_internals.yield_to_streamlit()
    assert calls == ["checked"], f"Streamlit {st_internals.streamlit_version()} moved SafeSessionState's check"


def test_the_clocks_fit_together():
    """The relations the two pace modules describe: each "gone" limit is many ticks long, a watcher's news is
    never older than a few ticks, and the watchdog waits far longer than the slowest tick."""
    assert services.TRAINER_SLICE_S < pace.OWNER_TICK_S  # a trainer reports several times per redraw
    assert services.PUBLISH_INTERVAL_S <= pace.OWNER_TICK_S  # every redraw of a shared run may publish
    assert pace.WATCH_TICK_S <= pace.WATCH_IDLE_TICK_S
    assert pace.WAKE_S < pace.WRITING_TICK_S and pace.WAKE_S < pace.OWNER_TICK_S  # a click lands within a tick
    assert services.TRAINER_SLICE_S + pace.OWNER_TICK_S + pace.WATCH_TICK_S < 1.0  # a step on screen within 1 s
    assert services.TICKET_STALE_S >= 8 * pace.LINE_POLL_S
    assert services.WATCHER_TTL_S >= 8 * pace.WATCH_IDLE_TICK_S
    assert services.UNDRIVEN_S >= 40 * pace.OWNER_TICK_S and services.UNDRIVEN_S >= 40 * pace.LESSON_TICK_S
    assert pace.STALL_S >= 8 * pace.WATCH_IDLE_TICK_S and pace.ENDED_S > pace.WATCH_IDLE_TICK_S
    assert pace.HEATMAP_INTERVAL_S >= pace.OWNER_TICK_S and pace.CURVES_INTERVAL_S >= pace.OWNER_TICK_S
    # the status line's figures but the Step wait for a watcher's next tick or two, never for the watchdog
    assert pace.WATCH_TICK_S <= pace.FIGURES_INTERVAL_S <= 4 * pace.WATCH_TICK_S < pace.STALL_S
