"""The AppTest speed-ups (tests/apptest_speed.py) change how often, not what: the component scan gives Streamlit's
own answer, and a script run that never ends still fails with Streamlit's message."""

from __future__ import annotations

import time

import pytest

from tests.apptest_speed import _wait_for_script_end, speed_up_apptest


class _Runner:
    """A script runner whose run ends after ``runs_s`` seconds (never, with ``None``)."""

    def __init__(self, runs_s: float | None) -> None:
        self.ends = None if runs_s is None else time.monotonic() + runs_s
        self.stopped = self.joined = False

    def script_stopped(self) -> bool:
        return self.ends is not None and time.monotonic() >= self.ends

    def request_stop(self) -> None:
        self.stopped = True

    def join(self) -> None:
        self.joined = True


def test_the_component_scan_runs_once_per_process_with_streamlits_answer():
    from streamlit.components.v2 import manifest_scanner

    speed_up_apptest()
    speed_up_apptest()  # a second call changes nothing
    scan = manifest_scanner.scan_component_manifests
    assert scan() == scan.__wrapped__()
    assert not hasattr(scan.__wrapped__, "cache_info")  # wrapped once, not twice
    before = scan.cache_info().hits
    scan()
    assert scan.cache_info().hits == before + 1


def test_the_wait_returns_when_the_run_ends_and_fails_as_streamlit_does_when_it_never_does():
    runner = _Runner(0.05)
    _wait_for_script_end(runner, timeout=5)
    assert not runner.stopped
    never = _Runner(None)
    with pytest.raises(RuntimeError, match=r"AppTest script run timed out after 0.2\(s\)"):
        _wait_for_script_end(never, timeout=0.2)
    assert never.stopped and never.joined


def test_apptest_uses_the_faster_wait():
    from streamlit.testing.v1 import local_script_runner

    speed_up_apptest()
    assert local_script_runner.require_widgets_deltas is _wait_for_script_end
