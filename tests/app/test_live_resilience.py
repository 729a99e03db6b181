"""Live Training never freezes: the loop skips frames for a slow browser, parks its run when the connection
ends, pauses on an unexpected error, and a reloaded tab takes its run back where it stopped."""

from __future__ import annotations

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.testing.v1 import AppTest

from explorer.runs.clients import Client
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.registry import REGISTRY
from explorer.runs.session import RunSession
from tests.app.conftest import APP, DEFAULT_TIMEOUT, assert_no_exception
from transformer_core.tasks import get_task
from transformer_core.training import default_train_config
from ui.common import st_internals
from ui.training import controls
from ui.training import run as tr

PAGE = "pages/training.py"
TINY = {"task": "reverse", "d_model": "16", "heads": "2", "layers": "1", "d_ff": "32", "batch": "8", "steps": "40"}


def tiny_run(steps: int = 40) -> LiveRun:
    task = get_task("reverse", seq_len=4, eval_size=16)
    return LiveRun(task, [RunSpec("A", task.default_model_config(), default_train_config(task, steps=steps))])


def session_of(monkeypatch, run: LiveRun, tab: str = "a-tab", token: str | None = None) -> RunSession:
    """``run`` as the page's session's run (in a plain dict standing in for the session state)."""
    held = RunSession(Client(tab, browser="the-browser"), max_running=lambda: 6)
    held.run, held.token = run, token
    monkeypatch.setattr(tr.st, "session_state", {controls.SESSION: held})
    return held


def same_browser(monkeypatch, browser: str = "the-browser") -> None:
    """Every AppTest session of this test counts as one browser (AppTest sends no cookies)."""
    monkeypatch.setattr(tr, "visitor", lambda: Client(st_internals.session_id() or "app-test", browser=browser))


class View:
    """A live view that counts its redraws and can fail the way a closed tab or a bug does."""

    pinned_step = None  # follows training

    def __init__(self, fail: BaseException | None = None, after: int = 0) -> None:
        self.redraws, self.fail, self.after = 0, fail, after

    def refresh(self) -> None:
        self.redraws += 1
        if self.fail is not None and self.redraws > self.after:
            raise self.fail


def test_a_closed_connection_parks_the_run_paused_with_its_training_state(monkeypatch):
    monkeypatch.setattr(st_internals, "session_id", lambda: "closing-tab")
    run = tiny_run(400)
    run.start()
    token = REGISTRY.register(run, "closing-tab", browser="the-browser")
    session_of(monkeypatch, run, "closing-tab", token)
    with pytest.raises(StopException):
        tr.train_live(View(StopException()))  # the first redraw, before any snapshot rerun
    assert run.status == "paused" and 0 < run.step < 400 and run.training_state_bytes > 0
    assert REGISTRY.parked_count() >= 1
    claim = REGISTRY.claim(token, "reloaded-tab", "the-browser")
    assert claim is not None and claim.run is run and claim.parked
    REGISTRY.forget(token)


@pytest.mark.slow
def test_a_slow_browser_gets_no_frames_until_it_catches_up_but_training_goes_on(monkeypatch):
    backlog = {"n": 10_000}
    monkeypatch.setattr(st_internals, "send_backlog", lambda: backlog["n"])
    monkeypatch.setattr(st_internals, "click_pending", lambda: False)
    monkeypatch.setattr(tr.st, "rerun", lambda: None)
    run, view = tiny_run(30), View()
    run.start()
    session_of(monkeypatch, run)
    tr.train_live(view)
    assert run.status == "done" and run.step == 30 and view.redraws == 0
    backlog["n"] = 0
    run2, view2 = tiny_run(30), View()
    run2.start()
    session_of(monkeypatch, run2)
    tr.train_live(view2)
    assert view2.redraws > 0


def test_a_waiting_click_is_always_let_through_even_for_a_slow_browser(monkeypatch):
    monkeypatch.setattr(st_internals, "send_backlog", lambda: 10_000)
    monkeypatch.setattr(st_internals, "click_pending", lambda: True)
    view = View()
    assert tr._redraw(view) and view.redraws == 1  # the redraw is where Streamlit reruns or stops the script


def test_an_unexpected_error_pauses_the_run_and_says_so(monkeypatch):
    run = tiny_run(400)
    run.start()
    held = session_of(monkeypatch, run)
    monkeypatch.setattr(tr.st, "rerun", lambda: None)
    tr.train_live(View(ZeroDivisionError("boom"), after=1))
    assert run.status == "paused" and run.training_state_bytes > 0
    level, text = held.notice
    assert level == "error" and "ZeroDivisionError" in text and "Resume" in text


def test_a_run_taken_over_by_another_tab_stops_this_tabs_loop(monkeypatch):
    monkeypatch.setattr(tr.st, "rerun", lambda: None)
    run = tiny_run(10_000)
    run.start()
    token = REGISTRY.register(run, "first-tab", browser="the-browser")
    held = session_of(monkeypatch, run, "first-tab", token)
    view = View()
    view.refresh = lambda: REGISTRY.claim(token, "second-tab", "the-browser") and None  # the same browser's tab
    tr.train_live(view)
    assert run.status == "paused" and held.moved and held.run is None


def test_a_reloaded_tab_takes_its_paused_run_back_and_resumes_from_the_same_step(monkeypatch):
    same_browser(monkeypatch)
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.query_params.update(TINY)
    at.run()
    at.switch_page(PAGE).run()
    run = at.session_state[controls.SESSION].run
    run.start()
    while run.step < 15:
        run.advance(0.01)
    token = REGISTRY.register(run, "a-tab-that-was-closed", browser="the-browser")
    REGISTRY.park(token, "a-tab-that-was-closed")

    reloaded = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    reloaded.query_params.update({**TINY, "run": token})
    reloaded.run()
    reloaded.switch_page(PAGE).run()
    assert_no_exception(reloaded)
    assert reloaded.session_state[controls.SESSION].run is run and run.status == "paused"
    assert any("Welcome back" in s.value and "15" in s.value for s in reloaded.success)
    assert not any("setting run=" in i.value for i in reloaded.info)  # the token is no unknown setting
    reloaded.button(key="live.resume").click().run()
    assert run.status == "done" and run.step == 40
    REGISTRY.forget(token)


def test_an_address_whose_run_is_gone_says_so_and_offers_a_new_run():
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.query_params.update({**TINY, "run": "expired-or-unknown-token"})
    at.run()
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    assert any("no longer on the server" in i.value for i in at.info)
    assert "run" not in at.query_params and not at.button(key="live.start").disabled


def test_starting_a_run_puts_its_token_in_the_address_but_not_in_share_links():
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.query_params.update({**TINY, "steps": "10"})
    at.run()
    at.switch_page(PAGE).run()
    at.button(key="live.start").click().run()
    token = at.session_state[controls.SESSION].token
    assert at.query_params["run"] in (token, [token])
    assert all(token not in c.value for c in at.code)  # the copy-link boxes


def _opened(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    at.query_params.update(query)
    at.run()
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    return at


def test_an_address_opened_in_another_browser_gives_a_fresh_page_and_the_owner_trains_on(monkeypatch):
    run = tiny_run(10_000)
    run.start()
    token = REGISTRY.register(run, "the-teachers-tab", browser="the-teachers-browser")
    same_browser(monkeypatch, "a-students-browser")  # the address read off the projector, typed elsewhere
    other = _opened({**TINY, "run": token})
    held = other.session_state[controls.SESSION]
    assert held.run is not run and held.token is None and "run" not in other.query_params
    assert run.status == "running" and REGISTRY.owns(token, "the-teachers-tab")  # not paused, not taken
    assert not any("Welcome back" in s.value for s in other.success)
    run.stop()
    REGISTRY.forget(token)


def test_projector_mode_never_shows_the_token_and_a_reload_still_takes_the_run_back(monkeypatch):
    same_browser(monkeypatch, "the-projectors-browser")
    at = _opened({**TINY, "steps": "400", "present": "true"})
    held = at.session_state[controls.SESSION]
    held.start(*_settings_of(held))
    assert held.run.status == "running" and held.token is not None
    held.run.advance(0.05)
    held.pause()
    at.run()  # the page shows the run (paused: AppTest would wait for a running loop's end)
    assert "run" not in at.query_params and held.token is not None and held.run.step > 0
    assert all(held.token not in c.value for c in at.code)
    REGISTRY.park(held.token, held.client.session)  # the projector's tab is reloaded: its connection ended
    reloaded = _opened({**TINY, "steps": "400", "present": "true"})  # the same address: no token in it
    assert reloaded.session_state[controls.SESSION].run is held.run and held.run.status == "paused"
    assert any("Welcome back" in s.value for s in reloaded.success) and "run" not in reloaded.query_params
    held.run.stop()


def _settings_of(held: RunSession) -> tuple:
    run = held.run
    return run.task, run.specs, held.signature
