"""A task registered from outside the package appears in Live Training's menu and trains there."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, DEFAULT_TIMEOUT, assert_no_exception
from tests.app.test_live_training import metric
from tests.rotate_task import NAME, TITLE, registered
from ui.training import controls as tc

TINY = {"d_model": "16", "heads": "2", "layers": "1", "d_ff": "32", "batch": "8", "steps": "10"}


def test_live_training_lists_and_opens_a_registered_task():
    with registered():
        at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
        at.query_params.update({"task": NAME, **TINY})
        at.run()
        at.switch_page("pages/training.py")
        at.run()
        assert_no_exception(at)
        menu = at.selectbox(key=tc.TASK)
        assert TITLE in menu.options and menu.value == NAME
        assert any("rotated left" in c.value for c in at.caption)
        at.button(key="live.start").click().run()
        assert_no_exception(at)
        assert metric(at, "Step") == "10 / 10"
