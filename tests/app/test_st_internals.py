"""The private Streamlit state that ui.common.st_internals reads: each test fails, naming the version, if it moves."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

from ui.common import st_internals

VERSION = f"Streamlit {st_internals.streamlit_version()} changed an internal that ui/common/st_internals.py reads"


def test_the_send_queue_limit_is_streamlits():
    from streamlit.web.server.starlette import starlette_server_config

    assert starlette_server_config.WEBSOCKET_MAX_SEND_QUEUE_SIZE == st_internals.SEND_QUEUE_LIMIT, VERSION


def test_a_pending_click_is_seen(monkeypatch):
    requests = ScriptRequests()
    assert hasattr(requests, "_state"), VERSION
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: SimpleNamespace(script_requests=requests))
    assert not st_internals.click_pending()
    requests.request_rerun(RerunData())  # what Streamlit does when a widget is used while the script runs
    assert st_internals.click_pending()
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: None)  # outside a script run
    assert not st_internals.click_pending()


def test_a_click_or_a_stop_sets_the_request_signal_and_still_reaches_the_script_runner(monkeypatch):
    requests = ScriptRequests()
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: SimpleNamespace(script_requests=requests))
    signal = st_internals.request_signal()
    assert signal is not None and not signal.is_set(), VERSION
    assert st_internals.request_signal() is signal  # wrapped once per script runner
    requests.request_rerun(RerunData())
    assert signal.is_set() and st_internals.click_pending()
    signal.clear()
    requests.request_rerun_batch([RerunData(), RerunData()])  # several widgets at once
    assert signal.is_set()
    signal.clear()
    requests.request_stop()  # the tab closed
    assert signal.is_set() and requests._state.name == "STOP"
    other = ScriptRequests()  # another session's runner has its own signal
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: SimpleNamespace(script_requests=other))
    assert st_internals.request_signal() is not signal
    monkeypatch.setattr(st_internals, "get_script_run_ctx", lambda **_: None)  # outside a script run: poll
    assert st_internals.request_signal() is None


class _StuckSocket:
    """A websocket whose browser never reads: every send waits for ever."""

    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    client = None

    async def send_bytes(self, payload: bytes) -> None:
        await asyncio.Event().wait()


def test_the_backlog_is_read_from_streamlits_own_websocket_client(monkeypatch):
    from streamlit.runtime import Runtime
    from streamlit.runtime.websocket_session_manager import WebsocketSessionManager
    from streamlit.web.server.starlette.starlette_websocket import StarletteSessionClient

    assert hasattr(WebsocketSessionManager, "get_active_session_info"), VERSION

    async def scenario() -> list[int]:
        client = StarletteSessionClient(_StuckSocket())
        assert hasattr(client, "_send_queue"), VERSION
        manager = SimpleNamespace(get_active_session_info=lambda sid: SimpleNamespace(client=client))
        monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
        monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: SimpleNamespace(_session_mgr=manager)))
        monkeypatch.setattr(st_internals, "session_id", lambda: "a-session")
        seen = [st_internals.send_backlog()]
        for _ in range(7):
            client._send_queue.put_nowait(b"x")
        seen.append(st_internals.send_backlog())
        await client.aclose()
        return seen

    assert asyncio.run(scenario()) == [0, 7]


def test_the_runtime_keeps_its_session_manager_where_it_is_read():
    import inspect

    from streamlit.runtime import Runtime

    assert "self._session_mgr" in inspect.getsource(Runtime.__init__), VERSION


@pytest.mark.parametrize("missing", ["no session", "no runtime"])
def test_nothing_known_means_no_backlog(monkeypatch, missing):
    from streamlit.runtime import Runtime

    if missing == "no session":
        monkeypatch.setattr(st_internals, "session_id", lambda: None)
    else:
        monkeypatch.setattr(st_internals, "session_id", lambda: "x")
        monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: False))
    assert st_internals.send_backlog() == 0


def test_the_pages_directory_mode_is_where_the_router_switches_it():
    from streamlit.runtime.pages_manager import PagesManager

    assert isinstance(getattr(PagesManager, "uses_pages_directory", None), bool | type(None)), VERSION
    before = PagesManager.uses_pages_directory
    try:
        PagesManager.uses_pages_directory = True
        assert st_internals.runs_pages_directory()
        st_internals.leave_pages_directory()
        assert not st_internals.runs_pages_directory() and PagesManager.uses_pages_directory is False
    finally:
        PagesManager.uses_pages_directory = before


def test_the_live_loop_catches_the_exceptions_streamlit_raises_at_a_redraw():
    import streamlit.runtime.scriptrunner.script_runner as runner

    # The script runner stops a script with these very classes (a click: rerun; a closed connection: stop).
    for exc in (st_internals.RerunException, st_internals.StopException):
        assert issubclass(exc, BaseException), VERSION
        assert getattr(runner, exc.__name__, None) is exc, VERSION


def test_the_loop_logs_to_streamlits_logger():
    log = st_internals.logger("transformer_explorer.test")
    assert log.name == "transformer_explorer.test"
    assert log.handlers or log.propagate, VERSION


def test_a_sessions_connection_is_read_from_streamlits_session_manager(monkeypatch):
    import inspect

    from streamlit.runtime import Runtime
    from streamlit.runtime.websocket_session_manager import WebsocketSessionManager

    assert "_active_session_info_by_id" in inspect.getsource(WebsocketSessionManager.is_active_session), VERSION
    manager = WebsocketSessionManager.__new__(WebsocketSessionManager)
    manager._active_session_info_by_id = {"open-tab": object()}
    runtime = type("FakeRuntime", (), {"_session_mgr": manager})()
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: runtime))
    assert st_internals.session_connected("open-tab") is True
    assert st_internals.session_connected("closed-tab") is False
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: False))
    assert st_internals.session_connected("open-tab") is None


def test_the_server_runs_on_uvloop_where_the_requirements_install_it():
    """Streamlit picks uvloop for its event loop when it can import it; requirements.txt installs it (not on
    Windows, which uvloop does not support). See docs/performance.md, "The server's event loop"."""
    import sys

    from tests.conftest import REPO_ROOT

    pins = [line for line in (REPO_ROOT / "requirements.txt").read_text().splitlines() if line.startswith("uvloop==")]
    assert len(pins) == 1 and pins[0].endswith('; sys_platform != "win32"')
    if sys.platform == "win32":
        pytest.skip("uvloop does not run on Windows; Streamlit uses asyncio's own loop there")
    import uvloop
    from streamlit.web import bootstrap

    assert bootstrap._get_uvloop_loop_factory() is uvloop.new_event_loop, VERSION


def _widgets_script():
    import streamlit as st

    from ui.common import st_internals

    st.session_state["seen"] = sorted(st_internals.labelled_widget_keys())  # the widgets of the last run
    st.radio("Scale", ["fixed", "stretch"], key="radio", format_func=str.title)
    st.selectbox("Colours", ["a", "b"], key="select")
    st.pills("Heads", [1, 2], key="pills", selection_mode="multi")
    st.slider("Layers", 1, 4, key="slider")
    st.checkbox("Compare", key="check")
    st.button("Start", key="button")
    st.file_uploader("Picture", key="upload")
    st.radio("Unkeyed", ["x", "y"])


def test_the_widgets_whose_browser_value_is_their_label_are_found_by_key():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_widgets_script).run()
    assert at.session_state["seen"] == []  # nothing drawn before the first run
    at.run()
    # Buttons and uploads may not be given a value; sliders and checkboxes keep no label
    assert at.session_state["seen"] == ["pills", "radio", "select"], VERSION
